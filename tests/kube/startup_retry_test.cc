// File: tests/kube/startup_retry_test.cc
//
// RetryWhileUnanswered (startup_retry.h) over a FakeClock.

#include "controller/kube/startup_retry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace slurmop::kube {
namespace {

using std::chrono::seconds;

struct Harness {
  FakeClock clock;
  std::vector<Duration> waits;
  StartupRetry retry{clock,
                     [this](Duration d) {
                       waits.push_back(d);
                       clock.Advance(d);
                     },
                     seconds(60), [] { return 0.0; }};  // no jitter: 0.8, 1.6, 3.2 ... s
};

TEST(StartupRetryTest, AnAPIServerBackAfterTwoFailuresCostsTwoWaits) {
  Harness h;
  int calls = 0;
  absl::StatusOr<std::string> r =
      RetryWhileUnanswered<std::string>(h.retry, "reading x", [&]() -> absl::StatusOr<std::string> {
        if (++calls <= 2) return absl::UnavailableError("connection refused");
        return std::string("id");
      });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, "id");
  EXPECT_EQ(calls, 3);
  ASSERT_EQ(h.waits.size(), 2u);
  EXPECT_LT(h.waits[0], h.waits[1]);  // backing off
}

TEST(StartupRetryTest, TooManyRequestsTimeoutsAndServerErrorsAreRetried) {
  for (const absl::Status& s :
       {absl::ResourceExhaustedError("429"), absl::DeadlineExceededError("timed out"),
        absl::InternalError("500"), absl::UnavailableError("503")}) {
    Harness h;
    int calls = 0;
    absl::Status r = RetryStatusWhileUnanswered(
        h.retry, "reading x", [&] { return ++calls == 1 ? s : absl::OkStatus(); });
    EXPECT_TRUE(r.ok()) << s;
    EXPECT_EQ(calls, 2) << s;
  }
}

TEST(StartupRetryTest, AnAnswerThatRefusesIsReturnedAtOnce) {
  for (const absl::Status& s :
       {absl::PermissionDeniedError("forbidden"), absl::NotFoundError("not found"),
        absl::InvalidArgumentError("invalid"), absl::FailedPreconditionError("bad key")}) {
    Harness h;
    int calls = 0;
    absl::Status r = RetryStatusWhileUnanswered(h.retry, "reading x", [&] {
      ++calls;
      return s;
    });
    EXPECT_EQ(r, s);
    EXPECT_EQ(calls, 1) << s;
    EXPECT_TRUE(h.waits.empty());
  }
}

TEST(StartupRetryTest, AnAPIServerThatStaysDownIsGivenUpOnAtTheBudget) {
  Harness h;
  const Time start = h.clock.Now();
  int calls = 0;
  absl::Status r = RetryStatusWhileUnanswered(h.retry, "reading x", [&] {
    ++calls;
    return absl::UnavailableError(absl::StrCat("down ", calls));
  });
  EXPECT_EQ(r.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(r.message(), absl::StrCat("down ", calls));  // the last failure
  EXPECT_EQ(h.clock.Now() - start, seconds(60));         // waits never go past the budget
  // 0.8 + 1.6 + 3.2 + 6.4 + 12.8 + 25.6 s, then the 9.6 s left: 8 attempts.
  EXPECT_EQ(calls, 8);
}

}  // namespace
}  // namespace slurmop::kube
