// File: tests/reconcile/sim/sim_fleet.h
//
// The Agent Platform clusters of one simulated schedule, by cluster id (the
// SlurmCluster's spec.clusterId; one project and region): each id's Slurm
// (SimSlurm), which a request's URL selects (SimAgentPlatform). Their job
// ids start from the same base, so the same id names different jobs on
// different clusters: a job id alone never says whose job it is. Every
// SimSlurm there ever was stays here for the invariants, in the order they
// were added. Not thread-safe by itself: the simulation runs one thing at a
// time.

#ifndef SLURMOP_TESTS_RECONCILE_SIM_SIM_FLEET_H_
#define SLURMOP_TESTS_RECONCILE_SIM_SIM_FLEET_H_

#include <memory>
#include <string>
#include <vector>

#include "tests/reconcile/sim/sim_slurm.h"

namespace slurmop::reconcile::sim {

class SimFleet {
 public:
  struct Cluster {
    std::string id;  // spec.clusterId
    std::unique_ptr<SimSlurm> slurm;
  };

  SimSlurm& Add(const std::string& id, int64_t first_job_id, Duration min_job_age) {
    all_.push_back({id, std::make_unique<SimSlurm>(first_job_id, min_job_age)});
    return *all_.back().slurm;
  }
  // The Slurm of cluster `id`; nullptr: Agent Platform has no such cluster.
  SimSlurm* At(const std::string& id) const {
    for (const Cluster& c : all_) {
      if (c.id == id) return c.slurm.get();
    }
    return nullptr;
  }
  const std::vector<Cluster>& all() const { return all_; }

 private:
  std::vector<Cluster> all_;
};

}  // namespace slurmop::reconcile::sim

#endif  // SLURMOP_TESTS_RECONCILE_SIM_SIM_FLEET_H_
