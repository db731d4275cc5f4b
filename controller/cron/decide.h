// File: controller/cron/decide.h
//
// The decisions of the SlurmCronJob controller, as one pure function (no I/O; `now` is an input),
// following Kubernetes' batch/v1 CronJob controller (v2):
//
//   facts (spec, status, children, now)  ->  plan (delete, create, status, delete, requeue)
//
// The executor (cron_executor.h) carries a plan out in this order: deletes of the active children
// that concurrencyPolicy Replace replaces, the create, the status write, then the deletes of the
// history limits (only after the status recorded lastScheduleTime), then the requeue.
//
// Contract:
//  * A bad schedule or time zone: no action but the status (Ready=False and Stalled=True with
//    reason InvalidSchedule or InvalidTimeZone, the parser's message) and a Warning Event; no
//    requeue (a spec edit wakes the SlurmCronJob).
//  * Being deleted: nothing at all.
//  * Active children: not finished (phase not Succeeded, Failed or Cancelled) and not being
//    deleted. status.active lists them by name (oldest scheduled first).
//  * Exactly once: the last schedule time is the later of status.lastScheduleTime and the newest
//    child's scheduled time (a status write lost after a create); only a scheduled time after
//    it is ever started, and only the latest of those due (the others are missed). A child is
//    named `<name>-<scheduled unix minutes>`, so a retried create meets AlreadyExists, which the
//    executor counts as created.
//  * startingDeadlineSeconds: a scheduled time more than that before `now` is not started
//    (Warning Event MissSchedule at each look while it is the latest due time).
//  * suspend: nothing is created; the status is still kept up to date; no requeue.
//  * Forbid with an active child: the time is skipped for now (Event JobAlreadyActive) and looked
//    at again at the next scheduled time; lastScheduleTime does not move, so the time still runs
//    once the child finished, within startingDeadlineSeconds.
//  * Replace: every active child is deleted (with its uid as precondition; the SlurmJob's
//    finalizer cancels its Slurm job), then the new child is created.
//  * History: of the finished children not being deleted, the oldest succeeded beyond
//    successfulJobsHistoryLimit (default 3) and the oldest failed or cancelled beyond
//    failedJobsHistoryLimit (default 1) are deleted.
//  * status.lastSuccessfulTime: the latest end of a child that succeeded (never moves back).
//  * Requeue: at the next scheduled time after `now` (nullopt when there is none).

#ifndef SLURMOP_CONTROLLER_CRON_DECIDE_H_
#define SLURMOP_CONTROLLER_CRON_DECIDE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "controller/common/clock.h"
#include "controller/reconcile/job_status.h"
#include "slurmoperator/v1alpha1/slurmcronjob.pb.h"

namespace slurmop::cron {

namespace v1alpha1 = ::slurmoperator::v1alpha1;

// A SlurmJob owned by the SlurmCronJob (controller ownerReference with its uid).
struct Child {
  std::string name;
  std::string uid;
  // The scheduled time it was created for (its annotation, else its name's suffix).
  std::optional<Time> scheduled_time;
  // status.phase: "" (not yet known), Pending, Running, Succeeded, Failed, Cancelled, Unknown.
  std::string phase;
  std::optional<Time> end_time;
  bool being_deleted = false;
};

struct CronFacts {
  std::string name;
  std::string ns;
  std::string uid;
  int64_t generation = 0;
  Time creation_time;
  bool being_deleted = false;
  v1alpha1::SlurmCronJobSpec spec;
  v1alpha1::SlurmCronJobStatus status;
  std::vector<Child> children;
};

struct ChildToCreate {
  std::string name;
  Time scheduled_time;
};

struct ChildToDelete {
  std::string name;
  std::string uid;
  std::string why;  // for the Event
};

struct CronPlan {
  std::vector<ChildToDelete> replace;  // before the create
  std::optional<ChildToCreate> create;
  // The status to write (when it differs from the current one): with `create`, it already
  // records the new child in `active` and its time in lastScheduleTime.
  v1alpha1::SlurmCronJobStatus status;
  std::vector<ChildToDelete> history;  // after the status write
  std::vector<reconcile::EventSpec> events;
  std::optional<Duration> requeue_after;
};

CronPlan DecideCron(const CronFacts& facts, Time now);

// The status to write once the create of `child` failed with `error`: the current status (no
// lastScheduleTime or active entry for a child that does not exist, so its scheduled time is
// tried again) with Ready False and Stalled True, reason FailedCreate. Before, Ready stayed True
// while every scheduled time failed (a forbidden create, a ResourceQuota, a webhook's denial).
v1alpha1::SlurmCronJobStatus StatusAfterFailedCreate(const CronFacts& facts,
                                                     const ChildToCreate& child,
                                                     const absl::Status& error, Time now);

// `<cron name>-<unix minutes of t>`, Kubernetes' CronJob naming.
std::string ChildName(const std::string& cron_name, Time scheduled_time);

}  // namespace slurmop::cron

#endif  // SLURMOP_CONTROLLER_CRON_DECIDE_H_
