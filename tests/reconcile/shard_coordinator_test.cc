// File: tests/reconcile/shard_coordinator_test.cc
//
// ShardCoordinator over an in-memory Lease store (create fails if it exists, update needs the
// current resourceVersion) and a FakeClock: replicas split the shards, a replica cut off from the
// API server stops its shards (its submit fences closed first) and the others take them once the
// Leases expired, a new replica gets its share, Stop releases everything.

#include "controller/reconcile/shard_coordinator.h"

#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kube/fake_client.h"

namespace slurmop::reconcile {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class LeaseStore {
 public:
  absl::StatusOr<nlohmann::json> Get(std::string_view name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = leases_.find(std::string(name));
    if (it == leases_.end()) return absl::NotFoundError("not found");
    return it->second;
  }
  absl::StatusOr<nlohmann::json> Create(const nlohmann::json& obj) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string name = obj["metadata"]["name"];
    if (leases_.contains(name)) return absl::AlreadyExistsError("exists");
    nlohmann::json stored = obj;
    stored["metadata"]["resourceVersion"] = std::to_string(++rv_);
    return leases_[name] = stored;
  }
  absl::StatusOr<nlohmann::json> Update(const nlohmann::json& obj) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string name = obj["metadata"]["name"];
    auto it = leases_.find(name);
    if (it == leases_.end()) return absl::NotFoundError("gone");
    if (obj["metadata"].value("resourceVersion", "") != it->second["metadata"]["resourceVersion"]) {
      return absl::AbortedError("the object has been modified");
    }
    nlohmann::json stored = obj;
    stored["metadata"]["resourceVersion"] = std::to_string(++rv_);
    return it->second = stored;
  }
  nlohmann::json List() {
    std::lock_guard<std::mutex> lock(mu_);
    nlohmann::json items = nlohmann::json::array();
    for (const auto& [name, l] : leases_) items.push_back(l);
    return {{"items", items}};
  }

 private:
  std::mutex mu_;
  std::map<std::string, nlohmann::json> leases_;
  int rv_ = 0;
};

// One replica's view of the store; `down` cuts it off.
class ReplicaClient : public kube::testing::FakeClient {
 public:
  explicit ReplicaClient(LeaseStore& store) : store_(store) {}
  std::atomic<bool> down{false};
  absl::StatusOr<nlohmann::json> Get(const kube::ResourceType&, std::string_view,
                                     std::string_view name) override {
    if (down) return absl::UnavailableError("down");
    return store_.Get(name);
  }
  absl::StatusOr<nlohmann::json> Create(const kube::ResourceType&, std::string_view,
                                        const nlohmann::json& obj) override {
    if (down) return absl::UnavailableError("down");
    return store_.Create(obj);
  }
  absl::StatusOr<nlohmann::json> Update(const kube::ResourceType&,
                                        const nlohmann::json& obj) override {
    if (down) return absl::UnavailableError("down");
    return store_.Update(obj);
  }
  absl::StatusOr<nlohmann::json> List(const kube::ResourceType&, std::string_view,
                                      const kube::ListOptions&) override {
    if (down) return absl::UnavailableError("down");
    return store_.List();
  }

 private:
  LeaseStore& store_;
};

class FakeRunner : public ShardRunner {
 public:
  explicit FakeRunner(std::atomic<int>& running) : running_(running) { running_ += 1; }
  ~FakeRunner() override {
    if (!stopped_) running_ -= 1;
  }
  bool Synced() const override { return true; }
  void Stop() override {
    if (!stopped_.exchange(true)) running_ -= 1;
  }

 private:
  std::atomic<int>& running_;
  std::atomic<bool> stopped_{false};
};

struct Replica {
  Replica(LeaseStore& store, const Clock& clock, const std::string& id) : client(store) {
    ShardCoordinatorOptions o;
    o.shards = 4;
    o.lease_namespace = "ops";
    o.lease_base = "op";
    o.identity = id;
    o.lease_duration = seconds(4);
    o.renew_deadline = seconds(3);
    o.retry_period = milliseconds(5);  // real time between rounds; the Leases use the FakeClock
    o.fence_spare = seconds(1);
    o.start = [this](int k, Time, const SubmitFence* fence) {
      std::lock_guard<std::mutex> lock(mu);
      fences[k] = fence;
      return std::make_unique<FakeRunner>(running);
    };
    coordinator = std::make_unique<ShardCoordinator>(client, clock, o);
  }
  int Held() const { return static_cast<int>(coordinator->Held().size()); }

  ReplicaClient client;
  std::atomic<int> running{0};
  std::mutex mu;
  std::map<int, const SubmitFence*> fences;
  std::unique_ptr<ShardCoordinator> coordinator;
};

bool Eventually(const std::function<bool()>& pred) { return kube::testing::WaitUntil(pred); }

TEST(ShardCoordinatorTest, ReplicasSplitTheShardsAndACutOffOnesMoveOnlyOnceItsLeasesExpired) {
  LeaseStore store;
  FakeClock clock;
  Replica a(store, clock, "a"), b(store, clock, "b");
  ASSERT_TRUE(a.coordinator->Start().ok());
  ASSERT_TRUE(b.coordinator->Start().ok());
  ASSERT_TRUE(Eventually([&] { return a.Held() == 2 && b.Held() == 2; }))
      << a.Held() << " " << b.Held();
  EXPECT_EQ(a.running.load(), 2);
  EXPECT_EQ(b.running.load(), 2);
  for (int k : a.coordinator->Held()) {
    EXPECT_TRUE(a.fences[k]->MaySubmit(clock.Now()).ok()) << "shard " << k;
  }

  // a is cut off: no renewal. b must not take a's shards while their Leases may be valid.
  std::this_thread::sleep_for(milliseconds(50));  // both see the settled Leases
  const std::vector<int> of_a = a.coordinator->Held();
  a.client.down = true;
  clock.Advance(seconds(1) + milliseconds(500));
  // Less than fence_spare (1 s) of a's Leases left as a counts them: a submits nothing more.
  clock.Advance(seconds(2));
  for (int k : of_a) EXPECT_FALSE(a.fences[k]->MaySubmit(clock.Now()).ok()) << "shard " << k;
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(b.Held(), 2) << "a's Leases have not expired on b's clock yet";
  // a missed its renew deadline: it stops its shards.
  ASSERT_TRUE(Eventually([&] { return a.running.load() == 0 && a.Held() == 0; }));
  // > 4 s since b last saw them change (b may have first seen them after the first advance).
  clock.Advance(seconds(5));
  ASSERT_TRUE(Eventually([&] { return b.Held() == 4; })) << b.Held() << store.List().dump();

  // a comes back, as does a third replica: the shards spread again (2, 1, 1).
  a.client.down = false;
  Replica c(store, clock, "c");
  ASSERT_TRUE(c.coordinator->Start().ok());
  ASSERT_TRUE(Eventually([&] {
    std::multiset<int> held = {a.Held(), b.Held(), c.Held()};
    return held == std::multiset<int>{1, 1, 2};
  })) << a.Held()
      << " " << b.Held() << " " << c.Held();

  // Stop releases: the others take the shards at once (no expiry wait: the clock stands still).
  c.coordinator->Stop();
  ASSERT_TRUE(Eventually([&] { return a.Held() + b.Held() == 4; })) << a.Held() << " " << b.Held();
  EXPECT_EQ(c.running.load(), 0);
  a.coordinator->Stop();
  b.coordinator->Stop();
  const nlohmann::json leases = store.List();  // a range-for over List()["items"] dangles
  for (const nlohmann::json& l : leases["items"]) {
    EXPECT_EQ(l["spec"]["holderIdentity"], "") << l["metadata"]["name"];
  }
}

}  // namespace
}  // namespace slurmop::reconcile
