// File: controller/kube/rate_limiter.cc
//
// See rate_limiter.h for the contract.

#include "controller/kube/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace slurmop::kube {

RateLimiter::RateLimiter(const Clock& clock, RateLimiterOptions options)
    : clock_(clock),
      options_(options),
      tokens_(static_cast<double>(options.burst)),
      last_refill_(clock.Now()) {}

Duration RateLimiter::ItemDelay(int failures) const {
  // base * 2^(failures-1), computed in floating point so a large count
  // cannot overflow before the cap applies.
  const double nanos = static_cast<double>(options_.base_delay.count()) *
                       std::pow(2.0, static_cast<double>(std::max(failures - 1, 0)));
  if (nanos >= static_cast<double>(options_.max_delay.count())) return options_.max_delay;
  return Duration(static_cast<Duration::rep>(nanos));
}

Duration RateLimiter::BucketDelay() {
  if (options_.qps <= 0) return Duration::zero();
  const Time now = clock_.Now();
  if (now > last_refill_) {
    const double elapsed = std::chrono::duration<double>(now - last_refill_).count();
    tokens_ = std::min(static_cast<double>(options_.burst), tokens_ + elapsed * options_.qps);
    last_refill_ = now;
  }
  tokens_ -= 1.0;
  if (tokens_ >= 0) return Duration::zero();
  return std::chrono::duration_cast<Duration>(
      std::chrono::duration<double>(-tokens_ / options_.qps));
}

Duration RateLimiter::When(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  const int failures = ++failures_[key];
  return std::max(ItemDelay(failures), BucketDelay());
}

void RateLimiter::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.erase(key);
}

int RateLimiter::NumRequeues(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

}  // namespace slurmop::kube
