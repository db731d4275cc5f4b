// File: tests/agentplatform/quota_budget_test.cc
//
// The per project-and-region budget, driven by a FakeClock.

#include "controller/agentplatform/quota_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace slurmop::agentplatform {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr nanoseconds kNoWait = nanoseconds::max();

QuotaBudgetOptions PerSecond(double rate, double burst) {
  QuotaBudgetOptions o;
  o.requests_per_minute = rate * 60;
  o.burst = burst;
  return o;
}

nanoseconds Take(QuotaBudget& b, CallPriority p, const std::string& key = "k") {
  return *b.TryReserve(key, p, kNoWait, nullptr);
}

TEST(QuotaBudget, BurstThenSteadyRate) {
  FakeClock clock;
  QuotaBudget budget(&clock, PerSecond(5, 10));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Take(budget, CallPriority::kChange), nanoseconds(0)) << i;
  // Empty: each further reservation queues 200 ms behind the previous one.
  EXPECT_EQ(Take(budget, CallPriority::kChange), milliseconds(200));
  EXPECT_EQ(Take(budget, CallPriority::kChange), milliseconds(400));
  // After 1 s, 5 tokens came back, 2 of which were already promised.
  clock.Advance(seconds(1));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Take(budget, CallPriority::kChange), nanoseconds(0)) << i;
  EXPECT_EQ(Take(budget, CallPriority::kChange), milliseconds(200));
}

TEST(QuotaBudget, RefillIsCappedAtBurst) {
  FakeClock clock;
  QuotaBudget budget(&clock, PerSecond(5, 10));
  for (int i = 0; i < 10; ++i) Take(budget, CallPriority::kChange);
  clock.Advance(std::chrono::hours(1));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Take(budget, CallPriority::kChange), nanoseconds(0)) << i;
  EXPECT_GT(Take(budget, CallPriority::kChange), nanoseconds(0));
}

// Keys come from tenants' resources: a bucket at rest (the same as a new one) is forgotten, or
// every edit of a SlurmCluster's project or region would leave one behind for good.
TEST(QuotaBudget, BucketsAtRestAreForgottenAndOthersKept) {
  FakeClock clock;
  QuotaBudget budget(&clock, PerSecond(1, 10));
  for (int i = 0; i < 1000; ++i) Take(budget, CallPriority::kChange, absl::StrCat("p", i));
  budget.Exhausted("paused", milliseconds(3600 * 1000));
  EXPECT_EQ(budget.Snapshot().size(), 1001u);
  clock.Advance(std::chrono::minutes(11));
  Take(budget, CallPriority::kChange, "now");
  std::vector<std::string> keys;
  for (const BudgetState& s : budget.Snapshot()) keys.push_back(s.key);
  EXPECT_THAT(keys, ::testing::UnorderedElementsAre("now", "paused"));
  // A forgotten bucket starts full again, as it would have been.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Take(budget, CallPriority::kChange, "p1"), nanoseconds(0));
}

TEST(QuotaBudget, KeysAreIndependentAndNameProjectAndRegion) {
  FakeClock clock;
  QuotaBudget budget(&clock, PerSecond(1, 1));
  const std::string a = QuotaKey("", "proj", "us-central1");
  const std::string b = QuotaKey("", "proj", "europe-west4");
  EXPECT_NE(a, b);
  EXPECT_NE(a, QuotaKey("", "other", "us-central1"));
  EXPECT_NE(a, QuotaKey("http://127.0.0.1:1", "proj", "us-central1"));
  EXPECT_EQ(Take(budget, CallPriority::kChange, a), nanoseconds(0));
  EXPECT_EQ(Take(budget, CallPriority::kChange, a), milliseconds(1000));
  EXPECT_EQ(Take(budget, CallPriority::kChange, b), nanoseconds(0));
}

TEST(QuotaBudget, ZeroRateDisables) {
  FakeClock clock;
  QuotaBudget budget(&clock, PerSecond(0, 10));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(Take(budget, CallPriority::kProbe), nanoseconds(0));
}

// When the budget runs low, probes stop first, then tracking; submits and
// cancels still get the last tokens.
TEST(QuotaBudget, SubmitsGoAheadOfTrackingAndTrackingAheadOfProbes) {
  FakeClock clock;
  QuotaBudget budget(&clock, PerSecond(1, 8));  // track keeps 2 tokens, probe 4
  nanoseconds would_wait{};
  const nanoseconds no_wait(0);
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(budget.TryReserve("k", CallPriority::kProbe, no_wait, nullptr));
  // 4 left: a probe would leave fewer than its reserve of 4.
  EXPECT_FALSE(budget.TryReserve("k", CallPriority::kProbe, no_wait, &would_wait));
  EXPECT_EQ(would_wait, seconds(1));  // one token more is needed
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(budget.TryReserve("k", CallPriority::kTrack, no_wait, nullptr));
  // 2 left: tracking is refused, a submit is not.
  EXPECT_FALSE(budget.TryReserve("k", CallPriority::kTrack, no_wait, &would_wait));
  EXPECT_EQ(would_wait, seconds(1));
  EXPECT_TRUE(budget.TryReserve("k", CallPriority::kChange, no_wait, nullptr));
  EXPECT_TRUE(budget.TryReserve("k", CallPriority::kChange, no_wait, nullptr));
  EXPECT_FALSE(budget.TryReserve("k", CallPriority::kChange, no_wait, &would_wait));
  EXPECT_EQ(would_wait, seconds(1));
}

// A reserve larger than the burst cannot make a class wait forever.
TEST(QuotaBudget, AReserveBeyondTheBurstStillEnds) {
  FakeClock clock;
  QuotaBudgetOptions o = PerSecond(1, 1);
  o.probe_reserve = 5;
  QuotaBudget budget(&clock, o);
  EXPECT_EQ(Take(budget, CallPriority::kProbe), nanoseconds(0));
  EXPECT_EQ(Take(budget, CallPriority::kProbe), seconds(1));
}

// RESOURCE_EXHAUSTED: a pause of the server's delay, the rate halved once
// (not once per call that was in flight), then linear recovery.
TEST(QuotaBudget, ExhaustedPausesHalvesOnceAndRecovers) {
  FakeClock clock;
  QuotaBudgetOptions o;
  o.requests_per_minute = 600;
  o.recovery_per_minute = 0.1;
  QuotaBudget budget(&clock, o);
  const std::string k = "k";
  EXPECT_FALSE(budget.PausedUntil(k).has_value());
  budget.Exhausted(k, milliseconds(7000));
  ASSERT_TRUE(budget.PausedUntil(k).has_value());
  EXPECT_EQ(*budget.PausedUntil(k) - clock.Now(), seconds(7));
  EXPECT_DOUBLE_EQ(budget.RequestsPerMinute(k), 300);
  // Three more answers of calls sent before the pause: no further shrink.
  budget.Exhausted(k, milliseconds(2000));
  budget.Exhausted(k, std::nullopt);
  EXPECT_DOUBLE_EQ(budget.RequestsPerMinute(k), 300);
  // The longest pause wins: no delay means the 30 s default.
  EXPECT_EQ(*budget.PausedUntil(k) - clock.Now(), QuotaBudget::kDefaultPause);
  clock.Advance(seconds(30));
  EXPECT_FALSE(budget.PausedUntil(k).has_value());
  // 30 s after the shrink: +5% of 300.
  EXPECT_NEAR(budget.RequestsPerMinute(k), 315, 1e-6);
  // A new exhaustion after the pause halves again, from where it had grown.
  budget.Exhausted(k, milliseconds(1000));
  EXPECT_NEAR(budget.RequestsPerMinute(k), 157.5, 1e-6);
  clock.Advance(std::chrono::minutes(10));
  EXPECT_NEAR(budget.RequestsPerMinute(k), 315, 1e-6);
  clock.Advance(std::chrono::hours(1));
  EXPECT_DOUBLE_EQ(budget.RequestsPerMinute(k), 600);  // never above the configured rate
}

TEST(QuotaBudget, ShrinkingStopsAtTheFloorAndTheBucketRestartsEmpty) {
  FakeClock clock;
  QuotaBudgetOptions o = PerSecond(1, 10);  // 60 per minute
  o.min_requests_per_minute = 30;
  o.recovery_per_minute = 0;
  QuotaBudget budget(&clock, o);
  for (int i = 0; i < 3; ++i) {
    budget.Exhausted("k", milliseconds(1000));
    clock.Advance(seconds(1));
  }
  EXPECT_DOUBLE_EQ(budget.RequestsPerMinute("k"), 30);
  // The bank was emptied at the last exhaustion; 1 s at 0.5/s refilled half a token.
  EXPECT_EQ(Take(budget, CallPriority::kChange), seconds(1));
}

// After a pause one call finds out whether the quota is back; the burst
// returns only once a call succeeded.
TEST(QuotaBudget, AfterAnExhaustionOneCallProbesBeforeTheBurstReturns) {
  FakeClock clock;
  QuotaBudgetOptions o = PerSecond(10, 10);
  o.recovery_per_minute = 0;
  QuotaBudget budget(&clock, o);
  budget.Exhausted("k", milliseconds(1000));
  clock.Advance(seconds(10));  // 50 tokens' worth at the halved rate
  const nanoseconds no_wait(0);
  EXPECT_TRUE(budget.TryReserve("k", CallPriority::kTrack, no_wait, nullptr));
  EXPECT_FALSE(budget.TryReserve("k", CallPriority::kChange, no_wait, nullptr));
  budget.Succeeded("k");
  clock.Advance(seconds(10));
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(budget.TryReserve("k", CallPriority::kChange, no_wait, nullptr)) << i;
  }
}

// What a cluster's resource asks (slurmcluster.proto CallBudget).
BudgetRequest ProjectSetting(const std::string& owner, double per_minute) {
  BudgetRequest r;
  r.owner = owner;
  r.project_requests_per_minute = per_minute;
  return r;
}
BudgetRequest OwnCap(const std::string& owner, double per_minute) {
  BudgetRequest r;
  r.owner = owner;
  r.own_requests_per_minute = per_minute;
  return r;
}

TEST(QuotaBudgetSettings, AClusterSlurmClustersSettingIsThatProjectsRateForEveryCaller) {
  FakeClock clock;
  QuotaBudget budget(&clock, PerSecond(1, 1));  // the flag: 60/min
  const std::string key = QuotaKey("", "proj", "us-central1");
  // The installer's ClusterSlurmCluster raises the project's budget to 600/min.
  Reservation r =
      budget.Reserve(key, ProjectSetting("/shared", 600), CallPriority::kChange, kNoWait);
  EXPECT_TRUE(r.granted);
  EXPECT_EQ(r.wait, nanoseconds(0));
  EXPECT_DOUBLE_EQ(budget.RequestsPerMinute(key), 600);
  // A tenant's SlurmCluster in the same project (no setting) draws at that rate too.
  r = budget.Reserve(key, BudgetRequest{"team-a/mine", 0, 0}, CallPriority::kChange, kNoWait);
  EXPECT_EQ(r.wait, milliseconds(100));  // 10 a second, not the flag's 1
  // Another project keeps the flag's rate.
  EXPECT_DOUBLE_EQ(budget.RequestsPerMinute(QuotaKey("", "other", "us-central1")), 60);
}

TEST(QuotaBudgetSettings, TheLowestSettingWinsAndARemovedOneIsForgotten) {
  FakeClock clock;
  QuotaBudget budget(&clock, PerSecond(8, 1));  // the flag: 480/min
  const std::string key = QuotaKey("", "proj", "us-central1");
  budget.Reserve(key, ProjectSetting("/a", 1200), CallPriority::kChange, kNoWait);
  budget.Reserve(key, ProjectSetting("/b", 300), CallPriority::kChange, kNoWait);
  EXPECT_DOUBLE_EQ(budget.RequestsPerMinute(key), 300);
  // /b's setting is removed: its next call says so, and /a's holds.
  budget.Reserve(key, BudgetRequest{"/b", 0, 0}, CallPriority::kChange, kNoWait);
  EXPECT_DOUBLE_EQ(budget.RequestsPerMinute(key), 1200);
  // /a is deleted (no more calls): after setting_memory its setting is forgotten, and the
  // flag's rate is back.
  clock.Advance(std::chrono::minutes(11));
  budget.Reserve(key, BudgetRequest(), CallPriority::kChange, kNoWait);
  EXPECT_DOUBLE_EQ(budget.RequestsPerMinute(key), 480);
}

TEST(QuotaBudgetSettings, AnOwnCapSlowsOnlyItsOwnerAndNamesItself) {
  FakeClock clock;
  QuotaBudget budget(&clock, PerSecond(10, 10));  // the project: 600/min, a burst of 10
  const std::string key = QuotaKey("", "proj", "us-central1");
  // A tenant caps its SlurmCluster at 60/min: its burst is spent, then one a second.
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(budget.Reserve(key, OwnCap("team-a/c", 60), CallPriority::kChange, kNoWait).wait,
              nanoseconds(0))
        << i;
  }
  Reservation capped =
      budget.Reserve(key, OwnCap("team-a/c", 60), CallPriority::kChange, milliseconds(250));
  EXPECT_FALSE(capped.granted);  // a second away, more than the caller waits
  EXPECT_TRUE(capped.limited_by_own_cap);
  EXPECT_EQ(capped.wait, milliseconds(1000));
  // The project's bucket refills at 10/s: another tenant is not held back by team-a's cap.
  clock.Advance(milliseconds(500));
  Reservation other =
      budget.Reserve(key, BudgetRequest{"team-b/c", 0, 0}, CallPriority::kChange, kNoWait);
  EXPECT_TRUE(other.granted);
  EXPECT_EQ(other.wait, nanoseconds(0));
  EXPECT_FALSE(other.limited_by_own_cap);
  // A cap cannot raise the project's rate.
  EXPECT_DOUBLE_EQ(budget.RequestsPerMinute(key), 600);
}

TEST(QuotaBudgetSettings, ACallTakesFromBothBucketsOrFromNeither) {
  FakeClock clock;
  QuotaBudget budget(&clock, PerSecond(1, 2));  // the project: 60/min, a burst of 2
  const std::string key = QuotaKey("", "proj", "us-central1");
  // team-b spends the project's burst.
  budget.Reserve(key, BudgetRequest{"team-b/c", 0, 0}, CallPriority::kChange, kNoWait);
  budget.Reserve(key, BudgetRequest{"team-b/c", 0, 0}, CallPriority::kChange, kNoWait);
  // team-a (capped, its own bucket full) is held back by the project, and its own token stays.
  Reservation r =
      budget.Reserve(key, OwnCap("team-a/c", 1), CallPriority::kChange, milliseconds(250));
  EXPECT_FALSE(r.granted);
  EXPECT_FALSE(r.limited_by_own_cap);
  // The project refills 2 in 2 s; team-a's own bucket (1/min) still has both its tokens only if
  // the refused call took none.
  clock.Advance(seconds(2));
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(
        budget.Reserve(key, OwnCap("team-a/c", 1), CallPriority::kChange, nanoseconds(0)).granted)
        << i;
  }
}

TEST(QuotaBudgetSettings, ASettingTurnsTheBudgetOnForItsProjectWhenTheFlagIsOff) {
  FakeClock clock;
  QuotaBudget budget(&clock, PerSecond(0, 1));  // --agent-platform-requests-per-minute=0
  const std::string key = QuotaKey("", "proj", "us-central1");
  EXPECT_EQ(Take(budget, CallPriority::kChange, QuotaKey("", "free", "r")), nanoseconds(0));
  EXPECT_EQ(Take(budget, CallPriority::kChange, QuotaKey("", "free", "r")), nanoseconds(0));
  EXPECT_EQ(budget.Reserve(key, ProjectSetting("/a", 60), CallPriority::kChange, kNoWait).wait,
            nanoseconds(0));
  EXPECT_EQ(budget.Reserve(key, ProjectSetting("/a", 60), CallPriority::kChange, kNoWait).wait,
            seconds(1));
}

TEST(QuotaBudgetSettings, ExhaustionShrinksBelowASetting) {
  FakeClock clock;
  QuotaBudget budget(&clock, PerSecond(1, 1));
  const std::string key = QuotaKey("", "proj", "us-central1");
  budget.Reserve(key, ProjectSetting("/a", 1200), CallPriority::kChange, kNoWait);
  budget.Exhausted(key, std::nullopt);
  EXPECT_DOUBLE_EQ(budget.RequestsPerMinute(key), 600);
  const std::vector<BudgetState> states = budget.Snapshot();
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].key, key);
  EXPECT_DOUBLE_EQ(states[0].requests_per_minute, 600);
  EXPECT_TRUE(states[0].paused);
}

BudgetRequest Caller(const std::string& caller) {
  BudgetRequest r;
  r.caller = caller;
  return r;
}

// A tenant's SlurmCluster names another team's project with credentials that
// project refuses: its calls spend only a small bucket of their own.
TEST(QuotaBudgetCallers, ACallerTheProjectHasNotAcceptedIsHeldToItsOwnSmallBucket) {
  FakeClock clock;
  QuotaBudget budget(&clock, PerSecond(10, 10));
  const std::string key = QuotaKey("", "team-b-proj", "us-central1");
  int granted = 0;
  for (int i = 0; i < 100; ++i) {
    Reservation r = budget.Reserve(key, Caller("intruder"), CallPriority::kChange, nanoseconds(0));
    if (r.granted) ++granted;
    EXPECT_TRUE(r.unproven);
    budget.Rejected(key, "intruder");  // each answered 403
  }
  EXPECT_EQ(granted, 3) << "the unproven burst, then 6 a minute";
  // The project's own callers still find the rest of its burst (the intruder's 3 calls were
  // real calls, counted in the project's quota too).
  budget.Accepted(key, "team-b");
  for (int i = 0; i < 7; ++i) {
    Reservation r = budget.Reserve(key, Caller("team-b"), CallPriority::kChange, kNoWait);
    EXPECT_EQ(r.wait, nanoseconds(0)) << i;
    EXPECT_FALSE(r.unproven);
  }
}

TEST(QuotaBudgetCallers, AnAcceptedCallerSharesTheProjectsBudgetUntilItIsRefused) {
  FakeClock clock;
  QuotaBudget budget(&clock, PerSecond(10, 10));
  const std::string key = QuotaKey("", "proj", "us-central1");
  EXPECT_TRUE(budget.Reserve(key, Caller("a"), CallPriority::kProbe, kNoWait).unproven);
  budget.Accepted(key, "a");
  clock.Advance(seconds(1));  // the project's bucket refills
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(budget.Reserve(key, Caller("a"), CallPriority::kChange, kNoWait).wait,
              nanoseconds(0));
  }
  EXPECT_GT(budget.Reserve(key, Caller("a"), CallPriority::kChange, kNoWait).wait, nanoseconds(0))
      << "the project's burst is spent";
  budget.Rejected(key, "a");  // its access was revoked
  EXPECT_TRUE(budget.Reserve(key, Caller("a"), CallPriority::kChange, kNoWait).unproven);
  // Accepted per project: another project has not accepted it.
  EXPECT_TRUE(budget
                  .Reserve(QuotaKey("", "other", "us-central1"), Caller("b"), CallPriority::kChange,
                           kNoWait)
                  .unproven);
}

TEST(QuotaBudgetCallers, CallersNotSeenForLongAreForgotten) {
  FakeClock clock;
  QuotaBudget budget(&clock, PerSecond(10, 10));
  const std::string key = QuotaKey("", "proj", "us-central1");
  for (int i = 0; i < 1000; ++i) {
    const std::string caller = absl::StrCat("c", i);
    budget.Reserve(key, Caller(caller), CallPriority::kChange, kNoWait);
    budget.Accepted(key, caller);
  }
  clock.Advance(std::chrono::minutes(11));
  budget.Reserve(key, Caller("c0"), CallPriority::kChange, kNoWait);
  EXPECT_TRUE(budget.Reserve(key, Caller("c1"), CallPriority::kChange, kNoWait).unproven)
      << "forgotten: one call must be accepted again";
}

}  // namespace
}  // namespace slurmop::agentplatform
