// File: controller/reconcile/retry_scheduler.cc
//
// See retry_scheduler.h for the contract.

#include "controller/reconcile/retry_scheduler.h"

#include <utility>
#include <vector>

#include "glog/logging.h"

namespace slurmop::reconcile {

RetryScheduler::RetryScheduler(kube::WorkQueue& queue, const Clock& clock,
                               std::function<bool()> api_server_answers,
                               ApiServerOutageOptions options)
    : queue_(queue),
      clock_(clock),
      api_server_answers_(std::move(api_server_answers)),
      outage_(options) {}

void RetryScheduler::Requeue(const std::string& key, const ReconcileResult& r) {
  std::optional<Time> probe_at;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (r.retry_with_backoff && r.api_server_unreachable) {
      probe_at = outage_.Park(key, clock_.Now());
    } else {
      outage_.Unpark(key);
    }
  }
  if (r.retry_with_backoff) {
    queue_.AddRateLimited(key);
  } else {
    queue_.Forget(key);
    if (r.requeue_after) queue_.AddAfter(key, *r.requeue_after);
  }
  ScheduleProbe(probe_at);
}

void RetryScheduler::Probe() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!outage_.StartProbe()) return;
  }
  const bool answered = api_server_answers_();
  ApiServerOutage::AfterProbe after;
  {
    std::lock_guard<std::mutex> lock(mu_);
    after = outage_.Probed(answered, clock_.Now());
  }
  if (!after.wake.empty()) {
    LOG(INFO) << "the API server answers again: retrying the " << after.wake.size()
              << " keys whose Kubernetes requests got no answer";
  }
  for (const std::string& key : after.wake) {
    queue_.Forget(key);
    queue_.Add(key);
  }
  ScheduleProbe(after.next_probe);
}

void RetryScheduler::ScheduleProbe(std::optional<Time> at) {
  if (at) queue_.AddAfter(kProbeKey, *at - clock_.Now());
}

size_t RetryScheduler::parked() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outage_.parked();
}

}  // namespace slurmop::reconcile
