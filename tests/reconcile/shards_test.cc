// File: tests/reconcile/shards_test.cc
//
// Sharding over replicas (#16 item 4): the shard of each object, the balancing decision
// (PlanShards) and Lease liveness on the local clock, and the labeller's patches.

#include "controller/reconcile/shards.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include "controller/reconcile/shard_labeller.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kube/fake_client.h"

namespace slurmop::reconcile {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using json = nlohmann::json;

json Job(const std::string& ns, const std::string& name, json cluster_ref) {
  json j = {{"metadata", {{"namespace", ns}, {"name", name}, {"resourceVersion", "7"}}},
            {"spec", json::object()}};
  if (!cluster_ref.is_null()) j["spec"]["clusterRef"] = cluster_ref;
  return j;
}

TEST(ShardsTest, Fnv1aIsTheReferenceHash) {
  // The FNV-1a 32-bit test vectors (http://www.isthe.com/chongo/src/fnv/test_fnv.c).
  EXPECT_EQ(Fnv1a32(""), 0x811c9dc5u);
  EXPECT_EQ(Fnv1a32("a"), 0xe40c292cu);
  EXPECT_EQ(Fnv1a32("foobar"), 0xbf9cf968u);
}

TEST(ShardsTest, OneShardIsEverything) {
  EXPECT_EQ(ShardOfCluster("team", "a3", 1), 0);
  EXPECT_EQ(ShardOfCluster("team", "a3", 0), 0);
}

TEST(ShardsTest, AClusterAndItsJobsShareAShard) {
  for (int s : {2, 3, 4, 7}) {
    for (const std::string name : {"a", "b", "c", "gpu-1", "local"}) {
      const int k = ShardOfCluster("team", name, s);
      EXPECT_GE(k, 0);
      EXPECT_LT(k, s);
      EXPECT_EQ(ShardOfJob(Job("team", "j", {{"name", name}}), "", s), k);
      EXPECT_EQ(ShardOfObject("SlurmCluster",
                              json{{"metadata", {{"namespace", "team"}, {"name", name}}}}, "", s),
                k);
      // A ClusterSlurmCluster of that name is another cluster: "/name".
      EXPECT_EQ(
          ShardOfJob(Job("team", "j", {{"name", name}, {"kind", "ClusterSlurmCluster"}}), "", s),
          ShardOfCluster("", name, s));
      EXPECT_EQ(ShardOfObject("ClusterSlurmCluster", json{{"metadata", {{"name", name}}}}, "", s),
                ShardOfCluster("", name, s));
    }
  }
}

TEST(ShardsTest, AJobWithoutClusterNameTakesTheDefaultClustersShard) {
  EXPECT_EQ(ShardOfJob(Job("team", "j", nullptr), "local", 5), ShardOfCluster("team", "local", 5));
  EXPECT_EQ(ShardOfJob(Job("team", "j", {{"name", ""}}), "local", 5),
            ShardOfCluster("team", "local", 5));
}

TEST(ShardsTest, ClustersSpreadOverShards) {
  std::map<int, int> per_shard;
  for (int i = 0; i < 400; ++i)
    per_shard[ShardOfCluster("ns", "cluster-" + std::to_string(i), 4)]++;
  ASSERT_EQ(per_shard.size(), 4u);
  for (const auto& [k, n] : per_shard) EXPECT_GT(n, 60) << "shard " << k;
}

TEST(ShardsTest, LabelPatchAndSelectors) {
  json j = Job("team", "j", {{"name", "a"}});
  std::optional<json> patch = ShardLabelPatch(j, 3);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ((*patch)["metadata"]["labels"]["hpc.slurmoperator.dev/shard"], "3");
  EXPECT_EQ((*patch)["metadata"]["resourceVersion"], "7");  // a precondition
  j["metadata"]["labels"]["hpc.slurmoperator.dev/shard"] = "3";
  EXPECT_EQ(ShardLabelOf(j), "3");
  EXPECT_FALSE(ShardLabelPatch(j, 3).has_value());
  EXPECT_TRUE(ShardLabelPatch(j, 2).has_value());
  EXPECT_EQ(ShardSelector(2), "hpc.slurmoperator.dev/shard=2");
  EXPECT_EQ(UnlabelledSelector(3), "hpc.slurmoperator.dev/shard notin (0,1,2)");
}

TEST(ShardsTest, LeaseNames) {
  EXPECT_EQ(ShardLeaseName("slurmjob-operator", 3), "slurmjob-operator-shard-3");
  EXPECT_EQ(ShardOfLeaseName("slurmjob-operator", "slurmjob-operator-shard-3"), 3);
  EXPECT_EQ(ShardOfLeaseName("slurmjob-operator", "slurmjob-operator-shard-03"), std::nullopt);
  EXPECT_EQ(ShardOfLeaseName("slurmjob-operator", "slurmjob-operator-shard-x"), std::nullopt);
  EXPECT_EQ(ShardOfLeaseName("slurmjob-operator", "slurmjob-operator"), std::nullopt);
  // An identity is made a valid name (hostname_pid has an underscore).
  EXPECT_EQ(MemberLeaseName("op", "Host_12"), "op-member-host-12");
  EXPECT_TRUE(IsMemberLeaseName("op", "op-member-host-12"));
  EXPECT_FALSE(IsMemberLeaseName("op", "op-shard-1"));
}

TEST(ShardsTest, ALeaseLivesForItsDurationAfterItLastChangedOnTheLocalClock) {
  const Time t0{std::chrono::seconds(1000)};
  const Duration d = std::chrono::seconds(15);
  LeaseObservation o = Observe(std::nullopt, "a", "r1", d, t0);
  EXPECT_TRUE(IsLive(o, t0 + std::chrono::seconds(14)));
  // Seen unchanged later: still dated from the first sight.
  o = Observe(o, "a", "r1", d, t0 + std::chrono::seconds(10));
  EXPECT_EQ(o.changed_at, t0);
  EXPECT_FALSE(IsLive(o, t0 + std::chrono::seconds(15)));
  // A renewal (new renewTime) starts it again, whatever the writer's clock said.
  o = Observe(o, "a", "r2", d, t0 + std::chrono::seconds(20));
  EXPECT_TRUE(IsLive(o, t0 + std::chrono::seconds(34)));
  // Released (holder ""): not live.
  EXPECT_FALSE(IsLive(Observe(o, "", "r3", d, t0), t0));
}

ShardView View(int shards, const std::string& me, std::set<std::string> live,
               std::map<int, std::string> holders) {
  ShardView v;
  v.shards = shards;
  v.me = me;
  v.live_members = std::move(live);
  v.holders = std::move(holders);
  return v;
}

// Runs PlanShards for every member, applying releases then acquisitions of free shards, until
// nothing changes; returns the holders.
std::map<int, std::string> Settle(int shards, const std::set<std::string>& live,
                                  std::map<int, std::string> holders) {
  // The Leases of replicas that are not live expire: their shards are free.
  std::erase_if(holders, [&](const auto& h) { return !live.contains(h.second); });
  for (int round = 0; round < 20; ++round) {
    bool changed = false;
    for (const std::string& m : live) {
      ShardPlan p = PlanShards(View(shards, m, live, holders));
      for (int k : p.release) {
        holders.erase(k);
        changed = true;
      }
      for (int k : p.acquire) {
        if (!holders.contains(k)) {
          holders[k] = m;
          changed = true;
        }
      }
    }
    if (!changed) return holders;
  }
  ADD_FAILURE() << "no stable assignment after 20 rounds";
  return holders;
}

std::map<std::string, int> Counts(const std::map<int, std::string>& holders) {
  std::map<std::string, int> c;
  for (const auto& [k, who] : holders) c[who]++;
  return c;
}

TEST(PlanShardsTest, AloneItTakesEveryShard) {
  ShardPlan p = PlanShards(View(4, "a", {}, {}));
  EXPECT_EQ(p.quota, 4);
  EXPECT_EQ(p.acquire.size(), 4u);
  EXPECT_THAT(p.release, IsEmpty());
}

TEST(PlanShardsTest, ThreeReplicasFourShardsSettleAtTwoOneOne) {
  std::map<int, std::string> h = Settle(4, {"a", "b", "c"}, {});
  EXPECT_EQ(h.size(), 4u);
  std::multiset<int> counts;
  for (const auto& [who, n] : Counts(h)) counts.insert(n);
  EXPECT_EQ(counts, (std::multiset<int>{1, 1, 2}));
}

TEST(PlanShardsTest, AnotherReplicasShardIsNotTakenWhileItLives) {
  ShardPlan p = PlanShards(View(2, "b", {"a", "b"}, {{0, "a"}, {1, "a"}}));
  // b's quota is 1, but both are held by a live a: a gives one up first.
  EXPECT_EQ(p.quota, 1);
  EXPECT_THAT(p.acquire, IsEmpty());
  ShardPlan pa = PlanShards(View(2, "a", {"a", "b"}, {{0, "a"}, {1, "a"}}));
  EXPECT_EQ(pa.quota, 1);
  EXPECT_EQ(pa.release.size(), 1u);
}

TEST(PlanShardsTest, ADeadReplicasShardsAreTakenByTheOthers) {
  // c held 2 and 3, and its member Lease expired: c is not live, its shards are free.
  std::map<int, std::string> h = {{0, "a"}, {1, "b"}, {2, "c"}, {3, "c"}};
  ShardPlan pa = PlanShards(View(4, "a", {"a", "b"}, h));
  ShardPlan pb = PlanShards(View(4, "b", {"a", "b"}, h));
  EXPECT_EQ(pa.quota, 2);
  EXPECT_EQ(pb.quota, 2);
  EXPECT_EQ(pa.acquire.size(), 1u);
  EXPECT_EQ(pb.acquire.size(), 1u);
  std::map<int, std::string> settled = Settle(4, {"a", "b"}, h);
  EXPECT_EQ(settled.size(), 4u);
  EXPECT_EQ(Counts(settled), (std::map<std::string, int>{{"a", 2}, {"b", 2}}));
}

TEST(PlanShardsTest, AddingAReplicaMovesAsFewShardsAsPossible) {
  std::map<int, std::string> before = Settle(4, {"a", "b"}, {});
  ASSERT_EQ(Counts(before), (std::map<std::string, int>{{"a", 2}, {"b", 2}}));
  std::map<int, std::string> after = Settle(4, {"a", "b", "c"}, before);
  EXPECT_EQ(after.size(), 4u);
  EXPECT_EQ(Counts(after)["c"], 1);
  int moved = 0;
  for (const auto& [k, who] : after) moved += before.at(k) != who;
  EXPECT_EQ(moved, 1);
}

TEST(PlanShardsTest, MoreReplicasThanShardsLeavesSomeIdle) {
  std::map<int, std::string> h = Settle(2, {"a", "b", "c"}, {});
  EXPECT_EQ(h.size(), 2u);
  EXPECT_EQ(Counts(h).size(), 2u);
}

TEST(PlanShardsTest, ReplicasPreferDifferentShards) {
  // With nothing held, the first choices of distinct replicas are seldom the same shard.
  std::set<int> first;
  for (const std::string m : {"a", "b", "c", "d"}) {
    ShardPlan p = PlanShards(View(8, m, {"a", "b", "c", "d"}, {}));
    ASSERT_FALSE(p.acquire.empty());
    EXPECT_EQ(p.acquire.size(), 2u);
    first.insert(p.acquire[0]);
  }
  EXPECT_GE(first.size(), 3u);
}

// The Events a labeller records, by reason.
class Events : public EventSink {
 public:
  void Record(const json& regarding, const EventSpec& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    reasons_.push_back(e.reason);
    notes_.push_back(regarding["metadata"].value("name", "") + ": " + e.note);
  }
  std::vector<std::string> reasons() {
    std::lock_guard<std::mutex> lock(mu_);
    return reasons_;
  }
  std::vector<std::string> notes() {
    std::lock_guard<std::mutex> lock(mu_);
    return notes_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> reasons_;
  std::vector<std::string> notes_;
};

TEST(ShardLabellerTest, LabelsWhatHasNoLabelOrAStaleOneAndLeavesTheRest) {
  kube::testing::FakeClient kube;
  FakeClock clock;
  Events events;
  ShardLabeller labeller(kube, clock, events, 4, "", "");
  labeller.Start();
  auto obj = [](json j) { return std::make_shared<const json>(std::move(j)); };
  json fresh = Job("team", "new", {{"name", "a"}});
  json right = Job("team", "right", {{"name", "a"}});
  right["metadata"]["labels"]["hpc.slurmoperator.dev/shard"] =
      std::to_string(ShardOfCluster("team", "a", 4));
  json moved = Job("team", "moved", {{"name", "b"}});
  moved["metadata"]["labels"]["hpc.slurmoperator.dev/shard"] =
      std::to_string((ShardOfCluster("team", "b", 4) + 1) % 4);
  labeller.Offer("SlurmJob", obj(fresh));
  labeller.Offer("SlurmJob", obj(right));
  labeller.Offer("SlurmJob", obj(moved));
  labeller.Offer("SlurmCluster", obj(json{{"metadata", {{"namespace", "team"}, {"name", "b"}}}}));
  ASSERT_TRUE(kube::testing::WaitUntil([&] { return labeller.Patched() == 3; }));
  std::map<std::string, std::string> labels;
  for (const kube::testing::RecordedCall& c : kube.calls()) {
    ASSERT_EQ(c.verb, "patch");
    labels[c.rt.kind + "/" + c.name] = c.body["metadata"]["labels"]["hpc.slurmoperator.dev/shard"];
  }
  EXPECT_EQ(labels, (std::map<std::string, std::string>{
                        {"SlurmJob/new", std::to_string(ShardOfCluster("team", "a", 4))},
                        {"SlurmJob/moved", std::to_string(ShardOfCluster("team", "b", 4))},
                        {"SlurmCluster/b", std::to_string(ShardOfCluster("team", "b", 4))}}));
  labeller.Stop();
}

// A label patch refused for good (an admission policy, RBAC) was only logged: no shard's
// informers see the object without its label, so its owner was never told. It is a Warning
// Event on the object now; a retry still follows.
TEST(ShardLabellerTest, ARefusedLabelIsAWarningEventOnTheObject) {
  kube::testing::FakeClient kube;
  std::atomic<int> patches{0};
  kube.on_patch = [&](const kube::testing::RecordedCall&) -> absl::StatusOr<json> {
    ++patches;
    return absl::PermissionDeniedError("denied by policy no-label-edits");
  };
  FakeClock clock;
  Events events;
  ShardLabeller labeller(kube, clock, events, 4, "", "");
  labeller.Start();
  labeller.Offer("SlurmJob", std::make_shared<const json>(Job("team", "new", {{"name", "a"}})));
  ASSERT_TRUE(kube::testing::WaitUntil([&] { return !events.reasons().empty(); }));
  labeller.Stop();
  EXPECT_EQ(events.reasons().at(0), "WriteRefused");
  EXPECT_THAT(events.notes().at(0), ::testing::HasSubstr("new: "));
  EXPECT_THAT(events.notes().at(0), ::testing::HasSubstr("shard label of this SlurmJob"));
  EXPECT_THAT(events.notes().at(0), ::testing::HasSubstr("denied by policy no-label-edits"));
  EXPECT_EQ(labeller.Patched(), 0);
}

// Labels are written by several workers at once (one object each): with
// 100,000 SlurmJobs created at once, one patch at a time set every shard's
// pace. Each patch here waits (up to 2 s) for a second one to be in flight.
TEST(ShardLabellerTest, SeveralObjectsAreLabelledAtOnce) {
  kube::testing::FakeClient kube;
  std::mutex mu;
  std::condition_variable changed;
  int in_flight = 0;
  int most_in_flight = 0;
  kube.on_patch = [&](const kube::testing::RecordedCall&) -> absl::StatusOr<json> {
    std::unique_lock<std::mutex> lock(mu);
    most_in_flight = std::max(most_in_flight, ++in_flight);
    changed.notify_all();
    changed.wait_for(lock, std::chrono::seconds(2), [&] { return in_flight >= 2; });
    --in_flight;
    return json::object();
  };
  FakeClock clock;
  Events events;
  ShardLabeller labeller(kube, clock, events, 4, "", "");
  labeller.Start();
  for (int i = 0; i < 4; ++i) {
    labeller.Offer("SlurmJob", std::make_shared<const json>(
                                   Job("team", "job-" + std::to_string(i), {{"name", "a"}})));
  }
  ASSERT_TRUE(kube::testing::WaitUntil([&] { return labeller.Patched() == 4; }));
  labeller.Stop();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_GE(most_in_flight, 2);
}

}  // namespace
}  // namespace slurmop::reconcile
