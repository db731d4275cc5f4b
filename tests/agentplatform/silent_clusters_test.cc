// File: tests/agentplatform/silent_clusters_test.cc
//
// SilentClusters: the circuit breaker that keeps shared threads out of calls
// to clusters that do not answer (silent_clusters.h).

#include "controller/agentplatform/silent_clusters.h"

#include <chrono>
#include <optional>

#include "controller/common/clock.h"
#include "gtest/gtest.h"

namespace slurmop::agentplatform {
namespace {

using std::chrono::seconds;
using Outcome = SilentClusters::Outcome;

class SilentClustersTest : public ::testing::Test {
 protected:
  // Admits a call to `key` and ends it with `outcome`; false if refused.
  bool Call(const std::string& key, Outcome outcome) {
    SilentClusters::Ticket t;
    if (guard_.Admit(key, &t)) return false;
    t.Finish(outcome);
    return true;
  }

  FakeClock clock_;
  SilentClusters guard_{&clock_, SilentClustersOptions{}};
};

TEST_F(SilentClustersTest, OneSilenceIsNotAPattern) {
  ASSERT_TRUE(Call("a", Outcome::kSilent));
  EXPECT_TRUE(Call("a", Outcome::kAnswered)) << "a lost reply's search still goes";
  EXPECT_TRUE(Call("a", Outcome::kSilent));
  EXPECT_TRUE(Call("a", Outcome::kAnswered)) << "the answer between forgot the first silence";
}

TEST_F(SilentClustersTest, HoldsDoubleWithEachSilenceUpToTwoMinutes) {
  ASSERT_TRUE(Call("a", Outcome::kSilent));
  const std::vector<seconds> holds = {seconds(5),  seconds(10),  seconds(20), seconds(40),
                                      seconds(80), seconds(120), seconds(120)};
  for (seconds hold : holds) {
    ASSERT_TRUE(Call("a", Outcome::kSilent));
    SilentClusters::Ticket t;
    std::optional<SilentClusters::Refusal> r = guard_.Admit("a", &t);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->hold, hold);
    EXPECT_EQ(r->wait, hold);
    clock_.Advance(hold - seconds(1));
    EXPECT_FALSE(Call("a", Outcome::kAnswered)) << "still held";
    clock_.Advance(seconds(1));
  }
  EXPECT_TRUE(Call("b", Outcome::kAnswered)) << "per cluster";
}

TEST_F(SilentClustersTest, OneTrialAtATimeAndItsAnswerClosesTheCircuit) {
  ASSERT_TRUE(Call("a", Outcome::kSilent));
  ASSERT_TRUE(Call("a", Outcome::kSilent));
  clock_.Advance(seconds(5));
  SilentClusters::Ticket trial;
  ASSERT_FALSE(guard_.Admit("a", &trial).has_value());
  EXPECT_FALSE(Call("a", Outcome::kAnswered)) << "a second call waits for the trial";
  trial.Finish(Outcome::kAnswered);
  EXPECT_TRUE(Call("a", Outcome::kAnswered));
  EXPECT_TRUE(Call("a", Outcome::kAnswered)) << "closed: no trial any more";
  EXPECT_EQ(guard_.Tracked(), 0u);
}

TEST_F(SilentClustersTest, ATrialThatLearnsNothingLetsTheNextCallTry) {
  ASSERT_TRUE(Call("a", Outcome::kSilent));
  ASSERT_TRUE(Call("a", Outcome::kSilent));
  clock_.Advance(seconds(5));
  {
    SilentClusters::Ticket trial;
    ASSERT_FALSE(guard_.Admit("a", &trial).has_value());
    // Destroyed unfinished (an exception): counts as kOther.
  }
  EXPECT_TRUE(Call("a", Outcome::kOther));
  EXPECT_TRUE(Call("a", Outcome::kAnswered));
}

TEST_F(SilentClustersTest, CallsInFlightWhenItWentSilentCountOnce) {
  SilentClusters::Ticket t1, t2, t3;
  ASSERT_FALSE(guard_.Admit("a", &t1).has_value());
  ASSERT_FALSE(guard_.Admit("a", &t2).has_value());
  ASSERT_FALSE(guard_.Admit("a", &t3).has_value());
  clock_.Advance(seconds(30));
  t1.Finish(Outcome::kSilent);
  t2.Finish(Outcome::kSilent);
  t3.Finish(Outcome::kSilent);
  ASSERT_TRUE(Call("a", Outcome::kSilent)) << "three silences in flight together were one";
  SilentClusters::Ticket t;
  std::optional<SilentClusters::Refusal> r = guard_.Admit("a", &t);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->silences, 2);
  EXPECT_EQ(r->hold, seconds(5));
}

TEST_F(SilentClustersTest, AfterOneSilenceCallsGoOneAtATime) {
  ASSERT_TRUE(Call("a", Outcome::kSilent));
  SilentClusters::Ticket first;
  ASSERT_FALSE(guard_.Admit("a", &first).has_value());
  EXPECT_EQ(first.Timeout(std::chrono::milliseconds(30000)), std::chrono::milliseconds(30000))
      << "not a trial: the usual timeout";
  SilentClusters::Ticket second;
  std::optional<SilentClusters::Refusal> r = guard_.Admit("a", &second);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->why, SilentClusters::Refusal::kOneAtATime);
  EXPECT_TRUE(Call("b", Outcome::kAnswered)) << "other clusters are not touched";
  first.Finish(Outcome::kOther);
  EXPECT_TRUE(Call("a", Outcome::kAnswered));
  EXPECT_EQ(guard_.Tracked(), 0u);
}

// However many clusters are silent, finding out whether they answer again
// holds one thread at a time, for the trial's short timeout.
TEST_F(SilentClustersTest, TrialsAcrossClustersGoOneAtATimeUnderAShortTimeout) {
  for (const char* key : {"a", "b", "c"}) {
    ASSERT_TRUE(Call(key, Outcome::kSilent));
    ASSERT_TRUE(Call(key, Outcome::kSilent));
  }
  clock_.Advance(seconds(5));
  SilentClusters::Ticket trial;
  ASSERT_FALSE(guard_.Admit("a", &trial).has_value());
  EXPECT_EQ(trial.Timeout(std::chrono::milliseconds(30000)), std::chrono::milliseconds(5000));
  for (const char* key : {"b", "c"}) {
    SilentClusters::Ticket t;
    std::optional<SilentClusters::Refusal> r = guard_.Admit(key, &t);
    ASSERT_TRUE(r.has_value()) << key;
    EXPECT_EQ(r->why, SilentClusters::Refusal::kOneAtATime);
  }
  clock_.Advance(seconds(5));
  trial.Finish(Outcome::kSilent);
  EXPECT_TRUE(Call("b", Outcome::kAnswered)) << "the trial's slot is free again";
  EXPECT_TRUE(Call("b", Outcome::kAnswered)) << "b answered: closed";
}

TEST_F(SilentClustersTest, ClustersSilentLongAgoAreForgotten) {
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(Call("c" + std::to_string(i), Outcome::kSilent));
  EXPECT_EQ(guard_.Tracked(), 100u);
  clock_.Advance(std::chrono::minutes(61));
  EXPECT_TRUE(Call("other", Outcome::kOther));
  EXPECT_EQ(guard_.Tracked(), 0u);
}

}  // namespace
}  // namespace slurmop::agentplatform
