// File: controller/kube/rate_limiter.h
//
// client-go's DefaultControllerRateLimiter (the max of a per-item
// exponential failure limiter and a token bucket), with one bucket per
// namespace instead of one for every key.
//
// Contract:
//  * When(key) counts one more failure of `key` and returns how long to wait
//    before retrying it: max(base * 2^(failures-1) capped at max_delay,
//    token-bucket delay). First calls give 5 ms, 10 ms, 20 ms, ...; the
//    1000 s cap is first reached at the 19th failure (5 ms * 2^18 ~ 1311 s).
//  * Each namespace's bucket holds `burst` tokens refilled at `qps` per
//    second; each When() takes one from its key's namespace (NamespaceOfKey),
//    and when none is left it returns the time until the token it reserved
//    is available (golang.org/x/time/rate Reserve().Delay()). client-go's
//    one bucket for all keys lets debt pile up without bound: 5,000 keys of
//    one tenant failing for now made any other tenant's first retry wait
//    ~500 s. Per namespace, a tenant's failures delay only its own retries.
//    A bucket that has refilled is the same as a new one and is forgotten
//    (at most once a minute), so namespaces never named again cost nothing.
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

// The namespace part of a work queue key: "ns" of "ns/name" and of
// "prefix:ns/name"; "" for a key without '/' (cluster-scoped objects, the
// queue's own keys).
std::string NamespaceOfKey(const std::string& key);

class RateLimiter {
 public:
  RateLimiter(const Clock& clock, RateLimiterOptions options);

  Duration When(const std::string& key);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;
  // How many namespaces' buckets are kept (for tests).
  size_t BucketsKept() const;

 private:
  struct Bucket {
    double tokens;
    Time last_refill;
  };
  Duration ItemDelay(int failures) const;
  Duration BucketDelay(const std::string& ns);  // requires mu_
  void Refill(Bucket& b, Time now) const;
  void PruneFullBuckets(Time now);  // requires mu_

  const Clock& clock_;
  const RateLimiterOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, int> failures_;    // guarded by mu_
  std::map<std::string, Bucket> buckets_;  // by namespace; guarded by mu_
  Time last_prune_;                        // guarded by mu_
};

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_RATE_LIMITER_H_
