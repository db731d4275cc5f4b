// File: controller/reconcile/tracking_policy.h
//
// Which SlurmJobs the batched tracker (job_tracker.h) follows, and how
// eagerly. Pure: the executor applies the verdict to the tracker.
//
// Contract:
//  * A SlurmJob without a Slurm job, or whose Slurm job ended, is untracked.
//  * An active job whose reconcile ended with a plain requeue (no backoff) on
//    a cluster that exists is tracked at the job's poll interval; its
//    requeue is stretched to `tracked_requeue`, since the tracker wakes it
//    on any change and the timer is only a safety net; never past the job's
//    spec.activeDeadlineSeconds (`until_deadline`), which no list change
//    announces: at most to the deadline, and not at all once it passed.
//  * A SlurmJob being deleted is left as it is (its finalizer removal
//    untracks it).
//  * A look at the job (kQuery) tracks it at the decision's max_age (the
//    poll it asked for), or min_poll when it asked for a fresh answer.
//  * The orphan sweep (DecideSweep) cancels an active Slurm job carrying the
//    operator's tag (SubmissionTag) when, in two sweeps in a row, its
//    SlurmJob does not exist (an orphan), or the tag names an earlier run
//    than the SlurmJob's current one (a stale run), or the tag names the
//    current run but the status records another Slurm job for it (a
//    duplicate: a submit that landed after its outcome was given up on).
//    Final and COMPLETING jobs, other comments (DisownedTag: deletionPolicy
//    Orphan) and uids whose owner cannot be told are left alone; so are
//    (#13 E3) tags of another installation and legacy tags without one
//    (SweepScope::installation: a second operator sharing the Slurm cluster
//    owns them, or one from before the upgrade may), and every job id that a
//    live SlurmJob's status names (SweepScope::named_by_status: a SlurmJob
//    restored from a backup has a new uid but still tracks its job).
//  * ListInterval / ListFailureBackoff: how often the tracker lists one
//    cluster. While a tracked job is in its first seconds (tracked less than
//    `eager_window` ago) the cluster is listed at the eagerest job's poll;
//    afterwards at least every `min_interval`, and each list that changed
//    none of the cluster's tracked jobs doubles the interval, up to
//    `max_idle_interval` (a change starts again from the base). A failed list
//    is retried after `failure_base`, doubled per failure in a row, up to
//    `transient_failure_cap`, or `permanent_failure_cap` for errors that
//    retrying does not mend (PERMISSION_DENIED, NOT_FOUND, ...), and never
//    sooner than the server's own retry delay.

#ifndef SLURMOP_CONTROLLER_RECONCILE_TRACKING_POLICY_H_
#define SLURMOP_CONTROLLER_RECONCILE_TRACKING_POLICY_H_

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "controller/common/clock.h"
#include "controller/reconcile/decide.h"
#include "controller/slurm/packed_jobs.h"

namespace slurmop::reconcile {

// How a cluster's lists are paced (ListInterval, ListFailureBackoff).
struct ListPace {
  Duration eager_window = std::chrono::seconds(10);
  Duration min_interval = std::chrono::seconds(5);
  Duration max_idle_interval = std::chrono::seconds(30);
  Duration failure_base = std::chrono::seconds(5);
  Duration transient_failure_cap = std::chrono::seconds(60);
  Duration permanent_failure_cap = std::chrono::minutes(5);
};

// What the tracker knows of one cluster when it decides when to list it.
struct ClusterPaceFacts {
  std::optional<Duration> eagerest_poll;  // the smallest poll of its tracked jobs; none: nullopt
  bool any_young = false;                 // a tracked job within eager_window
  bool registered = false;                // swept for orphans (RegisterCluster)
  int unchanged_lists = 0;                // lists in a row that changed no tracked job
};

// The time between two lists of a cluster; nullopt: it is not listed at all.
std::optional<Duration> ListInterval(const ClusterPaceFacts& c, Duration sweep_interval,
                                     const ListPace& pace);

// Whether a failed list fails again whatever the number of tries (the
// cluster does not exist, the identity may not call it, the request is
// refused as malformed): such clusters back off to minutes.
bool PermanentListFailure(absl::StatusCode code);

// How long after the `failures`-th failed list in a row (>= 1) the next is sent.
Duration ListFailureBackoff(absl::StatusCode code, int failures,
                            std::optional<Duration> server_retry_delay, const ListPace& pace);

struct TrackingVerdict {
  enum class Kind { kLeave, kUntrack, kTrack };
  Kind kind = Kind::kLeave;
  Duration poll{};                  // kTrack
  std::optional<Duration> requeue;  // kTrack: the reconcile's requeue, stretched
};

// `job_poll`: the job's poll interval (PollInterval in decide.h), which the
// tracker follows it at; the reconcile's requeue is only how long until the
// next look is due, not how often looks are wanted.
TrackingVerdict TrackingAfterReconcile(const JobFacts& job, const ClusterFacts& cluster,
                                       std::optional<Duration> requeue_after,
                                       bool retry_with_backoff, Duration job_poll,
                                       Duration tracked_requeue,
                                       std::optional<Duration> until_deadline = std::nullopt);

// The poll a kQuery decision tracks its job at.
Duration QueryPoll(const Decision& d, const DecideOptions& options);

// What the SlurmJob cache says of the SlurmJob with a uid: whether it
// exists, and its current run and that run's Slurm job id (0: none yet).
struct TagOwner {
  bool exists = false;
  int32_t run = 0;
  int64_t job_id = 0;
};
// nullopt when the owner cannot be told (namespace not watched, cache not
// synced): such jobs are never cancelled.
using OwnerOf =
    std::function<std::optional<TagOwner>(const std::string& ns, const std::string& uid)>;

// What else the sweep of one cluster must know.
struct SweepScope {
  // This installation (--installation-id): only its tags are swept. "" (in
  // tests) sweeps legacy tags, as the previous version did.
  std::string installation;
  // True when a live SlurmJob's status names Slurm job `id` of the swept
  // cluster (or may: see the manager); empty: none does.
  std::function<bool(int64_t id)> named_by_status;
};

struct SweepVerdict {
  std::set<int64_t> candidates;  // seen in this sweep: the next sweep's `previous`
  std::vector<std::pair<int64_t, std::string>> to_cancel;  // id, comment; by id
};

// One sweep of a cluster's job list. `previous`: the candidates of the last
// sweep.
SweepVerdict DecideSweep(const slurm::PackedJobs& jobs, const std::set<int64_t>& previous,
                         const OwnerOf& owner_of, const SweepScope& scope = {});

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_TRACKING_POLICY_H_
