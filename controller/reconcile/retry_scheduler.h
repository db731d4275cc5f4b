// File: controller/reconcile/retry_scheduler.h
//
// RetryScheduler: puts a reconciled key back into the work queue as its
// result says (the controller-runtime contract):
//   retry_with_backoff  -> AddRateLimited (per-key exponential backoff)
//   requeue_after = d   -> Forget, then AddAfter(d)
//   otherwise           -> Forget
// and retries the keys that wait for the API server as soon as it answers
// again (#13 item 9; the decisions are ApiServerOutage's,
// api_server_outage.h):
//  * A result with api_server_unreachable also parks the key; the first park
//    of an outage queues the probe key (kProbeKey) for the time
//    ApiServerOutage says. Any other result unparks the key.
//  * The worker that gets kProbeKey from the queue calls Probe() instead of a
//    reconciler: `api_server_answers` is called (outside any lock; it should
//    bound its own wait) and, on an answer, every parked key's backoff is
//    forgotten and the key queued now; on none the probe is queued again.
//  * The parked keys keep their backoff retry as well, so nothing depends on
//    the probe to be retried at all.
//  * Thread-safe.

#ifndef SLURMOP_CONTROLLER_RECONCILE_RETRY_SCHEDULER_H_
#define SLURMOP_CONTROLLER_RECONCILE_RETRY_SCHEDULER_H_

#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "controller/common/clock.h"
#include "controller/kube/workqueue.h"
#include "controller/reconcile/api_server_outage.h"
#include "controller/reconcile/ports.h"

namespace slurmop::reconcile {

class RetryScheduler {
 public:
  // The work queue key of the probe (no SlurmJob or SlurmCluster key has a
  // leading ':').
  static constexpr char kProbeKey[] = ":probe-api-server";

  RetryScheduler(kube::WorkQueue& queue, const Clock& clock,
                 std::function<bool()> api_server_answers, ApiServerOutageOptions options = {});

  void Requeue(const std::string& key, const ReconcileResult& r);
  static bool IsProbeKey(const std::string& key) { return key == kProbeKey; }
  void Probe();

  // Keys parked until the API server answers again.
  size_t parked() const;

 private:
  void ScheduleProbe(std::optional<Time> at);

  kube::WorkQueue& queue_;
  const Clock& clock_;
  const std::function<bool()> api_server_answers_;
  mutable std::mutex mu_;
  ApiServerOutage outage_;  // guarded by mu_
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_RETRY_SCHEDULER_H_
