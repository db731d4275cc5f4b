// File: controller/agentplatform/silent_clusters.h
//
// SilentClusters: keeps the operator's shared threads out of calls to a
// cluster that does not answer. A call waits up to the request timeout (30 s)
// for an answer, on a reconcile worker or a list thread that every tenant
// shares; a cluster that never answers (a hung slurmrestd behind Agent
// Platform, or an endpoint that accepts connections and stays silent) would
// otherwise hold one thread per call, and a few such clusters would hold all
// of them.
//
// Contract (a circuit breaker per cluster, keyed by its call URL):
//  * Admit(key) before each attempt; Ticket::Finish(outcome) after it.
//    kAnswered (any HTTP answer but a slow failure) forgets the cluster's
//    silences; kSilent (no answer within the timeout, or a failure that took
//    half of it) counts one more silence in a row; kOther (refused, reset,
//    nothing learned) changes nothing. A call admitted before the last
//    silence was counted that then times out too does not count again: the
//    calls one burst had in flight are one silence, not many.
//  * No silence on record: every call is admitted.
//  * One silence (`silences_before_hold` - 1 of them): one call at a time is
//    admitted, with the usual timeout; the others are refused (kOneAtATime)
//    until it ends. One lost reply is not a pattern, and the search that
//    follows a lost submit's reply must still go.
//  * From `silences_before_hold` (2) in a row on: every call is refused
//    (kHeld) for first_hold * 2^(silences - silences_before_hold), at most
//    max_hold. When the hold has passed, one trial call finds out whether
//    the cluster answers again, under `trial_timeout` (Ticket::Timeout()):
//    at most `max_trials` trials are in flight across all clusters, so
//    however many clusters are silent, finding out holds at most that many
//    threads, each for a few seconds. Other calls are refused (kOneAtATime).
//  * A ticket not finished (an exception) counts as kOther when destroyed.
//  * Clusters silent and not called for forget_after are forgotten (keys
//    come from tenants' resources).
//  * Thread-safe; time comes only from the injected Clock.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_SILENT_CLUSTERS_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_SILENT_CLUSTERS_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "controller/common/clock.h"

namespace slurmop::agentplatform {

struct SilentClustersOptions {
  int silences_before_hold = 2;
  std::chrono::milliseconds first_hold{5000};
  std::chrono::milliseconds max_hold{120000};
  std::chrono::milliseconds trial_timeout{5000};
  int max_trials = 1;
  std::chrono::minutes forget_after{60};
};

class SilentClusters {
 public:
  enum class Outcome { kAnswered, kSilent, kOther };

  // Why a call was not admitted.
  struct Refusal {
    enum Why { kHeld, kOneAtATime } why = kHeld;
    int silences = 0;               // in a row
    std::chrono::nanoseconds hold;  // kHeld: the hold those silences earned
    std::chrono::nanoseconds
        wait;  // until a call may be admitted again (an estimate for kOneAtATime)
  };

  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept { *this = std::move(other); }
    Ticket& operator=(Ticket&& other) noexcept;
    ~Ticket();
    // The longest the call may wait for its answer: `usual`, or less for a trial.
    std::chrono::milliseconds Timeout(std::chrono::milliseconds usual) const;
    // Reports the outcome (once; later calls do nothing).
    void Finish(Outcome outcome);

   private:
    friend class SilentClusters;
    SilentClusters* owner_ = nullptr;
    std::string key_;
    bool single_ = false;  // holds the cluster's one-at-a-time slot
    bool trial_ = false;   // holds one of the max_trials slots, too
    uint64_t epoch_ = 0;   // of the cluster's record it was admitted under (0: none)
    std::chrono::milliseconds trial_timeout_{0};
    Time admitted_{};
  };

  SilentClusters(const Clock* clock, SilentClustersOptions options);

  // Fills *ticket (to finish) and returns nullopt, or says why the call must
  // not be sent now.
  std::optional<Refusal> Admit(const std::string& key, Ticket* ticket);

  // Clusters with a silence on record (for tests and metrics).
  size_t Tracked();

 private:
  struct State {
    int silences = 0;
    Time held_until{};
    Time last_silence{};
    bool single_in_flight = false;
    // Tells records apart: a ticket admitted under a record since erased
    // (another call's answer) must not free the one-at-a-time slot of a
    // newer record of the same cluster.
    uint64_t epoch = 0;
  };
  void Finished(const Ticket& ticket, Outcome outcome);
  std::chrono::nanoseconds HoldFor(int silences) const;
  void PruneLocked(Time now);

  const Clock* const clock_;
  const SilentClustersOptions options_;
  std::mutex mu_;
  std::map<std::string, State> states_;  // guarded by mu_
  int trials_in_flight_ = 0;             // guarded by mu_
  uint64_t next_epoch_ = 1;              // guarded by mu_
  Time last_prune_{};                    // guarded by mu_
};

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_SILENT_CLUSTERS_H_
