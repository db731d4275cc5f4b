// File: controller/http/spare_connection_transport.h
//
// SpareConnectionTransport: a Transport that routes the requests a transport
// must never re-send (POST and PATCH without Request::replay_safe, e.g. the
// Slurm submit through Agent Platform) to a SpareConnectionClient, which
// sends each on a connection opened ahead of time and never reused, and
// everything else (and every Stream() and SendReading()) to another
// Transport (CpprestTransport, with its pooled keep-alive connections).
//
// Contract: as http_transport.h; thread-safe when both parts are.

#ifndef SLURMOP_CONTROLLER_HTTP_SPARE_CONNECTION_TRANSPORT_H_
#define SLURMOP_CONTROLLER_HTTP_SPARE_CONNECTION_TRANSPORT_H_

#include <memory>

#include "controller/http/http_transport.h"
#include "controller/http/spare_connection_client.h"

namespace slurmop::http {

class SpareConnectionTransport final : public Transport {
 public:
  SpareConnectionTransport(std::unique_ptr<Transport> others,
                           std::unique_ptr<SpareConnectionClient> non_replay_safe);

  absl::StatusOr<Response> Send(const Request& request) override;
  absl::StatusOr<Response> Stream(const Request& request, const LineCallback& on_line,
                                  std::shared_ptr<StreamHandle> handle) override;
  absl::StatusOr<Response> SendReading(const Request& request,
                                       const BodyReader& read_body) override;

  // True for the requests sent through the SpareConnectionClient.
  static bool MustNotBeResent(const Request& request);

 private:
  const std::unique_ptr<Transport> others_;
  const std::unique_ptr<SpareConnectionClient> non_replay_safe_;
};

}  // namespace slurmop::http

#endif  // SLURMOP_CONTROLLER_HTTP_SPARE_CONNECTION_TRANSPORT_H_
