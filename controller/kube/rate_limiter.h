// File: controller/kube/rate_limiter.h
//
// client-go's DefaultControllerRateLimiter: the max of a per-item
// exponential failure limiter and a global token bucket.
//
// Contract:
//  * When(key) counts one more failure of `key` and returns how long to wait
//    before retrying it: max(base * 2^(failures-1) capped at max_delay,
//    token-bucket delay). First calls give 5 ms, 10 ms, 20 ms, ...; the
//    1000 s cap is first reached at the 19th failure (5 ms * 2^18 ~ 1311 s).
//  * The bucket holds `burst` tokens refilled at `qps` per second; each
//    When() takes one, and when none is left it returns the time until the
//    token it reserved is available (golang.org/x/time/rate Reserve().Delay()).
//  * Forget(key) resets the key's failure count; NumRequeues(key) reads it.
//  * Thread-safe; time comes from the injected Clock.

#ifndef SLURMOP_CONTROLLER_KUBE_RATE_LIMITER_H_
#define SLURMOP_CONTROLLER_KUBE_RATE_LIMITER_H_

#include <map>
#include <mutex>
#include <string>

#include "controller/common/clock.h"

namespace slurmop::kube {

struct RateLimiterOptions {
  Duration base_delay = std::chrono::milliseconds(5);
  Duration max_delay = std::chrono::seconds(1000);
  double qps = 10.0;
  int burst = 100;
};

class RateLimiter {
 public:
  RateLimiter(const Clock& clock, RateLimiterOptions options);

  Duration When(const std::string& key);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;

 private:
  Duration ItemDelay(int failures) const;
  Duration BucketDelay();  // requires mu_

  const Clock& clock_;
  const RateLimiterOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, int> failures_;  // guarded by mu_
  double tokens_;                        // guarded by mu_
  Time last_refill_;                     // guarded by mu_
};

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_RATE_LIMITER_H_
