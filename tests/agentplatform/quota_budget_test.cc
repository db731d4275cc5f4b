// File: tests/agentplatform/quota_budget_test.cc
//
// The per project-and-region budget, driven by a FakeClock.

#include "controller/agentplatform/quota_budget.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace slurmop::agentplatform
