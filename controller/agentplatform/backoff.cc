// File: controller/agentplatform/backoff.cc
//
// Full-jitter exponential backoff.

#include "controller/agentplatform/backoff.h"

#include <algorithm>
#include <random>
#include <utility>

namespace slurmop::agentplatform {

Backoff::Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max,
                 std::function<double()> jitter)
    : initial_(std::max(initial, std::chrono::milliseconds(1))),
      max_(std::max(max, initial_)),
      jitter_(jitter ? std::move(jitter) : std::function<double()>(DefaultJitter)) {}

std::chrono::milliseconds Backoff::Next(std::optional<std::chrono::milliseconds> at_least) {
  // initial * 2^attempt, capped (computed in double to avoid overflow).
  const double window_ms = std::min(
      static_cast<double>(max_.count()),
      static_cast<double>(initial_.count()) * static_cast<double>(1ULL << std::min(attempt_, 40)));
  ++attempt_;
  const double r = std::clamp(jitter_(), 0.0, 1.0);
  auto delay = std::chrono::milliseconds(static_cast<int64_t>(window_ms * r));
  if (at_least.has_value()) delay = std::max(delay, *at_least);
  return delay;
}

double DefaultJitter() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

}  // namespace slurmop::agentplatform
