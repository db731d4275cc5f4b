// File: tests/reconcile/sim/invariants.h
//
// What must hold after every step of a simulated schedule, read from the
// ground truth (the shared InMemoryKube and SimSlurm), never from the
// operator's own view:
//  1. at most one Slurm job ever queued per (SlurmJob uid, run) with this
//     installation's tag;
//  2. no cancel or update of a Slurm job this installation did not submit
//     (another installation's, a user's, or an id Slurm never had), and no
//     cancel of the job of a SlurmJob's current run unless the SlurmJob is
//     deleted with deletionPolicy Cancel or a re-run was asked for
//     (spec.runId changed);
//  3. the finalizer goes (the SlurmJob disappears) only when every job its
//     uid's tags were ever queued with has landed and ended, or its
//     deletionPolicy is Orphan;
//  4. status.jobId names a job queued with this SlurmJob's tag for the
//     status's run (never another's job).
// And once faults stop (Converged): every SlurmJob being deleted is gone,
// and every other SlurmJob's current run has a Slurm job that has ended and
// its status shows it (jobId and jobState as Slurm has them), or has no
// job because its submit was refused for good.

#ifndef SLURMOP_TESTS_RECONCILE_SIM_INVARIANTS_H_
#define SLURMOP_TESTS_RECONCILE_SIM_INVARIANTS_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "controller/common/clock.h"
#include "tests/reconcile/fakes/fake_kube.h"
#include "tests/reconcile/sim/sim_slurm.h"

namespace slurmop::reconcile::sim {

// A SlurmJob as the API server has it.
struct JobView {
  std::string key, uid, policy, spec_run_id, status_run_id, job_state;
  bool deleting = false;
  int64_t job_id = 0;
  int32_t run = 1;
};
std::map<std::string, JobView> JobsByUid(testing::InMemoryKube& kube);

class Invariants {
 public:
  Invariants(testing::InMemoryKube& kube, const SimSlurm& slurm,
             const std::set<std::string>& refused_tags)
      : kube_(kube), slurm_(slurm), refused_tags_(refused_tags) {}

  // Invariants 1-4 after a step at `now`; the violations found (empty: none).
  std::vector<std::string> Check(Time now);
  // The convergence after the quiet phase; the differences found.
  std::vector<std::string> Converged(Time now);

 private:
  void CheckDuplicates(std::vector<std::string>& out) const;
  void CheckActions(const std::map<std::string, JobView>& jobs, std::vector<std::string>& out);
  void CheckReleases(const std::map<std::string, JobView>& jobs, Time now,
                     std::vector<std::string>& out) const;
  void CheckStatusJobs(const std::map<std::string, JobView>& jobs,
                       std::vector<std::string>& out) const;
  // Jobs queued with this installation's tag for `uid`.
  std::vector<const SimJob*> JobsOf(const std::string& uid) const;

  // The SlurmJobs now (read again only when the store changed).
  const std::map<std::string, JobView>& Jobs();

  testing::InMemoryKube& kube_;
  const SimSlurm& slurm_;
  const std::set<std::string>& refused_tags_;
  std::map<std::string, JobView> last_;  // by uid, after the previous step
  size_t actions_checked_ = 0;
  int64_t revision_ = -1;
  std::map<std::string, JobView> jobs_;
};

}  // namespace slurmop::reconcile::sim

#endif  // SLURMOP_TESTS_RECONCILE_SIM_INVARIANTS_H_
