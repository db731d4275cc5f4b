// File: controller/reconcile/job_index.h
//
// What the manager needs to know of every cached SlurmJob, kept up to date
// from the watch events so that nothing walks (and decodes) the whole cache:
// the SlurmJob with a uid (the orphan sweep asks, tracking_policy.h), the
// SlurmJobs whose spec.dependsOn names a SlurmJob (woken when it changes),
// the SlurmJobs naming a SlurmCluster (woken when it changes), and the count
// by status.phase (a metric).
//
// Contract:
//  * Apply() takes every watch event of the SlurmJob informer, in order; a
//    DELETED event forgets the SlurmJob (and its dependsOn entries), and an
//    edit of spec.dependsOn forgets the names it drops.
//  * A uid maps to the SlurmJob last seen with it; objects without a uid
//    are indexed by key only.
//  * Fields of the wrong JSON type count as absent.
//
// Thread-safety: all methods may be called from any thread.

#ifndef SLURMOP_CONTROLLER_RECONCILE_JOB_INDEX_H_
#define SLURMOP_CONTROLLER_RECONCILE_JOB_INDEX_H_

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "controller/common/clock.h"
#include "controller/common/log_context.h"
#include "controller/reconcile/tracking_policy.h"
#include "nlohmann/json.hpp"

namespace slurmop::reconcile {

class JobIndex {
 public:
  // Applies one watch event (ADDED, MODIFIED, DELETED) for `obj`; returns
  // the keys ("namespace/name") of the SlurmJobs that wait for it.
  std::vector<std::string> Apply(const std::string& type, const nlohmann::json& obj);

  // The SlurmJob with `uid`: exists=false when none is cached.
  TagOwner OwnerOfUid(const std::string& uid) const;

  // True when some cached SlurmJob's status.jobId is `job_id` (the orphan
  // sweep leaves such a job alone, whatever uid its tag names).
  bool NamesJobId(int64_t job_id) const;

  // The SlurmJobs of `ns` that name SlurmCluster `cluster` (those without
  // spec.clusterRef.name name `default_cluster`).
  std::vector<std::string> Naming(const std::string& ns, const std::string& cluster,
                                  const std::string& default_cluster) const;
  // "ns/name" of the SlurmCluster (not a ClusterSlurmCluster) SlurmJob `key` names; nullopt
  // when it is not cached, names a ClusterSlurmCluster, or names none and there is no default.
  std::optional<std::string> NamespacedClusterOf(const std::string& key,
                                                 const std::string& default_cluster) const;
  // The SlurmJobs (of any namespace) that name ClusterSlurmCluster `cluster`.
  std::vector<std::string> NamingClusterScoped(const std::string& cluster) const;
  // The SlurmJobs of `ns` that name any ClusterSlurmCluster (whether they may use it depends on
  // the namespace's labels).
  std::vector<std::string> InNamespaceNamingClusterScoped(const std::string& ns) const;

  // SlurmJobs by status.phase ("" before the first status); the phases a
  // SlurmJob can have are always present, with 0.
  std::map<std::string, double> CountByPhase() const;

  // Per namespace, how long its longest-waiting Pending SlurmJob has waited at `now` (since
  // status.submitTime, or metadata.creationTimestamp before a submit).
  std::map<std::string, double> OldestPendingByNamespace(Time now) const;

  // The JSON log fields of SlurmJob `key`: uid, cluster, run, jobId as far as known.
  LogFields LogFieldsOf(const std::string& key, const std::string& default_cluster) const;

 private:
  // Kept small: one per cached SlurmJob (#16 item 1). The namespace is the
  // key's prefix; the phase is a code unless it is none of the known ones.
  enum class Phase : uint8_t {
    kNone,
    kPending,
    kRunning,
    kSucceeded,
    kFailed,
    kCancelled,
    kUnknown,
    kOther
  };
  struct Summary {
    std::string uid, cluster_ref /* "" = the default */;
    int64_t job_id = 0;
    std::optional<Time> waiting_since;
    int32_t run = 0;
    Phase phase = Phase::kNone;
    bool cluster_scoped_ref = false;  // spec.clusterRef.kind is ClusterSlurmCluster
  };
  using Summaries = std::map<std::string, Summary>;  // by "ns/name"

  void UpdateSummary(const std::string& type, const std::string& key, const nlohmann::json& obj);
  std::vector<std::string> UpdateDependents(const std::string& type, const std::string& key,
                                            const std::string& ns, const nlohmann::json& obj);
  static Phase PhaseCode(std::string_view phase);  // kOther for none of the known ones
  std::string_view PhaseOf(const Summaries::value_type& entry) const;

  mutable std::mutex mu_;
  Summaries summaries_;
  // uid -> the key of summaries_ with it. Both point into summaries_'s nodes,
  // which do not move; an entry goes before its summary changes or goes.
  absl::flat_hash_map<std::string_view, const std::string*> key_by_uid_;
  absl::flat_hash_map<int64_t, int> status_job_ids_;  // status.jobId -> how many SlurmJobs name it
  std::map<std::string, std::string> other_phases_;   // by key: a status.phase none of Phase's
  // SlurmJob key -> the keys of SlurmJobs whose spec.dependsOn names it.
  std::map<std::string, std::set<std::string>> dependents_;
  // SlurmJob key -> the keys its spec.dependsOn names (only SlurmJobs that name some).
  std::map<std::string, std::set<std::string>> depends_on_;
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_JOB_INDEX_H_
