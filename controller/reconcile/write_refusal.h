// File: controller/reconcile/write_refusal.h
//
// A write the API server refused for good, told to the owner of the object it was about.
//
// A 403 (RBAC, an admission policy) or a 400/422 (the object as written is invalid) does not
// pass by retrying, unlike a conflict, a 5xx or no answer. Retried with only a log line, it
// leaves the object stuck with nothing on it to say why; and its status cannot say so, since
// the refused write may be that very status. So the controllers record a Warning Event
// `WriteRefused`, which goes by the Events API, quoting the API server's answer.
//
// Contract:
//  * RefusedForGood(s): s is PermissionDenied or InvalidArgument (403, 400, 422).
//  * WriteRefusedEvent(s, what, kind): the Warning Event, naming the write (`what`, e.g.
//    "status write"), the object's kind and the API server's message.

#ifndef SLURMOP_CONTROLLER_RECONCILE_WRITE_REFUSAL_H_
#define SLURMOP_CONTROLLER_RECONCILE_WRITE_REFUSAL_H_

#include <string_view>

#include "absl/status/status.h"
#include "controller/reconcile/job_status.h"

namespace slurmop::reconcile {

bool RefusedForGood(const absl::Status& s);

EventSpec WriteRefusedEvent(const absl::Status& s, std::string_view what, std::string_view kind);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_WRITE_REFUSAL_H_
