// File: controller/kube/request_deadline.cc

#include "controller/kube/request_deadline.h"

#include <algorithm>

namespace slurmop::kube {
namespace {

thread_local std::optional<std::chrono::steady_clock::time_point> current_deadline;

}  // namespace

ScopedRequestDeadline::ScopedRequestDeadline(std::chrono::steady_clock::time_point deadline)
    : previous_(current_deadline) {
  current_deadline = previous_ ? std::min(*previous_, deadline) : deadline;
}

ScopedRequestDeadline::~ScopedRequestDeadline() { current_deadline = previous_; }

std::optional<std::chrono::steady_clock::time_point> CurrentRequestDeadline() {
  return current_deadline;
}

std::chrono::milliseconds TimeoutWithinDeadline(std::chrono::milliseconds timeout) {
  if (!current_deadline) return timeout;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      *current_deadline - std::chrono::steady_clock::now());
  return std::min(timeout, left);
}

}  // namespace slurmop::kube
