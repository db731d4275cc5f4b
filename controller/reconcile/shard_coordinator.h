// File: controller/reconcile/shard_coordinator.h
//
// ShardCoordinator: which shards this replica runs (#16 item 4; shards.h for the scheme).
//
// One thread, every retry period:
//  1. renews this replica's member Lease "<base>-member-<identity>";
//  2. lists the Leases of the Lease namespace and notes, on the local clock, when each member and
//     shard Lease last changed (a Lease not renewed for its leaseDurationSeconds is dead, as
//     client-go judges it: never by another replica's clock);
//  3. renews the Lease of every shard it runs; one not renewed within renew_deadline is lost:
//     its controllers are stopped (the submit fence closed before, see below);
//  4. asks PlanShards which free shards to take and which to give up (from the second round on,
//     so that replicas started together see each other's member Leases first). Taking shard k is
//     one client-go acquire round on "<base>-shard-<k>" (LeaderElector::TryAcquireOrRenew: a Lease
//     another replica renewed within its duration is not taken); once held, `start` runs the
//     shard's controllers with the time of the takeover (the settle window starts there: a
//     submit the previous holder sent may land until then + --submit-settle-seconds) and a
//     submit fence open only while the shard's Lease has more than `fence_spare` left. Giving a
//     shard up stops its controllers first (a reconcile in flight finishes, its submit included),
//     keeps renewing meanwhile, then releases the Lease (holder "", 1 s) so the new holder takes
//     it at its next round.
// Stop() stops every shard's controllers and releases their Leases and the member Lease.

#ifndef SLURMOP_CONTROLLER_RECONCILE_SHARD_COORDINATOR_H_
#define SLURMOP_CONTROLLER_RECONCILE_SHARD_COORDINATOR_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "controller/common/clock.h"
#include "controller/kube/client.h"
#include "controller/kube/leader_election.h"
#include "controller/reconcile/shards.h"
#include "controller/reconcile/submit_fence.h"

namespace slurmop::reconcile {

// The controllers of one shard (a Manager restricted to its label).
class ShardRunner {
 public:
  virtual ~ShardRunner() = default;
  virtual bool Synced() const = 0;
  // Blocks until stopped.
  virtual void Stop() = 0;
};

struct ShardCoordinatorOptions {
  int shards = 1;
  std::string lease_namespace;
  std::string lease_base;  // --leader-elect-lease-name
  std::string identity;
  Duration lease_duration = std::chrono::seconds(15);
  Duration renew_deadline = std::chrono::seconds(10);
  Duration retry_period = std::chrono::seconds(2);
  Duration fence_spare = std::chrono::seconds(5);
  // Starts shard k's controllers; `acquired` anchors the settle window, `fence` (valid until the
  // runner is destroyed) guards every submit.
  std::function<std::unique_ptr<ShardRunner>(int shard, Time acquired, const SubmitFence* fence)>
      start;
};

class ShardCoordinator {
 public:
  ShardCoordinator(kube::Client& kube, const Clock& clock, ShardCoordinatorOptions options);
  ~ShardCoordinator();
  ShardCoordinator(const ShardCoordinator&) = delete;
  ShardCoordinator& operator=(const ShardCoordinator&) = delete;

  absl::Status Start();
  void Stop();
  // The shards whose controllers run here now.
  std::vector<int> Held() const;
  // One round done and every running shard's caches synced.
  bool Synced() const;

 private:
  struct Shard {
    std::unique_ptr<kube::LeaderElector> elector;
    std::unique_ptr<LeaseSubmitFence> fence;
    std::unique_ptr<ShardRunner> runner;  // running (or stopping) here
    Time last_renewed{};
    // Giving it up: the runner stops on `stopper`; then the Lease is released.
    std::thread stopper;
    std::shared_ptr<std::atomic<bool>> stopped;
    bool lost = false;  // stopping because the Lease was lost: not released
  };

  void Run();
  void Round();
  void ObserveLeases(Time now);
  void RenewHeld(Time now);
  void FinishStops();
  void BeginStop(int k, bool lost);
  void Take(int k, Time now);
  void Report(int k, bool held) const;

  kube::Client& kube_;
  const Clock& clock_;
  const ShardCoordinatorOptions options_;
  std::unique_ptr<kube::LeaderElector> member_;
  std::vector<Shard> shards_;  // coordinator thread only, but runner pointers read under mu_

  std::map<std::string, LeaseObservation> members_;  // by Lease name; coordinator thread
  std::map<int, LeaseObservation> shard_leases_;     // coordinator thread
  int round_ = 0;                                    // coordinator thread

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> held_;  // guarded by mu_
  bool rounds_ = false;    // guarded by mu_
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_SHARD_COORDINATOR_H_
