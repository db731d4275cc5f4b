// File: tests/reconcile/sim/invariants.h
//
// What must hold after every step of a simulated schedule, read from the
// ground truth (the shared InMemoryKube and every cluster's SimSlurm),
// never from the operator's own view:
//  1. at most one Slurm job ever queued per (SlurmJob uid, run) with this
//     installation's tag, on one cluster (a repoint while a submit's outcome
//     is unknown included);
//  2. no cancel or update of a Slurm job this installation did not submit
//     (another installation's, a user's, or an id that cluster's Slurm
//     never had: after a repoint, a job id of the other cluster), and no
//     cancel of the job of a SlurmJob's current run unless the SlurmJob is
//     deleted with deletionPolicy Cancel or a re-run was asked for
//     (spec.runId changed);
//  3. the finalizer goes (the SlurmJob disappears) only when every job its
//     uid's tags were ever queued with has landed and ended, or its
//     deletionPolicy is Orphan;
//  4. status.jobId names a job queued with this SlurmJob's tag for the
//     status's run on the cluster status.submittedTo names (never another's
//     job).
// And once faults stop (Converged): every SlurmJob being deleted is gone,
// and every other SlurmJob's current run has a Slurm job that has ended and
// its status shows it (jobId and jobState as Slurm has them), or has no
// job because its submit was refused for good. A SlurmJob whose job was
// submitted to a cluster its SlurmCluster no longer points at reports the
// move instead (unless its status shows the job ended there): its status
// says ClusterChanged, or (being deleted) it stays and its Events say
// CancelBlocked.

#ifndef SLURMOP_TESTS_RECONCILE_SIM_INVARIANTS_H_
#define SLURMOP_TESTS_RECONCILE_SIM_INVARIANTS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "controller/common/clock.h"
#include "tests/reconcile/fakes/fake_kube.h"
#include "tests/reconcile/sim/sim_fleet.h"

namespace slurmop::reconcile::sim {

// A SlurmJob as the API server has it.
struct JobView {
  std::string key, uid, policy, spec_run_id, status_run_id, job_state;
  std::string cluster;       // "ns/name" of the SlurmCluster it names
  std::string submitted_to;  // status.submittedTo.clusterId
  std::string reconciling;   // the reason of the Reconciling condition
  bool deleting = false;
  int64_t job_id = 0;
  int32_t run = 1;
};
std::map<std::string, JobView> JobsByUid(testing::InMemoryKube& kube);

class Invariants {
 public:
  // Whether an Event with `reason` was recorded for SlurmJob "ns/name".
  using Reported = std::function<bool(const std::string& key, const std::string& reason)>;

  Invariants(testing::InMemoryKube& kube, const SimFleet& fleet,
             const std::set<std::string>& refused_tags, Reported reported)
      : kube_(kube), fleet_(fleet), refused_tags_(refused_tags), reported_(std::move(reported)) {}

  // Invariants 1-4 after a step at `now`; the violations found (empty: none).
  std::vector<std::string> Check(Time now);
  // The convergence after the quiet phase; the differences found.
  std::vector<std::string> Converged(Time now);

 private:
  void CheckDuplicates(std::vector<std::string>& out);
  void CheckActions(const std::map<std::string, JobView>& jobs, std::vector<std::string>& out);
  void CheckActionsOn(const SimFleet::Cluster& c, size_t& checked,
                      const std::map<std::string, JobView>& jobs, std::vector<std::string>& out);
  void CheckReleases(const std::map<std::string, JobView>& jobs, Time now,
                     std::vector<std::string>& out);
  void CheckStatusJobs(const std::map<std::string, JobView>& jobs,
                       std::vector<std::string>& out) const;
  // Jobs queued with this installation's tag for `uid` (on `cluster` only,
  // unless "").
  std::vector<const SimJob*> JobsOf(const std::string& uid, const std::string& cluster = "") const;
  // Where SlurmCluster `key` ("ns/name") points now ("" when it is gone).
  std::string PointsAt(const std::string& key) const;
  // A SlurmJob whose job is on a cluster its SlurmCluster no longer points
  // at: "" when it reports the move, else the difference.
  std::string MoveReported(const JobView& v, Time now) const;
  // Whether the credentials Secret SlurmCluster `key` names is gone (false when the SlurmCluster
  // is gone or names none).
  bool CredentialsGone(const std::string& key) const;
  // A job of `uid` on a cluster other than `points` (not "").
  bool JobElsewhere(const std::string& uid, const std::string& points) const;

  // The SlurmJobs now (read again only when the store changed).
  const std::map<std::string, JobView>& Jobs();

  testing::InMemoryKube& kube_;
  const SimFleet& fleet_;
  const std::set<std::string>& refused_tags_;
  const Reported reported_;
  std::map<std::string, JobView> last_;  // by uid, after the previous step
  std::vector<size_t> actions_checked_;  // by cluster (fleet_.all())
  // (uid, run) whose jobs on two clusters were reported (once: it stays true).
  std::set<std::pair<std::string, int32_t>> reported_runs_;
  int64_t revision_ = -1;
  std::map<std::string, JobView> jobs_;
};

}  // namespace slurmop::reconcile::sim

#endif  // SLURMOP_TESTS_RECONCILE_SIM_INVARIANTS_H_
