// File: controller/cron/decide.cc

#include "controller/cron/decide.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "controller/api/cron_resources.h"
#include "controller/api/resources.h"
#include "controller/common/time_format.h"
#include "controller/cron/schedule.h"
#include "controller/cron/time_zone.h"
#include "controller/reconcile/conditions.h"

namespace slurmop::cron {
namespace {

using reconcile::ConditionStatus;
using reconcile::EventSpec;

constexpr int kDefaultSuccessfulHistory = 3;
constexpr int kDefaultFailedHistory = 1;

google::protobuf::Timestamp ToTimestamp(Time t) {
  google::protobuf::Timestamp ts;
  ts.set_seconds(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
  return ts;
}

Time FromTimestamp(const google::protobuf::Timestamp& ts) {
  return Time(std::chrono::seconds(ts.seconds()));
}

absl::Time ToAbsl(Time t) { return absl::FromChrono(t); }
Time FromAbsl(absl::Time t) {
  return Time(
      std::chrono::duration_cast<Time::duration>(std::chrono::nanoseconds(absl::ToUnixNanos(t))));
}

bool Finished(const Child& c) {
  return c.phase == "Succeeded" || c.phase == "Failed" || c.phase == "Cancelled";
}

bool Active(const Child& c) { return !Finished(c) && !c.being_deleted; }

// Oldest scheduled first; a child without a scheduled time sorts by name, first.
bool OlderThan(const Child* a, const Child* b) {
  if (a->scheduled_time != b->scheduled_time) return a->scheduled_time < b->scheduled_time;
  return a->name < b->name;
}

std::vector<const Child*> Select(const std::vector<Child>& children, bool (*keep)(const Child&)) {
  std::vector<const Child*> out;
  for (const Child& c : children) {
    if (keep(c)) out.push_back(&c);
  }
  std::sort(out.begin(), out.end(), OlderThan);
  return out;
}

v1alpha1::ObjectReference RefTo(const std::string& ns, const std::string& name,
                                const std::string& uid) {
  v1alpha1::ObjectReference ref;
  ref.set_api_version(std::string(api::kApiVersion));
  ref.set_kind(std::string(api::kSlurmJobKind));
  ref.set_namespace_(ns);
  ref.set_name(name);
  ref.set_uid(uid);
  return ref;
}

// status.active, activeCount, lastScheduleTime and lastSuccessfulTime from the children.
void RecordChildren(const CronFacts& facts, v1alpha1::SlurmCronJobStatus* status) {
  status->clear_active();
  for (const Child* c : Select(facts.children, Active)) {
    *status->add_active() = RefTo(facts.ns, c->name, c->uid);
  }
  status->set_active_count(status->active_size());
  for (const Child& c : facts.children) {
    if (c.scheduled_time && (!status->has_last_schedule_time() ||
                             FromTimestamp(status->last_schedule_time()) < *c.scheduled_time)) {
      *status->mutable_last_schedule_time() = ToTimestamp(*c.scheduled_time);
    }
    if (c.phase == "Succeeded" && c.end_time &&
        (!status->has_last_successful_time() ||
         FromTimestamp(status->last_successful_time()) < *c.end_time)) {
      *status->mutable_last_successful_time() = ToTimestamp(*c.end_time);
    }
  }
}

// The oldest finished children beyond `limit`.
void TrimHistory(std::vector<const Child*> finished, int limit, const std::string& what,
                 std::vector<ChildToDelete>* out) {
  const int excess = static_cast<int>(finished.size()) - std::max(limit, 0);
  for (int i = 0; i < excess; ++i) {
    out->push_back(
        {finished[i]->name, finished[i]->uid,
         absl::StrCat("history limit: more than ", limit, " ", what, " SlurmJobs are kept")});
  }
}

std::vector<ChildToDelete> HistoryToDelete(const CronFacts& facts) {
  const v1alpha1::SlurmCronJobSpec& spec = facts.spec;
  std::vector<ChildToDelete> out;
  TrimHistory(Select(facts.children,
                     [](const Child& c) { return c.phase == "Succeeded" && !c.being_deleted; }),
              spec.has_successful_jobs_history_limit() ? spec.successful_jobs_history_limit()
                                                       : kDefaultSuccessfulHistory,
              "succeeded", &out);
  TrimHistory(Select(facts.children,
                     [](const Child& c) {
                       return Finished(c) && c.phase != "Succeeded" && !c.being_deleted;
                     }),
              spec.has_failed_jobs_history_limit() ? spec.failed_jobs_history_limit()
                                                   : kDefaultFailedHistory,
              "failed", &out);
  return out;
}

void SetReady(const CronFacts& facts, Time now, ConditionStatus ready, const std::string& reason,
              const std::string& message, v1alpha1::SlurmCronJobStatus* status) {
  reconcile::SetCondition(status->mutable_conditions(), reconcile::kReady, ready, reason, message,
                          facts.generation, now);
  if (ready == ConditionStatus::kFalse) {
    reconcile::SetCondition(status->mutable_conditions(), reconcile::kStalled,
                            ConditionStatus::kTrue, reason, message, facts.generation, now);
  } else {
    reconcile::RemoveCondition(status->mutable_conditions(), reconcile::kStalled);
  }
  status->set_observed_generation(facts.generation);
}

CronPlan Invalid(const CronFacts& facts, Time now, const std::string& reason,
                 const std::string& what, const absl::Status& error, CronPlan plan) {
  const std::string message =
      absl::StrCat(what, ": ", error.message(), "; no SlurmJob is created until it is fixed");
  SetReady(facts, now, ConditionStatus::kFalse, reason, message, &plan.status);
  plan.status.clear_next_schedule_time();
  plan.history.clear();
  plan.events.push_back({"Warning", reason, "Schedule", message});
  return plan;
}

// The latest scheduled time in (from, now], walking forward from `from`.
std::optional<absl::Time> LatestIn(const Schedule& schedule, const absl::TimeZone& zone,
                                   absl::Time from, absl::Time now) {
  std::optional<absl::Time> due;
  for (std::optional<absl::Time> t = Next(schedule, from, zone); t && *t <= now;
       t = Next(schedule, *t, zone)) {
    due = t;
  }
  return due;
}

// The latest scheduled time in (last, now], if any. Only the latest matters, so it is looked for
// in the last day first, then the last year, then since `last`: an operator down for months does
// not walk every minute of them.
std::optional<absl::Time> MostRecentDue(const Schedule& schedule, const absl::TimeZone& zone,
                                        absl::Time last, absl::Time now) {
  for (absl::Duration window : {absl::Hours(24), absl::Hours(24 * 366)}) {
    if (now - window <= last) break;
    if (std::optional<absl::Time> due = LatestIn(schedule, zone, now - window, now)) return due;
  }
  return LatestIn(schedule, zone, last, now);
}

// A starting deadline longer than this (100 years) is as good as none.
constexpr int64_t kMaxDeadlineSeconds = int64_t{100} * 366 * 24 * 3600;

// What to do about the due time `due`: create (maybe replacing), or skip with an Event.
void StartOrSkip(const CronFacts& facts, Time due, Time now, CronPlan* plan) {
  const v1alpha1::SlurmCronJobSpec& spec = facts.spec;
  const std::vector<const Child*> active = Select(facts.children, Active);
  const std::string when = FormatRfc3339(due);
  // Compared as a lateness: `due + deadline` overflowed for a deadline past ~292 years (the CRD
  // sets no maximum), wrapped into the past, and every time was missed.
  if (spec.has_starting_deadline_seconds() &&
      now - due > std::chrono::seconds(
                      std::min<int64_t>(spec.starting_deadline_seconds(), kMaxDeadlineSeconds))) {
    plan->events.push_back({"Warning", "MissSchedule", "Schedule",
                            absl::StrCat("scheduled time ", when, " missed by more than ",
                                         spec.starting_deadline_seconds(),
                                         " s (startingDeadlineSeconds): not started")});
    return;
  }
  if (spec.concurrency_policy() == "Forbid" && !active.empty()) {
    plan->events.push_back(
        {"Normal", "JobAlreadyActive", "Schedule",
         absl::StrCat("scheduled time ", when, " skipped for now: SlurmJob ", active[0]->name,
                      " is still active (concurrencyPolicy Forbid)")});
    return;
  }
  if (spec.concurrency_policy() == "Replace") {
    for (const Child* c : active) {
      plan->replace.push_back(
          {c->name, c->uid,
           absl::StrCat("replaced by the SlurmJob of ", when, " (concurrencyPolicy Replace)")});
    }
    plan->status.clear_active();
  }
  plan->create = ChildToCreate{ChildName(facts.name, due), due};
  *plan->status.add_active() = RefTo(facts.ns, plan->create->name, "");
  plan->status.set_active_count(plan->status.active_size());
  *plan->status.mutable_last_schedule_time() = ToTimestamp(due);
}

}  // namespace

std::string ChildName(const std::string& cron_name, Time scheduled_time) {
  const int64_t minutes =
      std::chrono::duration_cast<std::chrono::minutes>(scheduled_time.time_since_epoch()).count();
  return absl::StrCat(cron_name, "-", minutes);
}

CronPlan DecideCron(const CronFacts& facts, Time now) {
  CronPlan plan;
  plan.status = facts.status;
  if (facts.being_deleted) return plan;
  RecordChildren(facts, &plan.status);
  absl::StatusOr<absl::TimeZone> zone = LoadZone(facts.spec.time_zone());
  if (!zone.ok()) {
    return Invalid(facts, now, "InvalidTimeZone", "spec.timeZone", zone.status(), plan);
  }
  absl::StatusOr<Schedule> schedule = ParseSchedule(facts.spec.schedule());
  if (!schedule.ok()) {
    return Invalid(facts, now, "InvalidSchedule",
                   absl::StrCat("spec.schedule \"", facts.spec.schedule(), "\""), schedule.status(),
                   plan);
  }
  plan.history = HistoryToDelete(facts);
  if (facts.spec.suspend()) {
    plan.status.clear_next_schedule_time();
    SetReady(facts, now, ConditionStatus::kTrue, "Suspended",
             "spec.suspend is true: no SlurmJob is created", &plan.status);
    return plan;
  }
  const Time last = plan.status.has_last_schedule_time()
                        ? FromTimestamp(plan.status.last_schedule_time())
                        : facts.creation_time;
  if (std::optional<absl::Time> due = MostRecentDue(*schedule, *zone, ToAbsl(last), ToAbsl(now))) {
    StartOrSkip(facts, FromAbsl(*due), now, &plan);
  }
  std::optional<absl::Time> next = Next(*schedule, ToAbsl(now), *zone);
  if (!next) {
    plan.status.clear_next_schedule_time();
    SetReady(facts, now, ConditionStatus::kTrue, "NoNextSchedule",
             "the schedule has no time within the next five years", &plan.status);
    return plan;
  }
  *plan.status.mutable_next_schedule_time() = ToTimestamp(FromAbsl(*next));
  plan.requeue_after = FromAbsl(*next) - now;
  SetReady(facts, now, ConditionStatus::kTrue, "Scheduled",
           absl::StrCat("next scheduled time: ", FormatRfc3339(FromAbsl(*next))), &plan.status);
  return plan;
}

v1alpha1::SlurmCronJobStatus StatusAfterFailedCreate(const CronFacts& facts,
                                                     const ChildToCreate& child,
                                                     const absl::Status& error, Time now) {
  v1alpha1::SlurmCronJobStatus status = facts.status;
  SetReady(facts, now, ConditionStatus::kFalse, "FailedCreate",
           absl::StrCat("cannot create SlurmJob ", child.name, " for ",
                        FormatRfc3339(child.scheduled_time), ": ", error.message(),
                        "; retried with backoff, and that scheduled time is kept until it is made"),
           &status);
  return status;
}

}  // namespace slurmop::cron
