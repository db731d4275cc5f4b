// File: controller/reconcile/shard_labeller.h
//
// ShardLabeller: writes kShardLabel (shards.h) on SlurmClusters, ClusterSlurmClusters and
// SlurmJobs, so that each shard's informers find its objects by label selector.
//
//  * WatchUnlabelled() (the replica holding the leader Lease): informers of the three kinds
//    restricted to UnlabelledSelector(S) ("<label> notin (0,...,S-1)": no label, or one of another
//    shard count), so it sees new objects only; each is labelled, and so leaves its informer.
//  * Offer() (every shard's informers hand it their objects): an object whose label no longer
//    matches its shard (a SlurmJob whose spec.clusterRef changed; a shard count changed) is
//    labelled again, and so moves to the other shard's informers (the replica owning that shard
//    treats it as a SlurmJob coming from another replica: executor.h AnchorSettleWindowFor).
//  * `workers` threads send merge patches of metadata.labels conditional on the resourceVersion
//    seen, one object at a time each (the work queue never hands one key to two workers); a 409
//    reads the object again, a failure retries with the queue's backoff. At 100,000 SlurmJobs
//    created at once, one worker (one round trip at a time) set the pace of every shard.
//  * A patch the API server refuses for good (RBAC, an admission policy on labels) is a Warning
//    Event WriteRefused on the object (write_refusal.h), besides the retry: no shard's informers
//    see an object without its label, so nothing else would ever tell its owner.

#ifndef SLURMOP_CONTROLLER_RECONCILE_SHARD_LABELLER_H_
#define SLURMOP_CONTROLLER_RECONCILE_SHARD_LABELLER_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "controller/kube/informer.h"
#include "controller/kube/workqueue.h"
#include "controller/reconcile/ports.h"
#include "controller/reconcile/shards.h"

namespace slurmop::reconcile {

class ShardLabeller {
 public:
  ShardLabeller(kube::Client& kube, const Clock& clock, EventSink& events, int shards,
                std::string watch_namespace, std::string default_cluster, int workers = 4);
  ~ShardLabeller();

  // The workers (every replica).
  void Start();
  // The informers of unlabelled objects (the leader). After Start().
  void WatchUnlabelled();
  bool Synced() const;
  // `obj` of `kind` as an informer delivered it: queued when its label is not its shard's.
  void Offer(std::string_view kind, const std::shared_ptr<const nlohmann::json>& obj);
  void Stop();
  // Labels written (for tests and logs).
  int64_t Patched() const { return patched_.load(); }

 private:
  void Work();
  // true: done (labelled, already right, or gone).
  bool Label(const std::string& key);

  kube::Client& kube_;
  const Clock& clock_;
  EventSink& events_;
  const int shards_;
  const std::string ns_;
  const std::string default_cluster_;
  kube::WorkQueue queue_;
  std::mutex mu_;
  // key "Kind|ns/name" -> the object last offered (read again on a 409).
  std::map<std::string, std::shared_ptr<const nlohmann::json>> pending_;
  std::vector<std::unique_ptr<kube::Informer>> informers_;
  const int workers_;
  std::vector<std::thread> worker_threads_;
  std::atomic<int64_t> patched_{0};
  std::atomic<bool> started_{false};
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_SHARD_LABELLER_H_
