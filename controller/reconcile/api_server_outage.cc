// File: controller/reconcile/api_server_outage.cc
//
// See api_server_outage.h for the contract.

#include "controller/reconcile/api_server_outage.h"

#include <algorithm>
#include <utility>

namespace slurmop::reconcile {

std::optional<Time> ApiServerOutage::Park(const std::string& key, Time now) {
  parked_.insert(key);
  if (probe_scheduled_) return std::nullopt;
  probe_scheduled_ = true;
  return now + std::chrono::duration_cast<Time::duration>(FirstProbeDelay(now));
}

void ApiServerOutage::Unpark(const std::string& key) { parked_.erase(key); }

bool ApiServerOutage::StartProbe() {
  if (!parked_.empty()) return true;
  probe_scheduled_ = false;
  return false;
}

ApiServerOutage::AfterProbe ApiServerOutage::Probed(bool answered, Time now) {
  AfterProbe after;
  if (parked_.empty()) {
    probe_scheduled_ = false;
    return after;
  }
  if (!answered) {
    after.next_probe = now + std::chrono::duration_cast<Time::duration>(options_.probe_interval);
    return after;
  }
  probe_scheduled_ = false;
  last_wake_ = now;
  after.wake.assign(parked_.begin(), parked_.end());
  parked_.clear();
  return after;
}

Duration ApiServerOutage::FirstProbeDelay(Time now) {
  const bool soon_after_wake = last_wake_ && now - *last_wake_ < options_.streak_window;
  futile_wakes_ = soon_after_wake ? futile_wakes_ + 1 : 0;
  Duration delay = options_.probe_interval;
  for (int i = 0; i < futile_wakes_ && delay < options_.max_first_probe_delay; ++i) delay *= 2;
  return std::min(delay, options_.max_first_probe_delay);
}

}  // namespace slurmop::reconcile
