// File: tests/slurm/job_state_table_test.cc
//
// Table test: every base state, alone and combined with every state flag, in
// each version's shape, through ParseJob (slurmctld) and ParseDbJob
// (slurmdb). v0.0.38/39 print one string (a flag replaces the base state);
// v0.0.40+ print an array of base state + flags.

#include <string>
#include <vector>

#include "controller/slurm/dialects.h"
#include "gtest/gtest.h"
#include "tests/slurm/test_fixtures.h"

namespace slurmop::slurm {
namespace {

using nlohmann::json;

// data_parser/v0.0.42 PARSER_FLAG_ARRAY(JOB_STATE) flags.
const std::vector<std::string>& AllFlags() {
  static const auto* const kFlags = new std::vector<std::string>{
      "LAUNCH_FAILED", "REQUEUED",    "REQUEUE_HOLD",  "SPECIAL_EXIT",  "RESIZING",
      "CONFIGURING",   "COMPLETING",  "STOPPED",       "RECONFIG_FAIL", "POWER_UP_NODE",
      "REVOKED",       "REQUEUE_FED", "RESV_DEL_HOLD", "SIGNALING",     "STAGE_OUT"};
  return *kFlags;
}

class JobStateTableTest : public ::testing::TestWithParam<std::string> {
 protected:
  const Dialect& dialect() const { return **DialectFor(GetParam()); }
  bool legacy() const { return fixtures::IsLegacyVersion(GetParam()); }

  // job_state as this version prints base state `base` with `flag` set.
  json StateValue(std::string_view base, std::string_view flag) const {
    if (legacy()) return flag.empty() ? json(base) : json(flag);
    json a = json::array({base});
    if (!flag.empty()) a.push_back(flag);
    return a;
  }
  // exit 3, in this version's slurmctld shape.
  json SlurmctldExit3() const {
    if (GetParam() == "v0.0.38") return 768;
    if (GetParam() == "v0.0.39") return {{"set", true}, {"infinite", false}, {"number", 768}};
    return {
        {"status", {"ERROR"}},
        {"return_code", {{"set", true}, {"infinite", false}, {"number", 3}}},
        {"signal", {{"id", {{"set", false}, {"infinite", false}, {"number", 0}}}, {"name", ""}}}};
  }
  json SlurmdbExit3() const {
    if (legacy()) return {{"status", "SUCCESS"}, {"return_code", 0}};  // the old dumper's bug
    return SlurmctldExit3();
  }

  JobInfo ParseCtld(std::string_view base, std::string_view flag) const {
    json body = {{"jobs",
                  {{{"job_id", 42},
                    {"job_state", StateValue(base, flag)},
                    {"exit_code", SlurmctldExit3()}}}},
                 {"errors", json::array()}};
    absl::StatusOr<JobLookup> got = dialect().ParseJob(200, body, 42);
    EXPECT_TRUE(got.ok() && got->job.has_value()) << base << "+" << flag;
    return got.ok() && got->job ? *got->job : JobInfo{};
  }
  JobInfo ParseDb(std::string_view base, std::string_view flag) const {
    json body = {{"jobs",
                  {{{"job_id", 42},
                    {"state", {{"current", StateValue(base, flag)}, {"reason", "None"}}},
                    {"exit_code", SlurmdbExit3()},
                    {"time", {{"submission", 1700000000}}}}}},
                 {"errors", json::array()}};
    absl::StatusOr<JobLookup> got = dialect().ParseDbJob(200, body, 42);
    EXPECT_TRUE(got.ok() && got->job.has_value()) << base << "+" << flag;
    return got.ok() && got->job ? *got->job : JobInfo{};
  }

  // What the neutral model must say for `base` + `flag`.
  void Check(const JobInfo& j, BaseState base, const std::string& flag, bool slurmdb) const {
    const std::string where = std::string(BaseStateName(base)) + "+" + flag;
    BaseState want = base;
    if (legacy() && !flag.empty()) {
      want =
          (flag == "CONFIGURING" || flag == "RESIZING") ? BaseState::kRunning : BaseState::kUnknown;
    }
    EXPECT_EQ(j.state, want) << where;
    if (flag.empty()) {
      EXPECT_TRUE(j.flags.empty()) << where;
    } else {
      EXPECT_EQ(j.flags, std::vector<std::string>{flag}) << where;
    }
    const bool final = IsTerminalState(want) && flag != "COMPLETING";
    EXPECT_EQ(j.IsFinal(), final) << where;
    std::optional<int32_t> want_exit;
    if (final) {
      if (!slurmdb || !legacy()) {
        want_exit = 3;
      } else if (want == BaseState::kCompleted) {
        want_exit = 0;  // old slurmdb: derived from the state
      }
    }
    EXPECT_EQ(j.exit_code, want_exit) << where << (slurmdb ? " (slurmdb)" : "");
    EXPECT_EQ(j.signal, std::nullopt) << where;
  }
};

TEST_P(JobStateTableTest, EveryBaseStateAndFlagSlurmctld) {
  for (BaseState base : AllKnownBaseStates()) {
    Check(ParseCtld(BaseStateName(base), ""), base, "", /*slurmdb=*/false);
    for (const std::string& flag : AllFlags()) {
      Check(ParseCtld(BaseStateName(base), flag), base, flag, /*slurmdb=*/false);
    }
  }
}

TEST_P(JobStateTableTest, EveryBaseStateAndFlagSlurmdb) {
  for (BaseState base : AllKnownBaseStates()) {
    Check(ParseDb(BaseStateName(base), ""), base, "", /*slurmdb=*/true);
    for (const std::string& flag : AllFlags()) {
      Check(ParseDb(BaseStateName(base), flag), base, flag, /*slurmdb=*/true);
    }
  }
}

TEST_P(JobStateTableTest, UnknownTextIsAFlagNotAState) {
  JobInfo j = ParseCtld("PENDING", "SOMETHING_NEW");
  if (legacy()) {
    EXPECT_EQ(j.state, BaseState::kUnknown);
  } else {
    EXPECT_EQ(j.state, BaseState::kPending);
  }
  EXPECT_EQ(j.flags, std::vector<std::string>{"SOMETHING_NEW"});
}

INSTANTIATE_TEST_SUITE_P(AllVersions, JobStateTableTest, ::testing::ValuesIn(SupportedVersions()),
                         [](const auto& info) { return fixtures::VersionTestName(info.param); });

}  // namespace
}  // namespace slurmop::slurm
