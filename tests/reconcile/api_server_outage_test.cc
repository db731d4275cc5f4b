// File: tests/reconcile/api_server_outage_test.cc
//
// ApiServerOutage: when the keys that wait for the API server are retried.

#include "controller/reconcile/api_server_outage.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const Time kT0 = Time(seconds(1700000000));

TEST(ApiServerOutage, TheFirstParkOpensAnOutageAndSchedulesOneProbe) {
  ApiServerOutage outage;
  EXPECT_EQ(outage.Park("ns/a", kT0), kT0 + seconds(1));
  EXPECT_EQ(outage.Park("ns/b", kT0), std::nullopt) << "a probe is scheduled already";
  EXPECT_EQ(outage.Park("ns/a", kT0 + seconds(1)), std::nullopt);
  EXPECT_EQ(outage.parked(), 2u);
}

TEST(ApiServerOutage, NoAnswerWakesNobodyAndProbesAgainAfterTheInterval) {
  ApiServerOutage outage;
  outage.Park("ns/a", kT0);
  ASSERT_TRUE(outage.StartProbe());
  ApiServerOutage::AfterProbe after = outage.Probed(false, kT0 + seconds(1));
  EXPECT_THAT(after.wake, IsEmpty());
  EXPECT_EQ(after.next_probe, kT0 + seconds(2));
  EXPECT_EQ(outage.parked(), 1u);
}

TEST(ApiServerOutage, AnAnswerWakesEveryParkedKeyOnce) {
  ApiServerOutage outage;
  outage.Park("ns/b", kT0);
  outage.Park("ns/a", kT0);
  outage.Park("ns/c", kT0);
  outage.Unpark("ns/c");  // its retry got through (or failed otherwise): not woken
  ASSERT_TRUE(outage.StartProbe());
  ApiServerOutage::AfterProbe after = outage.Probed(true, kT0 + seconds(1));
  EXPECT_THAT(after.wake, ElementsAre("ns/a", "ns/b"));
  EXPECT_EQ(after.next_probe, std::nullopt);
  EXPECT_EQ(outage.parked(), 0u);
}

TEST(ApiServerOutage, NoProbeWhenNoKeyWaitsAnyMore) {
  ApiServerOutage outage;
  outage.Park("ns/a", kT0);
  outage.Unpark("ns/a");
  EXPECT_FALSE(outage.StartProbe());
  // The outage is over: the next park opens a new one.
  EXPECT_EQ(outage.Park("ns/a", kT0 + seconds(5)), kT0 + seconds(6));
}

// An outage opening soon after a wake-up waits twice as long before its first
// probe as the one before, up to 64 s; one long after starts again at 1 s.
TEST(ApiServerOutage, WakeUpsThatDoNotHelpBackOff) {
  ApiServerOutage outage;
  Time now = kT0;
  std::vector<int> first_probe_after;
  for (int i = 0; i < 9; ++i) {
    std::optional<Time> probe = outage.Park("ns/a", now);
    ASSERT_TRUE(probe.has_value());
    first_probe_after.push_back(std::chrono::duration_cast<seconds>(*probe - now).count());
    now = *probe;
    ASSERT_TRUE(outage.StartProbe());
    ASSERT_THAT(outage.Probed(true, now).wake, ElementsAre("ns/a"));
  }
  EXPECT_THAT(first_probe_after, ElementsAre(1, 2, 4, 8, 16, 32, 64, 64, 64));
  EXPECT_EQ(outage.Park("ns/a", now + std::chrono::minutes(3)),
            now + std::chrono::minutes(3) + seconds(1));
}

}  // namespace
}  // namespace slurmop::reconcile
