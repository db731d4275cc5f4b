// File: controller/agentplatform/cached_token_source.h
//
// The caching half of every TokenSource: a TokenFetcher performs one token
// exchange; CachedTokenSource decides when to call it.
//
// Contract:
//  * Token() returns the cached token while now + margin < expiry, where
//    margin = min(refresh_margin, lifetime / 2) (so short-lived tokens do not
//    refresh on every call).
//  * Refreshes are single-flight: while one thread fetches, others get the
//    cached token if it is still valid, else wait for that fetch and share
//    its result (token or error).
//  * If a refresh fails while the cached token is still valid (more than
//    10 s before expiry, and not invalidated), the cached token is returned
//    and the next refresh attempt waits 10 s.
//  * Invalidate() marks the cached token unusable: the next Token() fetches.
//  * Fetcher errors are returned unchanged; a fetcher that throws is caught
//    and reported as kInternal (exceptions never escape).

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_CACHED_TOKEN_SOURCE_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_CACHED_TOKEN_SOURCE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/agentplatform/credentials.h"
#include "controller/common/clock.h"

namespace slurmop::agentplatform {

// Refresh margins (google-auth.md §3.8): the metadata server caches tokens
// until about 4 minutes before expiry, so refresh its tokens 225 s early;
// self-minted tokens 300 s early.
inline constexpr std::chrono::seconds kMetadataRefreshMargin{225};
inline constexpr std::chrono::seconds kDefaultRefreshMargin{300};
// A cached token is used only while it has more than this left.
inline constexpr std::chrono::seconds kExpirySafety{10};
// After a failed refresh with a still-valid token, wait this long before the
// next attempt.
inline constexpr std::chrono::seconds kFailedRefreshRetry{10};

// Called after every token exchange (any CachedTokenSource) with the
// fetcher's description and the result: the metrics hook
// (slurmjob_operator_token_refreshes_total). Empty function: none.
using TokenRefreshObserver = std::function<void(const std::string& source, const absl::Status&)>;
void SetTokenRefreshObserver(TokenRefreshObserver fn);

struct AccessToken {
  std::string value;
  Time expiry;
};

// One token exchange. Fetch() is never called concurrently on one fetcher.
class TokenFetcher {
 public:
  virtual ~TokenFetcher() = default;
  virtual absl::StatusOr<AccessToken> Fetch() = 0;
  virtual std::string Describe() const = 0;
  virtual std::string QuotaProject() const { return ""; }
};

class CachedTokenSource final : public TokenSource {
 public:
  CachedTokenSource(std::unique_ptr<TokenFetcher> fetcher, const Clock* clock,
                    std::chrono::seconds refresh_margin);

  absl::StatusOr<std::string> Token() override;
  void Invalidate() override;
  std::string Describe() const override;
  std::string QuotaProject() const override;

 private:
  struct Cached {
    AccessToken token;
    Time obtained;
  };
  bool Usable(Time now) const;  // requires mu_
  bool Fresh(Time now) const;   // requires mu_
  absl::StatusOr<AccessToken> FetchNoThrow();
  absl::StatusOr<AccessToken> FetchUnobserved();

  const std::unique_ptr<TokenFetcher> fetcher_;
  const Clock* const clock_;
  const std::chrono::seconds refresh_margin_;

  std::mutex mu_;
  std::condition_variable refreshed_;
  std::optional<Cached> cached_;
  bool invalidated_ = false;
  bool refreshing_ = false;
  uint64_t generation_ = 0;  // completed fetches
  absl::Status last_status_;
  Time next_attempt_{};
};

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_CACHED_TOKEN_SOURCE_H_
