// File: controller/reconcile/manager.h
//
// Wires the SlurmJob controller together: an informer per watched kind
// (SlurmJob, SlurmCluster, ClusterSlurmCluster, Namespace), the rate-limited work queue they feed,
// N worker threads that hand keys to the Executor, and the controller-runtime result contract
// (RetryScheduler, retry_scheduler.h: keys whose Kubernetes requests got no answer are also
// retried as soon as the API server answers again).
// A SlurmCluster spec change enqueues every SlurmJob that names it, and the
// cluster itself under the key "scl:namespace/name" (its probe); likewise a
// ClusterSlurmCluster ("scl:/name"). A Namespace change enqueues its SlurmJobs
// that name a ClusterSlurmCluster (their access depends on its labels).

#ifndef SLURMOP_CONTROLLER_RECONCILE_MANAGER_H_
#define SLURMOP_CONTROLLER_RECONCILE_MANAGER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "controller/common/log_context.h"
#include "controller/kube/informer.h"
#include "controller/kube/workqueue.h"
#include "controller/reconcile/cluster_changes.h"
#include "controller/reconcile/cluster_protector.h"
#include "controller/reconcile/cluster_reconciler.h"
#include "controller/reconcile/executor.h"
#include "controller/reconcile/job_index.h"
#include "controller/reconcile/retry_scheduler.h"

namespace slurmop::reconcile {

struct ManagerOptions {
  std::string watch_namespace;  // "" = all namespaces
  int workers = 4;
  ExecutorOptions executor;
  // Batched tracking: one list per SlurmCluster per tick (job_tracker.h).
  bool batched_tracking = true;
  TrackerOptions tracker;
  // Sharding (shards.h): only SlurmJobs, SlurmClusters and ClusterSlurmClusters matching this
  // label selector are watched ("" all). A manager of one shard among others also reads the
  // orphan sweep's "no such SlurmJob" as "not in this shard": it never cancels such a job.
  std::string label_selector;
  // Declare the scrape-time gauges of this manager (one manager per process does).
  bool register_metrics = true;
  // SlurmJobs not submitted yet go ahead of the others in the work queue
  // (work_priority.h); false: one first-in, first-out queue for all.
  bool prioritize_submits = true;
  // With prioritize_submits and more workers than this, this many workers
  // never take kNormal work (WorkQueue::SetNormalLimit): a SlurmJob not
  // submitted yet starts at once, not after a worker finishes a status write.
  int workers_kept_for_submits = 1;
};

class Manager {
 public:
  Manager(kube::Client& kube, agentplatform::SlurmApi& slurm_api, CredentialsResolver& credentials,
          EventSink& events, const Clock& clock, ManagerOptions options);
  ~Manager();

  // Starts the informers and the workers; returns at once.
  void Start();
  // True once both informers delivered their first complete list.
  bool Synced() const;
  // Stops the informers, drains the queue and joins the workers.
  void Stop();

  size_t QueueLength() const { return queue_.Len(); }

  // Declares the operator's own metric families (counters and histograms the managers add to),
  // without any manager's scrape-time gauges: for managers made with register_metrics false.
  static void DeclareMetrics();
  // Serves the scrape-time gauges (queue, workers, tracked jobs, SlurmJobs by phase, cluster
  // readiness, oldest Pending) over the managers `list` returns at each scrape, summed: with
  // --shards, those of the shards the replica holds. (A manager made with register_metrics
  // serves its own.)
  using ManagerList = std::function<std::vector<std::shared_ptr<const Manager>>()>;
  static void RegisterGauges(ManagerList list);

  // Also hands every SlurmJob informer event to `observer` (on the informer's thread, after the
  // manager's own handling), so that another controller (the SlurmCronJob controller) needs no
  // watch of its own. Before Start().
  using JobObserver = std::function<void(const std::string& type,
                                         const std::shared_ptr<const nlohmann::json>& obj)>;
  void SetJobObserver(JobObserver observer) { job_observer_ = std::move(observer); }
  // Likewise every SlurmCluster (cluster_scoped false) and ClusterSlurmCluster event.
  using ClusterObserver = std::function<void(bool cluster_scoped, const std::string& type,
                                             const std::shared_ptr<const nlohmann::json>&)>;
  void SetClusterObserver(ClusterObserver observer) { cluster_observer_ = std::move(observer); }
  // True once the SlurmJob informer delivered its first complete list.
  bool JobsSynced() const { return jobs_ && jobs_->HasSynced(); }

  // Fencing (Executor::SetSubmitFence / AnchorSettleWindow); before Start().
  void SetSubmitFence(const SubmitFence* fence) { executor_.SetSubmitFence(fence); }
  void AnchorSettleWindow(Time t) { executor_.AnchorSettleWindow(t); }

 private:
  // The two halves of RegisterGauges: the work queue and workers; the jobs and clusters.
  static void RegisterWorkGauges(const ManagerList& list);
  static void RegisterStateGauges(const ManagerList& list);

  class CacheView : public ObjectCache {
   public:
    explicit CacheView(const std::unique_ptr<kube::Informer>& informer) : informer_(informer) {}
    std::shared_ptr<const nlohmann::json> Get(std::string_view ns,
                                              std::string_view name) const override;

   private:
    const std::unique_ptr<kube::Informer>& informer_;
  };

  void OnJobEvent(const std::string& type, const std::shared_ptr<const nlohmann::json>& obj);
  // The SlurmJob with `uid`, as the cache shows it (for the orphan sweep).
  std::optional<JobTracker::Owner> KnownUid(const std::string& ns, const std::string& uid);
  // The tracker's options with what its orphan sweep leaves alone
  // (TrackerOptions::installation, named_by_status).
  TrackerOptions SweepOptions();
  // Parts of the constructor: the batched tracker; the SlurmCluster, ClusterSlurmCluster and
  // Namespace informers.
  void MakeTracker();
  void MakeClusterInformers(kube::Client& kube);
  // SlurmClusters and ClusterSlurmClusters (cluster_scoped) alike.
  void OnClusterEvent(const std::string& type, const std::shared_ptr<const nlohmann::json>& obj,
                      bool cluster_scoped = false);
  // A Namespace's labels decide which ClusterSlurmClusters its SlurmJobs may use.
  void OnNamespaceEvent(const std::shared_ptr<const nlohmann::json>& obj);
  void Work();
  // Declares the operator's own families and the scrape-time gauges of this manager
  // (manager_metrics.cc).
  void RegisterMetrics();
  // What the JSON log lines of one reconcile of `key` carry (common/log_context.h).
  LogFields ReconcileLogFields(bool is_cluster, const std::string& key) const;

  const Clock& clock_;
  const ManagerOptions options_;
  kube::WorkQueue queue_;
  RetryScheduler retry_;  // puts keys back into queue_
  // What each SlurmCluster event changed: spec changes and its protection
  // (not our own status writes) fan out to the SlurmJobs that name it; also
  // its Ready condition (slurmjob_operator_slurmcluster_ready).
  ClusterChanges cluster_changes_;
  std::unique_ptr<kube::Informer> jobs_;
  JobObserver job_observer_;          // set before Start()
  ClusterObserver cluster_observer_;  // set before Start()
  std::unique_ptr<kube::Informer> clusters_;
  std::unique_ptr<kube::Informer> cluster_clusters_;  // ClusterSlurmClusters
  std::unique_ptr<kube::Informer> namespaces_;
  CacheView jobs_view_;
  CacheView clusters_view_;
  CacheView cluster_clusters_view_;
  CacheView namespaces_view_;
  Executor executor_;
  ClusterReconciler cluster_reconciler_;
  // Keeps SlurmClusters and their Secrets while SlurmJobs name them ("protect:" keys).
  ClusterProtector protector_;
  std::unique_ptr<JobTracker> tracker_;
  // Uid, dependents, cluster and phase indexes of the cached SlurmJobs.
  JobIndex index_;
  std::vector<std::thread> workers_;
  std::atomic<int> active_[2] = {0, 0};  // workers reconciling a SlurmJob / a SlurmCluster now
  std::atomic<bool> started_{false};
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_MANAGER_H_
