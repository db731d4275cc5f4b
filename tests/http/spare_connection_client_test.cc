// File: tests/http/spare_connection_client_test.cc
//
// SpareConnectionClient against raw-socket loopback servers that control
// each connection: a request travels on a connection opened before it was
// issued; a spare the server closed, or that aged, is not used; a request
// whose connection breaks after it was written fails with request_sent=true
// and is never re-sent; connect failures have request_sent=false; the body
// limit and the deadline hold; TLS verifies the host name. Also the routing
// of SpareConnectionTransport.

#include "controller/http/spare_connection_client.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/http/spare_connection_transport.h"
#include "gtest/gtest.h"
#include "tests/http/counting_transport.h"
#include "tests/http/test_http_server.h"
#include "tests/http/test_pki.h"

namespace slurmop::http {
namespace {

using ::slurmop::testing::CountingTransport;
using ::slurmop::testing::GetTestPki;
using ::slurmop::testing::NewServerTlsContext;
using ::slurmop::testing::TestHttpServer;
using ::slurmop::testing::UnusedPort;
using namespace std::chrono_literals;

// A loopback server that runs `behavior(server, fd, index)` on a thread of
// its own for each accepted connection (index: 0 for the first accepted).
class RawServer {
 public:
  using Behavior = std::function<void(RawServer&, int fd, int index)>;

  explicit RawServer(Behavior behavior) : behavior_(std::move(behavior)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(listen_fd_, 16);
    socklen_t length = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &length);
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }

  ~RawServer() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    accept_thread_.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& thread : threads_) thread.join();
    for (int fd : fds_) ::close(fd);
    ::close(listen_fd_);
  }

  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }
  int accepted() const { return accepted_.load(); }
  // The index of the connection each request arrived on, in order.
  std::vector<int> request_connections() const {
    std::lock_guard<std::mutex> lock(mu_);
    return request_connections_;
  }

  // Reads one request (headers and a Content-Length body) and records it;
  // false if the peer closed first.
  bool ReadRequest(int fd, int index) {
    std::string data;
    char buffer[4096];
    size_t body_length = 0;
    size_t header_end = std::string::npos;
    while (header_end == std::string::npos || data.size() < header_end + 4 + body_length) {
      const ssize_t n = ::read(fd, buffer, sizeof(buffer));
      if (n <= 0) return false;
      data.append(buffer, static_cast<size_t>(n));
      if (header_end == std::string::npos &&
          (header_end = data.find("\r\n\r\n")) != std::string::npos) {
        const size_t at = data.find("Content-Length: ");
        if (at != std::string::npos && at < header_end) {
          (void)absl::SimpleAtoi(data.substr(at + 16, data.find("\r\n", at) - at - 16),
                                 &body_length);
        }
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    request_connections_.push_back(index);
    return true;
  }

  // MSG_NOSIGNAL: a client that refuses a reply closes its end while the
  // server may still be writing; that must be EPIPE here, not a SIGPIPE that
  // kills the test binary.
  static void Write(int fd, const std::string& bytes) {
    (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  static void Reply(int fd, const std::string& body) {
    Write(fd, absl::StrCat("HTTP/1.1 200 OK\r\nContent-Length: ", body.size(),
                           "\r\nX-Test: a\r\nX-Test: b\r\n\r\n", body));
  }
  // Blocks until the peer closes (or the server stops).
  static void WaitForClose(int fd) {
    char buffer[256];
    while (::read(fd, buffer, sizeof(buffer)) > 0) {
    }
  }

 private:
  void AcceptLoop() {
    for (;;) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0 || stopping_) {
        if (fd >= 0) ::close(fd);
        return;
      }
      const int index = accepted_++;
      std::lock_guard<std::mutex> lock(mu_);
      fds_.push_back(fd);
      threads_.emplace_back([this, fd, index] { behavior_(*this, fd, index); });
    }
  }

  Behavior behavior_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  mutable std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> threads_;
  std::vector<int> request_connections_;
  std::thread accept_thread_;
};

// Answers every request with "ok" and closes.
void Serve(RawServer& server, int fd, int index) {
  if (server.ReadRequest(fd, index)) RawServer::Reply(fd, "ok");
  ::shutdown(fd, SHUT_RDWR);
}

// Waits up to 5 s for `condition`.
bool Eventually(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

std::unique_ptr<SpareConnectionClient> NewClient(SpareConnectionOptions options = {}) {
  absl::StatusOr<std::unique_ptr<SpareConnectionClient>> client =
      SpareConnectionClient::Create(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

Request Submit(const std::string& base, std::chrono::milliseconds timeout = 5s) {
  Request request;
  request.method = "POST";
  request.url = base + "/v1/projects/p/locations/l:callSlurmRestApi";
  request.headers["Content-Type"] = "application/json";
  request.body = R"({"job":"x"})";
  request.timeout = timeout;
  return request;
}

TEST(SpareConnectionClientTest, RequestTravelsOnAConnectionOpenedBeforeIt) {
  RawServer server(Serve);
  auto client = NewClient();
  client->Prepare(server.url());
  ASSERT_TRUE(Eventually([&] { return client->stats().spares_opened == 1; }));
  // (The client's connect can complete before the server's accept() returns.)
  ASSERT_TRUE(Eventually([&] { return server.accepted() == 1; }));

  absl::StatusOr<Response> response = client->Send(Submit(server.url()));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "ok");
  EXPECT_EQ(response->headers["x-test"], "a, b");
  EXPECT_EQ(server.request_connections(), std::vector<int>{0});
  EXPECT_EQ(client->stats().spares_used, 1);
  EXPECT_EQ(client->stats().fresh_connections, 0);
  // A new spare replaces the one used, and the next request takes it.
  ASSERT_TRUE(Eventually([&] { return client->stats().spares_opened == 2; }));
  ASSERT_TRUE(client->Send(Submit(server.url())).ok());
  EXPECT_EQ(server.request_connections(), (std::vector<int>{0, 1}));
  EXPECT_EQ(client->stats().fresh_connections, 0);
}

TEST(SpareConnectionClientTest, FirstRequestOpensItsOwnConnectionAndLeavesASpare) {
  RawServer server(Serve);
  auto client = NewClient();
  ASSERT_TRUE(client->Send(Submit(server.url())).ok());
  EXPECT_EQ(client->stats().fresh_connections, 1);
  ASSERT_TRUE(Eventually([&] { return client->stats().spares_opened == 1; }));
  EXPECT_TRUE(Eventually([&] { return server.accepted() == 2; }));
}

TEST(SpareConnectionClientTest, SpareClosedByTheServerIsNotUsed) {
  RawServer server([](RawServer& s, int fd, int index) {
    if (index == 0) {
      ::shutdown(fd, SHUT_RDWR);  // the spare: closed before any request
      return;
    }
    Serve(s, fd, index);
  });
  SpareConnectionOptions options;
  options.spare_max_age = 1h;
  auto client = NewClient(options);
  client->Prepare(server.url());
  ASSERT_TRUE(Eventually([&] { return client->stats().spares_opened == 1; }));
  std::this_thread::sleep_for(50ms);  // the FIN arrives

  absl::StatusOr<Response> response = client->Send(Submit(server.url()));
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(server.request_connections().size(), 1u);
  EXPECT_NE(server.request_connections()[0], 0);
  EXPECT_GE(client->stats().spares_discarded, 1);
}

TEST(SpareConnectionClientTest, SpareOlderThanMaxAgeIsNotUsed) {
  RawServer server(Serve);
  SpareConnectionOptions options;
  options.spare_max_age = 100ms;
  auto client = NewClient(options);
  client->Prepare(server.url());
  ASSERT_TRUE(Eventually([&] { return client->stats().spares_opened == 1; }));
  std::this_thread::sleep_for(300ms);

  ASSERT_TRUE(client->Send(Submit(server.url())).ok());
  ASSERT_EQ(server.request_connections().size(), 1u);
  EXPECT_NE(server.request_connections()[0], 0);
  EXPECT_GE(client->stats().spares_discarded, 1);
}

TEST(SpareConnectionClientTest, IdleEndpointKeepsNoSpare) {
  std::atomic<int> closed{0};
  RawServer server([&](RawServer& s, int fd, int index) {
    if (!s.ReadRequest(fd, index)) ++closed;  // closed by the client unused
  });
  SpareConnectionOptions options;
  options.spare_max_age = 1h;  // sweeps every second
  options.keep_spares_for = 10ms;
  auto client = NewClient(options);
  client->Prepare(server.url());
  ASSERT_TRUE(Eventually([&] { return closed.load() == 1; }));
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(server.accepted(), 1);
  EXPECT_TRUE(server.request_connections().empty());
}

TEST(SpareConnectionClientTest, NoAnswerFailsAsMaybeDeliveredAndIsNeverResent) {
  RawServer server([](RawServer& s, int fd, int index) {
    if (s.ReadRequest(fd, index)) ::shutdown(fd, SHUT_RDWR);  // processed, no answer
  });
  auto client = NewClient();
  client->Prepare(server.url());
  ASSERT_TRUE(Eventually([&] { return client->stats().spares_opened == 1; }));

  absl::StatusOr<Response> response = client->Send(Submit(server.url()));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable) << response.status();
  EXPECT_TRUE(MayHaveBeenDelivered(response.status()));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(server.request_connections(), std::vector<int>{0});
}

TEST(SpareConnectionClientTest, ConnectRefusedWasNotSent) {
  auto client = NewClient();
  absl::StatusOr<Response> response =
      client->Send(Submit(absl::StrCat("http://127.0.0.1:", UnusedPort())));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable) << response.status();
  EXPECT_FALSE(MayHaveBeenDelivered(response.status()));
}

TEST(SpareConnectionClientTest, BodyOverTheLimitIsRefused) {
  RawServer server([](RawServer& s, int fd, int index) {
    if (!s.ReadRequest(fd, index)) return;
    if (index % 2 == 0) {
      RawServer::Reply(fd, std::string(100, 'x'));
    } else {  // chunked, no Content-Length
      RawServer::Write(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
      for (int i = 0; i < 4; ++i) RawServer::Write(fd, "8\r\nxxxxxxxx\r\n");
      RawServer::Write(fd, "0\r\n\r\n");
    }
    RawServer::WaitForClose(fd);
  });
  SpareConnectionOptions options;
  options.keep_spares = false;  // connection i carries request i
  auto client = NewClient(options);
  Request request = Submit(server.url());
  request.max_body_bytes = 10;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Response> response = client->Send(request);
    ASSERT_FALSE(response.ok()) << i;
    EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_TRUE(absl::StrContains(response.status().message(), "over the 10-byte limit"))
        << response.status();
  }
  request.max_body_bytes = 100;
  EXPECT_TRUE(client->Send(request).ok());
}

TEST(SpareConnectionClientTest, DeadlineCoversTheWholeRequest) {
  RawServer server([](RawServer& s, int fd, int index) {
    if (s.ReadRequest(fd, index)) RawServer::WaitForClose(fd);  // never answers
  });
  auto client = NewClient();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Response> response = client->Send(Submit(server.url(), 200ms));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded) << response.status();
  EXPECT_TRUE(MayHaveBeenDelivered(response.status()));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

class SpareTlsTest : public ::testing::Test {
 protected:
  static void Answer(const testing::ReceivedRequest& request, testing::Connection& connection) {
    connection.WriteResponse(200, {}, "tls-" + request.headers.at("host"));
  }
};

TEST_F(SpareTlsTest, VerifiesTheHostName) {
  SSL_CTX* ctx =
      NewServerTlsContext(GetTestPki().named_server_cert_pem, GetTestPki().named_server_key_pem);
  TestHttpServer server(Answer, ctx);
  SSL_CTX_free(ctx);
  SpareConnectionOptions options;
  options.tls.ca_pem = GetTestPki().ca_cert_pem;
  auto client = NewClient(options);
  absl::StatusOr<Response> response = client->Send(Submit(server.url()));
  ASSERT_FALSE(response.ok()) << "127.0.0.1 is not in the certificate";
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(MayHaveBeenDelivered(response.status()));
  EXPECT_TRUE(server.requests().empty());

  options.tls.server_name = "kubernetes.default.svc";
  auto named = NewClient(options);
  response = named->Send(Submit(server.url()));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body, "tls-kubernetes.default.svc");
}

TEST_F(SpareTlsTest, RejectsAnUnknownCa) {
  SSL_CTX* ctx = NewServerTlsContext(GetTestPki().server_cert_pem, GetTestPki().server_key_pem);
  TestHttpServer server(Answer, ctx);
  SSL_CTX_free(ctx);
  SpareConnectionOptions options;
  options.tls.ca_pem = GetTestPki().other_ca_cert_pem;
  absl::StatusOr<Response> response = NewClient(options)->Send(Submit(server.url()));
  ASSERT_FALSE(response.ok());
  EXPECT_FALSE(MayHaveBeenDelivered(response.status()));
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(SpareTlsTest, UsesATlsSpareMatchingTheIpAddress) {
  SSL_CTX* ctx = NewServerTlsContext(GetTestPki().server_cert_pem, GetTestPki().server_key_pem);
  // How many connections the server had accepted when the request reached
  // it: 1 if it came on the spare. (Counted then, not after the answer: the
  // client opens the next spare as soon as the request is answered.)
  std::atomic<int> accepted_when_asked{-1};
  std::atomic<TestHttpServer*> server_seen{nullptr};
  TestHttpServer server(
      [&](const testing::ReceivedRequest& request, testing::Connection& connection) {
        accepted_when_asked = server_seen.load()->connections_accepted();
        Answer(request, connection);
      },
      ctx);
  server_seen = &server;
  SSL_CTX_free(ctx);
  SpareConnectionOptions options;
  options.tls.ca_pem = GetTestPki().ca_cert_pem;
  auto client = NewClient(options);
  client->Prepare(server.url());
  ASSERT_TRUE(Eventually([&] { return client->stats().spares_opened == 1; }));
  std::this_thread::sleep_for(50ms);  // TLS 1.3 session tickets arrive on the idle spare
  absl::StatusOr<Response> response = client->Send(Submit(server.url()));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body, absl::StrCat("tls-127.0.0.1:", server.port()));
  EXPECT_EQ(client->stats().spares_used, 1);
  EXPECT_EQ(client->stats().fresh_connections, 0);
  EXPECT_EQ(accepted_when_asked.load(), 1);
}

TEST(SpareConnectionTransportTest, RoutesOnlyRequestsThatMustNotBeResent) {
  RawServer server(Serve);
  auto others = std::make_unique<CountingTransport>();
  CountingTransport* counted = others.get();
  SpareConnectionTransport transport(std::move(others), NewClient());

  EXPECT_EQ(transport.Send(Submit(server.url()))->status, 200);  // POST
  Request patch = Submit(server.url());
  patch.method = "PATCH";
  EXPECT_EQ(transport.Send(patch)->status, 200);
  EXPECT_EQ(counted->sends, 0);

  Request replay_safe = Submit(server.url());
  replay_safe.replay_safe = true;
  EXPECT_EQ(transport.Send(replay_safe)->status, 204);
  Request get = Submit(server.url());
  get.method = "GET";
  EXPECT_EQ(transport.Send(get)->status, 204);
  EXPECT_EQ(transport
                .Stream(
                    Submit(server.url()), [](const std::string&) { return true; }, nullptr)
                ->status,
            204);
  EXPECT_EQ(counted->sends, 2);
  EXPECT_EQ(counted->streams, 1);
  EXPECT_EQ(server.request_connections().size(), 2u);
}

}  // namespace
}  // namespace slurmop::http
