// File: tests/http/test_http_server.cc
//
// See test_http_server.h for the contract.

#include "tests/http/test_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace slurmop::testing {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    default:
      return "Status";
  }
}

}  // namespace

bool Connection::Write(std::string_view bytes) {
  while (!bytes.empty()) {
    int n;
    if (ssl_ != nullptr) {
      n = SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()));
    } else {
      n = static_cast<int>(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL));
    }
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool Connection::WriteResponse(int status, const std::map<std::string, std::string>& headers,
                               std::string_view body) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) + "\r\n";
  for (const auto& [name, value] : headers) out += name + ": " + value + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  out.append(body);
  return Write(out);
}

bool Connection::StartChunked(int status, const std::map<std::string, std::string>& headers) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) + "\r\n";
  for (const auto& [name, value] : headers) out += name + ": " + value + "\r\n";
  out += "Transfer-Encoding: chunked\r\n\r\n";
  return Write(out);
}

bool Connection::WriteChunk(std::string_view data) {
  char size[32];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  std::string out = size;
  out.append(data);
  out += "\r\n";
  return Write(out);
}

bool Connection::EndChunked() { return Write("0\r\n\r\n"); }

int Connection::ReadSome(char* buf, int size) {
  if (ssl_ != nullptr) return SSL_read(ssl_, buf, size);
  return static_cast<int>(::recv(fd_, buf, static_cast<size_t>(size), 0));
}

void Connection::WaitForPeerClose() {
  char buf[256];
  while (ReadSome(buf, sizeof(buf)) > 0) {
  }
}

TestHttpServer::TestHttpServer(Handler handler, SSL_CTX* tls)
    : handler_(std::move(handler)), tls_(tls) {
  // OpenSSL writes with write(2); a client that hung up must not kill the test.
  std::signal(SIGPIPE, SIG_IGN);
  if (tls_ != nullptr) SSL_CTX_up_ref(tls_);
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_fd_, 64) != 0) {
    throw std::runtime_error("test server: bind/listen failed");
  }
  socklen_t len = sizeof(addr);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

TestHttpServer::~TestHttpServer() {
  stopping_.store(true);
  ::shutdown(listen_fd_, SHUT_RDWR);
  accept_thread_.join();
  ::close(listen_fd_);
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
  for (int fd : open_fds_) ::close(fd);
  if (tls_ != nullptr) SSL_CTX_free(tls_);
}

std::string TestHttpServer::url() const {
  return std::string(tls_ != nullptr ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

std::vector<ReceivedRequest> TestHttpServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void TestHttpServer::AcceptLoop() {
  while (!stopping_.load()) {
    int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) {
      if (stopping_.load()) return;
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    accepted_.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_.load()) {
      ::close(fd);
      return;
    }
    open_fds_.push_back(fd);
    threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void TestHttpServer::Serve(int fd) {
  SSL* ssl = nullptr;
  if (tls_ != nullptr) {
    ssl = SSL_new(tls_);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) != 1) {
      SSL_free(ssl);
      ssl = nullptr;
      ::shutdown(fd, SHUT_RDWR);
      return;  // the destructor closes fd
    }
  }
  Connection connection(fd, ssl);
  std::string buffer;
  char chunk[4096];
  while (!stopping_.load()) {
    size_t header_end;
    while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
      int n = connection.ReadSome(chunk, sizeof(chunk));
      if (n <= 0) goto done;
      buffer.append(chunk, static_cast<size_t>(n));
    }
    {
      ReceivedRequest request;
      std::string head = buffer.substr(0, header_end);
      buffer.erase(0, header_end + 4);
      size_t line_end = head.find("\r\n");
      std::string request_line = head.substr(0, line_end);
      size_t sp1 = request_line.find(' ');
      size_t sp2 = request_line.rfind(' ');
      request.method = request_line.substr(0, sp1);
      request.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
      size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
      while (pos < head.size()) {
        size_t end = head.find("\r\n", pos);
        if (end == std::string::npos) end = head.size();
        std::string line = head.substr(pos, end - pos);
        size_t colon = line.find(':');
        if (colon != std::string::npos) {
          request.headers[Lower(Trim(line.substr(0, colon)))] = Trim(line.substr(colon + 1));
        }
        pos = end + 2;
      }
      size_t length = 0;
      if (auto it = request.headers.find("content-length"); it != request.headers.end()) {
        length = std::stoul(it->second);
      }
      while (buffer.size() < length) {
        int n = connection.ReadSome(chunk, sizeof(chunk));
        if (n <= 0) goto done;
        buffer.append(chunk, static_cast<size_t>(n));
      }
      request.body = buffer.substr(0, length);
      buffer.erase(0, length);
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(request);
      }
      handler_(request, connection);
      if (connection.close_requested()) break;
    }
  }
done:
  if (ssl != nullptr) {
    SSL_shutdown(ssl);
    SSL_free(ssl);
  }
  ::shutdown(fd, SHUT_RDWR);
  // The fd itself is closed in the destructor, after all threads are joined,
  // so a number is never reused while another thread may still shut it down.
}

int UnusedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace slurmop::testing
