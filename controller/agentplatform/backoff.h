// File: controller/agentplatform/backoff.h
//
// Exponential backoff with full jitter (python-api-core style): the n-th
// delay (n = 0, 1, ...) is uniform(0, min(max, initial * 2^n)), and never
// less than a server-suggested minimum.
//
// Contract: Next() is deterministic given the jitter function; jitter()
// must return values in [0, 1). Not thread-safe (one per call).

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_BACKOFF_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_BACKOFF_H_

#include <chrono>
#include <functional>
#include <optional>

namespace slurmop::agentplatform {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max,
          std::function<double()> jitter);

  // The next delay; at least `at_least` when given.
  std::chrono::milliseconds Next(std::optional<std::chrono::milliseconds> at_least = std::nullopt);

 private:
  const std::chrono::milliseconds initial_;
  const std::chrono::milliseconds max_;
  const std::function<double()> jitter_;
  int attempt_ = 0;
};

// A uniform [0, 1) source backed by a per-thread PRNG.
double DefaultJitter();

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_BACKOFF_H_
