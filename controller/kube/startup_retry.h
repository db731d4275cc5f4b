// File: controller/kube/startup_retry.h
//
// The reads a process makes once before it starts (the installation id, the
// submit-note key): an API server that does not answer for a moment (a
// control-plane upgrade or restart) should cost a short wait, not an exit
// and the kubelet's CrashLoopBackOff (10 s, 20 s, ... up to 5 minutes).
//
// Contract (RetryWhileUnanswered):
//  * Calls `attempt` until it returns OK, or a status that is not
//    Unanswered, or `budget` has passed since the first call; returns the
//    last result. The budget bounds when an attempt may start, not how long
//    one takes (each call has its own request timeout).
//  * Unanswered(s): the API server did not act on the request or did not
//    answer it for the moment: kUnavailable (a transport failure, 502, 503,
//    504), kDeadlineExceeded, kResourceExhausted (429) and kInternal (500).
//    A refusal (403, 404, 422...) is an answer and is returned at once.
//  * Between attempts it calls `sleep` with the informer's backoff
//    (ExponentialBackoff: 800 ms doubling, jittered), never past the budget,
//    and logs each wait with the failure, so the log says what it waits for.
//  * Time comes from the injected Clock; `sleep` is injected so that tests
//    advance a FakeClock instead of sleeping.

#ifndef SLURMOP_CONTROLLER_KUBE_STARTUP_RETRY_H_
#define SLURMOP_CONTROLLER_KUBE_STARTUP_RETRY_H_

#include <functional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/common/clock.h"

namespace slurmop::kube {

bool Unanswered(const absl::Status& s);

struct StartupRetry {
  const Clock& clock;
  std::function<void(Duration)> sleep;
  Duration budget = std::chrono::seconds(60);
  std::function<double()> random = nullptr;  // jitter in [0, 1); empty: DefaultRandom()
};

// The loop, on a type-erased attempt (see RetryWhileUnanswered).
absl::Status RetryStatusWhileUnanswered(const StartupRetry& retry, std::string_view what,
                                        const std::function<absl::Status()>& attempt);

template <typename T>
absl::StatusOr<T> RetryWhileUnanswered(const StartupRetry& retry, std::string_view what,
                                       const std::function<absl::StatusOr<T>()>& attempt) {
  absl::StatusOr<T> result = absl::UnknownError("not attempted");
  RetryStatusWhileUnanswered(retry, what, [&] {
    result = attempt();
    return result.status();
  }).IgnoreError();  // the same status as result's
  return result;
}

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_STARTUP_RETRY_H_
