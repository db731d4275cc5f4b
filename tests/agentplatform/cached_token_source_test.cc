// File: tests/agentplatform/cached_token_source_test.cc
//
// CachedTokenSource: single-flight refresh under concurrency, sharing a
// failed refresh, serving a stale-but-valid token during a refresh, short
// token lifetimes, and fetchers that throw.

#include "controller/agentplatform/cached_token_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace slurmop::agentplatform {
namespace {

using std::chrono::seconds;

// A fetcher whose Fetch() blocks until Release() and counts calls.
class GatedFetcher : public TokenFetcher {
 public:
  explicit GatedFetcher(const Clock* clock) : clock_(clock) {}
  absl::StatusOr<AccessToken> Fetch() override {
    std::unique_lock<std::mutex> lock(mu_);
    ++calls_;
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_ > 0; });
    --released_;
    --waiting_;
    if (!fail_.ok()) return fail_;
    return AccessToken{"tok-" + std::to_string(calls_), clock_->Now() + lifetime_};
  }
  std::string Describe() const override { return "gated"; }

  void Release(int n = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    released_ += n;
    cv_.notify_all();
  }
  void WaitForFetch() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return waiting_ > 0; });
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  void Fail(absl::Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_ = std::move(s);
  }

  Duration lifetime_ = seconds(3600);

 private:
  const Clock* clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0;
  int waiting_ = 0;
  int released_ = 0;
  absl::Status fail_;
};

TEST(CachedTokenSource, SingleFlightRefresh) {
  FakeClock clock;
  auto fetcher = std::make_unique<GatedFetcher>(&clock);
  GatedFetcher* f = fetcher.get();
  CachedTokenSource source(std::move(fetcher), &clock, kDefaultRefreshMargin);

  std::vector<std::future<absl::StatusOr<std::string>>> results;
  results.push_back(std::async(std::launch::async, [&] { return source.Token(); }));
  f->WaitForFetch();  // the first caller is fetching
  for (int i = 0; i < 7; ++i) {
    results.push_back(std::async(std::launch::async, [&] { return source.Token(); }));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let them queue up
  f->Release(100);
  for (auto& r : results) {
    absl::StatusOr<std::string> token = r.get();
    ASSERT_TRUE(token.ok());
    EXPECT_EQ(*token, "tok-1");
  }
  EXPECT_EQ(f->calls(), 1);
}

TEST(CachedTokenSource, WaitersShareAFailedRefresh) {
  FakeClock clock;
  auto fetcher = std::make_unique<GatedFetcher>(&clock);
  GatedFetcher* f = fetcher.get();
  f->Fail(absl::UnavailableError("token endpoint down"));
  CachedTokenSource source(std::move(fetcher), &clock, kDefaultRefreshMargin);

  auto first = std::async(std::launch::async, [&] { return source.Token(); });
  f->WaitForFetch();
  auto second = std::async(std::launch::async, [&] { return source.Token(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  f->Release(100);
  EXPECT_EQ(first.get().status().code(), absl::StatusCode::kUnavailable);
  absl::StatusOr<std::string> s = second.get();
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
  // The second caller either shared the first failure or (if it arrived
  // after it) made one attempt of its own; never more.
  EXPECT_LE(f->calls(), 2);
}

TEST(CachedTokenSource, StaleTokenServedDuringRefresh) {
  FakeClock clock;
  auto fetcher = std::make_unique<GatedFetcher>(&clock);
  GatedFetcher* f = fetcher.get();
  CachedTokenSource source(std::move(fetcher), &clock, kDefaultRefreshMargin);
  f->Release();
  EXPECT_EQ(*source.Token(), "tok-1");

  clock.Advance(seconds(3600 - 200));  // stale, still valid
  auto refresher = std::async(std::launch::async, [&] { return source.Token(); });
  f->WaitForFetch();
  // While the refresh is in flight, others get the old token at once.
  auto other = std::async(std::launch::async, [&] { return source.Token(); });
  ASSERT_EQ(other.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(*other.get(), "tok-1");
  f->Release();
  EXPECT_EQ(*refresher.get(), "tok-2");
  EXPECT_EQ(*source.Token(), "tok-2");
}

TEST(CachedTokenSource, ShortLivedTokensUseHalfTheirLifetime) {
  FakeClock clock;
  auto fetcher = std::make_unique<GatedFetcher>(&clock);
  GatedFetcher* f = fetcher.get();
  f->lifetime_ = seconds(120);  // shorter than the 300 s margin
  f->Release(10);
  CachedTokenSource source(std::move(fetcher), &clock, kDefaultRefreshMargin);
  EXPECT_EQ(*source.Token(), "tok-1");
  clock.Advance(seconds(59));
  EXPECT_EQ(*source.Token(), "tok-1");
  clock.Advance(seconds(2));
  EXPECT_EQ(*source.Token(), "tok-2");
}

class ThrowingFetcher : public TokenFetcher {
 public:
  absl::StatusOr<AccessToken> Fetch() override { throw std::runtime_error("boom"); }
  std::string Describe() const override { return "thrower"; }
};

TEST(CachedTokenSource, ExceptionsDoNotEscape) {
  FakeClock clock;
  CachedTokenSource source(std::make_unique<ThrowingFetcher>(), &clock, kDefaultRefreshMargin);
  absl::StatusOr<std::string> token = source.Token();
  EXPECT_EQ(token.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(source.Describe(), "thrower");
}

}  // namespace
}  // namespace slurmop::agentplatform
