// File: controller/kube/backoff.h
//
// ExponentialBackoff: client-go's exponentialBackoffManagerImpl, used by the
// informer between failed list/watch attempts.
//
// Contract (defaults = the Reflector's NewExponentialBackoffManager(800ms,
// 30s, 2min, 2.0, 1.0)):
//  * Next() returns the wait before the next attempt: the current step d,
//    jittered to d + random()*jitter*d, and grows the step d *= factor up to
//    `cap` (so with jitter 1.0 the waits settle in [30 s, 60 s)).
//  * If more than `reset_after` passed since the previous Next(), the step
//    first resets to `initial` (a healthy stretch forgives past failures).
//  * Time comes from the injected Clock; randomness from the injected
//    function returning values in [0, 1). Not thread-safe.

#ifndef SLURMOP_CONTROLLER_KUBE_BACKOFF_H_
#define SLURMOP_CONTROLLER_KUBE_BACKOFF_H_

#include <functional>
#include <optional>

#include "controller/common/clock.h"

namespace slurmop::kube {

struct BackoffOptions {
  Duration initial = std::chrono::milliseconds(800);
  Duration cap = std::chrono::seconds(30);
  double factor = 2.0;
  double jitter = 1.0;
  Duration reset_after = std::chrono::minutes(2);
};

class ExponentialBackoff {
 public:
  ExponentialBackoff(const Clock& clock, BackoffOptions options, std::function<double()> random);

  Duration Next();
  // Forgets all failures.
  void Reset();

 private:
  const Clock& clock_;
  const BackoffOptions options_;
  const std::function<double()> random_;
  Duration step_;
  std::optional<Time> last_backoff_;
};

// A thread-safe source of uniform doubles in [0, 1) (for jitter).
std::function<double()> DefaultRandom();

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_BACKOFF_H_
