// File: controller/kube/startup_retry.cc

#include "controller/kube/startup_retry.h"

#include <glog/logging.h>

#include <algorithm>

#include "controller/kube/backoff.h"

namespace slurmop::kube {

bool Unanswered(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kInternal:
      return true;
    default:
      return false;
  }
}

absl::Status RetryStatusWhileUnanswered(const StartupRetry& retry, std::string_view what,
                                        const std::function<absl::Status()>& attempt) {
  const Time deadline = retry.clock.Now() + retry.budget;
  ExponentialBackoff backoff(retry.clock, BackoffOptions{}, retry.random);
  for (;;) {
    absl::Status s = attempt();
    if (s.ok() || !Unanswered(s)) return s;
    const Duration left = deadline - retry.clock.Now();
    if (left <= Duration::zero()) return s;
    const Duration wait = std::min(backoff.Next(), left);
    LOG(WARNING) << what << ": " << s << "; trying again in "
                 << std::chrono::duration_cast<std::chrono::milliseconds>(wait).count() << " ms";
    retry.sleep(wait);
  }
}

}  // namespace slurmop::kube
