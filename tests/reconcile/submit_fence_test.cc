// File: tests/reconcile/submit_fence_test.cc
//
// LeaseSubmitFence: open only while the Lease is held with time to spare.

#include "controller/reconcile/submit_fence.h"

#include <optional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;

TEST(LeaseSubmitFenceTest, OpenOnlyWithLeaseTimeToSpare) {
  const Time t0 = Time(seconds(1700000000));
  std::optional<Time> until;
  LeaseSubmitFence fence([&] { return until; }, seconds(5));

  absl::Status s = fence.MaySubmit(t0);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << "not holding the Lease";
  EXPECT_THAT(s.message(), HasSubstr("does not hold the leader Lease"));

  until = t0 + seconds(15);
  EXPECT_TRUE(fence.MaySubmit(t0).ok());
  EXPECT_TRUE(fence.MaySubmit(t0 + seconds(10)).ok()) << "exactly the spare left";
  s = fence.MaySubmit(t0 + seconds(11));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << "4 s left < 5 s spare";
  EXPECT_THAT(s.message(), HasSubstr("4000 ms of it left"));
  EXPECT_FALSE(fence.MaySubmit(t0 + seconds(30)).ok()) << "expired";
}

}  // namespace
}  // namespace slurmop::reconcile
