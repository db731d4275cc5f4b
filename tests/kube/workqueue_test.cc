// File: tests/kube/workqueue_test.cc
//
// WorkQueue and RateLimiter: client-go's queue contract, driven by FakeClock.

#include "controller/kube/workqueue.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kube/fake_client.h"

namespace slurmop::kube {
namespace {

using ::slurmop::kube::testing::WaitUntil;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(WorkQueueTest, AddDeduplicatesQueuedKeys) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.Add("ns/a");
  queue.Add("ns/b");
  queue.Add("ns/a");
  EXPECT_EQ(queue.Len(), 2u);
  EXPECT_EQ(queue.Get(), "ns/a");
  EXPECT_EQ(queue.Get(), "ns/b");
  EXPECT_EQ(queue.Len(), 0u);
}

TEST(WorkQueueTest, KeyAddedWhileProcessingIsRequeuedOnDoneOnce) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.Add("k");
  ASSERT_EQ(queue.Get(), "k");
  queue.Add("k");
  queue.Add("k");
  EXPECT_EQ(queue.Len(), 0u) << "never handed to a second worker while processing";
  queue.Done("k");
  EXPECT_EQ(queue.Len(), 1u);
  EXPECT_EQ(queue.Get(), "k");
  queue.Done("k");
  EXPECT_EQ(queue.Len(), 0u);
}

TEST(WorkQueueTest, DoneWithoutNewAddDoesNotRequeue) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.Add("k");
  ASSERT_EQ(queue.Get(), "k");
  queue.Done("k");
  EXPECT_EQ(queue.Len(), 0u);
}

TEST(WorkQueueTest, OneKeyIsNeverProcessedConcurrently) {
  FakeClock clock;
  WorkQueue queue(clock);
  std::atomic<int> in_flight{0};
  std::atomic<bool> overlap{false};
  std::atomic<int> processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (std::optional<std::string> key = queue.Get()) {
        if (in_flight.fetch_add(1) != 0) overlap = true;
        std::this_thread::yield();
        in_flight.fetch_sub(1);
        processed.fetch_add(1);
        queue.Done(*key);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) queue.Add("same-key");
  ASSERT_TRUE(WaitUntil([&] { return queue.Len() == 0; }));
  queue.ShutDownWithDrain();
  for (std::thread& t : workers) t.join();
  EXPECT_FALSE(overlap.load());
  EXPECT_GE(processed.load(), 1);
}

constexpr WorkQueue::Priority kUrgent = WorkQueue::Priority::kUrgent;
constexpr WorkQueue::Priority kNormal = WorkQueue::Priority::kNormal;

// Drains what is ready without blocking.
std::vector<std::string> DrainReady(WorkQueue& queue) {
  std::vector<std::string> keys;
  while (queue.Len() > 0) {
    std::optional<std::string> key = queue.Get();
    if (!key) break;
    keys.push_back(*key);
    queue.Done(*key);
  }
  return keys;
}

// Adds each key with its priority, in order.
void AddEach(WorkQueue& queue,
             std::initializer_list<std::pair<const char*, WorkQueue::Priority>> adds) {
  for (const auto& [key, priority] : adds) queue.Add(key, priority);
}

TEST(WorkQueueTest, UrgentKeysAreHandedOutBeforeNormalOnesInArrivalOrder) {
  FakeClock clock;
  WorkQueue queue(clock);
  AddEach(queue, {{"n1", kNormal}, {"u1", kUrgent}, {"n2", kNormal}, {"u2", kUrgent}});
  EXPECT_EQ(queue.Len(), 4u);
  EXPECT_THAT(DrainReady(queue), ::testing::ElementsAre("u1", "u2", "n1", "n2"));
}

TEST(WorkQueueTest, AQueuedNormalKeyAddedAsUrgentMovesAheadAndComesOutOnce) {
  FakeClock clock;
  WorkQueue queue(clock);
  AddEach(queue, {{"a", kNormal}, {"b", kNormal}, {"c", kNormal}, {"c", kUrgent}});
  EXPECT_EQ(queue.Len(), 3u);  // a promotion is not a second key
  EXPECT_THAT(DrainReady(queue), ::testing::ElementsAre("c", "a", "b"));
  EXPECT_EQ(queue.Len(), 0u);
}

TEST(WorkQueueTest, ANormalAddDoesNotDemoteAnUrgentKey) {
  FakeClock clock;
  WorkQueue queue(clock);
  AddEach(queue, {{"n", kNormal}, {"u", kUrgent}, {"u", kNormal}});
  EXPECT_THAT(DrainReady(queue), ::testing::ElementsAre("u", "n"));
}

TEST(WorkQueueTest, AKeyMadeUrgentWhileProcessedIsRequeuedAheadByDone) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.Add("k");
  ASSERT_EQ(queue.Get(), "k");
  queue.Add("n1");
  queue.Add("k");
  queue.Add("k", kUrgent);
  EXPECT_EQ(queue.Len(), 1u);  // k waits for Done()
  queue.Done("k");
  EXPECT_EQ(queue.Len(), 2u);
  EXPECT_THAT(DrainReady(queue), ::testing::ElementsAre("k", "n1"));
}

TEST(WorkQueueTest, AStaleEntryDoesNotHandOutAKeyQueuedAgainLater) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.Add("x");
  queue.Add("k");
  queue.Add("k", kUrgent);  // k's normal entry goes stale
  ASSERT_EQ(queue.Get(), "k");
  queue.Done("k");
  queue.Add("y");
  queue.Add("k");  // queued again, behind y
  EXPECT_THAT(DrainReady(queue), ::testing::ElementsAre("x", "y", "k"));
}

TEST(WorkQueueTest, DueDelayedKeysAreNormal) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.AddAfter("later", seconds(1));
  clock.Advance(seconds(2));
  queue.ProcessDue();
  queue.Add("u", kUrgent);
  EXPECT_THAT(DrainReady(queue), ::testing::ElementsAre("u", "later"));
}

TEST(WorkQueueTest, AnUrgentAddWakesABlockedGet) {
  FakeClock clock;
  WorkQueue queue(clock);
  std::atomic<bool> got{false};
  std::thread worker([&] {
    EXPECT_EQ(queue.Get(), "u");
    got = true;
  });
  std::this_thread::sleep_for(milliseconds(20));
  queue.Add("u", kUrgent);
  EXPECT_TRUE(WaitUntil([&] { return got.load(); }));
  worker.join();
}

// Expects a Get() on another thread to block (for 50 ms) until `release` runs,
// then to return `key`.
void ExpectGetWaitsFor(WorkQueue& queue, const std::string& key,
                       const std::function<void()>& release) {
  std::mutex mu;
  bool returned = false;
  std::optional<std::string> got;
  std::thread getter([&] {
    std::optional<std::string> k = queue.Get();
    std::lock_guard<std::mutex> lock(mu);
    got = std::move(k);
    returned = true;
  });
  const auto has_returned = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return returned;
  };
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(has_returned()) << "Get() did not wait";
  release();
  EXPECT_TRUE(WaitUntil(has_returned));
  getter.join();
  EXPECT_EQ(got, key);
}

// A queue whose normal limit is 1, with n1 processing and n2 queued.
class WorkQueueNormalLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    queue_.SetNormalLimit(1);
    AddEach(queue_, {{"n1", kNormal}, {"n2", kNormal}});
    ASSERT_EQ(queue_.Get(), "n1");
  }
  FakeClock clock_;
  WorkQueue queue_{clock_};
};

TEST_F(WorkQueueNormalLimitTest, HoldsNormalKeysBackButNotUrgentOnes) {
  ExpectGetWaitsFor(queue_, "u", [&] { queue_.Add("u", kUrgent); });
  queue_.Done("u");  // an urgent key's Done() frees no normal slot
  ExpectGetWaitsFor(queue_, "n2", [&] { queue_.Done("n1"); });
}

TEST_F(WorkQueueNormalLimitTest, ShutDownStillHandsOutAHeldBackKey) {
  queue_.ShutDown();
  ExpectGetWaitsFor(queue_, "n2", [&] { queue_.Done("n1"); });
  queue_.Done("n2");
  EXPECT_EQ(queue_.Get(), std::nullopt);
}

TEST_F(WorkQueueNormalLimitTest, RaisingTheLimitWakesAHeldBackGet) {
  ExpectGetWaitsFor(queue_, "n2", [&] { queue_.SetNormalLimit(0); });  // 0: no limit
}

TEST_F(WorkQueueNormalLimitTest, AKeyRequeuedByDoneCountsAgainstTheLimitAgain) {
  queue_.Add("n1");   // dirty while processing
  queue_.Done("n1");  // n1 queued again behind n2
  EXPECT_EQ(queue_.Get(), "n2");
  ExpectGetWaitsFor(queue_, "n1", [&] { queue_.Done("n2"); });
}

TEST(WorkQueueTest, UrgentKeysBeingProcessedDoNotCountAgainstTheNormalLimit) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.SetNormalLimit(1);
  AddEach(queue, {{"u1", kUrgent}, {"u2", kUrgent}, {"n1", kNormal}});
  EXPECT_EQ(queue.Get(), "u1");
  EXPECT_EQ(queue.Get(), "u2");
  EXPECT_EQ(queue.Get(), "n1");  // two urgent keys processing, no normal one
}

TEST(WorkQueueTest, GetBlocksUntilAddAndReturnsNulloptAfterShutDown) {
  FakeClock clock;
  WorkQueue queue(clock);
  std::optional<std::string> got;
  std::thread worker([&] { got = queue.Get(); });
  queue.Add("k");
  worker.join();
  EXPECT_EQ(got, "k");

  std::optional<std::string> after = "unset";
  std::thread waiter([&] { after = queue.Get(); });
  queue.ShutDown();
  waiter.join();
  EXPECT_EQ(after, std::nullopt);
  queue.Add("ignored");
  EXPECT_EQ(queue.Len(), 0u);
}

TEST(WorkQueueTest, ShutDownStillHandsOutQueuedKeys) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.Add("a");
  queue.ShutDown();
  EXPECT_TRUE(queue.ShuttingDown());
  EXPECT_EQ(queue.Get(), "a");
  EXPECT_EQ(queue.Get(), std::nullopt);
}

TEST(WorkQueueTest, AddAfterWaitsForTheClock) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.AddAfter("k", seconds(10));
  EXPECT_EQ(queue.Len(), 0u);
  EXPECT_EQ(queue.NumWaiting(), 1u);
  clock.Advance(seconds(9));
  EXPECT_EQ(queue.ProcessDue(), 0u);
  clock.Advance(seconds(1));
  EXPECT_EQ(queue.ProcessDue(), 1u);
  EXPECT_EQ(queue.Len(), 1u);
  EXPECT_EQ(queue.Get(), "k");
}

TEST(WorkQueueTest, AddAfterEarliestDeadlineWins) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.AddAfter("k", seconds(10));
  queue.AddAfter("k", seconds(3));   // earlier: wins
  queue.AddAfter("k", seconds(20));  // later: ignored
  EXPECT_EQ(queue.NumWaiting(), 1u);
  clock.Advance(seconds(3));
  EXPECT_EQ(queue.ProcessDue(), 1u);
  EXPECT_EQ(queue.Get(), "k");
  queue.Done("k");
  clock.Advance(seconds(30));
  EXPECT_EQ(queue.ProcessDue(), 0u) << "the later deadlines were merged away";
}

TEST(WorkQueueTest, AddAfterOfQueuedKeyDeduplicatesWhenDue) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.Add("k");
  queue.AddAfter("k", seconds(1));
  clock.Advance(seconds(1));
  queue.ProcessDue();
  EXPECT_EQ(queue.Len(), 1u);
}

TEST(WorkQueueTest, AddAfterZeroAddsNow) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.AddAfter("k", Duration::zero());
  EXPECT_EQ(queue.Len(), 1u);
}

TEST(WorkQueueTest, DelayedKeysComeOutInDeadlineOrder) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.AddAfter("late", seconds(5));
  queue.AddAfter("early", seconds(2));
  clock.Advance(seconds(10));
  queue.ProcessDue();
  EXPECT_EQ(queue.Get(), "early");
  EXPECT_EQ(queue.Get(), "late");
}

// Keys moved earlier, keys with equal deadlines (ordered by key) and keys
// that left and came back: each comes out once, in deadline order.
TEST(WorkQueueTest, RescheduledKeysComeOutOnceInDeadlineThenKeyOrder) {
  FakeClock clock;
  WorkQueue queue(clock);
  const std::string long_prefix = "a-namespace-longer-than-short-strings/slurmjob-";
  for (int i = 0; i < 20; ++i) queue.AddAfter(long_prefix + std::to_string(i), seconds(100 + i));
  for (int i = 0; i < 20; i += 2) queue.AddAfter(long_prefix + std::to_string(i), seconds(5));
  EXPECT_EQ(queue.NumWaiting(), 20u);
  clock.Advance(seconds(5));
  EXPECT_EQ(queue.ProcessDue(), 10u);
  std::vector<std::string> first;
  for (int i = 0; i < 10; ++i) {
    first.push_back(*queue.Get());
    queue.Done(first.back());
  }
  EXPECT_TRUE(std::is_sorted(first.begin(), first.end())) << "equal deadlines: by key";
  queue.AddAfter(long_prefix + "0", seconds(1));  // left; waits again
  clock.Advance(seconds(1));
  EXPECT_EQ(queue.ProcessDue(), 1u);
  EXPECT_EQ(queue.Get(), long_prefix + "0");
  queue.Done(long_prefix + "0");
  clock.Advance(seconds(200));
  EXPECT_EQ(queue.ProcessDue(), 10u) << "the odd keys, each once";
  EXPECT_EQ(queue.NumWaiting(), 0u);
  for (int i = 1; i < 20; i += 2) EXPECT_EQ(queue.Get(), long_prefix + std::to_string(i));
}

TEST(WorkQueueTest, BlockedGetWakesOnPokeAfterFakeClockAdvance) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.AddAfter("k", std::chrono::hours(1));
  std::optional<std::string> got;
  std::thread worker([&] { got = queue.Get(); });
  clock.Advance(std::chrono::hours(1));
  queue.Poke();
  worker.join();  // returns without waiting an hour of real time
  EXPECT_EQ(got, "k");
}

TEST(WorkQueueTest, GetWaitsForDeadlineWithRealClock) {
  WorkQueue queue(RealClock::Get());
  const auto start = std::chrono::steady_clock::now();
  queue.AddAfter("k", milliseconds(50));
  EXPECT_EQ(queue.Get(), "k");
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(45));
}

TEST(WorkQueueTest, RateLimitedDelaysDoubleAndForgetResets) {
  FakeClock clock;
  WorkQueue queue(clock);
  const std::vector<Duration> expected = {milliseconds(5), milliseconds(10), milliseconds(20),
                                          milliseconds(40)};
  for (size_t i = 0; i < expected.size(); ++i) {
    queue.AddRateLimited("k");
    EXPECT_EQ(queue.NumRequeues("k"), static_cast<int>(i + 1));
    clock.Advance(expected[i] - std::chrono::microseconds(1));
    EXPECT_EQ(queue.ProcessDue(), 0u) << "retry " << i << " came early";
    clock.Advance(std::chrono::microseconds(1));
    EXPECT_EQ(queue.ProcessDue(), 1u) << "retry " << i << " came late";
    ASSERT_EQ(queue.Get(), "k");
    queue.Done("k");
  }
  queue.Forget("k");
  EXPECT_EQ(queue.NumRequeues("k"), 0);
  queue.AddRateLimited("k");
  clock.Advance(milliseconds(5));
  EXPECT_EQ(queue.ProcessDue(), 1u);
}

TEST(RateLimiterTest, PerItemExponentialCappedAtThousandSeconds) {
  FakeClock clock;
  RateLimiter limiter(clock, RateLimiterOptions{});
  EXPECT_EQ(limiter.When("a"), milliseconds(5));
  EXPECT_EQ(limiter.When("a"), milliseconds(10));
  EXPECT_EQ(limiter.When("a"), milliseconds(20));
  EXPECT_EQ(limiter.When("b"), milliseconds(5)) << "per key";
  for (int i = 4; i < 18; ++i) limiter.When("a");
  EXPECT_EQ(limiter.NumRequeues("a"), 17);
  EXPECT_EQ(limiter.When("a"), milliseconds(5) * (1 << 17));  // 655.36 s
  EXPECT_EQ(limiter.When("a"), seconds(1000));                // 19th: capped
  EXPECT_EQ(limiter.When("a"), seconds(1000));
  limiter.Forget("a");
  EXPECT_EQ(limiter.NumRequeues("a"), 0);
  EXPECT_EQ(limiter.When("a"), milliseconds(5));
}

TEST(RateLimiterTest, GlobalBucketLimitsToTenPerSecondAfterBurst) {
  FakeClock clock;
  RateLimiter limiter(clock, RateLimiterOptions{});
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(limiter.When("key-" + std::to_string(i)), milliseconds(5));
  }
  // The burst is spent: the 101st distinct key waits for a token (100 ms).
  EXPECT_EQ(limiter.When("key-100"), milliseconds(100));
  EXPECT_EQ(limiter.When("key-101"), milliseconds(200));
  clock.Advance(seconds(1));  // refills 10 tokens, the debt was 2
  EXPECT_EQ(limiter.When("key-102"), milliseconds(5));
}

TEST(RateLimiterTest, OneNamespacesFailuresDoNotDelayAnotherNamespacesRetries) {
  FakeClock clock;
  RateLimiter limiter(clock, RateLimiterOptions{});
  // 5,000 SlurmJobs of one tenant fail for now: their retries queue up.
  Duration last{};
  for (int i = 0; i < 5000; ++i) last = limiter.When("team-a/job-" + std::to_string(i));
  EXPECT_GT(last, seconds(400)) << "one tenant's own retries still wait their turn";
  // Another tenant's first retry is not behind them (it was ~490 s with one
  // bucket for every key).
  EXPECT_EQ(limiter.When("team-b/job-0"), milliseconds(5));
  EXPECT_EQ(limiter.When("scl:team-b/cluster"), milliseconds(5));
  EXPECT_EQ(limiter.When("cluster-scoped"), milliseconds(5));
}

TEST(RateLimiterTest, KeysAreGroupedByTheirNamespace) {
  EXPECT_EQ(NamespaceOfKey("team-a/job"), "team-a");
  EXPECT_EQ(NamespaceOfKey("scl:team-a/cluster"), "team-a");
  EXPECT_EQ(NamespaceOfKey("name-only"), "");
  EXPECT_EQ(NamespaceOfKey(":probe-api-server"), "");
}

TEST(RateLimiterTest, RefilledBucketsAreForgotten) {
  FakeClock clock;
  RateLimiter limiter(clock, RateLimiterOptions{});
  for (int i = 0; i < 1000; ++i) limiter.When("ns-" + std::to_string(i) + "/job");
  EXPECT_EQ(limiter.BucketsKept(), 1000u);
  // "busy" owes 700 tokens: 70 s at 10 a second.
  for (int i = 0; i < 800; ++i) limiter.When("busy/job-" + std::to_string(i));
  clock.Advance(seconds(61));  // the one-token namespaces are full again
  limiter.When("other/job");
  EXPECT_EQ(limiter.BucketsKept(), 2u) << "busy (still in debt) and other (just used)";
  clock.Advance(seconds(61));
  limiter.When("busy/job-0");
  EXPECT_EQ(limiter.BucketsKept(), 1u);
}

}  // namespace
}  // namespace slurmop::kube
