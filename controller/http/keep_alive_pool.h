// File: controller/http/keep_alive_pool.h
//
// KeepAliveConnectionPool: sends requests on keep-alive HTTP/1.1 connections
// (OneShotConnection in keep-alive mode, Boost.Beast) whose I/O runs on the
// calling thread. Each connection owns an io_context, which the caller runs
// while its exchange is under way, so a request costs no hand-off between
// threads. cpprestsdk passes each request through its I/O threads (the
// headers and the body are two writes, each completed on the pool) and a
// task continuation before the caller wakes: about 0.5 ms per write on the
// 2-core bench machine (bench/README.md, "Kubernetes writes on the calling
// thread").
//
// Contract:
//  * Send() follows the Transport contract of http_transport.h (status
//    codes, request_sent, Request::timeout as a whole-request deadline,
//    Request::max_body_bytes). Give it only requests that may reach the
//    server twice (not SpareConnectionTransport::MustNotBeResent()): a
//    request that fails with kUnavailable on a reused idle connection before
//    any answer came (the server closed it meanwhile) is sent once more on a
//    new connection, as cpprestsdk does on its pooled connections. One whose
//    answer came and was refused (over the body limit) is not.
//  * At most `max_idle_per_endpoint` idle connections per endpoint
//    (scheme://host:port). An idle connection older than `max_idle`, or that
//    no longer LooksOpen(), is closed instead of used. A connection serves
//    one caller at a time; Send() is thread-safe and never waits for
//    another caller's request.
//  * Stream() follows the Stream() contract of http_transport.h on a new
//    connection of its own, whose I/O runs on the calling thread: each line
//    reaches `on_line` on that thread as soon as its bytes are read, with no
//    hand-off between threads (a watch event reaches its informer directly).
//    Request::timeout is the time allowed without any byte (connecting
//    included); Cancel() on the handle is noticed within 50 ms. The
//    connection is closed when the stream ends, never pooled.
//  * TLS as CpprestTransport (tls_material.h): the trust store is the
//    system's or exactly the given CAs; the peer is verified with its host
//    name (TlsOptions::server_name, else the URL host) unless
//    insecure_skip_tls_verify; `server_name` is also the SNI name and the
//    Host header.

#ifndef SLURMOP_CONTROLLER_HTTP_KEEP_ALIVE_POOL_H_
#define SLURMOP_CONTROLLER_HTTP_KEEP_ALIVE_POOL_H_

#include <chrono>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "controller/http/cpprest_transport.h"
#include "controller/http/http_transport.h"

namespace slurmop::http {

struct KeepAlivePoolOptions {
  TlsOptions tls;
  size_t max_idle_per_endpoint = 16;
  std::chrono::milliseconds max_idle{30000};
};

class KeepAliveConnectionPool {
 public:
  struct Stats {
    int64_t opened = 0;        // connections opened
    int64_t reused = 0;        // requests sent on an idle connection
    int64_t resent = 0;        // requests sent again after a reused connection failed
    int64_t idle_dropped = 0;  // idle connections closed unused (aged, closed by the peer, excess)
  };

  // Loads the TLS material (errors as CpprestTransport::Create()).
  static absl::StatusOr<std::unique_ptr<KeepAliveConnectionPool>> Create(
      const KeepAlivePoolOptions& options);
  ~KeepAliveConnectionPool();
  KeepAliveConnectionPool(const KeepAliveConnectionPool&) = delete;
  KeepAliveConnectionPool& operator=(const KeepAliveConnectionPool&) = delete;

  absl::StatusOr<Response> Send(const Request& request);
  absl::StatusOr<Response> Stream(const Request& request, const LineCallback& on_line,
                                  std::shared_ptr<StreamHandle> handle);
  Stats stats() const;

 private:
  class Impl;
  explicit KeepAliveConnectionPool(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A Transport that sends the writes that may be re-sent (PUT, DELETE, and
// POST or PATCH with Request::replay_safe) through Send() on a
// KeepAliveConnectionPool, with `streams_on_pool` every Stream() through the
// pool's Stream() too, and everything else (GETs, the requests that must
// never be re-sent, SendReading()) to `others`.
class KeepAliveWritesTransport final : public Transport {
 public:
  KeepAliveWritesTransport(std::unique_ptr<Transport> others,
                           std::unique_ptr<KeepAliveConnectionPool> writes,
                           bool streams_on_pool = false);

  absl::StatusOr<Response> Send(const Request& request) override;
  absl::StatusOr<Response> Stream(const Request& request, const LineCallback& on_line,
                                  std::shared_ptr<StreamHandle> handle) override;
  absl::StatusOr<Response> SendReading(const Request& request,
                                       const BodyReader& read_body) override;

  // True for the requests sent on the pool.
  static bool GoesOnThePool(const Request& request);
  const KeepAliveConnectionPool& pool() const { return *writes_; }

 private:
  const std::unique_ptr<Transport> others_;
  const std::unique_ptr<KeepAliveConnectionPool> writes_;
  const bool streams_on_pool_;
};

}  // namespace slurmop::http

#endif  // SLURMOP_CONTROLLER_HTTP_KEEP_ALIVE_POOL_H_
