// File: controller/http/cpprest_transport.h
//
// CpprestTransport: the production http::Transport, built on cpprestsdk's
// Boost.Asio client. All cpprestsdk and Boost exceptions are caught inside
// and returned as absl::Status values (see http_transport.h for the codes).
//
// Contract:
//  * Thread-safe. One cpprest http_client (and so one connection pool) is kept
//    per (scheme://host:port, Request::timeout); a watch with a long timeout
//    therefore never shares a pooled connection with short requests.
//  * Request::timeout is cpprest's inactivity timeout (time without progress).
//    Send() also enforces it as a whole-request deadline. Stream() uses it only
//    as the inactivity limit, so a watch needs a timeout longer than its
//    `timeoutSeconds` (cpprest's 30 s default would cut watches).
//  * Send() moves the body from cpprest's receive buffer into Response::body
//    as it arrives (reserved to the Content-Length when there is one), so a
//    large answer is held once; the bytes are not converted.
//  * Stream() reads the body incrementally and splits it into lines
//    (LineSplitter). Cancel() on the handle interrupts a blocked read within
//    about 50 ms (the connection is closed); Stream() then returns kCancelled.
//    If the callback returns false the connection is closed as well and the
//    response is returned as OK.
//  * TLS: certificates are verified by default against `ca_file`/`ca_pem` if
//    given (then ONLY those CAs are trusted, as in client-go), else against
//    the system store. `server_name` replaces the URL host for SNI and for
//    hostname verification; cpprestsdk takes both from the Host header, so
//    requests carry `Host: <server_name>` (no port) in that case.
//  * Create() loads and checks all TLS material once (files are read at
//    creation and not re-read) and fails with kInvalidArgument if any of it
//    does not parse. Key material is never logged.

#ifndef SLURMOP_CONTROLLER_HTTP_CPPREST_TRANSPORT_H_
#define SLURMOP_CONTROLLER_HTTP_CPPREST_TRANSPORT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "controller/http/http_transport.h"

namespace slurmop::http {

// Sizes cpprestsdk's shared I/O pool (crossplat::threadpool), whose threads
// run the socket I/O, timers and task completions of every CpprestTransport
// request; callers wait for their requests on their own threads. cpprestsdk
// starts 40 when nothing is said, and each request's wake-ups then pass
// through dozens of threads competing for one scheduler lock (bench/README.md,
// "Where the operator's time goes"). Call once, before the first request.
// Errors: kInvalidArgument (0 threads), kFailedPrecondition (the pool was
// already made, by an earlier call or a request).
absl::Status SetCpprestIoThreads(size_t threads);

struct TlsOptions {
  // PEM CA bundle, as a file path or inline PEM text (both may be given).
  std::string ca_file;
  std::string ca_pem;
  // Client certificate chain and private key (PEM), file or inline.
  std::string client_cert_file;
  std::string client_cert_pem;
  std::string client_key_file;
  std::string client_key_pem;
  // Skips server certificate verification. Off by default.
  bool insecure_skip_tls_verify = false;
  // Name used for SNI and certificate verification instead of the URL host.
  std::string server_name;
};

struct CpprestTransportOptions {
  TlsOptions tls;
};

class CpprestTransport final : public Transport {
 public:
  // Validates and loads the TLS material. Errors: kInvalidArgument (bad or
  // unreadable PEM, key without certificate), kNotFound (missing file).
  static absl::StatusOr<std::unique_ptr<CpprestTransport>> Create(
      const CpprestTransportOptions& options);

  ~CpprestTransport() override;
  CpprestTransport(const CpprestTransport&) = delete;
  CpprestTransport& operator=(const CpprestTransport&) = delete;

  absl::StatusOr<Response> Send(const Request& request) override;
  absl::StatusOr<Response> Stream(const Request& request, const LineCallback& on_line,
                                  std::shared_ptr<StreamHandle> handle) override;
  // Reads a 2xx body through one 64 KiB buffer as `read_body` asks (the
  // same limits and deadline as Send()).
  absl::StatusOr<Response> SendReading(const Request& request,
                                       const BodyReader& read_body) override;

 private:
  class Impl;
  explicit CpprestTransport(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace slurmop::http

#endif  // SLURMOP_CONTROLLER_HTTP_CPPREST_TRANSPORT_H_
