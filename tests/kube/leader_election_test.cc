// File: tests/kube/leader_election_test.cc
//
// LeaderElector against an in-memory Lease store with resourceVersion
// preconditions, driven by FakeClock: creation, expiry-based takeover,
// transitions, the optimistic-lock race, release, renew-deadline loss; and
// over the real RestClient and HTTP, that one renewal never outlasts the
// renew deadline when the API server stops answering.

#include "controller/kube/leader_election.h"

#include <atomic>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <string>

#include "controller/common/time_format.h"
#include "controller/http/cpprest_transport.h"
#include "gtest/gtest.h"
#include "tests/http/test_http_server.h"
#include "tests/kube/fake_client.h"

namespace slurmop::kube {
namespace {

using ::slurmop::kube::testing::WaitUntil;
using std::chrono::seconds;

// One Lease, stored like the API server does: Create fails if it exists,
// Update needs the current resourceVersion (else 409), every write bumps it.
class LeaseStore : public Client {
 public:
  std::atomic<bool> down{false};
  // Runs once, just before the next Update is applied (to inject a race).
  std::function<void()> before_next_update;

  std::optional<nlohmann::json> lease() {
    std::lock_guard<std::mutex> lock(mu_);
    return lease_;
  }
  nlohmann::json spec() { return lease().value_or(nlohmann::json::object())["spec"]; }
  int writes() {
    std::lock_guard<std::mutex> lock(mu_);
    return writes_;
  }
  // Another writer changes the Lease behind the elector's back.
  void Overwrite(nlohmann::json spec) {
    std::lock_guard<std::mutex> lock(mu_);
    (*lease_)["spec"] = std::move(spec);
    (*lease_)["metadata"]["resourceVersion"] = std::to_string(++rv_);
  }

  absl::StatusOr<nlohmann::json> Get(const ResourceType& rt, std::string_view,
                                     std::string_view) override {
    EXPECT_EQ(rt, Leases());
    if (down) return absl::UnavailableError("down");
    std::lock_guard<std::mutex> lock(mu_);
    if (!lease_) return absl::NotFoundError("leases \"x\" not found");
    return *lease_;
  }
  absl::StatusOr<nlohmann::json> Create(const ResourceType&, std::string_view,
                                        const nlohmann::json& obj) override {
    if (down) return absl::UnavailableError("down");
    std::lock_guard<std::mutex> lock(mu_);
    if (lease_) return absl::AlreadyExistsError("exists");
    lease_ = obj;
    (*lease_)["metadata"]["resourceVersion"] = std::to_string(++rv_);
    ++writes_;
    return *lease_;
  }
  absl::StatusOr<nlohmann::json> Update(const ResourceType&, const nlohmann::json& obj) override {
    if (down) return absl::UnavailableError("down");
    if (before_next_update) {
      auto hook = std::move(before_next_update);
      before_next_update = nullptr;
      hook();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!lease_) return absl::NotFoundError("gone");
    if (obj["metadata"].value("resourceVersion", "") != (*lease_)["metadata"]["resourceVersion"]) {
      return absl::AbortedError("the object has been modified");
    }
    lease_ = obj;
    (*lease_)["metadata"]["resourceVersion"] = std::to_string(++rv_);
    ++writes_;
    return *lease_;
  }
  absl::StatusOr<nlohmann::json> List(const ResourceType&, std::string_view,
                                      const ListOptions&) override {
    return absl::UnimplementedError("");
  }
  absl::StatusOr<nlohmann::json> UpdateStatus(const ResourceType&, const nlohmann::json&) override {
    return absl::UnimplementedError("");
  }
  absl::StatusOr<nlohmann::json> Patch(const ResourceType&, std::string_view, std::string_view,
                                       PatchType, const nlohmann::json&, bool,
                                       std::string_view) override {
    return absl::UnimplementedError("");
  }
  absl::StatusOr<nlohmann::json> Delete(const ResourceType&, std::string_view, std::string_view,
                                        const DeleteOptions& = {}) override {
    return absl::UnimplementedError("");
  }
  absl::Status Watch(const ResourceType&, std::string_view, const WatchOptions&,
                     const std::function<bool(WatchEvent&)>&,
                     std::shared_ptr<http::StreamHandle>) override {
    return absl::UnimplementedError("");
  }

 private:
  std::mutex mu_;
  std::optional<nlohmann::json> lease_;
  int rv_ = 0;
  int writes_ = 0;
};

class LeaderElectionTest : public ::testing::Test {
 protected:
  std::unique_ptr<LeaderElector> Elector(const std::string& identity,
                                         LeaderElectionConfig config = {}) {
    config.lease_namespace = "slurm-system";
    config.lease_name = "slurmjob-operator";
    config.identity = identity;
    config.random = [] { return 0.0; };
    absl::StatusOr<std::unique_ptr<LeaderElector>> elector =
        LeaderElector::Create(store_, clock_, std::move(config));
    EXPECT_TRUE(elector.ok()) << elector.status();
    return *std::move(elector);
  }

  LeaseStore store_;
  FakeClock clock_;
};

TEST_F(LeaderElectionTest, ConfigIsValidated) {
  LeaderElectionConfig config;
  config.lease_name = "l";
  EXPECT_FALSE(LeaderElector::Create(store_, clock_, config).ok()) << "no identity";
  config.identity = "a";
  EXPECT_TRUE(LeaderElector::Create(store_, clock_, config).ok());
  config.renew_deadline = seconds(15);
  EXPECT_FALSE(LeaderElector::Create(store_, clock_, config).ok()) << "lease <= renew deadline";
  config.renew_deadline = std::chrono::milliseconds(2400);
  EXPECT_FALSE(LeaderElector::Create(store_, clock_, config).ok()) << "renew <= 1.2 * retry";
}

TEST_F(LeaderElectionTest, FirstCandidateCreatesTheLease) {
  auto a = Elector("a");
  EXPECT_TRUE(a->TryAcquireOrRenew());
  nlohmann::json spec = store_.spec();
  EXPECT_EQ(spec["holderIdentity"], "a");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec["leaseTransitions"], 0);
  EXPECT_EQ(spec["acquireTime"], FormatRfc3339Micro(clock_.Now()));
  EXPECT_EQ(spec["renewTime"], FormatRfc3339Micro(clock_.Now()));
  EXPECT_EQ((*store_.lease())["kind"], "Lease");
  EXPECT_EQ((*store_.lease())["apiVersion"], "coordination.k8s.io/v1");
  EXPECT_EQ(a->CurrentLeader(), "a");
}

TEST_F(LeaderElectionTest, StandbyTakesOverOnlyAfterTheLeaseExpires) {
  auto a = Elector("a");
  std::vector<std::string> seen_by_b;
  LeaderElectionConfig b_config;
  b_config.on_new_leader = [&](const std::string& who) { seen_by_b.push_back(who); };
  auto b = Elector("b", b_config);

  ASSERT_TRUE(a->TryAcquireOrRenew());
  const std::string acquired = store_.spec()["acquireTime"];
  EXPECT_FALSE(b->TryAcquireOrRenew()) << "held and fresh";
  EXPECT_EQ(b->CurrentLeader(), "a");

  clock_.Advance(seconds(10));
  ASSERT_TRUE(a->TryAcquireOrRenew()) << "renewal by the fast path";
  EXPECT_EQ(store_.spec()["renewTime"], FormatRfc3339Micro(clock_.Now()));
  EXPECT_EQ(store_.spec()["acquireTime"], acquired) << "a renewal keeps acquireTime";
  EXPECT_FALSE(b->TryAcquireOrRenew()) << "b saw the renewal: its timer restarts";

  clock_.Advance(seconds(14));  // 14 s after b last saw a change
  EXPECT_FALSE(b->TryAcquireOrRenew());
  clock_.Advance(seconds(1));  // 15 s: expired on b's clock
  EXPECT_TRUE(b->TryAcquireOrRenew());
  nlohmann::json spec = store_.spec();
  EXPECT_EQ(spec["holderIdentity"], "b");
  EXPECT_EQ(spec["leaseTransitions"], 1);
  EXPECT_EQ(spec["acquireTime"], FormatRfc3339Micro(clock_.Now()));
  EXPECT_EQ(seen_by_b, (std::vector<std::string>{"a", "b"}));

  EXPECT_FALSE(a->TryAcquireOrRenew()) << "a's fast path hits 409, then sees b's fresh lease";
  EXPECT_EQ(a->CurrentLeader(), "b");
}

// Sharding (shard_coordinator.h) lists the Leases and hands each to its elector: a replica that
// only watched a Lease takes it as soon as it expired on its clock, not one duration after its
// first own read; an unchanged Lease witnessed again does not restart the timer.
TEST_F(LeaderElectionTest, AWitnessedLeaseIsTakenOnceItExpired) {
  auto a = Elector("a");
  auto b = Elector("b");
  ASSERT_TRUE(a->TryAcquireOrRenew());
  b->Witness(*store_.lease());
  clock_.Advance(seconds(10));
  b->Witness(*store_.lease());  // the same spec: b's timer still runs from the first sight
  clock_.Advance(seconds(4));
  EXPECT_FALSE(b->TryAcquireOrRenew()) << "14 s: still a's";
  clock_.Advance(seconds(1));
  EXPECT_TRUE(b->TryAcquireOrRenew()) << "15 s after b first saw it unchanged";
  EXPECT_EQ(store_.spec()["holderIdentity"], "b");

  // Without the witness, a newcomer's first own read starts its timer.
  auto c = Elector("c");
  clock_.Advance(seconds(20));
  EXPECT_FALSE(c->TryAcquireOrRenew());
}

TEST_F(LeaderElectionTest, RacingCandidatesGetOneConflict) {
  auto a = Elector("a");
  auto b = Elector("b");
  ASSERT_TRUE(store_
                  .Create(Leases(), "slurm-system",
                          {{"metadata", {{"name", "slurmjob-operator"}}},
                           {"spec", {{"holderIdentity", "old"}, {"leaseDurationSeconds", 15}}}})
                  .ok());
  EXPECT_FALSE(a->TryAcquireOrRenew());
  EXPECT_FALSE(b->TryAcquireOrRenew());
  clock_.Advance(seconds(16));
  // b reads the expired Lease, but a writes first: b's PUT carries a stale
  // resourceVersion and must fail.
  store_.before_next_update = [&] { EXPECT_TRUE(a->TryAcquireOrRenew()); };
  EXPECT_FALSE(b->TryAcquireOrRenew());
  EXPECT_EQ(store_.spec()["holderIdentity"], "a");
  EXPECT_EQ(store_.spec()["leaseTransitions"], 1);
}

TEST_F(LeaderElectionTest, ReleasedLeaseIsTakenAtOnce) {
  auto a = Elector("a");
  auto b = Elector("b");
  ASSERT_TRUE(a->TryAcquireOrRenew());
  EXPECT_FALSE(b->TryAcquireOrRenew());
  ASSERT_TRUE(a->Release().ok());
  EXPECT_EQ(store_.spec()["holderIdentity"], "");
  EXPECT_EQ(store_.spec()["leaseDurationSeconds"], 1);
  EXPECT_TRUE(b->TryAcquireOrRenew()) << "no holder: no need to wait for expiry";
  EXPECT_EQ(store_.spec()["leaseTransitions"], 1);
  EXPECT_TRUE(a->Release().ok()) << "releasing a lease one does not hold is a no-op";
  EXPECT_EQ(store_.spec()["holderIdentity"], "b");
}

TEST_F(LeaderElectionTest, SomeoneElseOverwritingTheLeaseIsNoticed) {
  auto a = Elector("a");
  ASSERT_TRUE(a->TryAcquireOrRenew());
  store_.Overwrite({{"holderIdentity", "intruder"}, {"leaseDurationSeconds", 15}});
  EXPECT_FALSE(a->TryAcquireOrRenew());
  EXPECT_EQ(a->CurrentLeader(), "intruder");
}

// #13 M4: a Lease whose leaseDurationSeconds would overflow a time point (or
// is not a positive int32) is read with the configured duration: the standby
// neither takes over at once nor waits forever.
TEST_F(LeaderElectionTest, OutOfRangeLeaseDurationIsRefused) {
  for (long long bad : {std::numeric_limits<long long>::max(), 1LL << 40, 0LL, -5LL}) {
    LeaseStore store;
    LeaderElectionConfig config;
    config.lease_namespace = "slurm-system";
    config.lease_name = "slurmjob-operator";
    config.identity = "b";
    auto b = LeaderElector::Create(store, clock_, config);
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE(store
                    .Create(Leases(), "slurm-system",
                            {{"metadata", {{"name", "slurmjob-operator"}}},
                             {"spec",
                              {{"holderIdentity", "other"},
                               {"leaseDurationSeconds", bad},
                               {"leaseTransitions", std::numeric_limits<long long>::max()}}}})
                    .ok());
    EXPECT_FALSE((*b)->TryAcquireOrRenew()) << bad << ": taken over at once";
    clock_.Advance(seconds(14));
    EXPECT_FALSE((*b)->TryAcquireOrRenew()) << bad;
    clock_.Advance(seconds(1));
    EXPECT_TRUE((*b)->TryAcquireOrRenew()) << bad << ": never taken over";
    EXPECT_EQ(store.spec()["leaseTransitions"], 1) << bad;
  }
}

// #13 E2: the fence's clock. A renewal that fails (or blocks) does not extend
// it; it starts from the beginning of the round that succeeded.
TEST_F(LeaderElectionTest, LeaseValidUntilRunsOutWithoutRenewals) {
  auto a = Elector("a");
  EXPECT_FALSE(a->LeaseValidUntil().has_value()) << "not holding the lease";
  const Time t0 = clock_.Now();
  ASSERT_TRUE(a->TryAcquireOrRenew());
  EXPECT_EQ(a->LeaseValidUntil(), t0 + seconds(15));
  clock_.Advance(seconds(2));
  ASSERT_TRUE(a->TryAcquireOrRenew());
  EXPECT_EQ(a->LeaseValidUntil(), t0 + seconds(17));
  store_.down = true;
  clock_.Advance(seconds(2));
  EXPECT_FALSE(a->TryAcquireOrRenew());
  EXPECT_EQ(a->LeaseValidUntil(), t0 + seconds(17)) << "a failed renewal extends nothing";
  // A round that blocks: it started at t1, the write landed 40 s later.
  store_.down = false;
  const Time t1 = clock_.Now();
  store_.before_next_update = [&] { clock_.Advance(seconds(40)); };
  ASSERT_TRUE(a->TryAcquireOrRenew());
  EXPECT_EQ(a->LeaseValidUntil(), t1 + seconds(15)) << "counted from the round's start";
  // Someone else holds it now: no validity at all.
  store_.Overwrite({{"holderIdentity", "b"}, {"leaseDurationSeconds", 15}});
  EXPECT_FALSE(a->TryAcquireOrRenew());
  EXPECT_FALSE(a->LeaseValidUntil().has_value());
}

TEST_F(LeaderElectionTest, RunLeadsUntilRenewDeadlineIsMissed) {
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::atomic<int> sleeps{0};
  LeaderElectionConfig config;
  config.on_started_leading = [&] { ++started; };
  config.on_stopped_leading = [&] { ++stopped; };
  config.sleep_for_testing = [&](Duration d) {
    clock_.Advance(d);
    if (++sleeps == 5) store_.down = true;  // the API server goes away
  };
  auto a = Elector("a", config);
  a->Start();
  ASSERT_TRUE(WaitUntil([&] { return stopped.load() == 1; }));
  EXPECT_EQ(started.load(), 1);
  EXPECT_FALSE(a->IsLeader());
  // 4 renewals 2 s apart, then failed tries every 2 s for 10 s.
  EXPECT_GE(sleeps.load(), 5 + 4);
  EXPECT_LE(sleeps.load(), 5 + 6);
  a->Stop();
}

TEST_F(LeaderElectionTest, StopReleasesTheLease) {
  std::atomic<bool> leading{false};
  LeaderElectionConfig config;
  config.retry_period = std::chrono::milliseconds(10);
  config.renew_deadline = std::chrono::milliseconds(100);
  config.lease_duration = seconds(1);
  config.on_started_leading = [&] { leading = true; };
  config.on_stopped_leading = [&] { leading = false; };
  auto a = Elector("a", config);
  a->Start();
  ASSERT_TRUE(WaitUntil([&] { return leading.load(); }));
  EXPECT_TRUE(a->IsLeader());
  a->Stop();
  EXPECT_FALSE(leading.load());
  EXPECT_EQ(store_.spec()["holderIdentity"], "");
  EXPECT_EQ(store_.spec()["leaseDurationSeconds"], 1);
}

// The whole stack (RestClient, CpprestTransport, HTTP on 127.0.0.1) with the
// client's usual 30 s request timeout: once the API server stops answering
// Lease writes, leadership is given up within the renew deadline (1 s here),
// not after the request timeout. Before, one renewal round could block for
// up to three 30 s requests against a 15 s lease (#13 item 2), so the
// deposed leader went on acting long after a standby took over.
TEST(LeaderElectionOverHttpTest, ARenewalThatHangsEndsAtTheRenewDeadline) {
  std::atomic<bool> hang{false};
  std::mutex mu;
  std::string lease;  // the stored Lease, "" until created
  int rv = 0;
  slurmop::testing::TestHttpServer server(
      [&](const slurmop::testing::ReceivedRequest& r, slurmop::testing::Connection& c) {
        const std::map<std::string, std::string> json = {{"Content-Type", "application/json"}};
        if (hang.load() && r.method != "GET") {
          c.WaitForPeerClose();
          return;
        }
        std::lock_guard<std::mutex> lock(mu);
        if (r.method == "GET") {
          if (lease.empty()) {
            c.WriteResponse(404, json, R"({"kind":"Status","code":404,"reason":"NotFound"})");
          } else if (hang.load()) {
            c.WaitForPeerClose();
          } else {
            c.WriteResponse(200, json, lease);
          }
          return;
        }
        nlohmann::json obj = nlohmann::json::parse(r.body);
        obj["metadata"]["resourceVersion"] = std::to_string(++rv);
        lease = obj.dump();
        c.WriteResponse(r.method == "POST" ? 201 : 200, json, lease);
      });
  absl::StatusOr<std::unique_ptr<http::CpprestTransport>> transport =
      http::CpprestTransport::Create({});
  ASSERT_TRUE(transport.ok());
  ClientConfig client_config;
  client_config.server = server.url();
  client_config.token = "t";
  client_config.request_timeout = std::chrono::seconds(30);
  std::unique_ptr<Client> client = NewClient(client_config, transport->get());

  std::atomic<bool> lost{false};
  LeaderElectionConfig config;
  config.lease_namespace = "slurm-system";
  config.lease_name = "slurmjob-operator";
  config.identity = "a";
  config.lease_duration = std::chrono::milliseconds(1500);
  config.renew_deadline = std::chrono::milliseconds(1000);
  config.retry_period = std::chrono::milliseconds(200);
  config.release_on_cancel = false;
  config.on_stopped_leading = [&] { lost = true; };
  absl::StatusOr<std::unique_ptr<LeaderElector>> elector =
      LeaderElector::Create(*client, RealClock::Get(), config);
  ASSERT_TRUE(elector.ok()) << elector.status();
  (*elector)->Start();
  ASSERT_TRUE(WaitUntil([&] { return (*elector)->IsLeader(); }));

  hang = true;
  const auto hung_at = std::chrono::steady_clock::now();
  // (WaitUntil gives up after 10 s: the old code took over 30 s.)
  ASSERT_TRUE(WaitUntil([&] { return lost.load(); }));
  const auto took = std::chrono::steady_clock::now() - hung_at;
  // The renew deadline (1 s) plus the last retry period and scheduling slack.
  EXPECT_LT(took, std::chrono::seconds(4))
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  (*elector)->Stop();
}

}  // namespace
}  // namespace slurmop::kube
