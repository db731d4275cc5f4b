// File: tests/slurm/db_jobs_test.cc
//
// The accounting search used to find a job by its tag after it left the live
// queue: GET /slurmdb/<v>/jobs?job_name=NAME and its answers; and the
// accounting of several ended jobs at once: GET /slurmdb/<v>/jobs?step=IDS.

#include "controller/slurm/dialects.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::slurm {
namespace {

using nlohmann::json;

const Dialect& D(const char* v) { return **DialectFor(v); }

TEST(DbJobs, PathEncodesTheJobName) {
  EXPECT_EQ(D("v0.0.38").DbJobsPath("train-1", 1700000000),
            "/slurmdb/v0.0.38/jobs?job_name=train-1&start_time=uts1700000000");
  EXPECT_EQ(D("v0.0.42").DbJobsPath("a b/c&d", 1700000000),
            "/slurmdb/v0.0.42/jobs?job_name=a%20b%2Fc%26d&start_time=uts1700000000");
}

TEST(DbJobs, V38RecordsKeepTheirCommentFromCommentJob) {
  json body = json::parse(R"({"meta": {}, "errors": [], "jobs": [
    {"job_id": 7, "name": "train", "comment": {"job": "slurmjob-operator:u1", "administrator": null},
     "state": {"current": "COMPLETED", "reason": "None"},
     "exit_code": {"status": "SUCCESS", "return_code": 0},
     "time": {"submission": 1700000000, "start": 1700000001, "end": 1700000005, "elapsed": 4,
              "eligible": 1700000000, "suspended": 0, "limit": 5}},
    {"job_id": 9, "name": "train", "comment": {"job": "other"},
     "state": {"current": "FAILED", "reason": "None"},
     "exit_code": {"status": "SUCCESS", "return_code": 0},
     "time": {"submission": 1700000100, "start": 0, "end": 0, "elapsed": 0,
              "eligible": 1700000100, "suspended": 0, "limit": 5}}]})");
  absl::StatusOr<JobList> list = D("v0.0.38").ParseDbJobs(200, body);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->jobs.size(), 2u);
  EXPECT_EQ(list->jobs[0].job_id, 7);
  EXPECT_EQ(list->jobs[0].comment, "slurmjob-operator:u1");
  EXPECT_EQ(list->jobs[0].state, BaseState::kCompleted);
  EXPECT_EQ(list->jobs[1].comment, "other");
}

TEST(DbJobs, NothingFoundIsAnEmptyList) {
  json v38 = json::parse(R"({"meta": {}, "jobs": [], "errors": [{"description": "Nothing found",
    "error_number": 9003, "error": "Nothing found with query", "source": "slurmdb_jobs_get"}]})");
  absl::StatusOr<JobList> a = D("v0.0.38").ParseDbJobs(200, v38);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->jobs.empty());
  json v42 = json::parse(R"({"jobs": [], "errors": [],
    "warnings": [{"description": "slurmdb_jobs_get(0x1234) found nothing", "source": ""}]})");
  absl::StatusOr<JobList> b = D("v0.0.42").ParseDbJobs(200, v42);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(b->jobs.empty());
}

TEST(DbJobs, V42ArrayStatesAndErrors) {
  json body = json::parse(R"({"jobs": [{"job_id": 11, "name": "x", "comment": {"job": "t"},
    "state": {"current": ["TIMEOUT"], "reason": "None"},
    "exit_code": {"status": ["SIGNALED"], "return_code": {"set": false, "infinite": false, "number": 0},
                  "signal": {"id": {"set": true, "infinite": false, "number": 15}, "name": "TERM"}},
    "time": {"submission": 1700000000, "start": 1700000001, "end": 1700000061}}],
    "errors": [], "warnings": []})");
  absl::StatusOr<JobList> list = D("v0.0.42").ParseDbJobs(200, body);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->jobs.size(), 1u);
  EXPECT_EQ(list->jobs[0].state, BaseState::kTimeout);
  EXPECT_EQ(list->jobs[0].comment, "t");

  json err = json::parse(R"({"jobs": [], "errors": [{"description": "db down",
    "error_number": 7000, "error": "Unable to contact slurmdbd", "source": "x"}], "warnings": []})");
  EXPECT_FALSE(D("v0.0.42").ParseDbJobs(500, err).ok());
}

TEST(DbJobsById, PathGivesTheIdsAsEachVersionParsesThem) {
  // dbv0.0.38/39: one comma-separated value, the comma encoded (slurmrestd
  // refuses a raw ','); v0.0.40+: one value per id.
  EXPECT_EQ(D("v0.0.38").DbJobsByIdPath({42, 43, 7}), "/slurmdb/v0.0.38/jobs?step=42%2C43%2C7");
  EXPECT_EQ(D("v0.0.39").DbJobsByIdPath({42, 43}), "/slurmdb/v0.0.39/jobs?step=42%2C43");
  EXPECT_EQ(D("v0.0.40").DbJobsByIdPath({42, 43}), "/slurmdb/v0.0.40/jobs?step=42&step=43");
  EXPECT_EQ(D("v0.0.44").DbJobsByIdPath({42}), "/slurmdb/v0.0.44/jobs?step=42");
  for (const std::string& v : SupportedVersions()) {
    EXPECT_EQ(D(v.c_str()).DbJobsByIdPath({5, 6}).find(','), std::string::npos) << v;
  }
}

json V42Record(int64_t job_id, int64_t submitted, const char* state) {
  return {{"job_id", job_id},
          {"name", "x"},
          {"comment", {{"job", "t"}}},
          {"state", {{"current", json::array({state})}, {"reason", "None"}}},
          {"time", {{"submission", submitted}, {"start", submitted + 1}, {"end", submitted + 9}}}};
}

TEST(DbJobsById, EachJobGetsItsLatestSubmissionAndOthersAreIgnored) {
  // 42 was requeued (two records); 43 has one; 99 was not asked for.
  json body = {{"jobs",
                {V42Record(42, 1700000000, "REQUEUED"), V42Record(43, 1700000005, "FAILED"),
                 V42Record(42, 1700000100, "COMPLETED"), V42Record(99, 1700000200, "COMPLETED")}},
               {"errors", json::array()},
               {"warnings", json::array()}};
  absl::StatusOr<DbRecordsById> got = D("v0.0.42").ParseDbJobsById(200, body, {42, 43, 44});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->jobs.size(), 2u);
  EXPECT_EQ(got->jobs.at(42).state, BaseState::kCompleted);
  EXPECT_EQ(got->jobs.at(43).state, BaseState::kFailed);
  EXPECT_FALSE(got->jobs.contains(44));
  EXPECT_FALSE(got->jobs.contains(99));
  // The same record ParseDbJob picks for one id.
  absl::StatusOr<JobLookup> one = D("v0.0.42").ParseDbJob(200, body, 42);
  ASSERT_TRUE(one.ok() && one->job.has_value());
  EXPECT_EQ(*one->job, got->jobs.at(42));
}

TEST(DbJobsById, NothingFoundIsNoneAndAnErrorFails) {
  json v38 = json::parse(R"({"meta": {}, "jobs": [], "errors": [{"description": "Nothing found",
    "error_number": 9003, "error": "Nothing found with query", "source": "slurmdb_jobs_get"}]})");
  absl::StatusOr<DbRecordsById> a = D("v0.0.38").ParseDbJobsById(200, v38, {1, 2});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->jobs.empty());
  EXPECT_TRUE(a->warnings.empty());
  json err = json::parse(R"({"jobs": [], "errors": [{"description": "Rejecting request",
    "error_number": 9000, "error": "x", "source": "_op_handler_jobs"}], "warnings": []})");
  EXPECT_FALSE(D("v0.0.42").ParseDbJobsById(500, err, {1, 2}).ok());
}

}  // namespace
}  // namespace slurmop::slurm
