// File: controller/agentplatform/cached_token_source.cc
//
// CachedTokenSource: caching, refresh margins and single-flight refresh of
// access tokens (see the header for the contract).

#include "controller/agentplatform/cached_token_source.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "glog/logging.h"

namespace slurmop::agentplatform {

CachedTokenSource::CachedTokenSource(std::unique_ptr<TokenFetcher> fetcher, const Clock* clock,
                                     std::chrono::seconds refresh_margin)
    : fetcher_(std::move(fetcher)),
      clock_(clock != nullptr ? clock : &RealClock::Get()),
      refresh_margin_(refresh_margin) {}

bool CachedTokenSource::Usable(Time now) const {
  return cached_.has_value() && !invalidated_ && now + kExpirySafety < cached_->token.expiry;
}

bool CachedTokenSource::Fresh(Time now) const {
  if (!Usable(now)) return false;
  const Duration lifetime = cached_->token.expiry - cached_->obtained;
  const Duration margin = std::min<Duration>(refresh_margin_, lifetime / 2);
  return now + margin < cached_->token.expiry;
}

namespace {
std::mutex observer_mu;
TokenRefreshObserver* observer = nullptr;
}  // namespace

void SetTokenRefreshObserver(TokenRefreshObserver fn) {
  std::lock_guard<std::mutex> lock(observer_mu);
  delete observer;
  observer = fn ? new TokenRefreshObserver(std::move(fn)) : nullptr;
}

absl::StatusOr<AccessToken> CachedTokenSource::FetchNoThrow() {
  absl::StatusOr<AccessToken> r = FetchUnobserved();
  std::lock_guard<std::mutex> lock(observer_mu);
  if (observer) (*observer)(fetcher_->Describe(), r.status());
  return r;
}

absl::StatusOr<AccessToken> CachedTokenSource::FetchUnobserved() {
  try {
    return fetcher_->Fetch();
  } catch (const std::exception& e) {
    return absl::InternalError(std::string("fetching an access token for ") + fetcher_->Describe() +
                               " failed unexpectedly: " + e.what());
  } catch (...) {
    return absl::InternalError("fetching an access token for " + fetcher_->Describe() +
                               " failed unexpectedly");
  }
}

absl::StatusOr<std::string> CachedTokenSource::Token() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    Time now = clock_->Now();
    if (Fresh(now)) return cached_->token.value;
    // Stale but still valid: use it while another thread refreshes, or while
    // waiting out a failed refresh.
    if (Usable(now) && (refreshing_ || now < next_attempt_)) return cached_->token.value;
    if (refreshing_) {
      const uint64_t generation = generation_;
      refreshed_.wait(lock, [&] { return !refreshing_; });
      if (generation_ != generation && !last_status_.ok() && !Usable(clock_->Now())) {
        return last_status_;  // share the failed fetch's result
      }
      continue;
    }

    refreshing_ = true;
    lock.unlock();
    absl::StatusOr<AccessToken> fetched = FetchNoThrow();
    lock.lock();
    refreshing_ = false;
    ++generation_;
    now = clock_->Now();
    if (fetched.ok()) {
      cached_ = Cached{*std::move(fetched), now};
      invalidated_ = false;
      last_status_ = absl::OkStatus();
      refreshed_.notify_all();
      return cached_->token.value;
    }
    last_status_ = fetched.status();
    refreshed_.notify_all();
    if (Usable(now)) {
      next_attempt_ = now + kFailedRefreshRetry;
      LOG(WARNING) << "Refreshing the access token for " << fetcher_->Describe()
                   << " failed; using the cached token until it expires: "
                   << last_status_.message();
      return cached_->token.value;
    }
    return last_status_;
  }
}

void CachedTokenSource::Invalidate() {
  std::lock_guard<std::mutex> lock(mu_);
  invalidated_ = true;
  next_attempt_ = Time{};
}

std::string CachedTokenSource::Describe() const { return fetcher_->Describe(); }

std::string CachedTokenSource::QuotaProject() const { return fetcher_->QuotaProject(); }

}  // namespace slurmop::agentplatform
