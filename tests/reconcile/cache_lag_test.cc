// File: tests/reconcile/cache_lag_test.cc
//
// CacheLag (controller/reconcile/cache_lag.h): which cached versions a
// reconcile waits out, for how long, and when it forgets them.

#include "controller/reconcile/cache_lag.h"

#include <chrono>

#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

using std::chrono::seconds;

class CacheLagTest : public ::testing::Test {
 protected:
  FakeClock clock_{Time(seconds(1700000000))};
  CacheLag lag_{clock_, seconds(5)};
};

TEST_F(CacheLagTest, NothingWrittenIsNeverBehind) {
  EXPECT_EQ(lag_.Behind("ns/a", "u1", "10"), std::nullopt);
}

TEST_F(CacheLagTest, EveryVersionOurWritesReplacedIsBehindUntilPatienceEnds) {
  lag_.Superseded("ns/a", "u1", "10", "11");  // finalizer patch
  lag_.Superseded("ns/a", "u1", "11", "12");  // status write
  EXPECT_EQ(lag_.Behind("ns/a", "u1", "10"), std::optional<Duration>(seconds(5)));
  clock_.Advance(seconds(2));
  EXPECT_EQ(lag_.Behind("ns/a", "u1", "11"), std::optional<Duration>(seconds(3)));
  clock_.Advance(seconds(3));
  EXPECT_EQ(lag_.Behind("ns/a", "u1", "11"), std::nullopt) << "waited long enough";
  EXPECT_EQ(lag_.size(), 0u);
}

TEST_F(CacheLagTest, TheCacheCatchingUpForgetsTheKey) {
  lag_.Superseded("ns/a", "u1", "10", "11");
  EXPECT_EQ(lag_.Behind("ns/a", "u1", "11"), std::nullopt);
  EXPECT_EQ(lag_.size(), 0u);
  EXPECT_EQ(lag_.Behind("ns/a", "u1", "10"), std::nullopt) << "forgotten once caught up";
}

TEST_F(CacheLagTest, AVersionNewerThanOursIsNotBehind) {
  lag_.Superseded("ns/a", "u1", "10", "11");
  EXPECT_EQ(lag_.Behind("ns/a", "u1", "13"), std::nullopt);  // someone else wrote after us
}

TEST_F(CacheLagTest, AnotherIncarnationIsNeverBehind) {
  lag_.Superseded("ns/a", "u1", "10", "11");
  EXPECT_EQ(lag_.Behind("ns/a", "u2", "10"), std::nullopt);
  lag_.Superseded("ns/a", "u1", "10", "11");
  lag_.Superseded("ns/a", "u2", "20", "21");  // the new incarnation's write
  EXPECT_NE(lag_.Behind("ns/a", "u2", "20"), std::nullopt);
  EXPECT_EQ(lag_.Behind("ns/a", "u2", "10"), std::nullopt) << "u1's versions were dropped";
}

TEST_F(CacheLagTest, KeysAreIndependentAndForgettable) {
  lag_.Superseded("ns/a", "u1", "10", "11");
  lag_.Superseded("ns/b", "u2", "30", "31");
  lag_.Forget("ns/a");
  EXPECT_EQ(lag_.Behind("ns/a", "u1", "10"), std::nullopt);
  EXPECT_NE(lag_.Behind("ns/b", "u2", "30"), std::nullopt);
}

TEST_F(CacheLagTest, KeepsOnlyTheNewestVersionsAndIgnoresNonWrites) {
  lag_.Superseded("ns/a", "u1", "", "11");    // no version known: nothing to wait for
  lag_.Superseded("ns/a", "u1", "11", "11");  // not a change
  EXPECT_EQ(lag_.size(), 0u);
  for (int v = 100; v < 100 + static_cast<int>(CacheLag::kMaxVersions) + 1; ++v) {
    lag_.Superseded("ns/a", "u1", std::to_string(v), std::to_string(v + 1));
  }
  EXPECT_NE(lag_.Behind("ns/a", "u1", "101"), std::nullopt);
  EXPECT_EQ(lag_.Behind("ns/a", "u1", "100"), std::nullopt) << "the oldest went first";
}

}  // namespace
}  // namespace slurmop::reconcile
