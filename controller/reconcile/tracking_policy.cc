// File: controller/reconcile/tracking_policy.cc

#include "controller/reconcile/tracking_policy.h"

#include <algorithm>

#include "controller/reconcile/job_descriptor.h"

namespace slurmop::reconcile {

TrackingVerdict TrackingAfterReconcile(const JobFacts& job, const ClusterFacts& cluster,
                                       std::optional<Duration> requeue_after,
                                       bool retry_with_backoff, Duration job_poll,
                                       Duration tracked_requeue,
                                       std::optional<Duration> until_deadline) {
  TrackingVerdict v;
  if (job.deleting) return v;
  if (job.status.job_id() == 0 || IsFinalJobState(job.status.job_state())) {
    v.kind = TrackingVerdict::Kind::kUntrack;
    return v;
  }
  if (requeue_after && !retry_with_backoff && cluster.kind == ClusterFacts::Kind::kFound) {
    v.kind = TrackingVerdict::Kind::kTrack;
    v.poll = job_poll;
    v.requeue = std::max(*requeue_after, tracked_requeue);
    if (until_deadline) v.requeue = std::min(*v.requeue, std::max(*requeue_after, *until_deadline));
  }
  return v;
}

Duration QueryPoll(const Decision& d, const DecideOptions& options) {
  return d.max_age > Duration::zero() ? d.max_age
                                      : std::chrono::duration_cast<Duration>(options.min_poll);
}

std::optional<Duration> ListInterval(const ClusterPaceFacts& c, Duration sweep_interval,
                                     const ListPace& pace) {
  if (!c.eagerest_poll) {
    return c.registered ? std::optional<Duration>(sweep_interval) : std::nullopt;
  }
  Duration interval = *c.eagerest_poll;
  if (!c.any_young) {
    interval = std::max(interval, pace.min_interval);
    const Duration cap = std::max(interval, pace.max_idle_interval);
    for (int i = 0; i < c.unchanged_lists && interval < cap; ++i) interval *= 2;
    interval = std::min(interval, cap);
  }
  return c.registered ? std::min(interval, sweep_interval) : interval;
}

bool PermanentListFailure(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kUnimplemented:
      return true;
    default:
      return false;
  }
}

Duration ListFailureBackoff(absl::StatusCode code, int failures,
                            std::optional<Duration> server_retry_delay, const ListPace& pace) {
  const Duration cap =
      PermanentListFailure(code) ? pace.permanent_failure_cap : pace.transient_failure_cap;
  Duration wait = pace.failure_base;
  for (int i = 1; i < failures && wait < cap; ++i) wait *= 2;
  wait = std::min(wait, cap);
  return std::max(wait, server_retry_delay.value_or(Duration::zero()));
}

namespace {

// Whether the job the tag names belongs to no current run of an existing
// SlurmJob.
bool Unowned(const ParsedTag& tag, const TagOwner& owner, int64_t id) {
  if (!owner.exists) return true;  // orphan
  const int32_t current = std::max(1, owner.run);
  if (tag.run < current) return true;                                    // a stale run
  return tag.run == current && owner.job_id != 0 && owner.job_id != id;  // a duplicate
}

}  // namespace

SweepVerdict DecideSweep(const slurm::PackedJobs& jobs, const std::set<int64_t>& previous,
                         const OwnerOf& owner_of, const SweepScope& scope) {
  SweepVerdict v;
  jobs.ForEach([&](const slurm::JobInfo& job) {
    const int64_t id = job.job_id;
    if (job.IsFinal() || job.HasFlag("COMPLETING")) return;
    std::optional<ParsedTag> tag = ParseSubmissionTag(job.comment);
    if (!tag || tag->installation != scope.installation) return;  // not this installation's
    if (scope.named_by_status && scope.named_by_status(id)) return;
    std::optional<TagOwner> owner = owner_of(tag->ns, tag->uid);
    if (!owner || !Unowned(*tag, *owner, id)) return;
    v.candidates.insert(id);
    if (previous.contains(id)) v.to_cancel.push_back({id, job.comment});
  });
  std::sort(v.to_cancel.begin(), v.to_cancel.end());
  return v;
}

}  // namespace slurmop::reconcile
