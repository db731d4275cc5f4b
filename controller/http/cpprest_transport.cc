// File: controller/http/cpprest_transport.cc
//
// CpprestTransport: see cpprest_transport.h for the contract. cpprestsdk and
// Boost exceptions are caught in this file and turned into Status values.

#include "controller/http/cpprest_transport.h"

#include <cpprest/http_client.h>
#include <glog/logging.h>
#include <pplx/threadpool.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/http/bounded_body_buffer.h"
#include "controller/http/line_splitter.h"
#include "controller/http/pplx_wait.h"
#include "controller/http/tls_material.h"
#include "controller/http/url_parts.h"

namespace slurmop::http {
namespace {

using web::http::client::http_client;
using web::http::client::http_client_config;

constexpr std::chrono::milliseconds kDefaultTimeout{30000};
constexpr size_t kReadBufferSize = 64 * 1024;
// How far a body read as it arrives (SendReading) may be buffered ahead of
// its reader: a few of cpprest's 64 KiB chunks.
constexpr size_t kReadAheadBytes = 256 * 1024;

struct SplitUrl {
  std::string base;      // scheme://authority
  std::string resource;  // /path?query
  bool https = false;
};

absl::StatusOr<SplitUrl> Split(const std::string& url) {
  absl::StatusOr<UrlParts> parts = SplitHttpUrl(url);
  if (!parts.ok()) return parts.status();
  return SplitUrl{std::move(parts->base), std::move(parts->target), parts->https};
}

// cpprest reports the phase that failed only in the message. Failures before
// the request was written cannot have reached the server.
bool RequestMayHaveBeenSent(const std::string& what) {
  static constexpr const char* kBeforeSending[] = {"resolv",        "Failed to connect",
                                                   "SSL handshake", "Request canceled by user",
                                                   "proxy",         "The method string is invalid"};
  for (const char* marker : kBeforeSending) {
    if (what.find(marker) != std::string::npos) return false;
  }
  return true;
}

absl::Status StatusFromException(std::exception_ptr error, StopReason reason) {
  std::string what = "unknown error";
  int code = 0;
  bool task_cancelled = false;
  try {
    std::rethrow_exception(error);
  } catch (const web::http::http_exception& e) {
    what = e.what();
    code = e.error_code().value();
  } catch (const web::uri_exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid URL: ", e.what()));
  } catch (const pplx::task_canceled&) {
    what = "request cancelled";
    task_cancelled = true;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  const bool sent = RequestMayHaveBeenSent(what);
  switch (reason) {
    case StopReason::kCancelled:
      return TransportError(absl::StatusCode::kCancelled, "request cancelled", sent);
    case StopReason::kDeadline:
      return TransportError(absl::StatusCode::kDeadlineExceeded, "request timed out", sent);
    case StopReason::kNone:
      break;
  }
  if (code == static_cast<int>(std::errc::timed_out)) {
    return TransportError(absl::StatusCode::kDeadlineExceeded, absl::StrCat("timed out: ", what),
                          sent);
  }
  if (task_cancelled) return TransportError(absl::StatusCode::kCancelled, what, sent);
  return TransportError(absl::StatusCode::kUnavailable, what, sent);
}

absl::Status NotWoundDown(StopReason reason) {
  return reason == StopReason::kCancelled
             ? TransportError(absl::StatusCode::kCancelled, "request cancelled", true)
             : TransportError(absl::StatusCode::kDeadlineExceeded, "request timed out", true);
}

absl::Status OverLimit(const std::string& what, size_t limit) {
  return TransportError(absl::StatusCode::kUnavailable,
                        absl::StrCat("the answer's ", what, " is over the ", limit,
                                     "-byte limit for this kind of remote"),
                        /*request_sent=*/true);
}

// Reads the body of `http_response` as it arrives, straight into one string.
// cpprest's own extract_vector()/extract_string() hand the body over through
// a pplx task result, which get() copies, and the copy had to be made while
// the received bytes were still in cpprest's buffer: a 44 MB job list was
// held two or three times over. Here cpprest's producer-consumer buffer is
// drained as it fills (it frees each block once read), into a string
// reserved to the Content-Length when there is one: the body exists once.
// The bytes are copied as they are (no charset conversion), so any body,
// binary included, comes back unchanged (our bodies are JSON / UTF-8 text).
// A body over `max_bytes` is refused: a Content-Length over it before any
// byte is read (nothing is reserved for it), a body without one as soon as
// it passes the limit; `cts` is cancelled so that the connection is closed.
absl::StatusOr<std::string> ReadBody(const web::http::http_response& http_response,
                                     concurrency::streams::streambuf<uint8_t> source,
                                     pplx::cancellation_token_source& cts,
                                     const StreamHandle* handle,
                                     std::chrono::steady_clock::time_point deadline,
                                     size_t max_bytes) {
  auto body = std::make_shared<std::string>();
  if (const uint64_t length = http_response.headers().content_length(); length > 0) {
    if (length > max_bytes) {
      cts.cancel();
      return OverLimit(absl::StrCat("Content-Length (", length, ")"), max_bytes);
    }
    body->reserve(static_cast<size_t>(length));
  }
  // With nothing buffered, one byte is awaited here, so that reaching the
  // end never grows `body` past its reserved size.
  auto one = std::make_shared<uint8_t>(0);
  for (;;) {
    const size_t available = std::min(source.in_avail(), max_bytes - body->size());
    const size_t old_size = body->size();
    uint8_t* target = one.get();
    size_t want = 1;
    if (available > 0) {
      body->resize(old_size + available);
      target = reinterpret_cast<uint8_t*>(body->data()) + old_size;
      want = available;
    }
    TaskOutcome<size_t> read(source.getn(target, want),
                             available > 0 ? std::shared_ptr<void>(body) : one);
    AwaitResult waited = AwaitTask(read, cts, handle, deadline);
    if (!waited.finished) return NotWoundDown(waited.reason);
    if (read.error()) return StatusFromException(read.error(), waited.reason);
    if (waited.reason != StopReason::kNone) return NotWoundDown(waited.reason);
    const size_t length = read.value();
    if (available > 0) {
      body->resize(old_size + length);
    } else if (length == 1) {
      body->push_back(static_cast<char>(*one));
    }
    if (length == 0) break;  // the server ended the body
    if (body->size() > max_bytes) {
      cts.cancel();
      return OverLimit("body", max_bytes);
    }
  }
  // The body may also have ended early (a dropped connection): cpprest
  // reports that through content_ready().
  TaskOutcome<web::http::http_response> ready(http_response.content_ready());
  AwaitResult waited = AwaitTask(ready, cts, handle, deadline);
  if (!waited.finished) return NotWoundDown(waited.reason);
  if (ready.error()) return StatusFromException(ready.error(), waited.reason);
  return std::move(*body);
}

// The body of a 2xx response as a BodySource (SendReading): cpprest's
// buffer drained as the reader asks, through one 64 KiB buffer, with the
// limits of ReadBody: a Content-Length over `max_bytes` is refused before
// any byte is read, a body without one once it passes the limit.
class ChunkedBody final : public BodySource {
 public:
  ChunkedBody(const web::http::http_response& response,
              concurrency::streams::streambuf<uint8_t> source, pplx::cancellation_token_source& cts,
              std::chrono::steady_clock::time_point deadline, size_t max_bytes)
      : response_(response),
        source_(std::move(source)),
        cts_(cts),
        deadline_(deadline),
        max_bytes_(max_bytes),
        buffer_(std::make_shared<std::vector<uint8_t>>(kReadBufferSize)) {
    if (const uint64_t length = response.headers().content_length(); length > max_bytes) {
      (void)Finish(OverLimit(absl::StrCat("Content-Length (", length, ")"), max_bytes));
    }
  }

  absl::StatusOr<size_t> Read(char* out, size_t capacity) override {
    if (done_) return final_;
    if (capacity == 0) return size_t{0};
    const size_t want =
        std::clamp<size_t>(source_.in_avail(), 1, std::min(capacity, buffer_->size()));
    TaskOutcome<size_t> read(source_.getn(buffer_->data(), want), buffer_);
    AwaitResult waited = AwaitTask(read, cts_, nullptr, deadline_);
    if (!waited.finished) return Finish(NotWoundDown(waited.reason));
    if (read.error()) return Finish(StatusFromException(read.error(), waited.reason));
    if (waited.reason != StopReason::kNone) return Finish(NotWoundDown(waited.reason));
    const size_t length = read.value();
    if (length == 0) {
      // A body that ended early (a dropped connection) shows in content_ready().
      TaskOutcome<web::http::http_response> ready(response_.content_ready());
      AwaitResult end = AwaitTask(ready, cts_, nullptr, deadline_);
      if (!end.finished) return Finish(NotWoundDown(end.reason));
      if (ready.error()) return Finish(StatusFromException(ready.error(), end.reason));
      return Finish(size_t{0});
    }
    read_ += length;
    if (read_ > max_bytes_) return Finish(OverLimit("body", max_bytes_));
    std::memcpy(out, buffer_->data(), length);
    return length;
  }

  // True once the end or a failure was reached (else the reader stopped early).
  bool done() const { return done_; }
  const absl::StatusOr<size_t>& final_status() const { return final_; }

 private:
  absl::StatusOr<size_t> Finish(absl::StatusOr<size_t> outcome) {
    done_ = true;
    final_ = std::move(outcome);
    if (!final_.ok()) cts_.cancel();  // close the connection
    return final_;
  }

  web::http::http_response response_;
  concurrency::streams::streambuf<uint8_t> source_;
  pplx::cancellation_token_source& cts_;
  const std::chrono::steady_clock::time_point deadline_;
  const size_t max_bytes_;
  std::shared_ptr<std::vector<uint8_t>> buffer_;
  size_t read_ = 0;
  bool done_ = false;
  absl::StatusOr<size_t> final_ = size_t{0};
};

Headers LowerCaseHeaders(const web::http::http_headers& headers) {
  Headers out;
  for (const auto& [name, value] : headers) out[absl::AsciiStrToLower(name)] = value;
  return out;
}

}  // namespace

class CpprestTransport::Impl {
 public:
  explicit Impl(TlsMaterial tls) : tls_(std::make_shared<const TlsMaterial>(std::move(tls))) {}

  absl::StatusOr<Response> Send(const Request& request) { return Send(request, nullptr); }
  // Send(), or SendReading() when `read_body` is not null.
  absl::StatusOr<Response> Send(const Request& request, const BodyReader* read_body);
  absl::StatusOr<Response> Stream(const Request& request, const LineCallback& on_line,
                                  const std::shared_ptr<StreamHandle>& handle);

 private:
  // The pooled client for `base` (connections kept alive and reused).
  std::shared_ptr<http_client> ClientFor(const std::string& base,
                                         std::chrono::milliseconds timeout);
  // A client of its own, whose connections are never reused by others.
  std::shared_ptr<http_client> NewClient(const std::string& base,
                                         std::chrono::milliseconds timeout) const;
  web::http::http_request BuildMessage(const Request& request, const SplitUrl& url) const;

  const std::shared_ptr<const TlsMaterial> tls_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<http_client>> clients_;  // guarded by mu_
};

std::shared_ptr<http_client> CpprestTransport::Impl::ClientFor(const std::string& base,
                                                               std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) timeout = kDefaultTimeout;
  const std::string key = absl::StrCat(base, "#", timeout.count());
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_.find(key);
  if (it != clients_.end()) return it->second;
  auto client = NewClient(base, timeout);
  clients_.emplace(key, client);
  return client;
}

std::shared_ptr<http_client> CpprestTransport::Impl::NewClient(
    const std::string& base, std::chrono::milliseconds timeout) const {
  if (timeout.count() <= 0) timeout = kDefaultTimeout;
  http_client_config config;
  config.set_timeout(timeout);
  config.set_validate_certificates(!tls_->insecure_skip_tls_verify);
  config.set_max_redirects(0);
  std::shared_ptr<const TlsMaterial> tls = tls_;
  config.set_ssl_context_callback([tls](boost::asio::ssl::context& context) {
    absl::Status configured = ConfigureSslContext(*tls, context);
    if (!configured.ok()) LOG(ERROR) << "TLS context setup failed: " << configured.message();
  });
  return std::make_shared<http_client>(web::uri(base), config);
}

web::http::http_request CpprestTransport::Impl::BuildMessage(const Request& request,
                                                             const SplitUrl& url) const {
  web::http::http_request message(request.method);
  message.set_request_uri(web::uri(url.resource));
  std::string content_type;
  for (const auto& [name, value] : request.headers) {
    if (absl::EqualsIgnoreCase(name, "content-type")) {
      content_type = value;
    } else if (!absl::EqualsIgnoreCase(name, "content-length")) {
      message.headers().add(name, value);
    }
  }
  if (url.https && !tls_->server_name.empty() && !message.headers().has("Host")) {
    // cpprest takes the SNI and verification name from the Host header.
    message.headers().add("Host", tls_->server_name);
  }
  if (!request.body.empty()) {
    message.set_body(request.body,
                     content_type.empty() ? std::string("application/octet-stream") : content_type);
  } else if (!content_type.empty()) {
    message.headers().set_content_type(content_type);
  }
  return message;
}

absl::StatusOr<Response> CpprestTransport::Impl::Send(const Request& request,
                                                      const BodyReader* read_body) {
  absl::StatusOr<SplitUrl> url = Split(request.url);
  if (!url.ok()) return url.status();
  const auto timeout = request.timeout.count() > 0 ? request.timeout : kDefaultTimeout;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pplx::cancellation_token_source cts;
  try {
    // cpprest silently re-sends a request once when a pooled (kept-alive)
    // connection turns out closed by the server, including the case where the
    // server processed it and then closed: for a POST that is a duplicate
    // submission. Non-idempotent requests therefore never use a pooled
    // connection (a fresh client has none to reuse), unless the caller says a
    // replay is harmless (Request::replay_safe).
    const bool idempotent =
        request.replay_safe || (request.method != "POST" && request.method != "PATCH");
    std::shared_ptr<http_client> client =
        idempotent ? ClientFor(url->base, timeout) : NewClient(url->base, timeout);
    web::http::http_request message = BuildMessage(request, *url);
    // A body read as it arrives is held at most kReadAheadBytes ahead of the
    // reader (bounded_body_buffer.h); a body read whole needs no bound.
    std::shared_ptr<BoundedBodyBuffer> bounded;
    if (read_body != nullptr) {
      bounded = std::make_shared<BoundedBodyBuffer>(kReadAheadBytes);
      message.set_response_stream(
          concurrency::streams::streambuf<uint8_t>(bounded).create_ostream());
    }
    TaskOutcome<web::http::http_response> head(client->request(message, cts.get_token()));
    AwaitResult waited = AwaitTask(head, cts, nullptr, deadline);
    if (!waited.finished) return NotWoundDown(waited.reason);
    if (head.error()) return StatusFromException(head.error(), waited.reason);
    web::http::http_response http_response = head.value();
    // With a response stream of ours, body() is not set: the body is in `bounded`.
    concurrency::streams::streambuf<uint8_t> body_buffer =
        bounded ? concurrency::streams::streambuf<uint8_t>(bounded)
                : http_response.body().streambuf();
    if (bounded) BoundedBodyBuffer::CloseWhenComplete(bounded, http_response);
    // However reading ends, a write still waiting for room ends with it (cpprest
    // holds the buffer until its request ends).
    absl::Cleanup stop_writes = [bounded] {
      if (bounded) (void)bounded->close(std::ios_base::in);
    };

    const int status = http_response.status_code();
    if (read_body != nullptr && status >= 200 && status < 300) {
      Response response;
      response.status = status;
      response.headers = LowerCaseHeaders(http_response.headers());
      ChunkedBody source(http_response, body_buffer, cts, deadline, request.max_body_bytes);
      (void)(*read_body)(source);  // its status is the caller's
      if (!source.done()) {
        cts.cancel();  // stopped early: the rest is not read, the connection not reused
      } else if (!source.final_status().ok()) {
        return source.final_status().status();
      }
      return response;
    }
    absl::StatusOr<std::string> body =
        ReadBody(http_response, body_buffer, cts, nullptr, deadline, request.max_body_bytes);
    if (!body.ok()) return body.status();

    Response response;
    response.status = http_response.status_code();
    response.headers = LowerCaseHeaders(http_response.headers());
    response.body = *std::move(body);
    return response;
  } catch (...) {
    return StatusFromException(std::current_exception(), StopReason::kNone);
  }
}

absl::StatusOr<Response> CpprestTransport::Impl::Stream(
    const Request& request, const LineCallback& on_line,
    const std::shared_ptr<StreamHandle>& handle) {
  absl::StatusOr<SplitUrl> url = Split(request.url);
  if (!url.ok()) return url.status();
  const auto timeout = request.timeout.count() > 0 ? request.timeout : kDefaultTimeout;
  pplx::cancellation_token_source cts;
  try {
    std::shared_ptr<http_client> client = ClientFor(url->base, timeout);
    TaskOutcome<web::http::http_response> head(
        client->request(BuildMessage(request, *url), cts.get_token()));
    AwaitResult waited = AwaitTask(head, cts, handle.get(), std::nullopt);
    if (!waited.finished) return NotWoundDown(waited.reason);
    if (head.error()) return StatusFromException(head.error(), waited.reason);
    web::http::http_response http_response = head.value();

    Response response;
    response.status = http_response.status_code();
    response.headers = LowerCaseHeaders(http_response.headers());
    if (response.status < 200 || response.status >= 300) {
      // Error responses are small and returned whole, as from Send().
      absl::StatusOr<std::string> body =
          ReadBody(http_response, http_response.body().streambuf(), cts, handle.get(),
                   std::chrono::steady_clock::now() + timeout, request.max_body_bytes);
      if (!body.ok()) return body.status();
      response.body = *std::move(body);
      return response;
    }

    concurrency::streams::streambuf<uint8_t> source = http_response.body().streambuf();
    LineSplitter splitter(on_line, request.max_body_bytes);
    auto buffer = std::make_shared<std::vector<uint8_t>>(kReadBufferSize);
    for (;;) {
      if (handle != nullptr && handle->cancelled()) {
        cts.cancel();
        return TransportError(absl::StatusCode::kCancelled, "stream cancelled", true);
      }
      // Take whatever is buffered; with nothing buffered, wait for one byte.
      const size_t want = std::clamp<size_t>(source.in_avail(), 1, buffer->size());
      TaskOutcome<size_t> read(source.getn(buffer->data(), want), buffer);
      waited = AwaitTask(read, cts, handle.get(), std::nullopt);
      if (!waited.finished) return NotWoundDown(waited.reason);
      if (read.error()) return StatusFromException(read.error(), waited.reason);
      if (waited.reason == StopReason::kCancelled) {
        return TransportError(absl::StatusCode::kCancelled, "stream cancelled", true);
      }
      const size_t length = read.value();
      if (length == 0) {  // the server ended the body
        splitter.Finish();
        return response;
      }
      const std::string_view bytes(reinterpret_cast<const char*>(buffer->data()), length);
      if (!splitter.Feed(bytes)) {
        cts.cancel();  // do not return the connection to the pool
        if (splitter.overflowed()) return OverLimit("line", request.max_body_bytes);
        return response;  // the caller stopped
      }
    }
  } catch (...) {
    cts.cancel();
    return StatusFromException(std::current_exception(), StopReason::kNone);
  }
}

absl::Status SetCpprestIoThreads(size_t threads) {
  if (threads == 0) return absl::InvalidArgumentError("the HTTP I/O pool needs at least 1 thread");
  try {
    crossplat::threadpool::initialize_with_threads(threads);
  } catch (const std::exception& e) {
    return absl::FailedPreconditionError(
        absl::StrCat("the HTTP I/O pool exists already (", e.what(), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CpprestTransport>> CpprestTransport::Create(
    const CpprestTransportOptions& options) {
  absl::StatusOr<TlsMaterial> tls = LoadTlsMaterial(options.tls);
  if (!tls.ok()) return tls.status();
  return std::unique_ptr<CpprestTransport>(
      new CpprestTransport(std::make_unique<Impl>(*std::move(tls))));
}

CpprestTransport::CpprestTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CpprestTransport::~CpprestTransport() = default;

absl::StatusOr<Response> CpprestTransport::Send(const Request& request) {
  return impl_->Send(request);
}

absl::StatusOr<Response> CpprestTransport::SendReading(const Request& request,
                                                       const BodyReader& read_body) {
  return impl_->Send(request, &read_body);
}

absl::StatusOr<Response> CpprestTransport::Stream(const Request& request,
                                                  const LineCallback& on_line,
                                                  std::shared_ptr<StreamHandle> handle) {
  return impl_->Stream(request, on_line, handle);
}

}  // namespace slurmop::http
