// File: controller/kube/watch_event.cc
//
// See watch_event.h for the contract.

#include "controller/kube/watch_event.h"

#include <utility>

#include "controller/common/bounded_json.h"
#include "controller/kube/errors.h"

namespace slurmop::kube {

absl::StatusOr<WatchEvent> ParseWatchLine(std::string_view line) {
  nlohmann::json document = ParseBoundedJson(line, kMaxKubeAnswerJsonDepth);
  if (!document.is_object()) {
    return absl::InternalError("malformed watch event: not a JSON object");
  }
  auto type = document.find("type");
  auto object = document.find("object");
  if (type == document.end() || !type->is_string() || object == document.end() ||
      !object->is_object()) {
    return absl::InternalError("malformed watch event: missing type or object");
  }
  WatchEvent event;
  event.type = type->get<std::string>();
  if (event.type != kAdded && event.type != kModified && event.type != kDeleted &&
      event.type != kBookmark && event.type != kError) {
    return absl::InternalError("malformed watch event: unknown type " + event.type);
  }
  event.object = std::move(*object);
  return event;
}

absl::Status StatusFromErrorEvent(const WatchEvent& event) {
  if (event.type != kError) return absl::OkStatus();
  return StatusFromKubeStatus(event.object);
}

bool IsGone(const WatchEvent& event) {
  return event.type == kError && IsGone(StatusFromErrorEvent(event));
}

}  // namespace slurmop::kube
