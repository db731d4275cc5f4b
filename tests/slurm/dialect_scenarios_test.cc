// File: tests/slurm/dialect_scenarios_test.cc
//
// Every version's parsers against the same scenarios, each fixture written in
// that version's shapes (testdata/<version>/ or testdata/v0.0.4x/): submit
// (ok, ok with warnings, bad partition), job info (running, completed,
// failed exit 3, timeout, cancelled by signal, completing, pending, unknown),
// jobs list (several, unchanged), slurmdb (found, cancelled, several records,
// not found) and cancel (ok, already finished, unknown). The expectations are
// version-neutral except where the versions really differ (v0.0.38/39 show a
// flag instead of the base state; their slurmdb exit codes are unreliable).

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "controller/common/bounded_text.h"
#include "controller/slurm/dialects.h"
#include "gtest/gtest.h"
#include "tests/slurm/test_fixtures.h"

namespace slurmop::slurm {
namespace {

using fixtures::IsLegacyVersion;
using fixtures::RecordedResponse;

Time Epoch(int64_t s) { return Time(std::chrono::seconds(s)); }

class DialectScenarioTest : public ::testing::TestWithParam<std::string> {
 protected:
  const Dialect& dialect() const {
    absl::StatusOr<const Dialect*> d = DialectFor(GetParam());
    EXPECT_TRUE(d.ok()) << d.status();
    return **d;
  }
  bool legacy() const { return IsLegacyVersion(GetParam()); }
  RecordedResponse Load(std::string_view name) const {
    return fixtures::LoadVersionResponse(GetParam(), name);
  }
  // Fixtures present for this version among `names` (at least one must be).
  std::vector<std::string> Present(std::vector<std::string> names) const {
    std::vector<std::string> found;
    for (const std::string& n : names) {
      if (!fixtures::FindFixture(GetParam(), n).empty()) found.push_back(n);
    }
    EXPECT_FALSE(found.empty()) << "none of the fixtures exist for " << GetParam();
    return found;
  }
  JobInfo Job(std::string_view fixture) const {
    RecordedResponse r = Load(fixture);
    absl::StatusOr<JobLookup> got = dialect().ParseJob(r.status, r.body, 42);
    EXPECT_TRUE(got.ok()) << fixture << ": " << got.status();
    if (!got.ok() || !got->job.has_value()) {
      ADD_FAILURE() << fixture << ": no job";
      return {};
    }
    EXPECT_TRUE(got->warnings.empty()) << fixture;
    return *got->job;
  }
  JobLookup DbJob(std::string_view fixture) const {
    RecordedResponse r = Load(fixture);
    absl::StatusOr<JobLookup> got = dialect().ParseDbJob(r.status, r.body, 42);
    EXPECT_TRUE(got.ok()) << fixture << ": " << got.status();
    return got.ok() ? *got : JobLookup{};
  }
  CancelResponse Cancel(std::string_view fixture) const {
    RecordedResponse r = Load(fixture);
    absl::StatusOr<CancelResponse> got = dialect().ParseCancel(r.status, r.body, 42);
    EXPECT_TRUE(got.ok()) << fixture << ": " << got.status();
    return got.ok() ? *got : CancelResponse{};
  }
};

// ---- submit

TEST_P(DialectScenarioTest, SubmitOk) {
  RecordedResponse r = Load("submit_ok.json");
  absl::StatusOr<SubmitResponse> got = dialect().ParseSubmit(r.status, r.body);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->job_id, 42);
  EXPECT_TRUE(got->warnings.empty());
}

TEST_P(DialectScenarioTest, SubmitOkWithWarnings) {
  RecordedResponse r = Load("submit_warnings.json");
  absl::StatusOr<SubmitResponse> got = dialect().ParseSubmit(r.status, r.body);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->job_id, 42);
  ASSERT_EQ(got->warnings.size(), 1u);
  EXPECT_NE(got->warnings[0].ToString().find("Requested partition configuration not available now"),
            std::string::npos);
  if (GetParam() == "v0.0.38") {
    EXPECT_EQ(got->warnings[0].error_number, 2015);
  }
}

TEST_P(DialectScenarioTest, SubmitRejectedBadPartition) {
  RecordedResponse r = Load("submit_bad_partition.json");
  ASSERT_EQ(r.status, 500);
  absl::StatusOr<SubmitResponse> got = dialect().ParseSubmit(r.status, r.body);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  if (GetParam() == "v0.0.38") {
    EXPECT_EQ(got.status().message(), "Invalid partition name specified (error 2000)");
  } else {
    EXPECT_EQ(got.status().message(),
              "Invalid partition name specified (error 2000): Batch job submission failed");
  }
}

// ---- job info

TEST_P(DialectScenarioTest, JobRunning) {
  JobInfo j = Job("job_running.json");
  EXPECT_EQ(j.job_id, 42);
  EXPECT_EQ(j.name, "my-run");
  EXPECT_EQ(j.comment, "ns/name");
  EXPECT_EQ(j.partition, "debug");
  EXPECT_EQ(j.state, BaseState::kRunning);
  EXPECT_TRUE(j.flags.empty()) << "the job's bit flags (JOB_WAS_RUNNING) are not state flags";
  EXPECT_EQ(j.state_reason, "None");
  EXPECT_FALSE(j.IsFinal());
  EXPECT_EQ(j.exit_code, std::nullopt) << "exit_code is meaningless before the end";
  EXPECT_EQ(j.signal, std::nullopt);
  EXPECT_EQ(j.submit_time, Epoch(1700000000));
  EXPECT_EQ(j.start_time, Epoch(1700000005));
  EXPECT_EQ(j.end_time, Epoch(1700007205));
  // The output path with %u (v0.0.38 shows the pattern as asked; later ones fill %u in) and %N
  // (no version's record fills it in) resolved; no --error: the output's file.
  EXPECT_EQ(j.standard_output, "/home/alice/alice/my-run-42.node-3.out");
  EXPECT_EQ(j.standard_error, "/home/alice/alice/my-run-42.node-3.out");
}

TEST_P(DialectScenarioTest, JobCompletedExit0) {
  JobInfo j = Job("job_completed.json");
  EXPECT_EQ(j.state, BaseState::kCompleted);
  EXPECT_TRUE(j.IsFinal());
  EXPECT_EQ(j.exit_code, 0);
  EXPECT_EQ(j.signal, std::nullopt);
  EXPECT_EQ(j.end_time, Epoch(1700000017));
}

TEST_P(DialectScenarioTest, JobFailedExit3) {
  JobInfo j = Job("job_failed.json");
  EXPECT_EQ(j.state, BaseState::kFailed);
  EXPECT_EQ(j.state_reason, "NonZeroExitCode");
  EXPECT_TRUE(j.IsFinal());
  EXPECT_EQ(j.exit_code, 3);
  EXPECT_EQ(j.signal, std::nullopt);
}

TEST_P(DialectScenarioTest, JobTimeout) {
  JobInfo j = Job("job_timeout.json");
  EXPECT_EQ(j.state, BaseState::kTimeout);
  EXPECT_EQ(j.state_reason, "TimeLimit");
  EXPECT_TRUE(j.IsFinal());
  EXPECT_EQ(j.signal, 15);
  EXPECT_EQ(j.exit_code, std::nullopt);
}

TEST_P(DialectScenarioTest, JobCancelledBySignal) {
  JobInfo j = Job("job_cancelled.json");
  EXPECT_EQ(j.state, BaseState::kCancelled);
  EXPECT_TRUE(j.IsFinal());
  EXPECT_EQ(j.signal, 15);
  EXPECT_EQ(j.exit_code, std::nullopt);
  EXPECT_EQ(j.end_time, Epoch(1700000042));
}

TEST_P(DialectScenarioTest, JobCompletingFlag) {
  JobInfo j = Job("job_completing.json");
  EXPECT_EQ(j.flags, std::vector<std::string>{"COMPLETING"});
  EXPECT_TRUE(j.HasFlag("COMPLETING"));
  EXPECT_FALSE(j.IsFinal());
  // v0.0.38/39 show the flag instead of the base state.
  EXPECT_EQ(j.state, legacy() ? BaseState::kUnknown : BaseState::kCancelled);
  EXPECT_EQ(j.exit_code, std::nullopt);
  EXPECT_EQ(j.signal, std::nullopt);
}

TEST_P(DialectScenarioTest, JobPendingWithReason) {
  JobInfo j = Job("job_pending.json");
  EXPECT_EQ(j.state, BaseState::kPending);
  EXPECT_EQ(j.state_reason, "Resources");
  EXPECT_FALSE(j.IsFinal());
  EXPECT_EQ(j.submit_time, Epoch(1700000000));
  EXPECT_EQ(j.start_time, std::nullopt);
  EXPECT_EQ(j.end_time, std::nullopt);
  EXPECT_EQ(j.exit_code, std::nullopt);
}

// Slurm's state reason and description reach the SlurmJob's status and messages: cut like any
// remote text, so that a runaway one cannot swell the status past what the API server stores.
TEST_P(DialectScenarioTest, AHugeStateReasonIsCut) {
  RecordedResponse r = Load("job_pending.json");
  const std::string huge = "Resources" + std::string(100000, 'r');
  std::string text = r.body.dump();
  const size_t at = text.find("\"Resources\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 11, nlohmann::json(huge).dump());
  absl::StatusOr<JobLookup> got = dialect().ParseJob(r.status, nlohmann::json::parse(text), 42);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->job.has_value());
  EXPECT_LE(got->job->state_reason.size(), kMaxRemoteMessageBytes);
  EXPECT_EQ(got->job->state_reason.substr(0, 9), "Resources");
}

// The partition becomes a metric label: cut like any remote text.
TEST_P(DialectScenarioTest, AHugePartitionNameIsCut) {
  RecordedResponse r = Load("job_pending.json");
  std::string text = r.body.dump();
  const size_t at = text.find("\"debug\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 7, nlohmann::json("debug" + std::string(100000, 'p')).dump());
  absl::StatusOr<JobLookup> got = dialect().ParseJob(r.status, nlohmann::json::parse(text), 42);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->job.has_value());
  EXPECT_LE(got->job->partition.size(), kMaxRemoteMessageBytes);
  EXPECT_EQ(got->job->partition.substr(0, 5), "debug");
}

TEST_P(DialectScenarioTest, UnknownJobOnGet) {
  RecordedResponse r = Load("job_unknown.json");
  EXPECT_EQ(r.status, GetParam() == "v0.0.38" ? 500 : 404);
  absl::StatusOr<JobLookup> got = dialect().ParseJob(r.status, r.body, 42);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->job, std::nullopt);
  EXPECT_TRUE(got->warnings.empty()) << "the 2017 error is the answer, not a warning";
}

TEST_P(DialectScenarioTest, EmptyJobsMeansUnknown) {
  RecordedResponse r = Load("job_empty.json");
  absl::StatusOr<JobLookup> got = dialect().ParseJob(r.status, r.body, 42);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->job, std::nullopt);
}

TEST_P(DialectScenarioTest, UnknownJobWithoutBody) {
  absl::StatusOr<JobLookup> got = dialect().ParseJob(404, nullptr, 42);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->job, std::nullopt);
}

TEST_P(DialectScenarioTest, UnservedVersionIsNotAnUnknownJob) {
  const nlohmann::json text =
      "Unable find requested URL. Please view /openapi/v3 for API reference.";
  absl::StatusOr<JobLookup> got = dialect().ParseJob(404, text, 42);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(got.status().message(), text.get<std::string>());
  EXPECT_FALSE(dialect().ParseDbJob(404, text, 42).ok());
  EXPECT_FALSE(dialect().ParseCancel(404, text, 42).ok());
}

// ---- jobs list

TEST_P(DialectScenarioTest, JobsSeveral) {
  RecordedResponse r = Load("jobs_several.json");
  absl::StatusOr<JobList> got = dialect().ParseJobs(r.status, r.body);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->unchanged);
  ASSERT_EQ(got->jobs.size(), 3u);
  EXPECT_EQ(got->jobs[0].job_id, 41);
  EXPECT_EQ(got->jobs[0].name, "other-run");
  EXPECT_EQ(got->jobs[0].state, BaseState::kRunning);
  EXPECT_EQ(got->jobs[1].job_id, 42);
  EXPECT_EQ(got->jobs[1].state, BaseState::kPending);
  EXPECT_EQ(got->jobs[1].state_reason, "Resources");
  EXPECT_EQ(got->jobs[2].job_id, 43);
  EXPECT_EQ(got->jobs[2].state, BaseState::kCompleted);
  EXPECT_EQ(got->jobs[2].exit_code, 0);
  for (const JobInfo& j : got->jobs) EXPECT_EQ(j.comment, "ns/name");
}

TEST_P(DialectScenarioTest, JobsUnchanged) {
  RecordedResponse r = Load("jobs_unchanged.json");
  absl::StatusOr<JobList> got = dialect().ParseJobs(r.status, r.body);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->unchanged);
  EXPECT_TRUE(got->jobs.empty());
}

TEST_P(DialectScenarioTest, JobsUnchangedEveryForm) {
  // Whatever release serves the version: 304 (22.05) or 200 + warning.
  absl::StatusOr<JobList> a = dialect().ParseJobs(304, nullptr);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->unchanged);
  absl::StatusOr<JobList> b =
      dialect().ParseJobs(200, {{"jobs", nlohmann::json::array()},
                                {"errors", nlohmann::json::array()},
                                {"warnings",
                                 {{{"description", "No job changes since update_time=1700000000"},
                                   {"source", "op_handler_jobs"}}}}});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(b->unchanged);
}

// ---- slurmdb

TEST_P(DialectScenarioTest, DbJobFound) {
  JobLookup got = DbJob("db_job_found.json");
  ASSERT_TRUE(got.job.has_value());
  const JobInfo& j = *got.job;
  EXPECT_EQ(j.job_id, 42);
  EXPECT_EQ(j.name, "my-run");
  EXPECT_EQ(j.partition, "debug");
  EXPECT_EQ(j.comment, "ns/name");
  EXPECT_EQ(j.state, BaseState::kFailed);
  EXPECT_TRUE(j.IsFinal());
  EXPECT_EQ(j.submit_time, Epoch(1700000000));
  EXPECT_EQ(j.start_time, Epoch(1700000005));
  EXPECT_EQ(j.end_time, Epoch(1700000017));
  // dbv0.0.38/39 dump every normal exit as SUCCESS/0: not believed.
  EXPECT_EQ(j.exit_code, legacy() ? std::nullopt : std::optional<int32_t>(3));
  EXPECT_EQ(j.signal, std::nullopt);
}

// #14 item 4: tres.allocated and time.elapsed, in each version's shape
// (allocation_decoding.h): named TRES as "type/name", null counts skipped.
TEST_P(DialectScenarioTest, DbJobUsage) {
  JobLookup got = DbJob("db_job_usage.json");
  ASSERT_TRUE(got.job.has_value());
  const JobInfo& j = *got.job;
  EXPECT_EQ(j.state, BaseState::kCompleted);
  EXPECT_EQ(j.account, "acct");
  ASSERT_TRUE(j.allocation.has_value());
  EXPECT_EQ(j.allocation->elapsed_seconds, 3600);
  std::map<std::string, int64_t> want = {{"cpu", 16},     {"mem", 65536},  {"node", 2},
                                         {"billing", 24}, {"gres/gpu", 8}, {"gres/gpu:a100", 8}};
  // energy, never gathered (NO_VAL64): null in dbv0.0.38, -2 in v0.0.39+; skipped either way.
  EXPECT_EQ(j.allocation->tres, want);
}

// A record without tres keeps its elapsed time.
TEST_P(DialectScenarioTest, DbJobWithoutTresKeepsItsElapsedTime) {
  JobLookup got = DbJob("db_job_found.json");
  ASSERT_TRUE(got.job.has_value());
  ASSERT_TRUE(got.job->allocation.has_value());  // elapsed 12, no tres
  EXPECT_EQ(got.job->allocation->elapsed_seconds, 12);
  EXPECT_TRUE(got.job->allocation->tres.empty());
}

TEST_P(DialectScenarioTest, DbJobCancelled) {
  JobLookup got = DbJob("db_job_cancelled.json");
  ASSERT_TRUE(got.job.has_value());
  EXPECT_EQ(got.job->state, BaseState::kCancelled);
  EXPECT_EQ(got.job->exit_code, std::nullopt);
  EXPECT_EQ(got.job->signal, legacy() ? std::nullopt : std::optional<int32_t>(15));
}

TEST_P(DialectScenarioTest, DbJobSeveralRecordsLatestSubmissionWins) {
  JobLookup got = DbJob("db_job_several.json");
  ASSERT_TRUE(got.job.has_value());
  EXPECT_EQ(got.job->submit_time, Epoch(1700000100));
  EXPECT_EQ(got.job->state, BaseState::kCompleted);
  EXPECT_EQ(got.job->exit_code, 0);
  EXPECT_EQ(got.job->end_time, Epoch(1700000117));
}

TEST_P(DialectScenarioTest, DbJobNotFound) {
  for (const std::string& name :
       Present({"db_job_not_found.json", "db_job_not_found_warning.json"})) {
    JobLookup got = DbJob(name);
    EXPECT_EQ(got.job, std::nullopt) << name;
    EXPECT_TRUE(got.warnings.empty()) << name;
  }
}

// ---- cancel

TEST_P(DialectScenarioTest, CancelOk) {
  for (const std::string& name : Present({"cancel_ok.json", "cancel_ok_slurm_kill_job.json"})) {
    CancelResponse got = Cancel(name);
    EXPECT_FALSE(got.already_finished) << name;
    EXPECT_FALSE(got.unknown_job) << name;
  }
}

TEST_P(DialectScenarioTest, CancelAlreadyFinished) {
  for (const std::string& name :
       Present({"cancel_already_finished.json", "cancel_already_finished_slurm_kill_job.json"})) {
    CancelResponse got = Cancel(name);
    EXPECT_FALSE(got.unknown_job) << name;
    EXPECT_TRUE(got.warnings.empty()) << name;
    // 22.05 swallows ESLURM_ALREADY_DONE: plain success, nothing to tell.
    EXPECT_EQ(got.already_finished, GetParam() != "v0.0.38") << name;
  }
}

TEST_P(DialectScenarioTest, CancelUnknownJob) {
  for (const std::string& name :
       Present({"cancel_unknown.json", "cancel_unknown_slurm_kill_job.json"})) {
    CancelResponse got = Cancel(name);
    EXPECT_TRUE(got.unknown_job) << name;
    EXPECT_FALSE(got.already_finished) << name;
    EXPECT_TRUE(got.warnings.empty()) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(AllVersions, DialectScenarioTest, ::testing::ValuesIn(SupportedVersions()),
                         [](const auto& info) { return fixtures::VersionTestName(info.param); });

// Versions whose responses may come from several slurmrestd releases accept
// every release's form: the DELETE status[] of 24.11+ carries per-job errors.
TEST(CancelStatusArrayTest, OtherPerJobErrorIsARejection) {
  absl::StatusOr<const Dialect*> d = DialectFor("v0.0.42");
  ASSERT_TRUE(d.ok());
  nlohmann::json body = {{"status",
                          {{{"error",
                             {{"string", "Access/permission denied"},
                              {"code", 2002},
                              {"message", "Access/permission denied"}}},
                            {"step_id", "42"},
                            {"job_id", {{"set", true}, {"infinite", false}, {"number", 42}}}}}},
                         {"errors", nlohmann::json::array()},
                         {"warnings", nlohmann::json::array()}};
  absl::StatusOr<CancelResponse> got = (*d)->ParseCancel(200, body, 42);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(got.status().message(), "Access/permission denied (error 2002)");
}

// dbv0.0.38/39: the dumper's signaled branch is right, so the signal is kept
// even though normal exit codes are not believed.
TEST(LegacySlurmdbTest, SignalIsBelieved) {
  for (const char* version : {"v0.0.38", "v0.0.39"}) {
    RecordedResponse r = fixtures::LoadVersionResponse(version, "db_job_signaled.json");
    absl::StatusOr<JobLookup> got = (*DialectFor(version))->ParseDbJob(r.status, r.body, 42);
    ASSERT_TRUE(got.ok()) << version << ": " << got.status();
    ASSERT_TRUE(got->job.has_value()) << version;
    EXPECT_EQ(got->job->state, BaseState::kFailed) << version;
    EXPECT_EQ(got->job->signal, 9) << version;
    EXPECT_EQ(got->job->exit_code, std::nullopt) << version;
  }
}

TEST(DbJobSelectionTest, RecordsOfOtherJobIdsAreIgnoredWhenOneMatches) {
  absl::StatusOr<const Dialect*> d = DialectFor("v0.0.42");
  ASSERT_TRUE(d.ok());
  nlohmann::json body = {
      {"jobs",
       {{{"job_id", 43}, {"state", {{"current", {"FAILED"}}}}, {"time", {{"submission", 1800}}}},
        {{"job_id", 42},
         {"state", {{"current", {"COMPLETED"}}}},
         {"time", {{"submission", 1700}}}}}},
      {"errors", nlohmann::json::array()}};
  absl::StatusOr<JobLookup> got = (*d)->ParseDbJob(200, body, 42);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->job.has_value());
  EXPECT_EQ(got->job->job_id, 42);
  EXPECT_EQ(got->job->state, BaseState::kCompleted);
}

TEST(JobSelectionTest, ArrayJobPrefersTheExactId) {
  absl::StatusOr<const Dialect*> d = DialectFor("v0.0.42");
  ASSERT_TRUE(d.ok());
  nlohmann::json body = {{"jobs",
                          {{{"job_id", 43}, {"job_state", {"RUNNING"}}},
                           {{"job_id", 42}, {"job_state", {"PENDING"}}}}},
                         {"errors", nlohmann::json::array()}};
  absl::StatusOr<JobLookup> got = (*d)->ParseJob(200, body, 42);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->job.has_value());
  EXPECT_EQ(got->job->job_id, 42);
  EXPECT_EQ(got->job->state, BaseState::kPending);
}

TEST(MalformedResponseTest, NoExceptionsOnlyStatuses) {
  for (const std::string& v : SupportedVersions()) {
    const Dialect& d = **DialectFor(v);
    for (const nlohmann::json& body :
         {nlohmann::json(nullptr), nlohmann::json(42), nlohmann::json("x"),
          nlohmann::json::array({1, 2}), nlohmann::json{{"jobs", 7}},
          nlohmann::json{{"jobs", {1, "a", nullptr}}},
          nlohmann::json{{"jobs", {{{"job_id", "x"}}}}}, nlohmann::json{{"job_id", "nan"}},
          nlohmann::json{{"errors", "oops"}}, nlohmann::json{{"status", {{{"error", 5}}}}}}) {
      for (int status : {200, 304, 404, 500}) {
        // Only that nothing throws; the statuses are covered elsewhere.
        (void)d.ParseSubmit(status, body);
        (void)d.ParseJob(status, body, 42);
        (void)d.ParseJobs(status, body);
        (void)d.ParseDbJob(status, body, 42);
        (void)d.ParseCancel(status, body, 42);
      }
    }
    absl::StatusOr<JobList> bad = d.ParseJobs(200, {{"jobs", {{{"job_id", "x"}}}}});
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInternal) << v;
    absl::StatusOr<SubmitResponse> no_id =
        d.ParseSubmit(200, {{"errors", nlohmann::json::array()}});
    EXPECT_EQ(no_id.status().code(), absl::StatusCode::kInternal) << v;
  }
}

}  // namespace
}  // namespace slurmop::slurm
