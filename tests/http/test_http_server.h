// File: tests/http/test_http_server.h
//
// A tiny HTTP/1.1 server on 127.0.0.1 for transport tests, written on raw
// sockets so a test controls every byte and every pause: split chunks,
// coalesced lines, half-written bodies, dropped connections, optional TLS.
//
// Contract:
//  * The server listens on an ephemeral port as soon as it is constructed and
//    serves each connection on its own thread, request after request
//    (keep-alive), calling the handler once per request.
//  * The handler writes the response itself through Connection. It may block
//    (e.g. Connection::WaitForPeerClose()); the destructor unblocks it by
//    shutting down every socket, then joins all threads.
//  * With an SSL_CTX the server speaks TLS; a failed handshake just closes
//    the connection.

#ifndef SLURMOP_TESTS_HTTP_TEST_HTTP_SERVER_H_
#define SLURMOP_TESTS_HTTP_TEST_HTTP_SERVER_H_

#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace slurmop::testing {

struct ReceivedRequest {
  std::string method;
  std::string target;                          // path?query as sent
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

class Connection {
 public:
  Connection(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  // Writes raw bytes; false if the peer is gone.
  bool Write(std::string_view bytes);
  // A complete response with Content-Length.
  bool WriteResponse(int status, const std::map<std::string, std::string>& headers,
                     std::string_view body);
  // Status line and headers of a chunked response.
  bool StartChunked(int status, const std::map<std::string, std::string>& headers = {});
  // One HTTP chunk (not for empty data).
  bool WriteChunk(std::string_view data);
  // The terminating zero-length chunk.
  bool EndChunked();
  // Blocks until the peer closes the connection (or the server stops).
  void WaitForPeerClose();
  // Closes the connection after the handler returns.
  void CloseAfterResponse() { close_ = true; }
  bool close_requested() const { return close_; }

  // Used by the server.
  int ReadSome(char* buf, int size);

 private:
  int fd_;
  SSL* ssl_;
  bool close_ = false;
};

class TestHttpServer {
 public:
  using Handler = std::function<void(const ReceivedRequest&, Connection&)>;

  // `tls` may be null (plain HTTP); the server takes a reference on it.
  explicit TestHttpServer(Handler handler, SSL_CTX* tls = nullptr);
  ~TestHttpServer();
  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;

  int port() const { return port_; }
  // "http://127.0.0.1:<port>" (or https).
  std::string url() const;
  std::vector<ReceivedRequest> requests() const;
  int connections_accepted() const { return accepted_.load(); }

 private:
  void AcceptLoop();
  void Serve(int fd);

  Handler handler_;
  SSL_CTX* tls_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  mutable std::mutex mu_;
  std::vector<int> open_fds_;
  std::vector<std::thread> threads_;
  std::vector<ReceivedRequest> requests_;
  std::thread accept_thread_;
};

// Returns a port on 127.0.0.1 on which nothing listens.
int UnusedPort();

}  // namespace slurmop::testing

#endif  // SLURMOP_TESTS_HTTP_TEST_HTTP_SERVER_H_
