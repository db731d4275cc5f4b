// File: controller/reconcile/submit_fence.h
//
// Consulted right before every POST .../job/submit (#13 E2, fencing): with
// leader election, a replica submits only while it holds the Lease with time
// to spare, so a deposed leader (stalled, throttled, cut off from the API
// server) never submits a job that the new leader submits too.

#ifndef SLURMOP_CONTROLLER_RECONCILE_SUBMIT_FENCE_H_
#define SLURMOP_CONTROLLER_RECONCILE_SUBMIT_FENCE_H_

#include <functional>
#include <optional>

#include "absl/status/status.h"
#include "controller/common/clock.h"

namespace slurmop::reconcile {

class SubmitFence {
 public:
  virtual ~SubmitFence() = default;
  // OK when a submit may be sent at `now`; otherwise kUnavailable saying why
  // (nothing is sent: the submit is retried with backoff).
  virtual absl::Status MaySubmit(Time now) const = 0;
};

// Open while the Lease is valid for at least `spare` more: `valid_until`
// answers until when no standby can take the Lease over (nullopt: this
// replica does not hold it), e.g. kube::LeaderElector::LeaseValidUntil.
// `spare` covers the time a submit needs to reach Slurm once it is sent.
class LeaseSubmitFence final : public SubmitFence {
 public:
  LeaseSubmitFence(std::function<std::optional<Time>()> valid_until, Duration spare)
      : valid_until_(std::move(valid_until)), spare_(spare) {}
  absl::Status MaySubmit(Time now) const override;

 private:
  std::function<std::optional<Time>()> valid_until_;
  Duration spare_;
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_SUBMIT_FENCE_H_
