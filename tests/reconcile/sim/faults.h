// File: tests/reconcile/sim/faults.h
//
// The fault dice of one schedule of the simulation: one seeded generator,
// an on/off switch (the quiet phase turns faults off) and a count per fault
// kind, for the summary. Everything random in a schedule draws from `rng`,
// in one thread at a time, so a seed replays the schedule exactly.

#ifndef SLURMOP_TESTS_RECONCILE_SIM_FAULTS_H_
#define SLURMOP_TESTS_RECONCILE_SIM_FAULTS_H_

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "controller/common/clock.h"

namespace slurmop::reconcile::sim {

class Faults {
 public:
  explicit Faults(uint64_t seed) : rng(seed) {}

  // True with probability p.
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
  // Uniform in [lo, hi].
  int64_t Between(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }
  Duration Millis(int64_t lo, int64_t hi) { return std::chrono::milliseconds(Between(lo, hi)); }
  // One of `kinds`, uniformly.
  const std::string& Pick(const std::vector<std::string>& kinds) {
    return kinds[static_cast<size_t>(Between(0, static_cast<int64_t>(kinds.size()) - 1))];
  }
  // A fault of this call, if any: `kinds` are the ones that apply to it.
  // Counts the one chosen. "" when none (or faults are off).
  std::string Roll(const std::vector<std::string>& kinds) {
    if (!enabled || kinds.empty() || !Chance(rate)) return "";
    const std::string& k = Pick(kinds);
    ++counts[k];
    return k;
  }
  void Count(const std::string& kind) { ++counts[kind]; }

  std::mt19937_64 rng;
  bool enabled = true;
  double rate = 0.2;  // of a call failing, while enabled
  std::map<std::string, int64_t> counts;
};

}  // namespace slurmop::reconcile::sim

#endif  // SLURMOP_TESTS_RECONCILE_SIM_FAULTS_H_
