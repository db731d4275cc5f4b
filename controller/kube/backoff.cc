// File: controller/kube/backoff.cc
//
// See backoff.h for the contract.

#include "controller/kube/backoff.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <random>

namespace slurmop::kube {

ExponentialBackoff::ExponentialBackoff(const Clock& clock, BackoffOptions options,
                                       std::function<double()> random)
    : clock_(clock),
      options_(options),
      random_(random ? std::move(random) : DefaultRandom()),
      step_(options.initial) {}

Duration ExponentialBackoff::Next() {
  const Time now = clock_.Now();
  if (last_backoff_.has_value() && now - *last_backoff_ > options_.reset_after) {
    step_ = options_.initial;
  }
  last_backoff_ = now;
  Duration wait = step_;
  const auto grown = std::chrono::duration_cast<Duration>(
      std::chrono::duration<double, Duration::period>(step_.count() * options_.factor));
  step_ = std::min(grown, options_.cap);
  if (options_.jitter > 0) {
    wait += std::chrono::duration_cast<Duration>(std::chrono::duration<double, Duration::period>(
        wait.count() * options_.jitter * random_()));
  }
  return wait;
}

void ExponentialBackoff::Reset() {
  step_ = options_.initial;
  last_backoff_.reset();
}

std::function<double()> DefaultRandom() {
  struct State {
    std::mutex mu;
    std::mt19937_64 engine{std::random_device{}()};
    std::uniform_real_distribution<double> uniform{0.0, 1.0};
  };
  auto state = std::make_shared<State>();
  return [state] {
    std::lock_guard<std::mutex> lock(state->mu);
    return state->uniform(state->engine);
  };
}

}  // namespace slurmop::kube
