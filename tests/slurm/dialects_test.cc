// File: tests/slurm/dialects_test.cc
//
// The version registry and every dialect's paths.

#include "controller/slurm/dialects.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/slurm/test_fixtures.h"

namespace slurmop::slurm {
namespace {

TEST(DialectsTest, SupportedVersionsOldestFirst) {
  EXPECT_EQ(SupportedVersions(),
            (std::vector<std::string>{"v0.0.38", "v0.0.39", "v0.0.40", "v0.0.41", "v0.0.42",
                                      "v0.0.43", "v0.0.44"}));
}

TEST(DialectsTest, UnknownVersionIsInvalidArgument) {
  absl::StatusOr<const Dialect*> d = DialectFor("v0.0.99");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(d.status().message(),
            "unsupported Slurm REST API version \"v0.0.99\"; supported: v0.0.38, v0.0.39, "
            "v0.0.40, v0.0.41, v0.0.42, v0.0.43, v0.0.44");
  EXPECT_FALSE(DialectFor("").ok());
  EXPECT_FALSE(DialectFor("0.0.42").ok());
  EXPECT_FALSE(DialectFor("v0.0.37").ok());
}

TEST(DialectsTest, SameInstanceEveryTime) {
  absl::StatusOr<const Dialect*> a = DialectFor("v0.0.42");
  absl::StatusOr<const Dialect*> b = DialectFor(std::string("v0.0.42"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

class DialectPathsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DialectPathsTest, PathsCarryTheVersion) {
  const std::string v = GetParam();
  absl::StatusOr<const Dialect*> d = DialectFor(v);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->version(), v);
  EXPECT_EQ((*d)->SubmitPath(), "/slurm/" + v + "/job/submit");
  EXPECT_EQ((*d)->JobPath(42), "/slurm/" + v + "/job/42");
  EXPECT_EQ((*d)->JobsPath(std::nullopt), "/slurm/" + v + "/jobs/");
  EXPECT_EQ((*d)->JobsPath(1700000000), "/slurm/" + v + "/jobs/?update_time=1700000000");
  EXPECT_EQ((*d)->CancelPath(42), "/slurm/" + v + "/job/42");
  EXPECT_EQ((*d)->DbJobPath(42), "/slurmdb/" + v + "/job/42");
  EXPECT_EQ((*d)->PingPath(), "/slurm/" + v + "/ping/");
}

// What each version's slurmrestd reads from POST /slurm/vX/job/{id}
// (wire_format.h UpdateFormat): v0.0.39 is read wrapped by 23.02.0-1 and bare
// by 23.02.2+, so it gets both; every other version only the bare fields
// (v0.0.38 rejects any unknown key, v0.0.40+ warns about them).
TEST_P(DialectPathsTest, UpdateBodyIsWhatTheVersionReads) {
  const std::string v = GetParam();
  absl::StatusOr<const Dialect*> d = DialectFor(v);
  ASSERT_TRUE(d.ok()) << d.status();
  JobUpdate u;
  u.comment = "slurmjob-operator-orphaned:ns/uid/1";
  u.hold = true;
  absl::StatusOr<nlohmann::json> body = (*d)->RenderUpdate(u);
  ASSERT_TRUE(body.ok()) << body.status();
  const nlohmann::json bare = {{"comment", *u.comment}, {"hold", true}};
  if (v == "v0.0.39") {
    nlohmann::json both = bare;
    both["job"] = bare;
    EXPECT_EQ(*body, both);
  } else {
    EXPECT_EQ(*body, bare) << v;
  }
  EXPECT_EQ((*d)->UpdatePath(42), "/slurm/" + v + "/job/42");
  EXPECT_FALSE((*d)->RenderUpdate(JobUpdate{}).ok());
}

INSTANTIATE_TEST_SUITE_P(AllVersions, DialectPathsTest, ::testing::ValuesIn(SupportedVersions()),
                         [](const auto& info) { return fixtures::VersionTestName(info.param); });

}  // namespace
}  // namespace slurmop::slurm
