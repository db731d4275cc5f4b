// File: controller/reconcile/submit_fence.cc

#include "controller/reconcile/submit_fence.h"

#include "absl/strings/str_cat.h"

namespace slurmop::reconcile {

absl::Status LeaseSubmitFence::MaySubmit(Time now) const {
  const std::optional<Time> until = valid_until_();
  if (!until) {
    return absl::UnavailableError(
        "this operator replica does not hold the leader Lease; the leader submits");
  }
  if (*until - now < spare_) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*until - now);
    return absl::UnavailableError(absl::StrCat(
        "the leader Lease was not renewed in time (", left.count(),
        " ms of it left); nothing is submitted until it is, so that a new leader never submits "
        "the same job"));
  }
  return absl::OkStatus();
}

}  // namespace slurmop::reconcile
