// File: tests/reconcile/sim/replica.h
//
// One simulated operator replica: the REAL Executor (and, in batched
// schedules, the REAL JobTracker with its orphan sweep, driven by Tick() and
// WaitIdle() from the schedule's thread so that one thing runs at a time),
// over the replica's own Agent Platform client (the real one, over
// SimAgentPlatform) and kube::Client (ReplicaKube), its informer caches
// (SimCache) and the manager's JobIndex over them, and a work queue with the
// manager's result contract (retry_with_backoff: 5 ms * 2^n up to 1000 s;
// requeue_after: then; a watch event: now). The manager's ClusterProtector
// keeps the SlurmClusters and credentials Secrets SlurmJobs name (its keys
// "protect:ns/name" are queued whenever a SlurmJob or SlurmCluster changes);
// credentials are resolved from the Secret (sim_credentials.h).
//
// Leadership: a standby does nothing; a leader renews its Lease at every
// step (its fence is open); a deposed leader (stalled: its renewals fail)
// still reconciles until it notices and exits, its fence open until 10 s
// after its last renewal (lease 15 s - renew deadline 10 s, as main.cc). A
// crash or exit throws the executor, its memo and tracker away: the process
// restarts as a standby.

#ifndef SLURMOP_TESTS_RECONCILE_SIM_REPLICA_H_
#define SLURMOP_TESTS_RECONCILE_SIM_REPLICA_H_

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "controller/agentplatform/client.h"
#include "controller/reconcile/cluster_protector.h"
#include "controller/reconcile/executor.h"
#include "controller/reconcile/job_index.h"
#include "controller/reconcile/job_tracker.h"
#include "controller/reconcile/submit_fence.h"
#include "tests/reconcile/fakes/fake_agent_platform.h"
#include "tests/reconcile/sim/replica_kube.h"
#include "tests/reconcile/sim/sim_agent_platform.h"
#include "tests/reconcile/sim/sim_cache.h"
#include "tests/reconcile/sim/sim_credentials.h"

namespace slurmop::reconcile::sim {

inline constexpr char kInstallation[] = "inst-sim";
inline constexpr Duration kLease = std::chrono::seconds(15);
inline constexpr Duration kRenewDeadline = std::chrono::seconds(10);

struct ReplicaDeps {
  testing::InMemoryKube& kube;
  SimFleet& fleet;
  Faults& faults;
  FakeClock& clock;
  std::set<std::string>& refused_tags;
  bool batched = false;
  // Replicas share a note key: a first submit's target rides with the
  // finalizer (submit_target_note.h).
  bool notes = false;
};

class Replica {
 public:
  enum class Role { kStandby, kLeader, kDeposed };

  Replica(int index, ReplicaDeps deps);
  ~Replica();

  // A new process: empty memos, a fresh tracker, standby.
  void Restart();
  // Won the Lease now: the settle window starts here.
  void BecomeLeader();
  // Renewals stop working (the Lease runs out at LeaseValidUntil()).
  void Stall();
  Role role() const { return role_; }
  // Until when no standby can take the Lease (nullopt: not the holder).
  std::optional<Time> LeaseValidUntil() const;

  // Catches the caches up (unless frozen) and queues the keys that changed.
  void RefreshCaches();
  void FreezeCaches(bool frozen);
  bool frozen() const { return jobs_->frozen; }

  // Keys due at `now`, and the earliest time any key is due.
  std::vector<std::string> DueKeys() const;
  std::optional<Time> NextDue() const;
  // Reconciles `key`; returns a line for the trace.
  std::string Reconcile(const std::string& key);
  // One tracker tick: dispatch, then wait for the lists (batched only).
  void TickTracker();
  // Arms a crash at this replica's n-th next call.
  void ArmCrash(int n) { link_.crash_at_call = link_.calls + n; }
  void Disarm() { link_.crash_at_call.reset(); }
  bool dead() const { return link_.dead; }
  // Whether this replica recorded an Event with `reason` for "ns/name".
  bool Reported(const std::string& key, const std::string& reason) const;

 private:
  void Build();
  void Queue(const std::string& key, Time at);
  // The protector's keys ("protect:ns/name") of every cached SlurmCluster.
  void QueueProtection(Time at);
  // Waits for the tracker's fetch thread, then queues the keys it notified.
  void QueueNotified();

  const int number_;
  ReplicaDeps d_;
  ReplicaLink link_;
  ReplicaKube kube_;
  SimAgentPlatform transport_;
  std::unique_ptr<agentplatform::SlurmApi> api_;
  std::shared_ptr<testing::FixedTokenSource> token_;
  SimCredentials creds_;
  testing::RecordingEventSink events_;
  std::unique_ptr<SimCache> jobs_;
  std::unique_ptr<SimCache> clusters_;
  std::unique_ptr<JobIndex> index_;
  std::unique_ptr<LeaseSubmitFence> fence_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<ClusterProtector> protector_;
  std::unique_ptr<JobTracker> tracker_;
  Role role_ = Role::kStandby;
  Time stalled_at_{};
  std::map<std::string, Time> due_;
  std::map<std::string, int> failures_;
  std::mutex notified_mu_;
  std::vector<std::string> notified_;  // by the tracker (notified_mu_)
};

}  // namespace slurmop::reconcile::sim

#endif  // SLURMOP_TESTS_RECONCILE_SIM_REPLICA_H_
