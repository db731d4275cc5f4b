// File: controller/agentplatform/rate_limiter.h
//
// A client-side token bucket per key (one key per cluster): `rate` tokens
// per second, at most `burst` banked; the bucket starts full.
//
// Contract: Reserve(key) takes one token and returns how long the caller
// must wait before using it (zero when one was available). Reservations are
// never refused: the bucket goes into debt, so concurrent callers queue up
// in order. rate <= 0 disables limiting. Thread-safe; time comes only from
// the injected Clock.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_RATE_LIMITER_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_RATE_LIMITER_H_

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "controller/common/clock.h"

namespace slurmop::agentplatform {

class RateLimiter {
 public:
  RateLimiter(const Clock* clock, double rate_per_second, double burst);

  std::chrono::nanoseconds Reserve(const std::string& key);
  // Reserve(), unless the wait would exceed `max_wait`: then nothing is
  // taken and nullopt is returned, with the wait it would have been in
  // `*would_wait`, so that a caller on a shared thread fails fast instead of
  // sleeping.
  std::optional<std::chrono::nanoseconds> TryReserve(const std::string& key,
                                                     std::chrono::nanoseconds max_wait,
                                                     std::chrono::nanoseconds* would_wait);

  // After RESOURCE_EXHAUSTED: no call to `key` until `until` (a later time
  // than one already set wins).
  void Block(const std::string& key, Time until);
  // When `key` may be called again, if it is blocked now.
  std::optional<Time> BlockedUntil(const std::string& key);

 private:
  struct Bucket {
    double tokens;
    Time updated;
  };
  const Clock* const clock_;
  const double rate_;
  const double burst_;
  std::mutex mu_;
  std::map<std::string, Bucket> buckets_;
  std::map<std::string, Time> blocked_until_;
};

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_RATE_LIMITER_H_
