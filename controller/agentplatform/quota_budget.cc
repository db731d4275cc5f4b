// File: controller/agentplatform/quota_budget.cc
//
// Per project-and-region token buckets with priority reserves and an
// additive-increase, multiplicative-decrease rate (see the header).

#include "controller/agentplatform/quota_budget.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace slurmop::agentplatform {

const char* CallPriorityName(CallPriority p) {
  switch (p) {
    case CallPriority::kChange:
      return "change";
    case CallPriority::kTrack:
      return "track";
    case CallPriority::kProbe:
      return "probe";
  }
  return "track";
}

std::string QuotaKey(const std::string& endpoint, const std::string& project,
                     const std::string& region) {
  return absl::StrCat(endpoint, "|projects/", project, "/locations/", region);
}

namespace {

QuotaBudgetOptions Sane(QuotaBudgetOptions o) {
  if (o.burst < 1) o.burst = 1;
  return o;
}

}  // namespace

QuotaBudget::QuotaBudget(const Clock* clock, QuotaBudgetOptions options)
    : clock_(clock != nullptr ? clock : &RealClock::Get()), options_(Sane(options)) {}

double QuotaBudget::RateLocked(const Bucket& b, Time now) const {
  const double configured = options_.requests_per_minute;
  if (b.shrunk_at == Time()) return configured;
  const double minutes = std::chrono::duration<double>(now - b.shrunk_at).count() / 60;
  return std::min(configured, b.shrunk_rate * (1 + options_.recovery_per_minute * minutes));
}

QuotaBudget::Bucket& QuotaBudget::Refilled(const std::string& key, Time now) {
  auto [it, inserted] = buckets_.try_emplace(
      key, Bucket{options_.burst, now, options_.requests_per_minute, Time(), std::nullopt});
  Bucket& b = it->second;
  if (now > b.updated) {
    const double seconds = std::chrono::duration<double>(now - b.updated).count();
    const double cap = b.probing ? 1.0 : options_.burst;
    b.tokens = std::min(cap, b.tokens + seconds * RateLocked(b, now) / 60);
    b.updated = now;
  }
  return b;
}

double QuotaBudget::ReserveOf(CallPriority priority) const {
  switch (priority) {
    case CallPriority::kChange:
      return 0;
    case CallPriority::kTrack:
      return options_.track_reserve * options_.burst;
    case CallPriority::kProbe:
      return options_.probe_reserve * options_.burst;
  }
  return 0;
}

std::optional<std::chrono::nanoseconds> QuotaBudget::TryReserve(
    const std::string& key, CallPriority priority, std::chrono::nanoseconds max_wait,
    std::chrono::nanoseconds* would_wait) {
  if (!(options_.requests_per_minute > 0)) return std::chrono::nanoseconds(0);
  std::lock_guard<std::mutex> lock(mu_);
  const Time now = clock_->Now();
  Bucket& b = Refilled(key, now);
  // The token itself plus the reserve kept for higher classes; never more
  // than a full bucket, or the wait could never end.
  const double need = std::min(b.probing ? 1.0 : options_.burst, 1.0 + ReserveOf(priority));
  if (b.tokens >= need) {
    b.tokens -= 1.0;
    return std::chrono::nanoseconds(0);
  }
  const double per_second = RateLocked(b, now) / 60;
  const std::chrono::nanoseconds wait(
      static_cast<int64_t>(std::ceil((need - b.tokens) * 1e9 / per_second)));
  if (wait > max_wait) {
    if (would_wait != nullptr) *would_wait = wait;
    return std::nullopt;
  }
  b.tokens -= 1.0;
  return wait;
}

void QuotaBudget::Exhausted(const std::string& key,
                            std::optional<std::chrono::milliseconds> retry_delay) {
  std::lock_guard<std::mutex> lock(mu_);
  const Time now = clock_->Now();
  Bucket& b = Refilled(key, now);
  const std::chrono::milliseconds pause =
      retry_delay.has_value() && *retry_delay > std::chrono::milliseconds(0) ? *retry_delay
                                                                             : kDefaultPause;
  const bool already_paused = b.paused_until.has_value() && *b.paused_until > now;
  // The answers to calls sent before the pause began arrive during it: one
  // shrink per pause, not one per call that was in flight.
  if (!already_paused) {
    b.shrunk_rate = std::max(options_.min_requests_per_minute, RateLocked(b, now) / 2);
    b.shrunk_rate = std::min(b.shrunk_rate, options_.requests_per_minute);
    b.shrunk_at = now;
    b.tokens = std::min(b.tokens, 0.0);  // resume gently once the pause is over
  }
  b.probing = true;
  const Time until = now + std::chrono::duration_cast<Time::duration>(pause);
  if (!already_paused || until > *b.paused_until) b.paused_until = until;
}

void QuotaBudget::Succeeded(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buckets_.find(key);
  if (it != buckets_.end()) it->second.probing = false;
}

std::optional<Time> QuotaBudget::PausedUntil(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buckets_.find(key);
  if (it == buckets_.end() || !it->second.paused_until.has_value()) return std::nullopt;
  if (*it->second.paused_until <= clock_->Now()) return std::nullopt;
  return it->second.paused_until;
}

double QuotaBudget::RequestsPerMinute(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buckets_.find(key);
  if (it == buckets_.end()) return options_.requests_per_minute;
  return RateLocked(it->second, clock_->Now());
}

}  // namespace slurmop::agentplatform
