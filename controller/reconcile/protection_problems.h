// File: controller/reconcile/protection_problems.h
//
// ProtectionProblems: why the protector (cluster_protector.h) could not keep a SlurmCluster that
// SlurmJobs name, for those SlurmJobs. They submit nothing until it is kept (the stage
// kClusterUnprotected); with a problem on record their status says why, instead of only the
// SlurmCluster's ProtectionFailed Event.
//
// Contract: Set() after a refused step (not after a conflict or an unanswered request: those are
// retried at once and say nothing about the user's setup); Clear() once a reconcile of that
// SlurmCluster completes or finds it gone. One entry per SlurmCluster at most, so the map is
// bounded by the SlurmClusters this replica protects. Thread-safe.

#ifndef SLURMOP_CONTROLLER_RECONCILE_PROTECTION_PROBLEMS_H_
#define SLURMOP_CONTROLLER_RECONCILE_PROTECTION_PROBLEMS_H_

#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace slurmop::reconcile {

class ProtectionProblems {
 public:
  // `key` is the SlurmCluster's "namespace/name"; `problem` says which step failed and the API
  // server's answer.
  void Set(const std::string& key, std::string problem);
  void Clear(const std::string& key);
  // The problem on record for `key`, or "" when none.
  std::string Get(const std::string& key) const;

 private:
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, std::string> problems_;  // guarded by mu_
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_PROTECTION_PROBLEMS_H_
