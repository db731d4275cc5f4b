// File: controller/http/transport_error.cc
//
// TransportError() and MayHaveBeenDelivered() from http_transport.h.
//
// Contract: TransportError() builds an absl::Status of any non-OK code (the
// transport uses kUnavailable, kDeadlineExceeded and kCancelled) carrying
// one payload under kRequestSentPayloadUrl whose value is "1" (the request
// may have reached the server) or "0" (it certainly did not). MayHaveBeenDelivered() is
// conservative: it answers false only for a Status that says "0"; an OK
// Status (delivered) or a Status without the payload (unknown) answers true.

#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "controller/http/http_transport.h"

namespace slurmop::http {
namespace {

constexpr char kRequestSentPayloadUrl[] = "type.slurmop.dev/http.RequestSent";

}  // namespace

absl::Status TransportError(absl::StatusCode code, std::string message, bool request_sent) {
  absl::Status status(code, std::move(message));
  if (!status.ok()) status.SetPayload(kRequestSentPayloadUrl, absl::Cord(request_sent ? "1" : "0"));
  return status;
}

bool MayHaveBeenDelivered(const absl::Status& status) {
  if (status.ok()) return true;
  auto sent = status.GetPayload(kRequestSentPayloadUrl);
  if (!sent.has_value()) return true;
  return *sent != "0";
}

}  // namespace slurmop::http
