// File: tests/reconcile/sim/schedule.h
//
// One seeded schedule of the deterministic simulation (issue #13): two
// operator replicas (replica.h) sharing one Kubernetes API (InMemoryKube)
// and one simulated Slurm behind Agent Platform (SimSlurm), a FakeClock,
// and a fault phase in which every step is one of, drawn from the seed:
// reconcile a due key (on the leader, or on a deposed leader that has not
// noticed yet), advance the clock, tick the tracker, create / re-run
// (spec.runId) / delete a SlurmJob (deletionPolicy Cancel or Orphan), crash
// a replica between or in the middle of a reconcile, stall the leader
// (its Lease runs out; the standby takes over after it expired and may
// overlap with the old leader's last steps), drop a replica's watch (its
// cache lags) or relist (410: it catches up), repoint a SlurmCluster (a3,
// or b7, which shares a3's Secret) at the other Agent Platform cluster (the
// same job ids name other jobs there), switch its credentialsSecretRef to
// the other Secret, delete the namespace (Kubernetes deletes its SlurmJobs,
// SlurmClusters and credentials Secrets; it is gone once nothing is left,
// and may be created again); faults in the calls
// themselves come from the dice of SimAgentPlatform and ReplicaKube. Then
// a quiet phase: no faults, one leader, time advancing to each due key,
// until the status converged to Slurm's truth (or the bound passes).
// The invariants (invariants.h) are checked after every step.

#ifndef SLURMOP_TESTS_RECONCILE_SIM_SCHEDULE_H_
#define SLURMOP_TESTS_RECONCILE_SIM_SCHEDULE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "controller/common/clock.h"

namespace slurmop::reconcile::sim {

struct ScheduleOptions {
  int fault_steps = 30;
  // The quiet phase ends once every current run's job has ended in Slurm
  // and the status shows it (invariants.h Converged); a violation if that
  // has not happened by quiet_max (simulated time) or after max_quiet_steps.
  Duration quiet_max = std::chrono::minutes(60);
  int max_quiet_steps = 600;
  bool verbose = false;  // print the trace as it happens
};

struct ScheduleResult {
  uint64_t seed = 0;
  bool batched = false;
  bool notes = false;  // the replicas had a note key (submit_target_note.h)
  int steps = 0;
  std::map<std::string, int64_t> faults;  // injected, by kind
  std::vector<std::string> violations;    // empty: none
  std::vector<std::string> trace;         // every step, for a failure's report
};

ScheduleResult RunSchedule(uint64_t seed, const ScheduleOptions& options);

}  // namespace slurmop::reconcile::sim

#endif  // SLURMOP_TESTS_RECONCILE_SIM_SCHEDULE_H_
