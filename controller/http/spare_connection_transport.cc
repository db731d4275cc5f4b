// File: controller/http/spare_connection_transport.cc
//
// SpareConnectionTransport: see spare_connection_transport.h.

#include "controller/http/spare_connection_transport.h"

#include <utility>

namespace slurmop::http {

SpareConnectionTransport::SpareConnectionTransport(
    std::unique_ptr<Transport> others, std::unique_ptr<SpareConnectionClient> non_replay_safe)
    : others_(std::move(others)), non_replay_safe_(std::move(non_replay_safe)) {}

bool SpareConnectionTransport::MustNotBeResent(const Request& request) {
  return !request.replay_safe && (request.method == "POST" || request.method == "PATCH");
}

absl::StatusOr<Response> SpareConnectionTransport::Send(const Request& request) {
  if (MustNotBeResent(request)) return non_replay_safe_->Send(request);
  return others_->Send(request);
}

absl::StatusOr<Response> SpareConnectionTransport::Stream(const Request& request,
                                                          const LineCallback& on_line,
                                                          std::shared_ptr<StreamHandle> handle) {
  return others_->Stream(request, on_line, std::move(handle));
}

absl::StatusOr<Response> SpareConnectionTransport::SendReading(const Request& request,
                                                               const BodyReader& read_body) {
  return others_->SendReading(request, read_body);
}

}  // namespace slurmop::http
