// File: controller/kube/watch_event.h
//
// Watch events as they arrive on a watch stream: one JSON document per line,
// {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}.
//
// Contract:
//  * ParseWatchLine() accepts exactly those five types with an object; any
//    other line is kInternal ("malformed watch event").
//  * An ERROR event's object is a metav1.Status; StatusFromErrorEvent() maps
//    it like an HTTP error (410 Expired/Gone -> kOutOfRange, see errors.h).
//  * IsGone(event) is true for an ERROR event whose Status is 410 or has
//    reason Expired or Gone ("too old resource version"): the informer must
//    relist.

#ifndef SLURMOP_CONTROLLER_KUBE_WATCH_EVENT_H_
#define SLURMOP_CONTROLLER_KUBE_WATCH_EVENT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace slurmop::kube {

struct WatchEvent {
  std::string type;  // ADDED MODIFIED DELETED BOOKMARK ERROR
  nlohmann::json object;
};

inline constexpr char kAdded[] = "ADDED";
inline constexpr char kModified[] = "MODIFIED";
inline constexpr char kDeleted[] = "DELETED";
inline constexpr char kBookmark[] = "BOOKMARK";
inline constexpr char kError[] = "ERROR";

absl::StatusOr<WatchEvent> ParseWatchLine(std::string_view line);

// The Status carried by an ERROR event (OkStatus for other events).
absl::Status StatusFromErrorEvent(const WatchEvent& event);

bool IsGone(const WatchEvent& event);

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_WATCH_EVENT_H_
