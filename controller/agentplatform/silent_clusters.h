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
//  * Admit(key) before each attempt. A cluster with no silence on record is
//    always admitted.
//  * Finished(key, ticket, outcome) after it: kAnswered (any HTTP answer but
//    a slow failure) forgets the cluster's silences; kSilent (no answer
//    within the timeout, or a failure that took half of it) counts one more
//    silence in a row. From `silences_before_hold` in a row on (2: one lost
//    reply is not a pattern, and the search that follows a lost submit's
//    reply must still go), the cluster's calls are held back for
//    first_hold * 2^(silences - silences_before_hold), at most max_hold.
//    kOther (refused, reset, nothing learned) changes nothing.
//    A call admitted before the cluster was held back that then times out
//    too does not count again: the calls one burst had in flight are one
//    silence, not many.
//  * While held back, Admit() refuses (nothing is sent), saying for how long.
//    When the hold has passed, one call at a time is admitted (the trial)
//    and the others are refused until it is finished: its answer closes the
//    circuit, its silence doubles the hold.
//  * A ticket not finished (an exception) counts as kOther when destroyed.
//  * Clusters silent and not called for forget_after are forgotten (keys
//    come from tenants' resources).
//  * Thread-safe; time comes only from the injected Clock.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_SILENT_CLUSTERS_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_SILENT_CLUSTERS_H_

#include <chrono>
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
  std::chrono::minutes forget_after{60};
};

class SilentClusters {
 public:
  enum class Outcome { kAnswered, kSilent, kOther };

  // Why a call was not admitted.
  struct Refusal {
    int silences = 0;               // in a row
    std::chrono::nanoseconds hold;  // the hold those silences earned
    std::chrono::nanoseconds wait;  // until a call may be admitted again
  };

  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept { *this = std::move(other); }
    Ticket& operator=(Ticket&& other) noexcept;
    ~Ticket();
    // Reports the outcome (once; later calls do nothing).
    void Finish(Outcome outcome);

   private:
    friend class SilentClusters;
    SilentClusters* owner_ = nullptr;
    std::string key_;
    bool trial_ = false;
    Time admitted_{};
  };

  SilentClusters(const Clock* clock, SilentClustersOptions options);

  // A ticket to finish, or why the call must not be sent now.
  std::optional<Refusal> Admit(const std::string& key, Ticket* ticket);

  // Clusters with a silence on record (for tests and metrics).
  size_t Tracked();

 private:
  struct State {
    int silences = 0;
    Time held_until{};
    Time last_silence{};
    bool trial_in_flight = false;
  };
  void Finished(const std::string& key, bool trial, Time admitted, Outcome outcome);
  std::chrono::nanoseconds HoldFor(int silences) const;
  void PruneLocked(Time now);

  const Clock* const clock_;
  const SilentClustersOptions options_;
  std::mutex mu_;
  std::map<std::string, State> states_;  // guarded by mu_
  Time last_prune_{};                    // guarded by mu_
};

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_SILENT_CLUSTERS_H_
