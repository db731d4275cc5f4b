// File: controller/reconcile/tracking_policy.cc

#include "controller/reconcile/tracking_policy.h"

#include <algorithm>

#include "controller/reconcile/job_descriptor.h"

namespace slurmop::reconcile {

TrackingVerdict TrackingAfterReconcile(const JobFacts& job, const ClusterFacts& cluster,
                                       std::optional<Duration> requeue_after,
                                       bool retry_with_backoff, Duration tracked_requeue) {
  TrackingVerdict v;
  if (job.deleting) return v;
  if (job.status.job_id() == 0 || IsFinalJobState(job.status.job_state())) {
    v.kind = TrackingVerdict::Kind::kUntrack;
    return v;
  }
  if (requeue_after && !retry_with_backoff && cluster.kind == ClusterFacts::Kind::kFound) {
    v.kind = TrackingVerdict::Kind::kTrack;
    v.poll = *requeue_after;
    v.requeue = std::max(*requeue_after, tracked_requeue);
  }
  return v;
}

Duration QueryPoll(const Decision& d, const DecideOptions& options) {
  return d.max_age > Duration::zero() ? d.max_age
                                      : std::chrono::duration_cast<Duration>(options.min_poll);
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

SweepVerdict DecideSweep(const std::unordered_map<int64_t, slurm::JobInfo>& jobs,
                         const std::set<int64_t>& previous, const OwnerOf& owner_of,
                         const SweepScope& scope) {
  SweepVerdict v;
  for (const auto& [id, job] : jobs) {
    if (job.IsFinal() || job.HasFlag("COMPLETING")) continue;
    std::optional<ParsedTag> tag = ParseSubmissionTag(job.comment);
    if (!tag || tag->installation != scope.installation) continue;  // not this installation's
    if (scope.named_by_status && scope.named_by_status(id)) continue;
    std::optional<TagOwner> owner = owner_of(tag->ns, tag->uid);
    if (!owner || !Unowned(*tag, *owner, id)) continue;
    v.candidates.insert(id);
    if (previous.contains(id)) v.to_cancel.push_back({id, job.comment});
  }
  std::sort(v.to_cancel.begin(), v.to_cancel.end());
  return v;
}

}  // namespace slurmop::reconcile
