// File: tests/reconcile/retry_scheduler_test.cc
//
// RetryScheduler over the real WorkQueue with a FakeClock (#13 item 9): a key
// whose status write got no answer during an outage is retried within the
// probe interval of the API server answering again, not after the rest of
// its exponential backoff; nothing loops while the API server is down; keys
// that fail for other reasons keep their backoff. Time moves in 10 ms steps,
// the "workers" are the test's loop: deterministic, no sleeps.

#include "controller/reconcile/retry_scheduler.h"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kJob[] = "ns/job";
constexpr char kSlurmFails[] = "ns/slurm-fails";

ReconcileResult Unreachable() { return {std::nullopt, true, true}; }
ReconcileResult SlurmError() { return {std::nullopt, true, false}; }
ReconcileResult Tracked() { return {std::chrono::minutes(2), false, false}; }

class RetrySchedulerTest : public ::testing::Test {
 protected:
  // What a reconcile of `key` ends with; by default: no answer while the API
  // server is down, tracked (requeue in 2 min) once it is up.
  std::function<ReconcileResult(const std::string&)> reconcile = [this](const std::string&) {
    return api_server_up ? Tracked() : Unreachable();
  };

  // Runs the queue as the manager's workers do, for `d` in 10 ms steps.
  void RunFor(Duration d) {
    RunUntil([] { return false; }, d);
  }
  // ... or until `done` says so.
  void RunUntil(const std::function<bool()>& done, Duration d) {
    const Time until = clock.Now() + std::chrono::duration_cast<Time::duration>(d);
    while (clock.Now() < until && !done()) {
      clock.Advance(milliseconds(10));
      queue.ProcessDue();
      while (queue.Len() > 0) {
        std::optional<std::string> key = queue.Get();
        if (RetryScheduler::IsProbeKey(*key)) {
          ++probes;
          retry.Probe();
        } else {
          reconciles[*key].push_back(clock.Now());
          retry.Requeue(*key, reconcile(*key));
        }
        queue.Done(*key);
      }
    }
  }
  // The first reconcile of `key` after `t`.
  std::optional<Time> FirstReconcileSince(const std::string& key, Time t) {
    for (Time at : reconciles[key]) {
      if (at > t) return at;
    }
    return std::nullopt;
  }
  int ReconcilesSince(const std::string& key, Time t) {
    int n = 0;
    for (Time at : reconciles[key]) n += at > t;
    return n;
  }

  FakeClock clock;
  kube::WorkQueue queue{clock};
  bool api_server_up = true;
  int probes = 0;
  RetryScheduler retry{queue, clock, [this] { return api_server_up; }};
  std::map<std::string, std::vector<Time>> reconciles;
};

// The status write fails with no answer through an outage of ~10 s: 12
// tries, the last one's backoff 5 ms * 2^11 = 10.2 s. The API server is back
// right after it: the key is retried within the probe interval (1 s), not
// 10 s later (it was, before the probe).
TEST_F(RetrySchedulerTest, AKeyWaitingForTheApiServerIsRetriedSoonAfterItAnswersAgain) {
  api_server_up = false;
  queue.Add(kJob);
  RunUntil([&] { return reconciles[kJob].size() == 12; }, seconds(30));
  ASSERT_EQ(reconciles[kJob].size(), 12u) << "the key retried on its own backoff meanwhile";
  api_server_up = true;
  const Time back = clock.Now();
  RunFor(seconds(15));
  std::optional<Time> retried = FirstReconcileSince(kJob, back);
  ASSERT_TRUE(retried.has_value()) << "never retried in the 15 s after the API server was back";
  const auto lag = std::chrono::duration_cast<milliseconds>(*retried - back);
  std::cerr << "METRIC retry_after_api_server_back_ms " << lag.count() << " ms" << std::endl;
  EXPECT_LE(lag, milliseconds(1010)) << "retried only " << lag.count() << " ms after";
  EXPECT_EQ(queue.NumRequeues(kJob), 0) << "its backoff was forgotten";
  EXPECT_EQ(retry.parked(), 0u);
}

// While the API server is down nothing loops: one probe a second, the key on
// its own exponential backoff (5 ms * 2^n: 14 tries in 60 s).
TEST_F(RetrySchedulerTest, NoHotLoopWhileTheApiServerIsDown) {
  api_server_up = false;
  queue.Add(kJob);
  RunFor(seconds(60));
  EXPECT_LE(probes, 61);
  EXPECT_GE(probes, 55);
  EXPECT_LE(reconciles[kJob].size(), 16u);
  EXPECT_EQ(retry.parked(), 1u);
}

// A key that fails for another reason (a Slurm error) keeps its backoff when
// the API server answers again; only the key that waited for it is woken.
TEST_F(RetrySchedulerTest, KeysFailingForOtherReasonsKeepTheirBackoff) {
  reconcile = [this](const std::string& key) {
    if (key == kSlurmFails) return SlurmError();
    return api_server_up ? Tracked() : Unreachable();
  };
  api_server_up = false;
  queue.Add(kJob);
  queue.Add(kSlurmFails);
  // Both back off alike: the next retry of either is ~10 s away.
  RunUntil([&] { return reconciles[kJob].size() == 12; }, seconds(30));
  const int backoff = queue.NumRequeues(kSlurmFails);
  ASSERT_EQ(backoff, 12);
  api_server_up = true;
  const Time back = clock.Now();
  RunFor(seconds(2));
  EXPECT_EQ(ReconcilesSince(kSlurmFails, back), 0) << "woken with the keys that waited";
  EXPECT_EQ(queue.NumRequeues(kSlurmFails), backoff);
  EXPECT_EQ(ReconcilesSince(kJob, back), 1);
}

// Nothing waits: no probe at all.
TEST_F(RetrySchedulerTest, NoProbeWhileNoKeyWaits) {
  reconcile = [](const std::string&) { return SlurmError(); };
  queue.Add(kJob);
  RunFor(seconds(10));
  EXPECT_EQ(probes, 0);
}

// The API server answers the probe but never a write: the wake-ups back off
// (1, 2, 4, ... s after the previous one), they do not become a loop.
TEST_F(RetrySchedulerTest, WakeUpsThatDoNotHelpBackOff) {
  reconcile = [](const std::string&) { return Unreachable(); };
  queue.Add(kJob);
  RunFor(seconds(1));
  const int probes_first_second = probes;
  RunFor(seconds(60));
  EXPECT_LE(probes_first_second, 1);
  EXPECT_LE(probes, 8) << "1 + 2 + 4 + 8 + 16 + 32 s: about six wake-ups in a minute";
}

}  // namespace
}  // namespace slurmop::reconcile
