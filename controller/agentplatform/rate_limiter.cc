// File: controller/agentplatform/rate_limiter.cc
//
// Per-key token buckets.

#include "controller/agentplatform/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace slurmop::agentplatform {

RateLimiter::RateLimiter(const Clock* clock, double rate_per_second, double burst)
    : clock_(clock != nullptr ? clock : &RealClock::Get()),
      rate_(rate_per_second),
      burst_(std::max(burst, 1.0)) {}

std::chrono::nanoseconds RateLimiter::Reserve(const std::string& key) {
  return *TryReserve(key, std::chrono::nanoseconds::max(), nullptr);
}

std::optional<std::chrono::nanoseconds> RateLimiter::TryReserve(
    const std::string& key, std::chrono::nanoseconds max_wait,
    std::chrono::nanoseconds* would_wait) {
  if (!(rate_ > 0)) return std::chrono::nanoseconds(0);
  std::lock_guard<std::mutex> lock(mu_);
  const Time now = clock_->Now();
  auto [it, inserted] = buckets_.try_emplace(key, Bucket{burst_, now});
  Bucket& b = it->second;
  if (now > b.updated) {
    const double elapsed = std::chrono::duration<double>(now - b.updated).count();
    b.tokens = std::min(burst_, b.tokens + elapsed * rate_);
    b.updated = now;
  }
  if (b.tokens >= 1.0) {
    b.tokens -= 1.0;
    return std::chrono::nanoseconds(0);
  }
  const std::chrono::nanoseconds wait(
      static_cast<int64_t>(std::ceil((1.0 - b.tokens) * 1e9 / rate_)));
  if (wait > max_wait) {
    if (would_wait != nullptr) *would_wait = wait;
    return std::nullopt;
  }
  b.tokens -= 1.0;
  return wait;
}

void RateLimiter::Block(const std::string& key, Time until) {
  std::lock_guard<std::mutex> lock(mu_);
  Time& t = blocked_until_[key];
  if (until > t) t = until;
}

std::optional<Time> RateLimiter::BlockedUntil(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocked_until_.find(key);
  if (it == blocked_until_.end()) return std::nullopt;
  if (it->second <= clock_->Now()) {
    blocked_until_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

}  // namespace slurmop::agentplatform
