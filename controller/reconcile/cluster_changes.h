// File: controller/reconcile/cluster_changes.h
//
// ClusterChanges: what one watch event of a SlurmCluster (or
// ClusterSlurmCluster) changed, so that the manager wakes only what it must.
//
// Contract:
//  * Observe() remembers, per "ns/name", the generation, whether the cluster
//    is kept while SlurmJobs name it (KeptWhileInUse; for namespaced ones
//    only, the protector keeps no ClusterSlurmCluster) and its Ready
//    condition, and answers:
//    - `cluster`: the spec changed (a new generation, or first seen): the
//      cluster itself is reconciled again, and so are the SlurmJobs naming it;
//    - `jobs`: the SlurmJobs naming it are reconciled again. Also when only
//      the protection changed: a SlurmJob that waits for its cluster to be
//      kept (stage kClusterUnprotected) resumes on that event, not on its
//      1 s requeue. The protector's patch changes metadata only, which leaves
//      the generation as it was.
//    A change of status alone (the operator's own writes) wakes nothing.
//  * A deletion forgets the key and wakes the SlurmJobs naming it.
//  * Thread-safe.

#ifndef SLURMOP_CONTROLLER_RECONCILE_CLUSTER_CHANGES_H_
#define SLURMOP_CONTROLLER_RECONCILE_CLUSTER_CHANGES_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "nlohmann/json.hpp"

namespace slurmop::reconcile {

class ClusterChanges {
 public:
  struct Wake {
    bool cluster = false;
    bool jobs = false;
  };

  // `deleted`: a DELETED event. `namespaced`: a SlurmCluster (not a
  // ClusterSlurmCluster).
  Wake Observe(const std::string& key, bool deleted, bool namespaced, const nlohmann::json& obj);

  // "ns/name" -> its Ready condition is True, for every cluster seen.
  std::map<std::string, bool> Readiness() const;

 private:
  struct Seen {
    int64_t generation = 0;
    bool kept = false;
    bool ready = false;
  };
  mutable std::mutex mu_;
  std::map<std::string, Seen> seen_;
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_CLUSTER_CHANGES_H_
