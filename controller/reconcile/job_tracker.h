// File: controller/reconcile/job_tracker.h
//
// Batched tracking of Slurm jobs: one `GET /slurm/<v>/jobs/` per SlurmCluster
// per tick, shared by every SlurmJob on that cluster, instead of one GET per
// job. What the list says is kept as the cluster's snapshot; reconciles read
// their job from it, and the jobs whose record changed (or that left the
// queue) are handed to `notify` so that their SlurmJobs are reconciled at
// once rather than on a timer.
//
// Contract:
//  * A cluster is listed only while it has tracked jobs (or is registered
//    for the sweep), and then at the pace ListInterval (tracking_policy.h)
//    gives: its most eager job's poll (Track's `poll`: fast right after a
//    submit, slower for long-running jobs) while a job is in its first
//    seconds, else at least every 5 s, backing off while the lists change
//    none of its jobs; never for finished jobs, which the executor untracks.
//    A failed list is retried after ListFailureBackoff (minutes for a
//    cluster that does not exist or may not be called); a new endpoint
//    (a SlurmCluster edit) starts afresh.
//  * Get() answers from a snapshot fetched no earlier than `not_before`; if
//    there is none, it fetches one now. Concurrent callers for one cluster
//    share a single fetch (one call in flight per cluster). The fetch runs on
//    the tracker's own fetch threads, never on the caller's: Get() waits for
//    it at most `get_wait`, then answers kUnavailable and the job's key is
//    notified when the list arrives. For a job the
//    tracker follows, a snapshot no older than the cluster's list interval
//    is fresh enough (unless not_before is now: a fresh answer), so that
//    reconciles do not add lists to the tracker's own; if the job is not in
//    it, it must also have been sent after the job was tracked (the job may
//    be newer than the list). So after a restart or a shard move, when every
//    running job is tracked anew, one list per cluster answers them all.
//    While a failed list's backoff runs, Get() answers that failure without
//    a call.
//  * Tag searches (FindLive) read the same snapshot: any list of the whole
//    queue sent after the search's `not_before` answers it, so the searches
//    of many SlurmJobs (after a restart, every SlurmJob without a job id
//    searches) share one list per cluster instead of one list each.
//  * A cluster that tracks no job and that no Get() or search has asked for
//    within `sweep_interval` (registered only for the sweep) keeps no
//    snapshot between its lists: once such a list has been swept, its
//    records are released, and the next list is a full one. Many SlurmClusters
//    of many namespaces can name one busy Slurm cluster; each kept a copy of
//    its whole queue (#16 item 1). A cluster being read (searches and Gets
//    before its jobs are tracked, e.g. after a restart) keeps its snapshot,
//    so that one list still answers them all; so does one that is neither
//    registered nor tracking (its probe not yet made), until nobody has read
//    it for `sweep_interval`.
//  * A job absent from a list fetched after it was tracked has left the live
//    queue (Get answers job == nullopt); the executor then reads /slurmdb.
//  * Accounting of ended jobs, batched: the tracked jobs that a list first
//    shows final are looked up in accounting in one
//    `GET /slurmdb/<v>/jobs?step=<ids>` per `accounting_batch` jobs, before
//    the list is applied (so a Get() never sees such a job ended without
//    that look) and their keys are notified, instead of one `GET /slurmdb/<v>/job/<id>` per
//    job from its reconcile (#16 item 3: at 1,000 jobs that GET was half of
//    all Agent Platform calls). What it found is the job's
//    Answer::accounting until the job is untracked: the allocation when
//    accounting shows the job final with one; none when accounting does not
//    show the end yet (slurmdbd learns an end asynchronously; the executor
//    then records the end without usage and looks again later, stage
//    kAwaitingUsage, as after its own look). A failed lookup leaves
//    Answer::accounting unset, and the executor looks itself, as before.
//    The same call looks up the tracked jobs the list no longer shows (or
//    never showed, though sent after their tracking began): they left the
//    queue, often unseen when lists are far apart under a busy call budget,
//    and each reconcile would read /slurmdb for its own. Accounting's final
//    record of such a job is its Answer::left_record until the job is
//    listed again (a requeue) or untracked; a record not final yet (slurmdbd
//    lags), none, or a failed lookup leaves it unset, and the executor reads
//    /slurmdb itself, as before. Each job is looked up once per departure.
//  * Isolation: clusters are listed on `fetch_threads` threads, one fetch at
//    a time per cluster, so that a slow or black-holed cluster (each call up
//    to max_attempts x the request timeout) holds one fetch thread and
//    delays no other cluster's lists by more than a tick, as long as fewer
//    than `fetch_threads` clusters hang at once. Tick() only dispatches.
//  * With v0.0.40+ the list is asked with `update_time` = Slurm's own
//    `last_update` + 1 (Slurm's clock, never ours), so an unchanged cluster
//    costs an empty answer; because last_update counts whole seconds, that
//    is done only after a full list at least 1.5 s later confirmed it, and a
//    full list is fetched at least every `full_resync`. v0.0.38/39 give no
//    such time, so their lists are full.
//  * A cluster key whose endpoint changes (the SlurmCluster repointed, or
//    its REST version changed) starts afresh: its snapshot, Slurm's
//    last_update and the sweep's candidates describe the old cluster, whose
//    job ids mean other jobs on the new one. A list in flight from the old
//    endpoint is dropped.
//  * Orphan sweep: at most every `sweep_interval`, the cluster's list is
//    handed to DecideSweep (tracking_policy.h, pure: which jobs belong to no
//    current run of an existing SlurmJob, seen so in two sweeps in a row, so
//    that a brand-new SlurmJob is never mistaken for a gone one), and the
//    tracker cancels what it returns. The sweep is part of the fetch: until
//    its cancels are answered the cluster is not fetched again, and a Get()
//    waiting for that fetch does not answer (it gives up after get_wait).
//
// Thread-safety: all methods may be called from any thread.

#ifndef SLURMOP_CONTROLLER_RECONCILE_JOB_TRACKER_H_
#define SLURMOP_CONTROLLER_RECONCILE_JOB_TRACKER_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/status/statusor.h"
#include "controller/agentplatform/client.h"
#include "controller/common/clock.h"
#include "controller/reconcile/tracking_policy.h"
#include "controller/slurm/job_model.h"
#include "controller/slurm/packed_jobs.h"

namespace slurmop::reconcile {

// Everything needed to call one SlurmCluster.
struct ClusterEndpoint {
  std::string key;          // "namespace/name" of the SlurmCluster
  std::string api_version;  // "v0.0.42"
  agentplatform::ClusterName where;
  std::shared_ptr<agentplatform::TokenSource> credentials;
};

struct TrackerOptions {
  Duration tick = std::chrono::milliseconds(200);  // how often due clusters are checked
  Duration full_resync = std::chrono::seconds(60);
  Duration sweep_interval = std::chrono::seconds(60);
  bool sweep = true;
  // What the sweep leaves alone besides (SweepScope, tracking_policy.h): the
  // tags of other installations, and the job ids a live SlurmJob's status
  // names on the swept cluster.
  std::string installation;
  std::function<bool(const ClusterEndpoint& cluster, int64_t job_id)> named_by_status;
  // Cancels one sweep sends at most (lowest job ids first); the rest stay candidates and go at
  // the next sweeps. A job's tag is only its comment, which any Slurm user can write: thousands
  // of them must not take the project's call budget from every other cluster in one sweep.
  int max_cancels_per_sweep = 20;
  ListPace pace;                             // how often one cluster is listed (tracking_policy.h)
  int fetch_threads = 4;                     // lists in flight at once, one per cluster
  std::chrono::milliseconds get_wait{2000};  // the longest Get() waits for a list
  // Ended jobs looked up in accounting per call (see the header); 0: none.
  int accounting_batch = 100;
};

// What the batched accounting lookup found of a job that ended
// (slurm::JobInfo's accounting-only fields).
struct AccountingLook {
  // Set when accounting showed the job final, with what it was allocated.
  std::optional<slurm::Allocation> allocation;
  std::string account;
};

class JobTracker {
 public:
  // One callSlurmRestApi call (the executor's, with metrics). Job lists are
  // asked with options.job_fields = the dialect's JobRecordKeys(): only what
  // ParseJobs reads of each job is kept while the answer is decoded.
  using Caller = std::function<absl::StatusOr<agentplatform::SlurmResponse>(
      const ClusterEndpoint&, agentplatform::HttpMethod, const std::string& path,
      const agentplatform::CallOptions& options)>;
  // The SlurmJob "namespace/name" should be reconciled now.
  using Notify = std::function<void(const std::string& job_key)>;
  // What the cache says of the SlurmJob with this uid in `ns`
  // (tracking_policy.h); nullopt when that cannot be told.
  using Owner = TagOwner;
  using KnownUid = OwnerOf;

  JobTracker(Caller caller, const Clock& clock, Notify notify, KnownUid known_uid,
             TrackerOptions options = {});
  ~JobTracker();

  // `job_key` follows Slurm job `job_id` on `cluster` and wants news at
  // least every `poll`. Re-tracking updates the poll (and the endpoint).
  void Track(const ClusterEndpoint& cluster, int64_t job_id, const std::string& job_key,
             Duration poll);
  void Untrack(const std::string& job_key);
  // Clusters are swept for orphans even when none of their jobs is tracked.
  void RegisterCluster(const ClusterEndpoint& cluster);
  void ForgetCluster(const std::string& cluster_key);

  struct Answer {
    std::optional<slurm::JobInfo> job;  // nullopt: not in the live queue
    // Set when the job is final and accounting was looked up after the list
    // that first showed it so (see the header).
    std::optional<AccountingLook> accounting;
    // Set when the job is not in the live queue and the list that first
    // missed it found its final accounting record (see the header): what the
    // executor would read from /slurmdb itself.
    std::optional<slurm::JobInfo> left_record;
  };
  // `job_key`: notified when a list Get() stopped waiting for arrives.
  absl::StatusOr<Answer> Get(const ClusterEndpoint& cluster, int64_t job_id, Time not_before,
                             const std::string& job_key = "");

  // The jobs of the cluster's live queue that `match`, from a list of the
  // whole queue whose request was sent no earlier than `not_before` (the
  // snapshot if it is that recent, else a list fetched now and shared with
  // every caller waiting for one), and when that list was sent. This is how
  // tag searches share one list per cluster (#13 item 11): what a list sent
  // at `listed_at` does not show was not in the queue at `listed_at`.
  // Waits and fails as Get() does; `job_key` is notified when a list it gave
  // up on arrives.
  struct LiveJobs {
    std::vector<slurm::JobInfo> jobs;
    Time listed_at{};
  };
  absl::StatusOr<LiveJobs> FindLive(const ClusterEndpoint& cluster,
                                    const std::function<bool(const slurm::JobInfo&)>& match,
                                    Time not_before, const std::string& job_key = "");

  // Hands the clusters that are due to the fetch threads (the ticker thread
  // calls this); returns at once.
  void Tick();
  // Waits until no list is queued or in flight (tests).
  void WaitIdle();
  void Start();
  void Stop();

  // For tests and metrics.
  size_t TrackedCount() const;
  // Slurm job records held in all clusters' snapshots.
  size_t RecordsHeld() const;
  int64_t ListCalls() const { return list_calls_.load(); }
  int64_t AccountingCalls() const { return accounting_calls_.load(); }
  int64_t OrphansCancelled() const { return orphans_cancelled_.load(); }

 private:
  struct Tracked {
    std::string cluster_key;
    int64_t job_id = 0;
    Time since{};
    // Absent from a list sent after `since` without ever being seen: reported
    // once (the job left the queue before any list saw it).
    bool reported_gone = false;
  };
  // An entry of by_key_: its key is the SlurmJob's "namespace/name".
  using KeyedTracked = std::unordered_map<std::string, Tracked>::value_type;
  // A cluster's tracked job: who tracks it, and at what poll. Kept small, as
  // there is one per tracked SlurmJob (issue #16): the key and the tracking
  // start are read from the owner's by_key_ entry rather than copied. That
  // entry is at a stable address (unordered_map never moves its elements),
  // it tracks this very job of this cluster (Track() and Untrack() forget a
  // job's entry before moving or erasing its owner), and `since` changes only
  // while the owner has no entry, so the aggregates below stay in step.
  struct TrackedJob {
    KeyedTracked* owner = nullptr;
    Duration poll{};
    const std::string& key() const { return owner->first; }
    Time since() const { return owner->second.since; }
  };
  struct Cluster {
    ClusterEndpoint endpoint;
    bool registered = false;
    bool fetching = false;                 // queued for or in a fetch thread
    std::optional<Time> fetched_at;        // when the snapshot's request was sent
    std::optional<Time> released_list_at;  // ReleaseSnapshot: when the released list was sent
    std::optional<Time> last_full;
    std::optional<Time> last_sweep;
    std::optional<int64_t> last_update;  // Slurm's, from the last changed list
    // Slurm's last_update has one-second resolution: a change in the same
    // second as a list is invisible to `update_time = last_update + 1`. So a
    // new last_update is trusted only once a full list started >= 1.5 s after
    // the one that first showed it reports the same value.
    Time last_update_seen_at{};
    bool last_update_confirmed = false;
    slurm::PackedJobs jobs;  // the last list's records, packed (issue #16)
    std::optional<absl::Status> last_error;
    std::optional<Time> retry_at;  // after a failed list, the ticker waits
    int failures = 0;              // failed lists in a row
    uint64_t fetches_done = 0;     // fetches ended (ok or not, sweep included), for Get()'s wait
    int unchanged_lists = 0;       // lists in a row that changed no tracked job
    std::set<int64_t> orphan_candidates;
    // job id -> who tracks it, with that key's poll and tracking start; only
    // changed through SetTracked/EraseTracked, which keep the two multisets
    // below (every tracked job's poll and start) in step, so that the list
    // interval is read in O(1) rather than by walking all tracked jobs on
    // every Get() and every tick (at 5,000 jobs per cluster that walk was
    // half of each replica's CPU, under mu_).
    // B-trees rather than red-black trees: ~20 rather than ~100 bytes per
    // tracked job (issue #16). Their iterators do not survive an insert or
    // erase, so none is held across one.
    absl::btree_map<int64_t, TrackedJob> tracked;
    absl::btree_multiset<Duration> tracked_polls;
    absl::btree_multiset<Time> tracked_since;
    // Tracked jobs that ended, by job id: their accounting (see the header);
    // an entry goes with the job's tracking.
    std::map<int64_t, AccountingLook> accounted;
    // Tracked jobs that left the live queue and were looked up in
    // accounting since, and the final records found of them (packed as the
    // snapshot is: at 10,000 jobs ending at once, thousands of them); both
    // dropped when the job is listed again (a requeue) and with the job's
    // tracking.
    std::set<int64_t> left_looked;
    slurm::PackedJobs left_records;
    std::set<std::string> waiters;  // keys whose Get() gave up on the list in flight
    uint64_t endpoint_changes = 0;  // SetEndpoint's resets: a list in flight is stale
    int readers = 0;                // callers in AwaitListLocked
    std::optional<Time> last_read;  // when a Get() or search last asked for the list
  };

  // Waits (mu_ held on entry and exit) until the snapshot of `key` comes from
  // a list sent no earlier than `not_before`: OK, or the list's failure, or
  // kUnavailable after get_wait (then `job_key` waits for the list). During
  // a failed list's backoff, answers that failure without a call.
  absl::Status AwaitListLocked(std::unique_lock<std::mutex>& lock, const std::string& key,
                               Time not_before, const std::string& job_key);
  // Drops the entry of `key` if nothing tracks, registers, lists or reads it
  // (a search on a cluster with no tracked job leaves no snapshot behind);
  // of a failing cluster only the failure and its backoff are kept.
  void DropIfUnusedLocked(const std::string& key);

  // The cluster's endpoint becomes `e`. Another cluster (SameCluster) drops
  // the snapshot, Slurm's last_update and the sweep's candidates; another
  // cluster or other credentials clear its failures.
  static void SetEndpoint(Cluster& c, const ClusterEndpoint& e);
  // Maps `job_id` of `c` to `entry` (replacing what it mapped to) / unmaps it.
  // Both keep the job's accounting look: re-tracking (every reconcile's query
  // does) must not lose it.
  static void SetTracked(Cluster& c, int64_t job_id, TrackedJob entry);
  static void EraseTracked(Cluster& c, int64_t job_id);
  // Unmaps `job_id` of `c` and drops its accounting look: the job is no
  // longer tracked there (Untrack, or Track moving it elsewhere).
  static void ForgetTracked(Cluster& c, int64_t job_id);
  // What the batched accounting lookup found for `job_id` of `c`.
  static std::optional<AccountingLook> AccountedLocked(const Cluster& c, int64_t job_id);
  // The time between two lists of `c` now (ListInterval); nullopt: not listed.
  std::optional<Duration> IntervalLocked(const Cluster& c, Time now) const;
  // Queues a fetch of `key` for the fetch threads, unless one is queued or in flight.
  void QueueFetchLocked(const std::string& key);
  // A fetch thread: takes queued clusters and fetches them until stopped.
  void FetchLoop();
  // Fetches `key`'s list (mu_ held on entry and exit, released during the
  // call); `c.fetching` is set by the caller.
  absl::Status FetchLocked(std::unique_lock<std::mutex>& lock, const std::string& key);
  // The call and its parsing (mu_ not held).
  absl::StatusOr<slurm::PackedJobList> ListJobs(const ClusterEndpoint& endpoint,
                                                std::optional<int64_t> update_time);
  // Slurm's last_update from a changed list (see Cluster::last_update_seen_at).
  static void NoteLastUpdate(Cluster& c, const slurm::PackedJobList& list, bool full, Time started);
  // Records a list's outcome in `c` (mu_ held): a failure and its backoff,
  // or the new snapshot (ApplyList); returns ApplyList's keys.
  std::vector<std::string> RecordListLocked(Cluster& c, absl::StatusOr<slurm::PackedJobList>& list,
                                            Time started, bool full);
  // Replaces the snapshot; returns the keys of tracked jobs whose record
  // changed (mu_ held); `started`: when it was sent.
  std::vector<std::string> ApplyList(Cluster& c, slurm::PackedJobList list, Time started);
  // The tracked jobs `list` shows final that the snapshot does not (nor any
  // earlier accounting look).
  static std::vector<int64_t> NewlyEndedLocked(const Cluster& c, const slurm::PackedJobList& list);
  // The tracked jobs `list` (sent at `started`) no longer shows, or never
  // showed though it was sent after their tracking began, and not looked up
  // since they left: their reconciles would read /slurmdb one by one.
  std::vector<int64_t> LeftQueueLocked(const Cluster& c, const slurm::PackedJobList& list,
                                       Time started) const;
  // Looks up `ended` and `left` of cluster `key` in accounting (mu_ held on
  // entry and exit, released during the calls) and keeps what it found of
  // the jobs still tracked, unless the cluster's endpoint changed since
  // `endpoint_changes`.
  void AccountEndsLocked(std::unique_lock<std::mutex>& lock, const std::string& key,
                         std::vector<int64_t> ended, std::vector<int64_t> left,
                         uint64_t endpoint_changes);
  // One batch of that (mu_ not held): accounting's record of each of `ids`
  // that has one.
  absl::StatusOr<std::map<int64_t, slurm::JobInfo>> LookUpRecords(const ClusterEndpoint& endpoint,
                                                                  const std::vector<int64_t>& ids);
  void SweepLocked(std::unique_lock<std::mutex>& lock, Cluster& c, Time now);
  // `c`'s fetch has ended, its sweep included: another may start, and the
  // Get() calls waiting for it look at the snapshot.
  static void EndFetchLocked(Cluster& c);
  // Releases `c`'s snapshot and what depends on it (the next list is full);
  // the sweep's candidates and the failure backoff stay.
  static void ReleaseSnapshot(Cluster& c);

  Caller caller_;
  const Clock& clock_;
  Notify notify_;
  KnownUid known_uid_;
  const TrackerOptions options_;

  mutable std::mutex mu_;
  std::condition_variable fetched_;
  std::map<std::string, Cluster> clusters_;
  std::unordered_map<std::string, Tracked> by_key_;
  std::deque<std::string> fetch_queue_;  // cluster keys, each at most once (Cluster::fetching)
  int in_flight_ = 0;                    // fetches running now
  bool fetchers_stopping_ = false;
  std::condition_variable fetch_cv_;  // fetch_queue_ or fetchers_stopping_ changed
  std::condition_variable idle_cv_;   // a fetch ended
  std::vector<std::thread> fetchers_;

  std::atomic<int64_t> list_calls_{0};
  std::atomic<int64_t> accounting_calls_{0};
  std::atomic<int64_t> orphans_cancelled_{0};
  std::mutex run_mu_;
  std::condition_variable run_cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_JOB_TRACKER_H_
