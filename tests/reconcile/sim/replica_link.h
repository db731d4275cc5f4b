// File: tests/reconcile/sim/replica_link.h
//
// What one simulated operator replica's outside calls (Kubernetes and Agent
// Platform) have in common: whether the process is alive, and the crash
// armed for its next calls. A crash at call k lets call k take effect or not
// (a coin), answers it with an error, and fails every later call before it
// has any effect (a dead process does nothing more); the schedule then
// throws the replica's executor away and builds a new one.

#ifndef SLURMOP_TESTS_RECONCILE_SIM_REPLICA_LINK_H_
#define SLURMOP_TESTS_RECONCILE_SIM_REPLICA_LINK_H_

#include <optional>

#include "tests/reconcile/sim/faults.h"

namespace slurmop::reconcile::sim {

struct ReplicaLink {
  enum class Fate { kAlive, kDiesAfterEffect, kDiesBeforeEffect, kDead };

  // The fate of the next call (counted).
  Fate Next(Faults& faults) {
    if (dead) return Fate::kDead;
    ++calls;
    if (!crash_at_call || calls < *crash_at_call) return Fate::kAlive;
    dead = true;
    crash_at_call.reset();
    faults.Count("crash.mid-reconcile");
    return faults.Chance(0.5) ? Fate::kDiesAfterEffect : Fate::kDiesBeforeEffect;
  }

  bool dead = false;
  int calls = 0;
  std::optional<int> crash_at_call;
};

}  // namespace slurmop::reconcile::sim

#endif  // SLURMOP_TESTS_RECONCILE_SIM_REPLICA_LINK_H_
