// File: tests/agentplatform/rate_limiter_test.cc
//
// The per-cluster token bucket, driven by a FakeClock.

#include "controller/agentplatform/rate_limiter.h"

#include <gtest/gtest.h>

namespace slurmop::agentplatform {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(RateLimiter, BurstThenSteadyRate) {
  FakeClock clock;
  RateLimiter limiter(&clock, /*rate_per_second=*/5, /*burst=*/10);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(limiter.Reserve("c"), nanoseconds(0)) << i;
  // Empty: each further reservation queues 200 ms behind the previous one.
  EXPECT_EQ(limiter.Reserve("c"), milliseconds(200));
  EXPECT_EQ(limiter.Reserve("c"), milliseconds(400));
  // After 1 s, 5 tokens came back, 2 of which were already promised.
  clock.Advance(std::chrono::seconds(1));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.Reserve("c"), nanoseconds(0)) << i;
  EXPECT_EQ(limiter.Reserve("c"), milliseconds(200));
}

TEST(RateLimiter, RefillIsCappedAtBurst) {
  FakeClock clock;
  RateLimiter limiter(&clock, 5, 10);
  for (int i = 0; i < 10; ++i) limiter.Reserve("c");
  clock.Advance(std::chrono::hours(1));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(limiter.Reserve("c"), nanoseconds(0)) << i;
  EXPECT_GT(limiter.Reserve("c"), nanoseconds(0));
}

TEST(RateLimiter, KeysAreIndependent) {
  FakeClock clock;
  RateLimiter limiter(&clock, 1, 1);
  EXPECT_EQ(limiter.Reserve("a"), nanoseconds(0));
  EXPECT_EQ(limiter.Reserve("a"), milliseconds(1000));
  EXPECT_EQ(limiter.Reserve("b"), nanoseconds(0));
}

TEST(RateLimiter, ZeroRateDisables) {
  FakeClock clock;
  RateLimiter limiter(&clock, 0, 10);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(limiter.Reserve("c"), nanoseconds(0));
}

}  // namespace
}  // namespace slurmop::agentplatform
