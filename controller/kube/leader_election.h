// File: controller/kube/leader_election.h
//
// LeaderElector: client-go's leader election (tools/leaderelection) on a
// coordination.k8s.io/v1 Lease, so only one operator replica reconciles.
//
// Contract:
//  * Config must satisfy lease_duration > renew_deadline > 1.2 * retry_period
//    (defaults 15 s / 10 s / 2 s), a non-empty identity and lease name;
//    Create() returns kInvalidArgument otherwise.
//  * TryAcquireOrRenew() is one round of client-go's tryAcquireOrRenew:
//     - the leader first PUTs its last-seen Lease with a new renewTime (fast
//       path);
//     - otherwise GET the Lease (POST a new one if it does not exist);
//     - when the Lease's spec differs from the one seen before, remember it
//       and the local time it was seen (observedTime);
//     - if someone else holds it and observedTime + leaseDurationSeconds is
//       still ahead, give up this round;
//     - otherwise PUT it with holderIdentity = identity, renewTime = now and,
//       on a takeover, acquireTime = now and leaseTransitions + 1.
//    Every write is a PUT of the Lease last read (its resourceVersion is the
//    precondition), so two candidates racing get one 409. Times are
//    MicroTime (RFC 3339 with microseconds) from the injected Clock.
//  * Start() runs on its own thread: try every retry_period (jitter x[1,2.2))
//    until acquired, call on_started_leading, then renew every retry_period;
//    if no renewal succeeded for renew_deadline, leadership is lost:
//    on_stopped_leading is called and the loop ends (the process should
//    exit, as with client-go). on_new_leader is called whenever the observed
//    holder changes.
//  * Stop() ends the loop and joins; if leading and release_on_cancel, the
//    Lease is released first (holderIdentity "", leaseDurationSeconds 1) so a
//    standby takes over at once. on_stopped_leading is called if it was
//    leading. Callbacks run on the elector thread and must not call Stop().
//  * leaseDurationSeconds outside [1, 2^31-1] (the API's int32, > 0) in a
//    Lease read from the server is refused: the configured lease_duration is
//    used instead (no overflow of a time point; a malformed Lease neither
//    blocks a takeover forever nor allows one at once).
//  * IsLeader()/CurrentLeader()/LeaseValidUntil() are thread-safe.
//  * Waits use real time unless LeaderElectionConfig::sleep_for_testing is
//    set, in which case it is called instead (tests advance a FakeClock).

#ifndef SLURMOP_CONTROLLER_KUBE_LEADER_ELECTION_H_
#define SLURMOP_CONTROLLER_KUBE_LEADER_ELECTION_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "controller/common/clock.h"
#include "controller/kube/client.h"

namespace slurmop::kube {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per replica, e.g. the pod name
  Duration lease_duration = std::chrono::seconds(15);
  Duration renew_deadline = std::chrono::seconds(10);
  Duration retry_period = std::chrono::seconds(2);
  bool release_on_cancel = true;
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string& identity)> on_new_leader;
  // Uniform [0, 1) for the retry jitter; defaults to a seeded engine.
  std::function<double()> random;
  // If set, called instead of sleeping between rounds (tests).
  std::function<void(Duration)> sleep_for_testing;
};

class LeaderElector {
 public:
  static absl::StatusOr<std::unique_ptr<LeaderElector>> Create(Client& client, const Clock& clock,
                                                               LeaderElectionConfig config);
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  void Start();
  void Stop();
  bool IsLeader() const;
  // Holder of the Lease as last observed ("" if none).
  std::string CurrentLeader() const;

  // One acquire/renew round; true if this replica holds the Lease afterwards.
  bool TryAcquireOrRenew();
  // Notes the Lease as read elsewhere (a List of the namespace's Leases): when its spec differs
  // from the one last seen, remembers it and the local time, as a round's GET would. So a
  // replica that watches a Lease it does not yet try to take can take it as soon as it expired,
  // not one lease duration after its first own read (shard_coordinator.h).
  void Witness(const nlohmann::json& lease);
  // Gives the Lease up if this replica holds it (see Stop()).
  absl::Status Release();
  // Until when no standby can take the Lease over: the start of this
  // replica's last successful acquire/renew round plus lease_duration (a
  // standby restarts its expiry timer only once it sees that write, which is
  // later). nullopt when this replica does not hold the Lease. A renewal that
  // blocks or fails does not move it, so it runs out on its own (#13 E2).
  std::optional<Time> LeaseValidUntil() const;

 private:
  LeaderElector(Client& client, const Clock& clock, LeaderElectionConfig config);

  void Run();
  bool Acquire();          // loops until acquired or stopped
  void RenewUntilLost();   // loops until a renewal deadline is missed or stopped
  bool Sleep(Duration d);  // false if stopped
  // Creates the Lease held by this replica (there was none); true on success.
  bool CreateLease(Time now);
  // Step 1 of a round: the leader renews the Lease it wrote last, without reading it first.
  // False when this replica is not the leader with a valid lease, or the write failed.
  bool RenewKnownLease(Time now);
  // Step 3: remembers the Lease just read (when its spec changed, on the local clock) and
  // reports a new holder. Sets `was_leader`; true when another replica holds it validly.
  bool HeldByAnother(const nlohmann::json& current, Time now, bool& was_leader);
  // To the leader metrics hook (leader_election_master_status{name=<lease name>}).
  void ReportLeading(bool leading) const;
  Duration Jittered(Duration d);

  bool IsLeaseValidLocked(Time now) const;
  bool IsLeaderLocked() const;
  nlohmann::json NewSpec(Time now, const std::optional<nlohmann::json>& old_spec,
                         bool keep_acquire) const;
  absl::StatusOr<nlohmann::json> WriteLease(nlohmann::json lease, nlohmann::json spec);
  void Observe(const nlohmann::json& lease);  // remembers lease + spec + observed time
  void Renewed(Time round_start);             // a round that started then succeeded

  Client& client_;
  const Clock& clock_;
  const LeaderElectionConfig config_;
  const std::function<double()> random_;

  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  std::optional<nlohmann::json> lease_;  // last Lease read or written; guarded by mu_
  nlohmann::json observed_spec_;         // guarded by mu_
  Time observed_time_{};                 // guarded by mu_
  std::optional<Time> renewed_at_;       // guarded by mu_
  std::string reported_leader_;          // guarded by mu_
  std::atomic<bool> stopping_{false};
  std::atomic<bool> leading_{false};
  std::thread thread_;
};

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_LEADER_ELECTION_H_
