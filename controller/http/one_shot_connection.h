// File: controller/http/one_shot_connection.h
//
// OneShotConnection: one HTTP/1.1 connection (plain or TLS) on Boost.Beast
// that carries exactly one request and is then closed. It exists so that a
// non-replay-safe request (a Slurm submit) can use a connection opened ahead
// of time: Beast writes what it is given once and never re-sends, unlike
// cpprestsdk, which silently repeats a request on a pooled connection that
// turns out closed. Beast is header-only and part of the Boost already
// linked through cpprestsdk.
//
// Contract:
//  * Every method runs on the thread of the io_context given at
//    construction (the owner posts to it); completion callbacks are called
//    there, exactly once. Nothing throws.
//  * AsyncOpen() resolves, connects and (https) completes the TLS handshake
//    with peer verification unless TlsMaterial::insecure_skip_tls_verify:
//    the certificate chain against the context's trust store and the host
//    name (TlsMaterial::server_name, else the URL host; IP addresses are
//    matched against IP SANs) through asio::ssl::host_name_verification.
//    Failures are kUnavailable or kDeadlineExceeded with request_sent=false.
//  * `keep_alive` (constructor): the connection may carry one request after
//    another (KeepAliveConnectionPool). Requests are then sent without
//    "Connection: close", and after a complete response that allows it
//    (HTTP/1.1 keep-alive, body framed by length or chunks) the connection
//    stays open for the next AsyncExchange(); after any failure, or a
//    response that needs the connection's end as its frame, it is closed.
//    Without `keep_alive`, one exchange and then it is closed.
//  * LooksOpen() answers, without blocking, whether an opened, idle
//    connection can still carry a request: the TCP state is ESTABLISHED (no
//    FIN or RST from the peer) and, for plain HTTP, nothing unsolicited is
//    waiting to be read. (For TLS, bytes may be waiting: TLS 1.3 session
//    tickets arrive after the handshake.)
//  * AsyncExchange() may be called once (or, with `keep_alive`, again after
//    the previous one completed and IsOpen()), on an open connection. It writes
//    the request once, reads the response with the limits and codes of
//    http_transport.h (Request::max_body_bytes, whole-request deadline) and
//    closes the connection. Any failure after the write began has
//    request_sent=true.
//  * AsyncStream() is AsyncExchange() for Transport::Stream(), on a
//    connection that carries nothing else: a 2xx body goes to `on_bytes`
//    piece by piece as it arrives (the Response passed to `done` then has an
//    empty body), a body of any other status is read whole within
//    Request::max_body_bytes. `idle` bounds every wait for bytes, the header
//    included (kDeadlineExceeded). `on_bytes` returning false stops the
//    reading; `done` then gets the Response. The connection is closed at the
//    end; Close() from the io_context's thread ends a stream early.

#ifndef SLURMOP_CONTROLLER_HTTP_ONE_SHOT_CONNECTION_H_
#define SLURMOP_CONTROLLER_HTTP_ONE_SHOT_CONNECTION_H_

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/http/http_transport.h"

namespace slurmop::http {

// Where a request goes: scheme://host:port, split.
struct Endpoint {
  bool https = false;
  std::string host;         // without brackets for IPv6 literals
  std::string port;         // explicit or the scheme's default
  std::string host_header;  // the URL's authority, as cpprest sends it
  std::string key;          // "scheme://host:port", the pool's key
};

struct SplitTarget {
  Endpoint endpoint;
  std::string target;  // "/path?query", fragment removed
};

// Splits an absolute http(s) URL. kInvalidArgument if it is not one.
absl::StatusOr<SplitTarget> SplitEndpointUrl(const std::string& url);

struct TlsMaterial;

class OneShotConnection : public std::enable_shared_from_this<OneShotConnection> {
 public:
  using Clock = std::chrono::steady_clock;
  using OpenCallback = std::function<void(absl::Status)>;
  using ExchangeCallback = std::function<void(absl::StatusOr<Response>)>;
  // Returns false to stop reading the stream.
  using BytesCallback = std::function<bool(std::string_view bytes)>;

  // `tls_context` and `tls` are used for https endpoints and must outlive
  // the connection.
  OneShotConnection(boost::asio::io_context& io, boost::asio::ssl::context& tls_context,
                    const TlsMaterial& tls, Endpoint endpoint, bool keep_alive = false);
  ~OneShotConnection();
  OneShotConnection(const OneShotConnection&) = delete;
  OneShotConnection& operator=(const OneShotConnection&) = delete;

  void AsyncOpen(Clock::time_point deadline, OpenCallback done);
  bool LooksOpen() const;
  // The socket is open (nothing checked with the peer).
  bool IsOpen() const;
  // `split` is the request's URL (its Host header and target).
  void AsyncExchange(const Request& request, const SplitTarget& split, Clock::time_point deadline,
                     ExchangeCallback done);
  void AsyncStream(const Request& request, const SplitTarget& split, std::chrono::milliseconds idle,
                   BytesCallback on_bytes, ExchangeCallback done);
  // Closes the socket (cancelling any operation). Idempotent.
  void Close();
  // The last AsyncExchange() read the header of an answer (a failure after
  // that is not the peer closing an idle connection under the request).
  bool answered() const { return answered_; }

  const Endpoint& endpoint() const { return endpoint_; }
  // When AsyncOpen() succeeded (meaningful only after it did).
  Clock::time_point opened_at() const { return opened_at_; }

 private:
  struct Exchange;
  struct StreamExchange;
  // The request message of `request` to `split`, with "Connection: close"
  // unless the connection is kept alive.
  void PrepareMessage(const Request& request, const SplitTarget& split,
                      boost::beast::http::request<boost::beast::http::string_body>& message) const;
  boost::beast::tcp_stream& tcp();
  const boost::beast::tcp_stream& tcp() const;
  void Connect(const boost::asio::ip::tcp::resolver::results_type& addresses,
               Clock::time_point deadline, OpenCallback done);
  void Handshake(Clock::time_point deadline, OpenCallback done);
  template <class Stream>
  void Write(Stream& stream, std::shared_ptr<Exchange> exchange);
  template <class Stream>
  void Read(Stream& stream, std::shared_ptr<Exchange> exchange);
  template <class Stream>
  void ReadBody(Stream& stream, std::shared_ptr<Exchange> exchange);
  // Closes the connection and reports the outcome of the exchange.
  void Finish(std::shared_ptr<Exchange> exchange, const boost::system::error_code& ec);
  template <class Stream>
  void WriteStream(Stream& stream, std::shared_ptr<StreamExchange> exchange);
  template <class Stream>
  void ReadStreamBody(Stream& stream, std::shared_ptr<StreamExchange> exchange);
  // Hands one read's body bytes on; false when the reading must stop (the
  // caller asked to, or an error body passed its limit: `limit_hit`).
  static bool TakeStreamBytes(StreamExchange& exchange, size_t count, bool& limit_hit);
  void FinishStream(std::shared_ptr<StreamExchange> exchange, const boost::system::error_code& ec);

  boost::asio::io_context& io_;
  const TlsMaterial& tls_;
  const Endpoint endpoint_;
  boost::asio::ip::tcp::resolver resolver_;
  std::optional<boost::beast::tcp_stream> plain_;                             // http
  std::optional<boost::beast::ssl_stream<boost::beast::tcp_stream>> secure_;  // https
  Clock::time_point opened_at_;
  const bool keep_alive_;
  bool exchanged_ = false;  // one-shot: it carried its request
  bool busy_ = false;       // an exchange is under way
  bool answered_ = false;   // the last exchange read an answer's header
};

}  // namespace slurmop::http

#endif  // SLURMOP_CONTROLLER_HTTP_ONE_SHOT_CONNECTION_H_
