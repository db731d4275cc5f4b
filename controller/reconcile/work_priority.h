// File: controller/reconcile/work_priority.h
//
// Which SlurmJobs go ahead in the work queue.
//
// Contract: WorkPriorityOf(type, object) is kUrgent for a watch event of a
// SlurmJob that is not being deleted and has no Slurm job in its status
// (stage.h's NOT SUBMITTED group: its next steps lead to a submit), kNormal for
// everything else (a deletion, a SlurmJob already submitted). The decision is
// the user's wait for a jobId: at a tracking tick that reports many jobs
// changed, their status writes are queued at kNormal, and a SlurmJob created
// at that moment would otherwise wait behind all of them. A priority never
// changes what a reconcile does, only when it runs.

#ifndef SLURMOP_CONTROLLER_RECONCILE_WORK_PRIORITY_H_
#define SLURMOP_CONTROLLER_RECONCILE_WORK_PRIORITY_H_

#include <nlohmann/json.hpp>
#include <string_view>

#include "controller/kube/workqueue.h"

namespace slurmop::reconcile {

kube::WorkQueue::Priority WorkPriorityOf(std::string_view event_type,
                                         const nlohmann::json& slurmjob);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_WORK_PRIORITY_H_
