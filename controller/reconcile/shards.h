// File: controller/reconcile/shards.h
//
// Sharding over replicas (#16 item 4): the pure parts. No I/O; `now` is an input.
//
// With --shards=S (S > 1) every SlurmCluster and ClusterSlurmCluster belongs to one shard
// k in [0, S): FNV-1a (32 bit) of "namespace/name" ("/name" for a ClusterSlurmCluster) mod S. A
// SlurmJob belongs to the shard of the cluster it names (spec.clusterRef, or --default-cluster),
// computed from the reference alone, so a SlurmJob created before its cluster has its shard at
// once. The shard is written into the label kShardLabel ("<k>") of each object; a replica that
// owns shard k watches only objects labelled kShardLabel=k (ShardSelector).
//
// Ownership of shard k is the coordination.k8s.io Lease "<lease-name>-shard-<k>", held with the
// leader election code (leader_election.h). Each replica also renews its member Lease
// "<lease-name>-member-<identity>"; the live members decide how many shards each holds
// (PlanShards): S / n each, the S % n replicas holding the most (then by identity) one more.

#ifndef SLURMOP_CONTROLLER_RECONCILE_SHARDS_H_
#define SLURMOP_CONTROLLER_RECONCILE_SHARDS_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "controller/common/clock.h"

namespace slurmop::reconcile {

// The label that carries an object's shard.
inline constexpr std::string_view kShardLabel = "hpc.slurmoperator.dev/shard";

// FNV-1a, 32 bit.
uint32_t Fnv1a32(std::string_view s);

// The shard of SlurmCluster `ns`/`name` (ns "" for a ClusterSlurmCluster), in [0, shards).
int ShardOfCluster(std::string_view ns, std::string_view name, int shards);

// The shard of a SlurmJob: that of the cluster its spec.clusterRef names (kind SlurmCluster in
// its namespace by default, or ClusterSlurmCluster), `default_cluster` when the name is empty.
int ShardOfJob(const nlohmann::json& job, const std::string& default_cluster, int shards);

// The shard an object of kind `kind` (SlurmJob, SlurmCluster, ClusterSlurmCluster) belongs to.
int ShardOfObject(std::string_view kind, const nlohmann::json& obj,
                  const std::string& default_cluster, int shards);

// The object's kShardLabel value, if any.
std::optional<std::string> ShardLabelOf(const nlohmann::json& obj);

// The merge patch that sets the label to `shard`, or nullopt when it already says so.
std::optional<nlohmann::json> ShardLabelPatch(const nlohmann::json& obj, int shard);

// labelSelector of the informers of shard k: "hpc.slurmoperator.dev/shard=k".
std::string ShardSelector(int shard);
// labelSelector of the labeller's informers: objects without a label of [0, shards) (NotIn
// also matches objects without the label).
std::string UnlabelledSelector(int shards);

// Lease names.
std::string ShardLeaseName(const std::string& base, int shard);
std::string MemberLeaseName(const std::string& base, const std::string& identity);
// (the identity made a valid object name: lower case, [a-z0-9.-]; the Lease's holderIdentity
// keeps it as it is.)
bool IsMemberLeaseName(const std::string& base, const std::string& name);
// The shard of a shard Lease name (nullopt: not one of `base`'s shard Leases).
std::optional<int> ShardOfLeaseName(const std::string& base, const std::string& name);

// Liveness of a Lease as client-go judges it: by the local time its spec was last seen to
// change (never by comparing another replica's clock).
struct LeaseObservation {
  std::string holder;
  std::string renew_time;  // as written; a change means a renewal
  Duration lease_duration{};
  Time changed_at{};  // local time the spec was first seen as it is now
};
// Remembers `spec` seen at `now`: keeps changed_at if nothing changed.
LeaseObservation Observe(const std::optional<LeaseObservation>& before, const std::string& holder,
                         const std::string& renew_time, Duration lease_duration, Time now);
bool IsLive(const LeaseObservation& o, Time now);

// What one replica sees, for PlanShards.
struct ShardView {
  int shards = 1;
  std::string me;
  std::set<std::string> live_members;  // with live member Leases (me is added)
  // Shard -> holder, for shards whose Lease names a live member as holder.
  std::map<int, std::string> holders;
};

struct ShardPlan {
  int quota = 0;             // how many shards this replica should hold
  std::vector<int> acquire;  // free shards to try to take, best first
  std::vector<int> release;  // held shards to give up
};

// Which shards `view.me` should try to take and give up now. Quotas: S / n for each of the n
// live members, and one more for the S % n members holding the most (ties: identity order), so
// that as few shards as possible move. A replica takes free shards (no live holder) in its own
// rendezvous-hash order (different replicas prefer different shards, so they seldom race for
// one) and gives up its excess, those it prefers least first.
ShardPlan PlanShards(const ShardView& view);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_SHARDS_H_
