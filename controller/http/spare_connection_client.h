// File: controller/http/spare_connection_client.h
//
// SpareConnectionClient: sends a request on a connection that has never
// carried one and is closed after it (OneShotConnection, Boost.Beast), taken
// when possible from a "spare" opened ahead of time, so that a
// non-replay-safe request (a Slurm submit) neither pays for a fresh
// connection on its critical path nor can be re-sent by the transport.
//
// Contract:
//  * Send() follows the Transport contract of http_transport.h (status
//    codes, request_sent, Request::timeout as a whole-request deadline,
//    Request::max_body_bytes). The request is written exactly once, on one
//    connection; a failure after the write began has request_sent=true and
//    is never retried here. Thread-safe; it blocks the caller until the
//    response (or failure) while the I/O runs on one background thread.
//  * At most one spare per endpoint (scheme://host:port), and only for an
//    endpoint that had a request in the last `keep_spares_for` (or was
//    Prepare()d): after a request takes the spare, or finds none, another is
//    opened in the background once that request has finished. A spare older
//    than `spare_max_age`, or whose peer has closed it (checked without
//    blocking just before use and at each sweep), is closed and never used;
//    the request then opens its own connection, as does every request when
//    `keep_spares` is false. Failing to open a spare is nobody's error (it
//    is retried later with a backoff of up to 30 s).
//  * TLS as CpprestTransport (tls_material.h): the trust store is the
//    system's or exactly the given CAs, the peer is verified with its host
//    name (TlsOptions::server_name, else the URL host) unless
//    insecure_skip_tls_verify, and `server_name` is also the SNI name and
//    the Host header.
//  * The destructor closes every spare and stops and joins the I/O thread;
//    no Send() may be running then.

#ifndef SLURMOP_CONTROLLER_HTTP_SPARE_CONNECTION_CLIENT_H_
#define SLURMOP_CONTROLLER_HTTP_SPARE_CONNECTION_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "controller/http/cpprest_transport.h"
#include "controller/http/http_transport.h"

namespace slurmop::http {

struct SpareConnectionOptions {
  TlsOptions tls;
  bool keep_spares = true;
  std::chrono::milliseconds spare_max_age{30000};
  std::chrono::milliseconds keep_spares_for{600000};
  // The time allowed to open (connect and TLS handshake) a spare.
  std::chrono::milliseconds open_timeout{10000};
};

class SpareConnectionClient {
 public:
  // Counters since creation, for tests and logs.
  struct Stats {
    int64_t spares_opened = 0;      // opened and kept as a spare
    int64_t spares_used = 0;        // requests sent on a spare
    int64_t spares_discarded = 0;   // closed unused: too old or closed by the peer
    int64_t fresh_connections = 0;  // requests that opened their own connection
  };

  // Loads the TLS material (errors as CpprestTransport::Create()).
  static absl::StatusOr<std::unique_ptr<SpareConnectionClient>> Create(
      const SpareConnectionOptions& options);
  ~SpareConnectionClient();
  SpareConnectionClient(const SpareConnectionClient&) = delete;
  SpareConnectionClient& operator=(const SpareConnectionClient&) = delete;

  absl::StatusOr<Response> Send(const Request& request);
  // Keeps a spare for the endpoint of `url` from now on, as if a request had
  // just been sent there. Invalid URLs are ignored.
  void Prepare(const std::string& url);
  Stats stats() const;

 private:
  class Impl;
  explicit SpareConnectionClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace slurmop::http

#endif  // SLURMOP_CONTROLLER_HTTP_SPARE_CONNECTION_CLIENT_H_
