// File: controller/http/one_shot_connection.cc
//
// OneShotConnection: see one_shot_connection.h for the contract. Boost
// errors arrive as error_code values (the non-throwing Asio/Beast
// overloads); nothing here throws.

#include "controller/http/one_shot_connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/http/tls_material.h"
#include "controller/http/url_parts.h"

namespace slurmop::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using error_code = boost::system::error_code;

// Response headers larger than this are refused (Beast's default is 8 KiB).
constexpr uint32_t kHeaderLimit = 256 * 1024;

absl::Status Failure(const error_code& ec, const std::string& what, bool request_sent) {
  if (ec == beast::error::timeout || ec == asio::error::timed_out) {
    return TransportError(absl::StatusCode::kDeadlineExceeded,
                          absl::StrCat("request timed out (", what, ")"), request_sent);
  }
  return TransportError(absl::StatusCode::kUnavailable, absl::StrCat(what, ": ", ec.message()),
                        request_sent);
}

absl::Status BodyOverLimit(size_t limit) {
  return TransportError(
      absl::StatusCode::kUnavailable,
      absl::StrCat("the answer's body is over the ", limit, "-byte limit for this kind of remote"),
      /*request_sent=*/true);
}

bool IsIpAddress(const std::string& host) {
  error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// The authority "host[:port]" split; IPv6 literals keep no brackets.
absl::Status SplitAuthority(const std::string& authority, bool https, Endpoint& out) {
  std::string host = authority;
  std::string port;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string::npos) return absl::InvalidArgumentError("bad IPv6 host");
    if (close + 1 < host.size()) {
      if (host[close + 1] != ':') return absl::InvalidArgumentError("bad host");
      port = host.substr(close + 2);
    }
    host = host.substr(1, close - 1);
  } else if (const size_t colon = host.rfind(':'); colon != std::string::npos) {
    port = host.substr(colon + 1);
    host.resize(colon);
  }
  if (host.empty()) return absl::InvalidArgumentError("URL without host");
  if (port.empty()) port = https ? "443" : "80";
  out.host = absl::AsciiStrToLower(host);
  out.port = port;
  out.host_header = authority;
  out.key = absl::StrCat(https ? "https://" : "http://", authority.front() == '[' ? "[" : "",
                         out.host, authority.front() == '[' ? "]" : "", ":", port);
  return absl::OkStatus();
}

Headers LowerCaseHeaders(const bhttp::fields& fields) {
  Headers out;
  for (const auto& field : fields) {
    std::string name = absl::AsciiStrToLower(std::string(field.name_string()));
    auto [it, inserted] = out.emplace(std::move(name), std::string(field.value()));
    if (!inserted) absl::StrAppend(&it->second, ", ", std::string(field.value()));
  }
  return out;
}

}  // namespace

absl::StatusOr<SplitTarget> SplitEndpointUrl(const std::string& url) {
  absl::StatusOr<UrlParts> parts = SplitHttpUrl(url);
  if (!parts.ok()) return parts.status();
  if (absl::StrContains(parts->authority, '@')) {
    return absl::InvalidArgumentError(absl::StrCat("URL with user info: ", url));
  }
  SplitTarget split;
  split.endpoint.https = parts->https;
  if (absl::Status split_host = SplitAuthority(parts->authority, parts->https, split.endpoint);
      !split_host.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(split_host.message(), ": ", url));
  }
  split.target = std::move(parts->target);
  return split;
}

// What one read asks the socket for (most answers fit at once).
constexpr size_t kReadChunkBytes = 16 * 1024;

struct OneShotConnection::StreamExchange {
  bhttp::request<bhttp::string_body> request;
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::buffer_body> parser;
  std::vector<char> chunk = std::vector<char>(kReadChunkBytes);
  bool streaming = false;  // a 2xx answer: its body goes to on_bytes
  bool stopped = false;    // on_bytes asked to stop
  std::string error_body;  // the body of any other answer
  size_t max_body_bytes = 0;
  std::chrono::milliseconds idle{0};
  BytesCallback on_bytes;
  ExchangeCallback done;
};

struct OneShotConnection::Exchange {
  bhttp::request<bhttp::string_body> request;
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  size_t max_body_bytes = 0;
  ExchangeCallback done;
};

OneShotConnection::OneShotConnection(asio::io_context& io, asio::ssl::context& tls_context,
                                     const TlsMaterial& tls, Endpoint endpoint, bool keep_alive)
    : io_(io), tls_(tls), endpoint_(std::move(endpoint)), resolver_(io), keep_alive_(keep_alive) {
  if (endpoint_.https) {
    secure_.emplace(io, tls_context);
  } else {
    plain_.emplace(io);
  }
}

OneShotConnection::~OneShotConnection() { Close(); }

beast::tcp_stream& OneShotConnection::tcp() {
  return plain_.has_value() ? *plain_ : beast::get_lowest_layer(*secure_);
}

const beast::tcp_stream& OneShotConnection::tcp() const {
  return plain_.has_value() ? *plain_ : beast::get_lowest_layer(*secure_);
}

void OneShotConnection::Close() {
  error_code ignored;
  resolver_.cancel();
  auto& socket = tcp().socket();
  if (socket.is_open()) {
    socket.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }
}

void OneShotConnection::AsyncOpen(Clock::time_point deadline, OpenCallback done) {
  // The resolver has no timeout of its own: a timer cancels it.
  auto timer = std::make_shared<asio::steady_timer>(io_, deadline);
  std::weak_ptr<OneShotConnection> weak = weak_from_this();
  timer->async_wait([weak](const error_code& ec) {
    if (ec) return;  // cancelled: the resolution finished
    if (auto self = weak.lock()) self->resolver_.cancel();
  });
  resolver_.async_resolve(
      endpoint_.host, endpoint_.port,
      [self = shared_from_this(), timer, deadline, done = std::move(done)](
          const error_code& ec, const asio::ip::tcp::resolver::results_type& addresses) mutable {
        const bool timed_out = Clock::now() >= deadline;
        timer->cancel();
        if (ec) {
          return done(Failure(timed_out ? error_code(beast::error::timeout) : ec,
                              absl::StrCat("resolve ", self->endpoint_.host), false));
        }
        self->Connect(addresses, deadline, std::move(done));
      });
}

void OneShotConnection::Connect(const asio::ip::tcp::resolver::results_type& addresses,
                                Clock::time_point deadline, OpenCallback done) {
  tcp().expires_at(deadline);
  tcp().async_connect(addresses, [self = shared_from_this(), deadline, done = std::move(done)](
                                     const error_code& ec, const auto&) mutable {
    if (ec) {
      return done(Failure(ec, absl::StrCat("connect to ", self->endpoint_.key), false));
    }
    error_code ignored;
    self->tcp().socket().set_option(asio::ip::tcp::no_delay(true), ignored);
    if (!self->endpoint_.https) {
      self->opened_at_ = Clock::now();
      self->tcp().expires_never();
      return done(absl::OkStatus());
    }
    self->Handshake(deadline, std::move(done));
  });
}

void OneShotConnection::Handshake(Clock::time_point deadline, OpenCallback done) {
  const std::string& name = tls_.server_name.empty() ? endpoint_.host : tls_.server_name;
  if (!IsIpAddress(name)) SSL_set_tlsext_host_name(secure_->native_handle(), name.c_str());
  error_code ec;
  if (tls_.insecure_skip_tls_verify) {
    secure_->set_verify_mode(asio::ssl::verify_none, ec);
  } else {
    secure_->set_verify_mode(asio::ssl::verify_peer, ec);
    if (!ec) secure_->set_verify_callback(asio::ssl::host_name_verification(name), ec);
  }
  if (ec) return done(Failure(ec, "TLS setup", false));
  tcp().expires_at(deadline);
  secure_->async_handshake(
      asio::ssl::stream_base::client,
      [self = shared_from_this(), done = std::move(done)](const error_code& ec) mutable {
        if (ec) {
          return done(Failure(ec, absl::StrCat("TLS handshake with ", self->endpoint_.key), false));
        }
        self->opened_at_ = Clock::now();
        self->tcp().expires_never();
        done(absl::OkStatus());
      });
}

bool OneShotConnection::IsOpen() const { return tcp().socket().is_open(); }

bool OneShotConnection::LooksOpen() const {
  const auto& socket = tcp().socket();
  if (exchanged_ || busy_ || !socket.is_open()) return false;
  // (const_cast: native_handle() is not const in this Boost.)
  const int fd = const_cast<asio::ip::tcp::socket&>(socket).native_handle();
  tcp_info info{};
  socklen_t length = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return false;
  if (info.tcpi_state != TCP_ESTABLISHED) return false;
  if (endpoint_.https) return true;
  int waiting = 0;
  return ioctl(fd, FIONREAD, &waiting) == 0 && waiting == 0;
}

void OneShotConnection::AsyncExchange(const Request& request, const SplitTarget& split,
                                      Clock::time_point deadline, ExchangeCallback done) {
  if (exchanged_ || busy_ || !IsOpen()) {
    return done(TransportError(absl::StatusCode::kInternal, "connection already used", false));
  }
  exchanged_ = !keep_alive_;
  busy_ = true;
  answered_ = false;
  auto exchange = std::make_shared<Exchange>();
  exchange->done = std::move(done);
  exchange->max_body_bytes = request.max_body_bytes;
  // Beast reads into the buffer's free capacity, and an empty flat_buffer
  // offers 512 bytes: a 3 KB status answer took seven recvmsg calls on the
  // path of every write (#16 item 2). With room reserved, one or two.
  exchange->buffer.reserve(kReadChunkBytes);
  PrepareMessage(request, split, exchange->request);
  exchange->parser.header_limit(kHeaderLimit);
  // Beast enforces this for chunked and to-EOF bodies; Read() checks a
  // Content-Length itself (see there).
  exchange->parser.body_limit(static_cast<std::uint64_t>(request.max_body_bytes));

  tcp().expires_at(deadline);
  if (plain_.has_value()) {
    Write(*plain_, std::move(exchange));
  } else {
    Write(*secure_, std::move(exchange));
  }
}

void OneShotConnection::PrepareMessage(const Request& request, const SplitTarget& split,
                                       bhttp::request<bhttp::string_body>& message) const {
  message.method_string(request.method);
  message.target(split.target);
  message.version(11);
  std::string content_type;
  for (const auto& [name, value] : request.headers) {
    if (absl::EqualsIgnoreCase(name, "content-type")) {
      content_type = value;
    } else if (!absl::EqualsIgnoreCase(name, "content-length")) {
      message.set(name, value);
    }
  }
  if (message.find(bhttp::field::host) == message.end()) {
    const bool named = endpoint_.https && !tls_.server_name.empty();
    message.set(bhttp::field::host, named ? tls_.server_name : split.endpoint.host_header);
  }
  if (!request.body.empty() && content_type.empty()) content_type = "application/octet-stream";
  if (!content_type.empty()) message.set(bhttp::field::content_type, content_type);
  if (!keep_alive_) message.set(bhttp::field::connection, "close");
  message.body() = request.body;
  message.prepare_payload();
}

template <class Stream>
void OneShotConnection::Write(Stream& stream, std::shared_ptr<Exchange> exchange) {
  // From here on the request may reach the server: request_sent=true.
  bhttp::async_write(
      stream, exchange->request,
      [self = shared_from_this(), &stream, exchange](const error_code& ec, size_t) mutable {
        if (ec) {
          self->Close();
          return exchange->done(Failure(ec, "sending the request", true));
        }
        self->Read(stream, std::move(exchange));
      });
}

// Beast 1.74 compares a Content-Length with its (optional) body limit
// wrongly: a larger body passes. So the header is read first and its
// Content-Length checked here, and the body's size after each read.
template <class Stream>
void OneShotConnection::Read(Stream& stream, std::shared_ptr<Exchange> exchange) {
  bhttp::async_read_header(
      stream, exchange->buffer, exchange->parser,
      [self = shared_from_this(), &stream, exchange](const error_code& ec, size_t) mutable {
        // Beast may refuse a Content-Length over the parser's limit while
        // reading the header: that too is an answer.
        self->answered_ = !ec || ec == bhttp::error::body_limit;
        if (ec) return self->Finish(std::move(exchange), ec);
        const boost::optional<std::uint64_t> length = exchange->parser.content_length();
        if (length.has_value() && *length > exchange->max_body_bytes) {
          return self->Finish(std::move(exchange), bhttp::error::body_limit);
        }
        self->ReadBody(stream, std::move(exchange));
      });
}

template <class Stream>
void OneShotConnection::ReadBody(Stream& stream, std::shared_ptr<Exchange> exchange) {
  if (exchange->parser.is_done()) return Finish(std::move(exchange), {});
  bhttp::async_read_some(
      stream, exchange->buffer, exchange->parser,
      [self = shared_from_this(), &stream, exchange](const error_code& ec, size_t) mutable {
        if (!ec && exchange->parser.get().body().size() > exchange->max_body_bytes) {
          return self->Finish(std::move(exchange), bhttp::error::body_limit);
        }
        if (ec) return self->Finish(std::move(exchange), ec);
        self->ReadBody(stream, std::move(exchange));
      });
}

void OneShotConnection::Finish(std::shared_ptr<Exchange> exchange, const error_code& ec) {
  busy_ = false;
  // Reused only after a complete answer whose frame was not the connection's
  // end, with nothing read beyond it.
  const bool reusable = keep_alive_ && !ec && exchange->parser.is_done() &&
                        exchange->parser.get().keep_alive() && !exchange->parser.get().need_eof() &&
                        exchange->buffer.size() == 0;
  if (reusable) {
    tcp().expires_never();
  } else {
    Close();
  }
  if (ec == bhttp::error::body_limit)
    return exchange->done(BodyOverLimit(exchange->max_body_bytes));
  if (ec) return exchange->done(Failure(ec, "reading the response", true));
  bhttp::response<bhttp::string_body> message = exchange->parser.release();
  Response response;
  response.status = static_cast<int>(message.result_int());
  response.headers = LowerCaseHeaders(message.base());
  response.body = std::move(message.body());
  exchange->done(std::move(response));
}

void OneShotConnection::AsyncStream(const Request& request, const SplitTarget& split,
                                    std::chrono::milliseconds idle, BytesCallback on_bytes,
                                    ExchangeCallback done) {
  if (exchanged_ || busy_ || !IsOpen()) {
    return done(TransportError(absl::StatusCode::kInternal, "connection already used", false));
  }
  exchanged_ = true;  // nothing follows a stream on its connection
  busy_ = true;
  answered_ = false;
  auto exchange = std::make_shared<StreamExchange>();
  exchange->done = std::move(done);
  exchange->on_bytes = std::move(on_bytes);
  exchange->max_body_bytes = request.max_body_bytes;
  exchange->idle = idle;
  exchange->buffer.reserve(kReadChunkBytes);
  PrepareMessage(request, split, exchange->request);
  exchange->parser.header_limit(kHeaderLimit);
  // A watch's body has no end; the caller bounds its lines, and
  // TakeStreamBytes() the body of an error answer. (Not boost::none: Beast
  // 1.74 compares a Content-Length with an unset limit as over it.)
  exchange->parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  tcp().expires_after(idle);
  if (plain_.has_value()) {
    WriteStream(*plain_, std::move(exchange));
  } else {
    WriteStream(*secure_, std::move(exchange));
  }
}

template <class Stream>
void OneShotConnection::WriteStream(Stream& stream, std::shared_ptr<StreamExchange> exchange) {
  bhttp::async_write(
      stream, exchange->request,
      [self = shared_from_this(), &stream, exchange](const error_code& ec, size_t) mutable {
        if (ec) return self->FinishStream(std::move(exchange), ec);
        self->tcp().expires_after(exchange->idle);
        bhttp::async_read_header(
            stream, exchange->buffer, exchange->parser,
            [self, &stream, exchange](const error_code& ec, size_t) mutable {
              self->answered_ = !ec;
              if (ec) return self->FinishStream(std::move(exchange), ec);
              const unsigned status = exchange->parser.get().result_int();
              exchange->streaming = status >= 200 && status < 300;
              const boost::optional<std::uint64_t> length = exchange->parser.content_length();
              if (!exchange->streaming && length.has_value() &&
                  *length > exchange->max_body_bytes) {
                return self->FinishStream(std::move(exchange), bhttp::error::body_limit);
              }
              self->ReadStreamBody(stream, std::move(exchange));
            });
      });
}

template <class Stream>
void OneShotConnection::ReadStreamBody(Stream& stream, std::shared_ptr<StreamExchange> exchange) {
  if (exchange->parser.is_done()) return FinishStream(std::move(exchange), {});
  auto& body = exchange->parser.get().body();
  body.data = exchange->chunk.data();
  body.size = exchange->chunk.size();
  tcp().expires_after(exchange->idle);
  bhttp::async_read_some(
      stream, exchange->buffer, exchange->parser,
      [self = shared_from_this(), &stream, exchange](error_code ec, size_t) mutable {
        if (ec == bhttp::error::need_buffer) ec = {};  // the chunk is full: hand it on
        const size_t count = exchange->chunk.size() - exchange->parser.get().body().size;
        bool limit_hit = false;
        if (!TakeStreamBytes(*exchange, count, limit_hit)) {
          return self->FinishStream(std::move(exchange),
                                    limit_hit ? bhttp::error::body_limit : error_code{});
        }
        if (ec) return self->FinishStream(std::move(exchange), ec);
        self->ReadStreamBody(stream, std::move(exchange));
      });
}

bool OneShotConnection::TakeStreamBytes(StreamExchange& exchange, size_t count, bool& limit_hit) {
  if (count == 0) return true;
  const std::string_view bytes(exchange.chunk.data(), count);
  if (exchange.streaming) {
    exchange.stopped = !exchange.on_bytes(bytes);
    return !exchange.stopped;
  }
  limit_hit = exchange.error_body.size() + count > exchange.max_body_bytes;
  if (!limit_hit) exchange.error_body.append(bytes);
  return !limit_hit;
}

void OneShotConnection::FinishStream(std::shared_ptr<StreamExchange> exchange,
                                     const error_code& ec) {
  busy_ = false;
  Close();
  if (ec == bhttp::error::body_limit)
    return exchange->done(BodyOverLimit(exchange->max_body_bytes));
  if (ec) {
    return exchange->done(Failure(ec, answered_ ? "reading the stream" : "sending the request",
                                  /*request_sent=*/true));
  }
  Response response;
  response.status = static_cast<int>(exchange->parser.get().result_int());
  response.headers = LowerCaseHeaders(exchange->parser.get().base());
  response.body = std::move(exchange->error_body);
  exchange->done(std::move(response));
}

}  // namespace slurmop::http
