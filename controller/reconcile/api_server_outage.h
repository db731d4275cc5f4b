// File: controller/reconcile/api_server_outage.h
//
// ApiServerOutage: decides when the keys that wait for the API server are
// retried (#13 item 9). No I/O, no clock: the caller passes the time.
//
// Why: a reconcile whose Kubernetes write got no answer (refused, reset,
// timed out: kube::IsUnreachable) retries with the work queue's per-key
// backoff, 5 ms * 2^n up to 1000 s. After an outage of T seconds the next
// retry of such a key comes up to ~T/2 after the API server is back, and its
// status lags Slurm by that much. Neither the informers (their retry backs
// off to 30-60 s) nor the Lease (only with --leader-elect) tell in time that
// it is back. So the keys are parked here as well, and while any is parked
// one probe (a cheap GET) asks the API server whether it answers; its first
// answer ends the outage and wakes them all.
//
// Contract:
//  * Park(key, now): the key's reconcile ended with no answer from the API
//    server. Returns when to probe if this opens an outage (no probe was
//    scheduled), nullopt otherwise (one is scheduled already).
//  * Unpark(key): its reconcile ended otherwise (done, or another failure:
//    that one keeps its backoff, it is not woken).
//  * StartProbe(): at the probe's time. False when no key waits any more: the
//    outage is over without a probe (nothing scheduled).
//  * Probed(answered, now): the probe's outcome. No answer: probe again after
//    probe_interval, wake nobody (so nothing loops while the API server is
//    down: one probe per interval, the keys on their own backoff). An answer:
//    the outage ends and the parked keys are returned (sorted), no longer
//    parked: the caller forgets their backoff and queues them now.
//  * Wake-ups that do not help back off: an outage that opens within
//    streak_window of the previous wake-up waits probe_interval * 2^k (k such
//    outages in a row; at most max_first_probe_delay) before its first probe.
//    So a flapping connection, or an API server that answers the probe but
//    never a write, wakes the keys at most once per max_first_probe_delay.
//  * Not thread-safe: the caller locks.

#ifndef SLURMOP_CONTROLLER_RECONCILE_API_SERVER_OUTAGE_H_
#define SLURMOP_CONTROLLER_RECONCILE_API_SERVER_OUTAGE_H_

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "controller/common/clock.h"

namespace slurmop::reconcile {

struct ApiServerOutageOptions {
  Duration probe_interval = std::chrono::seconds(1);
  Duration max_first_probe_delay = std::chrono::seconds(64);
  Duration streak_window = std::chrono::minutes(2);
};

class ApiServerOutage {
 public:
  explicit ApiServerOutage(ApiServerOutageOptions options = {}) : options_(options) {}

  std::optional<Time> Park(const std::string& key, Time now);
  void Unpark(const std::string& key);
  bool StartProbe();

  struct AfterProbe {
    std::vector<std::string> wake;   // retry now, their backoff forgotten
    std::optional<Time> next_probe;  // no answer: probe again then
  };
  AfterProbe Probed(bool answered, Time now);

  size_t parked() const { return parked_.size(); }

 private:
  // The wait before the first probe of an outage opening at `now`.
  Duration FirstProbeDelay(Time now);

  const ApiServerOutageOptions options_;
  std::set<std::string> parked_;
  bool probe_scheduled_ = false;
  std::optional<Time> last_wake_;
  int futile_wakes_ = 0;  // outages in a row that opened soon after a wake-up
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_API_SERVER_OUTAGE_H_
