// File: controller/reconcile/work_priority.cc
//
// See work_priority.h for the contract.

#include "controller/reconcile/work_priority.h"

#include "controller/kube/watch_event.h"

namespace slurmop::reconcile {
namespace {

bool BeingDeleted(const nlohmann::json& object) {
  auto metadata = object.find("metadata");
  return metadata != object.end() && metadata->is_object() &&
         metadata->contains("deletionTimestamp");
}

// As stage.cc's HasSlurmJob: a non-zero status.jobId. A value that is not a
// number is read as none (urgent at worst: the reconcile reads it properly).
bool HasSlurmJob(const nlohmann::json& object) {
  auto status = object.find("status");
  if (status == object.end() || !status->is_object()) return false;
  auto job_id = status->find("jobId");
  return job_id != status->end() && job_id->is_number_integer() && job_id->get<int64_t>() != 0;
}

}  // namespace

kube::WorkQueue::Priority WorkPriorityOf(std::string_view event_type,
                                         const nlohmann::json& slurmjob) {
  using Priority = kube::WorkQueue::Priority;
  if (event_type == kube::kDeleted || !slurmjob.is_object()) return Priority::kNormal;
  if (BeingDeleted(slurmjob) || HasSlurmJob(slurmjob)) return Priority::kNormal;
  return Priority::kUrgent;
}

}  // namespace slurmop::reconcile
