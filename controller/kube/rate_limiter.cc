// File: controller/kube/rate_limiter.cc
//
// See rate_limiter.h for the contract.

#include "controller/kube/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace slurmop::kube {

std::string NamespaceOfKey(const std::string& key) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return "";
  // Namespaces and names never hold ':', so one before the '/' ends a prefix.
  const size_t colon = key.rfind(':', slash);
  const size_t start = colon == std::string::npos ? 0 : colon + 1;
  return key.substr(start, slash - start);
}

RateLimiter::RateLimiter(const Clock& clock, RateLimiterOptions options)
    : clock_(clock), options_(options), last_prune_(clock.Now()) {}

Duration RateLimiter::ItemDelay(int failures) const {
  // base * 2^(failures-1), computed in floating point so a large count
  // cannot overflow before the cap applies.
  const double nanos = static_cast<double>(options_.base_delay.count()) *
                       std::pow(2.0, static_cast<double>(std::max(failures - 1, 0)));
  if (nanos >= static_cast<double>(options_.max_delay.count())) return options_.max_delay;
  return Duration(static_cast<Duration::rep>(nanos));
}

void RateLimiter::Refill(Bucket& b, Time now) const {
  if (now <= b.last_refill) return;
  const double elapsed = std::chrono::duration<double>(now - b.last_refill).count();
  b.tokens = std::min(static_cast<double>(options_.burst), b.tokens + elapsed * options_.qps);
  b.last_refill = now;
}

void RateLimiter::PruneFullBuckets(Time now) {
  if (now - last_prune_ < std::chrono::minutes(1)) return;
  last_prune_ = now;
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    Refill(it->second, now);
    if (it->second.tokens >= options_.burst) {
      it = buckets_.erase(it);
    } else {
      ++it;
    }
  }
}

Duration RateLimiter::BucketDelay(const std::string& ns) {
  if (options_.qps <= 0) return Duration::zero();
  const Time now = clock_.Now();
  PruneFullBuckets(now);
  Bucket& b =
      buckets_.try_emplace(ns, Bucket{static_cast<double>(options_.burst), now}).first->second;
  Refill(b, now);
  b.tokens -= 1.0;
  if (b.tokens >= 0) return Duration::zero();
  return std::chrono::duration_cast<Duration>(
      std::chrono::duration<double>(-b.tokens / options_.qps));
}

Duration RateLimiter::When(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  const int failures = ++failures_[key];
  return std::max(ItemDelay(failures), BucketDelay(NamespaceOfKey(key)));
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

size_t RateLimiter::BucketsKept() const {
  std::lock_guard<std::mutex> lock(mu_);
  return buckets_.size();
}

}  // namespace slurmop::kube
