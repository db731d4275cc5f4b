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
  if (b.shrunk_at == Time()) return b.configured;
  const double minutes = std::chrono::duration<double>(now - b.shrunk_at).count() / 60;
  return std::min(b.configured, b.shrunk_rate * (1 + options_.recovery_per_minute * minutes));
}

void QuotaBudget::Refill(Bucket& b, Time now) const {
  if (now <= b.updated) return;
  const double seconds = std::chrono::duration<double>(now - b.updated).count();
  const double cap = b.probing ? 1.0 : BurstOf(b);
  b.tokens = std::min(cap, b.tokens + seconds * std::max(0.0, RateLocked(b, now)) / 60);
  b.updated = now;
}

QuotaBudget::Bucket& QuotaBudget::Refilled(std::map<std::string, Bucket>& buckets,
                                           const std::string& key, double configured, Time now,
                                           double burst) {
  Bucket fresh{
      burst > 0 ? burst : options_.burst, now, configured, configured, Time(), std::nullopt};
  fresh.burst = burst;
  auto [it, inserted] = buckets.try_emplace(key, std::move(fresh));
  Refill(it->second, now);
  return it->second;
}

void QuotaBudget::Remember(Bucket& b, const BudgetRequest& request, Time now) const {
  if (!request.owner.empty()) {
    if (request.project_requests_per_minute > 0) {
      b.settings[request.owner] = Setting{request.project_requests_per_minute, now};
    } else {
      b.settings.erase(request.owner);  // the resource no longer sets it
    }
  }
  std::optional<double> lowest;
  for (auto it = b.settings.begin(); it != b.settings.end();) {
    if (now - it->second.seen > options_.setting_memory) {
      it = b.settings.erase(it);  // no call carried it for long: e.g. a deleted resource
      continue;
    }
    lowest =
        std::min(lowest.value_or(it->second.requests_per_minute), it->second.requests_per_minute);
    ++it;
  }
  b.configured = lowest.value_or(options_.requests_per_minute);
}

bool QuotaBudget::AtRest(const Bucket& b, Time now) const {
  if (now - b.updated <= options_.setting_memory) return false;  // settings too are stale then
  if (b.probing || (b.paused_until.has_value() && *b.paused_until > now)) return false;
  const double rate = RateLocked(b, now);
  if (rate < b.configured) return false;
  const double seconds = std::chrono::duration<double>(now - b.updated).count();
  return b.tokens + seconds * std::max(0.0, rate) / 60 >= BurstOf(b);
}

void QuotaBudget::PruneLocked(Time now) {
  if (now - last_prune_ < std::chrono::minutes(1)) return;
  last_prune_ = now;
  for (std::map<std::string, Bucket>* buckets : {&buckets_, &own_, &unproven_}) {
    for (auto it = buckets->begin(); it != buckets->end();) {
      it = AtRest(it->second, now) ? buckets->erase(it) : std::next(it);
    }
  }
  for (auto key = accepted_.begin(); key != accepted_.end();) {
    std::map<std::string, Time>& callers = key->second;
    for (auto it = callers.begin(); it != callers.end();) {
      it = now - it->second > options_.setting_memory ? callers.erase(it) : std::next(it);
    }
    key = callers.empty() ? accepted_.erase(key) : std::next(key);
  }
}

bool QuotaBudget::AcceptedLocked(const std::string& key, const std::string& caller, Time now) {
  auto k = accepted_.find(key);
  if (k == accepted_.end()) return false;
  auto it = k->second.find(caller);
  if (it == k->second.end()) return false;
  it->second = now;
  return true;
}

double QuotaBudget::ReserveOf(const Bucket& b, CallPriority priority) const {
  switch (priority) {
    case CallPriority::kChange:
      return 0;
    case CallPriority::kTrack:
      return options_.track_reserve * BurstOf(b);
    case CallPriority::kProbe:
      return options_.probe_reserve * BurstOf(b);
  }
  return 0;
}

std::chrono::nanoseconds QuotaBudget::WaitFor(const Bucket& b, CallPriority priority,
                                              Time now) const {
  // The token itself plus the reserve kept for higher classes; never more
  // than a full bucket, or the wait could never end.
  const double need = std::min(b.probing ? 1.0 : BurstOf(b), 1.0 + ReserveOf(b, priority));
  if (b.tokens >= need) return std::chrono::nanoseconds(0);
  const double per_second = RateLocked(b, now) / 60;
  if (!(per_second > 0)) return std::chrono::nanoseconds::max();
  return std::chrono::nanoseconds(
      static_cast<int64_t>(std::ceil((need - b.tokens) * 1e9 / per_second)));
}

Reservation QuotaBudget::Reserve(const std::string& key, const BudgetRequest& request,
                                 CallPriority priority, std::chrono::nanoseconds max_wait) {
  const bool any_setting = !request.owner.empty();
  if (!(options_.requests_per_minute > 0) && !any_setting) {
    return Reservation{true, std::chrono::nanoseconds(0), false};  // off, as configured
  }
  std::lock_guard<std::mutex> lock(mu_);
  const Time now = clock_->Now();
  PruneLocked(now);
  Bucket& project = Refilled(buckets_, key, options_.requests_per_minute, now);
  Remember(project, request, now);
  Bucket* own = nullptr;
  if (request.own_requests_per_minute > 0) {
    own = &Refilled(own_, request.owner, request.own_requests_per_minute, now);
    own->configured = request.own_requests_per_minute;  // a changed cap holds from now on
  } else if (any_setting) {
    own_.erase(request.owner);
  }
  Reservation r;
  // A caller the project has not accepted draws on its own small bucket
  // instead (see the file comment).
  // A caller the project has not accepted also draws on a small bucket of
  // its own (see the file comment).
  Bucket* unproven = nullptr;
  if (!request.caller.empty() && !AcceptedLocked(key, request.caller, now)) {
    unproven = &Refilled(unproven_, absl::StrCat(key, "\n", request.caller),
                         options_.unproven_requests_per_minute, now, options_.unproven_burst);
    r.unproven = true;
  }
  const bool project_on = project.configured > 0;
  if (project_on) {
    r.wait = WaitFor(project, priority, now);
    if (unproven != nullptr) r.wait = std::max(r.wait, WaitFor(*unproven, priority, now));
  }
  if (own != nullptr) {
    const std::chrono::nanoseconds w = WaitFor(*own, priority, now);
    if (w > r.wait) {
      r.wait = w;
      r.limited_by_own_cap = true;
    }
  }
  if (r.wait > max_wait) return r;
  r.granted = true;
  if (project_on) project.tokens -= 1.0;
  if (project_on && unproven != nullptr) unproven->tokens -= 1.0;
  if (own != nullptr) own->tokens -= 1.0;
  return r;
}

std::optional<std::chrono::nanoseconds> QuotaBudget::TryReserve(
    const std::string& key, CallPriority priority, std::chrono::nanoseconds max_wait,
    std::chrono::nanoseconds* would_wait) {
  const Reservation r = Reserve(key, BudgetRequest(), priority, max_wait);
  if (r.granted) return r.wait;
  if (would_wait != nullptr) *would_wait = r.wait;
  return std::nullopt;
}

void QuotaBudget::Exhausted(const std::string& key,
                            std::optional<std::chrono::milliseconds> retry_delay) {
  std::lock_guard<std::mutex> lock(mu_);
  const Time now = clock_->Now();
  Bucket& b = Refilled(buckets_, key, options_.requests_per_minute, now);
  const std::chrono::milliseconds pause =
      retry_delay.has_value() && *retry_delay > std::chrono::milliseconds(0) ? *retry_delay
                                                                             : kDefaultPause;
  const bool already_paused = b.paused_until.has_value() && *b.paused_until > now;
  // The answers to calls sent before the pause began arrive during it: one
  // shrink per pause, not one per call that was in flight.
  if (!already_paused) {
    b.shrunk_rate = std::max(options_.min_requests_per_minute, RateLocked(b, now) / 2);
    b.shrunk_rate = std::min(b.shrunk_rate, b.configured);
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

void QuotaBudget::Accepted(const std::string& key, const std::string& caller) {
  if (caller.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  accepted_[key][caller] = clock_->Now();
}

void QuotaBudget::Rejected(const std::string& key, const std::string& caller) {
  std::lock_guard<std::mutex> lock(mu_);
  auto k = accepted_.find(key);
  if (k == accepted_.end()) return;
  k->second.erase(caller);
  if (k->second.empty()) accepted_.erase(k);
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

double QuotaBudget::ConfiguredRequestsPerMinute(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buckets_.find(key);
  if (it == buckets_.end()) return options_.requests_per_minute;
  return it->second.configured;
}

std::vector<BudgetState> QuotaBudget::Snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  const Time now = clock_->Now();
  std::vector<BudgetState> out;
  for (const auto& [key, b] : buckets_) {
    out.push_back(
        BudgetState{key, RateLocked(b, now), b.paused_until.has_value() && *b.paused_until > now});
  }
  return out;
}

}  // namespace slurmop::agentplatform
