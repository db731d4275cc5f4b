// File: controller/kube/request_deadline.h
//
// A deadline for the Kubernetes requests one thread makes, without a
// parameter on every Client method (client-go passes a context instead).
//
// Contract:
//  * While a ScopedRequestDeadline lives, every request RestClient sends on
//    that thread has its timeout cut to what is left of the deadline, and
//    none is sent once the deadline has passed (kDeadlineExceeded, nothing
//    sent). Nested scopes: the earlier deadline wins.
//  * Other threads are not affected. Watches keep their own timeout.
//  * The leader elector bounds one renewal by the renew deadline with it, so
//    that a renewal cannot outlast the lease (#13 item 2).

#ifndef SLURMOP_CONTROLLER_KUBE_REQUEST_DEADLINE_H_
#define SLURMOP_CONTROLLER_KUBE_REQUEST_DEADLINE_H_

#include <chrono>
#include <optional>

namespace slurmop::kube {

class ScopedRequestDeadline {
 public:
  explicit ScopedRequestDeadline(std::chrono::steady_clock::time_point deadline);
  ~ScopedRequestDeadline();
  ScopedRequestDeadline(const ScopedRequestDeadline&) = delete;
  ScopedRequestDeadline& operator=(const ScopedRequestDeadline&) = delete;

 private:
  std::optional<std::chrono::steady_clock::time_point> previous_;
};

// The deadline of this thread's innermost scope, if any.
std::optional<std::chrono::steady_clock::time_point> CurrentRequestDeadline();

// `timeout` cut to what is left of this thread's deadline (zero or less:
// the deadline has passed).
std::chrono::milliseconds TimeoutWithinDeadline(std::chrono::milliseconds timeout);

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_REQUEST_DEADLINE_H_
