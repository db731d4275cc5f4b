// File: controller/http/http_transport.h
//
// The HTTP seam. The Kubernetes client and the Agent Platform client speak
// HTTP only through HttpTransport, so tests swap in a fake and the real
// implementation (cpprestsdk) stays at the edge, where its exceptions are
// caught and turned into absl::Status values.
//
// Contract:
//  * Send() returns the response for any HTTP status (4xx/5xx are responses,
//    not errors). A non-OK Status means no complete response arrived:
//      kUnavailable       connection refused/reset, DNS, TLS failure, or the
//                         connection broke before the response was complete;
//      kDeadlineExceeded  the request timed out.
//    In both cases `request_sent` in the detail payload says whether the
//    request may have reached the server (see MayHaveBeenDelivered()).
//  * Stream() delivers the body of a 2xx response line by line ('\n'
//    separated, partial lines held back across chunks) until the server ends
//    it, the callback returns false, or Cancel() is called on the handle.
//    A non-2xx response is returned whole, as from Send().
//  * SendReading() is Send() whose 2xx body is not held: `read_body` is
//    called once, on the calling thread, and pulls the body through
//    BodySource::Read as it arrives (chunk sizes are the transport's). A
//    non-2xx body is returned whole, as from Send(), and `read_body` is not
//    called. If `read_body` returns before the end of the body, the rest is
//    not read and the connection is closed (never reused). The Response's
//    body is then empty. A transport failure while reading (a dropped
//    connection, the size limit) is what Read returns to `read_body` and
//    what SendReading returns; `read_body`'s own status is the caller's (it
//    is not returned). The default implementation calls Send() and hands the
//    whole body over as one chunk (test transports need nothing more).
//  * Size limits (everything a remote answers is untrusted): Send() refuses
//    a body larger than Request::max_body_bytes (a Content-Length over it is
//    refused before any byte of the body is read; a body without one is cut
//    off as soon as it passes the limit), and Stream() refuses a line longer
//    than it; either fails with kUnavailable ("... over the N-byte limit")
//    and closes the connection. Nothing is reserved beyond the limit.

#ifndef SLURMOP_CONTROLLER_HTTP_HTTP_TRANSPORT_H_
#define SLURMOP_CONTROLLER_HTTP_HTTP_TRANSPORT_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace slurmop::http {

// Header names are compared case-insensitively by the transport; store them
// in lower case for lookups in responses.
using Headers = std::map<std::string, std::string>;

// The default Request::max_body_bytes: 16 MiB. Callers that expect larger
// answers (a Slurm job list) raise it; token endpoints lower it.
inline constexpr size_t kDefaultMaxBodyBytes = size_t{16} << 20;

struct Request {
  std::string method = "GET";  // GET, POST, PUT, PATCH, DELETE
  std::string url;             // absolute: scheme://host:port/path?query
  Headers headers;
  std::string body;
  // Whole-request timeout; for Stream() the time allowed without any byte.
  std::chrono::milliseconds timeout{30000};
  // POST and PATCH are not sent on a pooled keep-alive connection, because a
  // transport may re-send a request once when such a connection turns out
  // closed, even after the server processed it. A caller sets this when a
  // second delivery is harmless (e.g. a patch carrying a resourceVersion
  // precondition: the replay fails with 409), to save a connection setup.
  bool replay_safe = false;
  // The largest response body Send() accepts, and the longest line Stream()
  // accepts (see the file comment).
  size_t max_body_bytes = kDefaultMaxBodyBytes;
};

struct Response {
  int status = 0;
  Headers headers;  // keys lower-cased
  std::string body;
};

// Cancels a running Stream() from another thread.
class StreamHandle {
 public:
  void Cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

 private:
  std::atomic<bool> cancelled_{false};
};

// A response body being read (SendReading). Read() copies up to `capacity`
// bytes into `buffer` and returns how many: 0 at the end of the body, at
// least 1 otherwise (it waits for them). After an error or the end, every
// further Read() returns the same.
class BodySource {
 public:
  virtual ~BodySource() = default;
  virtual absl::StatusOr<size_t> Read(char* buffer, size_t capacity) = 0;
};
using BodyReader = std::function<absl::Status(BodySource& body)>;

// Called once per complete line of a streamed body; return false to stop.
using LineCallback = std::function<bool(const std::string& line)>;

class Transport {
 public:
  virtual ~Transport() = default;
  virtual absl::StatusOr<Response> Send(const Request& request) = 0;
  // Returns the final response (its body empty when it was streamed) once the
  // stream ends; see the file comment.
  virtual absl::StatusOr<Response> Stream(const Request& request, const LineCallback& on_line,
                                          std::shared_ptr<StreamHandle> handle) = 0;
  // See the file comment.
  virtual absl::StatusOr<Response> SendReading(const Request& request, const BodyReader& read_body);
};

// True when a failed Send() may have delivered the request to the server
// (the connection broke or timed out after the request was written). A
// caller must not blindly repeat a non-idempotent request in that case.
bool MayHaveBeenDelivered(const absl::Status& status);

// Builds the transport-failure Status used by implementations.
absl::Status TransportError(absl::StatusCode code, std::string message, bool request_sent);

}  // namespace slurmop::http

#endif  // SLURMOP_CONTROLLER_HTTP_HTTP_TRANSPORT_H_
