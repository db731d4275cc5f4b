// File: tests/http/keep_alive_pool_test.cc
//
// KeepAliveConnectionPool against the loopback TestHttpServer (one thread per
// connection, request after request): requests reuse one connection; an idle
// connection the server closed is not used; one that breaks under a request
// is replaced and the request sent once more; an answer that closes, or is
// framed by the connection's end, is not reused; chunked answers; the
// deadline, connect failures, the body limit, concurrent callers, TLS; a
// stream on a connection of its own (stream_test.cc has the Stream()
// contract). Also the routing of KeepAliveWritesTransport.

#include "controller/http/keep_alive_pool.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/http/counting_transport.h"
#include "tests/http/test_http_server.h"
#include "tests/http/test_pki.h"

namespace slurmop::http {
namespace {

using ::slurmop::testing::Connection;
using ::slurmop::testing::CountingTransport;
using ::slurmop::testing::GetTestPki;
using ::slurmop::testing::NewServerTlsContext;
using ::slurmop::testing::ReceivedRequest;
using ::slurmop::testing::TestHttpServer;
using ::slurmop::testing::UnusedPort;
using namespace std::chrono_literals;

std::unique_ptr<KeepAliveConnectionPool> NewPool(KeepAlivePoolOptions options = {}) {
  absl::StatusOr<std::unique_ptr<KeepAliveConnectionPool>> pool =
      KeepAliveConnectionPool::Create(options);
  EXPECT_TRUE(pool.ok()) << pool.status();
  return pool.ok() ? *std::move(pool) : nullptr;
}

Request Put(const std::string& base, const std::string& body = R"({"status":{}})",
            std::chrono::milliseconds timeout = 5s) {
  Request request;
  request.method = "PUT";
  request.url = base + "/apis/g/v1/namespaces/n/things/a/status";
  request.headers["Content-Type"] = "application/json";
  request.body = body;
  request.timeout = timeout;
  return request;
}

// Answers "echo:<body>" with a Content-Length.
void Echo(const ReceivedRequest& request, Connection& connection) {
  connection.WriteResponse(200, {}, "echo:" + request.body);
}

TEST(KeepAliveConnectionPoolTest, RequestsReuseOneConnection) {
  TestHttpServer server(Echo);
  auto pool = NewPool();
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<Response> response = pool->Send(Put(server.url(), absl::StrCat(i)));
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, absl::StrCat("echo:", i));
  }
  EXPECT_EQ(server.connections_accepted(), 1);
  EXPECT_EQ(pool->stats().opened, 1);
  EXPECT_EQ(pool->stats().reused, 2);
  const std::vector<ReceivedRequest> seen = server.requests();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].method, "PUT");
  EXPECT_EQ(seen[0].target, "/apis/g/v1/namespaces/n/things/a/status");
  EXPECT_EQ(seen[0].headers.count("connection"), 0u) << "no Connection: close";
  EXPECT_EQ(seen[0].headers.at("content-type"), "application/json");
}

TEST(KeepAliveConnectionPoolTest, IdleConnectionTheServerClosedIsNotUsed) {
  TestHttpServer server([](const ReceivedRequest& request, Connection& connection) {
    Echo(request, connection);
    connection.CloseAfterResponse();
  });
  auto pool = NewPool();
  ASSERT_TRUE(pool->Send(Put(server.url())).ok());
  std::this_thread::sleep_for(50ms);  // the server's FIN arrives
  absl::StatusOr<Response> second = pool->Send(Put(server.url(), "2"));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->body, "echo:2");
  EXPECT_EQ(server.connections_accepted(), 2);
  EXPECT_EQ(pool->stats().reused, 0);
  EXPECT_EQ(pool->stats().resent, 0);
  EXPECT_EQ(pool->stats().idle_dropped, 1);
  EXPECT_EQ(server.requests().size(), 2u) << "nothing sent twice";
}

// The server takes the second request and closes without an answer, as when
// its idle timeout hit just as the request arrived: the request is sent once
// more, on a new connection.
TEST(KeepAliveConnectionPoolTest, ReusedConnectionBreakingUnderARequestIsReplacedOnce) {
  std::atomic<int> requests{0};
  TestHttpServer server([&](const ReceivedRequest& request, Connection& connection) {
    if (++requests == 2) {
      connection.CloseAfterResponse();
      return;
    }
    Echo(request, connection);
  });
  auto pool = NewPool();
  ASSERT_TRUE(pool->Send(Put(server.url(), "1")).ok());
  absl::StatusOr<Response> second = pool->Send(Put(server.url(), "2"));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->body, "echo:2");
  EXPECT_EQ(requests.load(), 3);
  EXPECT_EQ(server.connections_accepted(), 2);
  EXPECT_EQ(pool->stats().resent, 1);
}

// An answer refused on a reused connection (over the body limit) is a
// failure, not a connection the server closed: the request is not sent again.
TEST(KeepAliveConnectionPoolTest, AnAnswerOverTheLimitOnAReusedConnectionIsNotSentAgain) {
  std::atomic<int> requests{0};
  TestHttpServer server([&](const ReceivedRequest& request, Connection& connection) {
    if (++requests == 1) return Echo(request, connection);
    connection.WriteResponse(200, {}, std::string(2048, 'x'));
  });
  auto pool = NewPool();
  ASSERT_TRUE(pool->Send(Put(server.url(), "1")).ok());
  Request request = Put(server.url(), "2");
  request.max_body_bytes = 1024;
  absl::StatusOr<Response> second = pool->Send(request);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("1024-byte limit"), std::string::npos)
      << second.status();
  EXPECT_EQ(pool->stats().reused, 1);
  EXPECT_EQ(pool->stats().resent, 0);
  EXPECT_EQ(requests.load(), 2) << "the refused answer's request was sent again";
}

// A new connection that breaks is not retried: the failure says the request
// may have been delivered.
TEST(KeepAliveConnectionPoolTest, NewConnectionBreakingIsAFailureThatMayHaveDelivered) {
  TestHttpServer server(
      [](const ReceivedRequest&, Connection& connection) { connection.CloseAfterResponse(); });
  auto pool = NewPool();
  absl::StatusOr<Response> response = pool->Send(Put(server.url()));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable) << response.status();
  EXPECT_TRUE(MayHaveBeenDelivered(response.status()));
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(KeepAliveConnectionPoolTest, AnswerThatClosesTheConnectionIsNotReused) {
  TestHttpServer server([](const ReceivedRequest& request, Connection& connection) {
    connection.WriteResponse(200, {{"Connection", "close"}}, "echo:" + request.body);
    connection.CloseAfterResponse();
  });
  auto pool = NewPool();
  ASSERT_TRUE(pool->Send(Put(server.url())).ok());
  ASSERT_TRUE(pool->Send(Put(server.url())).ok());
  EXPECT_EQ(server.connections_accepted(), 2);
  EXPECT_EQ(pool->stats().reused, 0);
}

TEST(KeepAliveConnectionPoolTest, AnswerFramedByTheConnectionsEndIsReadWholeAndNotReused) {
  TestHttpServer server([](const ReceivedRequest&, Connection& connection) {
    connection.Write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end");
    connection.CloseAfterResponse();
  });
  auto pool = NewPool();
  absl::StatusOr<Response> response = pool->Send(Put(server.url()));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body, "to the end");
  ASSERT_TRUE(pool->Send(Put(server.url())).ok());
  EXPECT_EQ(server.connections_accepted(), 2);
}

TEST(KeepAliveConnectionPoolTest, ChunkedAnswersAreJoinedAndTheConnectionReused) {
  TestHttpServer server([](const ReceivedRequest&, Connection& connection) {
    connection.StartChunked(200, {{"Content-Type", "application/json"}});
    connection.WriteChunk(R"({"a":)");
    connection.WriteChunk("1}");
    connection.EndChunked();
  });
  auto pool = NewPool();
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Response> response = pool->Send(Put(server.url()));
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->body, R"({"a":1})");
    EXPECT_EQ(response->headers.at("content-type"), "application/json");
  }
  EXPECT_EQ(server.connections_accepted(), 1);
}

TEST(KeepAliveConnectionPoolTest, ErrorStatusesAreAnswersAndKeepTheConnection) {
  TestHttpServer server([](const ReceivedRequest&, Connection& connection) {
    connection.WriteResponse(409, {}, R"({"kind":"Status","reason":"Conflict"})");
  });
  auto pool = NewPool();
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Response> response = pool->Send(Put(server.url()));
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->status, 409);
  }
  EXPECT_EQ(server.connections_accepted(), 1);
}

TEST(KeepAliveConnectionPoolTest, DeadlineCoversTheWholeRequest) {
  TestHttpServer server([](const ReceivedRequest& request, Connection& connection) {
    std::this_thread::sleep_for(1500ms);
    Echo(request, connection);
  });
  auto pool = NewPool();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Response> response = pool->Send(Put(server.url(), "x", 200ms));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded) << response.status();
  EXPECT_TRUE(MayHaveBeenDelivered(response.status()));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

TEST(KeepAliveConnectionPoolTest, ConnectRefusedWasNotSent) {
  auto pool = NewPool();
  absl::StatusOr<Response> response =
      pool->Send(Put(absl::StrCat("http://127.0.0.1:", UnusedPort())));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(MayHaveBeenDelivered(response.status()));
}

TEST(KeepAliveConnectionPoolTest, BodyOverTheLimitIsRefusedAndTheConnectionClosed) {
  TestHttpServer server([](const ReceivedRequest&, Connection& connection) {
    connection.WriteResponse(200, {}, std::string(2048, 'x'));
  });
  auto pool = NewPool();
  Request request = Put(server.url());
  request.max_body_bytes = 1024;
  absl::StatusOr<Response> response = pool->Send(request);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(response.status().message().find("1024-byte limit"), std::string::npos)
      << response.status();
  request.max_body_bytes = 4096;
  ASSERT_TRUE(pool->Send(request).ok());
  EXPECT_EQ(server.connections_accepted(), 2);
}

// Callers on several threads each get a connection of their own (at most as
// many as run at once) and every answer is their own.
TEST(KeepAliveConnectionPoolTest, ConcurrentCallersGetTheirOwnAnswers) {
  TestHttpServer server(Echo);
  auto pool = NewPool();
  constexpr int kThreads = 4;
  constexpr int kEach = 25;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const std::string body = absl::StrCat(t, "-", i);
        absl::StatusOr<Response> response = pool->Send(Put(server.url(), body));
        if (!response.ok() || response->body != "echo:" + body) ++wrong;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(server.requests().size(), static_cast<size_t>(kThreads * kEach));
  EXPECT_LE(server.connections_accepted(), kThreads);
}

TEST(KeepAliveConnectionPoolTest, IdleConnectionsPerEndpointAreBounded) {
  TestHttpServer server([](const ReceivedRequest& request, Connection& connection) {
    std::this_thread::sleep_for(100ms);
    Echo(request, connection);
  });
  KeepAlivePoolOptions options;
  options.max_idle_per_endpoint = 1;
  auto pool = NewPool(options);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] { EXPECT_TRUE(pool->Send(Put(server.url())).ok()); });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(server.connections_accepted(), 3);
  EXPECT_EQ(pool->stats().idle_dropped, 2) << "one kept, two closed";
  ASSERT_TRUE(pool->Send(Put(server.url())).ok());
  EXPECT_EQ(server.connections_accepted(), 3);
}

TEST(KeepAliveConnectionPoolTest, TlsVerifiesTheHostNameAndReusesTheSession) {
  SSL_CTX* ctx =
      NewServerTlsContext(GetTestPki().named_server_cert_pem, GetTestPki().named_server_key_pem);
  TestHttpServer server(
      [](const ReceivedRequest& request, Connection& connection) {
        connection.WriteResponse(200, {}, "tls-" + request.headers.at("host"));
      },
      ctx);
  SSL_CTX_free(ctx);
  KeepAlivePoolOptions options;
  options.tls.ca_pem = GetTestPki().ca_cert_pem;
  std::string https = server.url();
  absl::StatusOr<Response> response = NewPool(options)->Send(Put(https));
  ASSERT_FALSE(response.ok()) << "127.0.0.1 is not in the certificate";
  EXPECT_FALSE(MayHaveBeenDelivered(response.status()));
  EXPECT_TRUE(server.requests().empty());

  options.tls.server_name = "kubernetes.default.svc";
  auto named = NewPool(options);
  for (int i = 0; i < 2; ++i) {
    response = named->Send(Put(https));
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->body, "tls-kubernetes.default.svc");
  }
  EXPECT_EQ(named->stats().reused, 1);
}

// A stream opens a connection of its own and closes it at its end: it
// neither takes an idle pooled connection nor leaves one behind.
TEST(KeepAliveConnectionPoolTest, AStreamHasItsOwnConnectionNeverPooled) {
  TestHttpServer server([](const ReceivedRequest& request, Connection& connection) {
    if (request.method == "GET") {
      connection.StartChunked(200);
      connection.WriteChunk("{\"n\":1}\n");
      connection.EndChunked();
      return;
    }
    Echo(request, connection);
  });
  auto pool = NewPool();
  ASSERT_TRUE(pool->Send(Put(server.url())).ok());  // one idle connection
  Request watch = Put(server.url());
  watch.method = "GET";
  watch.body.clear();
  std::vector<std::string> lines;
  absl::StatusOr<Response> streamed = pool->Stream(
      watch,
      [&lines](const std::string& line) {
        lines.push_back(line);
        return true;
      },
      std::make_shared<StreamHandle>());
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_EQ(lines, std::vector<std::string>{"{\"n\":1}"});
  EXPECT_EQ(server.connections_accepted(), 2);
  ASSERT_TRUE(pool->Send(Put(server.url())).ok());
  EXPECT_EQ(server.connections_accepted(), 2) << "the write reused the first connection";
  EXPECT_EQ(pool->stats().reused, 1);
  EXPECT_EQ(pool->stats().opened, 2);
}

// A stream over TLS verifies the peer's name as Send() does.
TEST(KeepAliveConnectionPoolTest, StreamOverTlsVerifiesTheHostName) {
  SSL_CTX* ctx =
      NewServerTlsContext(GetTestPki().named_server_cert_pem, GetTestPki().named_server_key_pem);
  TestHttpServer server(
      [](const ReceivedRequest&, Connection& connection) {
        connection.StartChunked(200);
        connection.WriteChunk("one\ntw");
        connection.WriteChunk("o\n");
        connection.EndChunked();
      },
      ctx);
  SSL_CTX_free(ctx);
  KeepAlivePoolOptions options;
  options.tls.ca_pem = GetTestPki().ca_cert_pem;
  Request watch;
  watch.url = server.url() + "/watch";
  std::vector<std::string> lines;
  const LineCallback keep = [&lines](const std::string& line) {
    lines.push_back(line);
    return true;
  };
  absl::StatusOr<Response> streamed = NewPool(options)->Stream(watch, keep, nullptr);
  ASSERT_FALSE(streamed.ok()) << "127.0.0.1 is not in the certificate";
  EXPECT_FALSE(MayHaveBeenDelivered(streamed.status()));
  EXPECT_TRUE(server.requests().empty());

  options.tls.server_name = "kubernetes.default.svc";
  streamed = NewPool(options)->Stream(watch, keep, nullptr);
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two"}));
}

TEST(KeepAliveWritesTransportTest, RoutesOnlyWritesThatMayBeResent) {
  TestHttpServer server(Echo);
  auto others = std::make_unique<CountingTransport>();
  CountingTransport* counted = others.get();
  KeepAliveWritesTransport transport(std::move(others), NewPool());

  Request put = Put(server.url());
  Request del = Put(server.url());
  del.method = "DELETE";
  Request safe_patch = Put(server.url());
  safe_patch.method = "PATCH";
  safe_patch.replay_safe = true;
  for (const Request& r : {put, del, safe_patch}) {
    EXPECT_TRUE(KeepAliveWritesTransport::GoesOnThePool(r)) << r.method;
    EXPECT_EQ(transport.Send(r)->status, 200) << r.method;
  }
  Request get = Put(server.url());
  get.method = "GET";
  Request patch = Put(server.url());
  patch.method = "PATCH";
  Request post = Put(server.url());
  post.method = "POST";
  for (const Request& r : {get, patch, post}) {
    EXPECT_FALSE(KeepAliveWritesTransport::GoesOnThePool(r)) << r.method;
    EXPECT_EQ(transport.Send(r)->status, 204) << r.method;
  }
  EXPECT_EQ(transport
                .Stream(
                    put, [](const std::string&) { return true; }, nullptr)
                ->status,
            204);
  EXPECT_EQ(counted->sends, 3);
  EXPECT_EQ(counted->streams, 1);
  EXPECT_EQ(server.requests().size(), 3u);
}

// With streams on the pool, a Stream() reaches the server on the pool's own
// connection, not through `others`.
TEST(KeepAliveWritesTransportTest, StreamsGoOnThePoolWhenAsked) {
  TestHttpServer server([](const ReceivedRequest&, Connection& connection) {
    connection.WriteResponse(200, {}, "a\nb\n");
  });
  auto others = std::make_unique<CountingTransport>();
  CountingTransport* counted = others.get();
  KeepAliveWritesTransport transport(std::move(others), NewPool(), /*streams_on_pool=*/true);
  Request get = Put(server.url());
  get.method = "GET";
  std::vector<std::string> lines;
  absl::StatusOr<Response> streamed = transport.Stream(
      get,
      [&lines](const std::string& line) {
        lines.push_back(line);
        return true;
      },
      nullptr);
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(counted->streams, 0);
  EXPECT_EQ(server.requests().size(), 1u);
}

}  // namespace
}  // namespace slurmop::http
