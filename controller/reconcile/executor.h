// File: controller/reconcile/executor.h
//
// Carries out the decisions of Decide() for one SlurmJob key: reads the
// cached object, asks Decide() for the next step, performs it (a Kubernetes
// write, a Slurm call through Agent Platform, an Event), records the outcome
// and asks again, until the decision is to stop. Each Action has one method
// (executor.cc, class Executor::Attempt); what to search, adopt and track is
// decided in the pure core (tag_search.h, tracking_policy.h). SlurmClusters
// have their own reconciler (cluster_reconciler.h). Conflicts (409) on writes
// re-read the object and decide again with the outcomes kept, so a job that
// was submitted is never submitted again because a status write lost a race.
// A reconcile that finds the cache still at a version this process's own
// write (or re-read) replaced waits for the cache's watch event instead of
// acting on the old object (cache_lag.h).
//
// Thread-safety: Reconcile() may run concurrently for different keys; the
// work queue guarantees one key is never reconciled twice at once.

#ifndef SLURMOP_CONTROLLER_RECONCILE_EXECUTOR_H_
#define SLURMOP_CONTROLLER_RECONCILE_EXECUTOR_H_

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "controller/agentplatform/client.h"
#include "controller/common/clock.h"
#include "controller/kube/client.h"
#include "controller/reconcile/cache_lag.h"
#include "controller/reconcile/cluster_resolver.h"
#include "controller/reconcile/decide.h"
#include "controller/reconcile/job_tracker.h"
#include "controller/reconcile/metered_slurm.h"
#include "controller/reconcile/ports.h"
#include "controller/reconcile/submit_fence.h"

namespace slurmop::reconcile {

struct ExecutorOptions {
  // SlurmCluster used by SlurmJobs without spec.clusterRef.name ("" = none).
  std::string default_cluster;
  // This installation's id, in every tag (JobIdentity::installation).
  std::string installation;
  // The key of the submit-target notes (submit_target_note.h; at least
  // kMinNoteKeyBytes, submit_note_key.h); empty: none are written or
  // believed, and every submit's target goes through a status write.
  std::string submit_note_key;
  // Whose identity a cluster may be called with (cluster_access.h).
  ClusterAccessOptions access;
  DecideOptions decide;
  // Bound on steps per reconcile (a safety net against a decision loop).
  int max_steps = 16;
  // With a tracker, an active job's SlurmJob is reconciled when the
  // cluster's list shows a change; this timer is only the safety net.
  Duration tracked_requeue = std::chrono::minutes(2);
  // How long a reconcile waits for the informer cache to show this process's
  // own last write before it goes ahead on the older object (cache_lag.h).
  Duration cache_patience = std::chrono::seconds(5);
};

class Executor {
 public:
  Executor(kube::Client& kube, const ObjectCache& jobs, const ObjectCache& clusters,
           agentplatform::SlurmApi& slurm_api, CredentialsResolver& credentials, EventSink& events,
           const Clock& clock, ExecutorOptions options);

  // Reconciles the SlurmJob "namespace/name".
  ReconcileResult Reconcile(const std::string& key);

  // Number of keys with a memo (for tests and metrics).
  size_t MemoCount() const;

  // Batched tracking (controller/reconcile/job_tracker.h); without it every
  // look at a job is its own GET.
  void SetTracker(JobTracker* tracker) {
    tracker_ = tracker;
    options_.decide.batched = tracker != nullptr;
  }

  // The ClusterSlurmCluster and Namespace caches (without them, a SlurmJob naming a
  // ClusterSlurmCluster finds none).
  void SetClusterScopedCaches(const ObjectCache* cluster_clusters, const ObjectCache* namespaces) {
    caches_.cluster_scoped = cluster_clusters;
    caches_.namespaces = namespaces;
  }

  // Why the protector could not keep a SlurmCluster, for the status of the SlurmJobs waiting on
  // it (without it they only wait). Set before the first Reconcile.
  void SetProtectionProblems(const ProtectionProblems* problems) {
    caches_.protection_problems = problems;
  }

  // The tracker saw the job of `key` change: the next reconcile looks at it
  // even if it looked recently.
  void MarkChanged(const std::string& key);

  // Fencing (#13 E2), both set before the first Reconcile:
  // `fence` is consulted right before every submit is sent (nullptr: none,
  // e.g. without leader election); a closed fence sends nothing.
  void SetSubmitFence(const SubmitFence* fence) { submit_fence_ = fence; }
  // A submit an earlier process (or the previous leader) may have sent is in
  // flight until `t` + submit_settle: `t` is when this replica became the
  // leader (default: when the executor was made).
  void AnchorSettleWindow(Time t) { options_.decide.process_start = t; }
  // Likewise for one SlurmJob that came under this executor at `t`, later than that (sharding:
  // its label moved it here from another replica's shard, which may have sent a submit just
  // before). Thread-safe; forgotten with the key.
  void AnchorSettleWindowFor(const std::string& key, Time t);
  DecideOptions DecideOptionsFor(const std::string& key) const;

  // One callSlurmRestApi call, counted in the metrics.
  absl::StatusOr<agentplatform::SlurmResponse> CallSlurm(
      const agentplatform::ClusterName& where, agentplatform::TokenSource& credentials,
      agentplatform::HttpMethod method, const std::string& path, const nlohmann::json* body,
      const agentplatform::CallOptions& options = agentplatform::CallOptions());

 private:
  class Attempt;  // one reconcile of one key
  Memo TakeMemo(const std::string& key);
  void PutMemo(const std::string& key, Memo memo);
  // The key's SlurmJob is gone (or released): drop what is kept for it.
  void Forget(const std::string& key);

  kube::Client& kube_;
  const ObjectCache& jobs_;
  const ObjectCache& clusters_;
  ClusterCaches caches_;  // set before the first Reconcile, then read-only
  MeteredSlurm slurm_;
  CredentialsResolver& credentials_;
  EventSink& events_;
  const Clock& clock_;
  ExecutorOptions options_;  // set before the first Reconcile, then read-only

  JobTracker* tracker_ = nullptr;
  const SubmitFence* submit_fence_ = nullptr;
  CacheLag cache_lag_;  // versions our own writes replaced

  mutable std::mutex mu_;
  std::map<std::string, Memo> memos_;
  std::set<std::string> changed_;               // keys the tracker saw change (mu_)
  std::map<std::string, Time> settle_anchors_;  // AnchorSettleWindowFor (mu_)
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_EXECUTOR_H_
