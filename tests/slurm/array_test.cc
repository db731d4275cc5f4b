// File: tests/slurm/array_test.cc
//
// Array jobs in the slurm layer: the --array parser and batch/v1's index
// list format (array_indexes.h), the `array` field of every dialect's
// submit, array records decoded in every version's shape, and their folding
// into one record per array job (array_folding.h).

#include <string>

#include "absl/strings/str_cat.h"
#include "controller/slurm/array_folding.h"
#include "controller/slurm/array_indexes.h"
#include "controller/slurm/dialects.h"
#include "controller/slurm/job_list_decoder.h"
#include "controller/slurm/packed_jobs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::slurm {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

IndexSet Range(int32_t first, int32_t last, int32_t step = 1) {
  IndexSet out;
  for (int32_t i = first; i <= last; i += step) out.insert(i);
  return out;
}

TEST(ArrayExpressionTest, ParsesSlurmSyntax) {
  absl::StatusOr<ArrayExpression> a = ParseArrayExpression("0-31%4");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->indexes, Range(0, 31));
  EXPECT_EQ(a->max_running, 4);
  a = ParseArrayExpression("1,3,5-9:2");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->indexes, (IndexSet{1, 3, 5, 7, 9}));
  EXPECT_EQ(a->max_running, std::nullopt);
  a = ParseArrayExpression("7");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->indexes, IndexSet{7});
  a = ParseArrayExpression("3,1-2,2");  // overlaps count once
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->indexes, Range(1, 3));
  a = ParseArrayExpression("1-1000");  // Slurm's default MaxArraySize allows index 1000
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->indexes.size(), 1000u);
}

TEST(ArrayExpressionTest, RefusesWhatSlurmRefusesAndMore) {
  for (const char* bad :
       {"",     ",",     "1,",    ",1",    "1,,2",       "a",    "-1",      "+1",
        " 1",   "1 ",    "3-1",   "1-3:0", "1:2",        "1-3:", "1-",      "-3",
        "1-3%", "1-3%0", "1-3%x", "1%2%3", "1-3:2%1001", "0x1f", "4000001", "1.5"}) {
    absl::StatusOr<ArrayExpression> a = ParseArrayExpression(bad);
    EXPECT_FALSE(a.ok()) << "\"" << bad << "\" parsed";
    if (!a.ok()) EXPECT_THAT(a.status().message(), HasSubstr("spec.array.indexes")) << bad;
  }
}

TEST(ArrayExpressionTest, CapsTheNumberOfIndexes) {
  EXPECT_TRUE(ParseArrayExpression("0-999").ok());
  absl::StatusOr<ArrayExpression> a = ParseArrayExpression("0-1000");
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("more than 1000 indexes"));
  EXPECT_FALSE(ParseArrayExpression("0-4000000").ok());
  // Large values are fine when few (a cluster with a larger MaxArraySize).
  EXPECT_TRUE(ParseArrayExpression("0-3999999:10000").ok());
}

// Slurm's array_task_string is a remote's text: repeating "0-999," named a thousand indexes per
// six bytes, and a 2 MiB record cost seconds of CPU. Work is bounded whatever the text.
TEST(ArrayExpressionTest, OverlappingAndOverlongExpressionsAreRefusedQuickly) {
  std::string repeated;
  for (int i = 0; i < 2000; ++i) absl::StrAppend(&repeated, i == 0 ? "" : ",", "0-999");
  absl::StatusOr<ArrayExpression> r = ParseArrayExpression(repeated);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("more than 4000 times"));
  r = ParseArrayExpression(std::string(kMaxArrayExpressionBytes + 1, '1'));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("longer than 16384 bytes"));
  // Overlap within the bound is still Slurm's syntax.
  r = ParseArrayExpression("0-10,5-15");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->indexes.size(), 16u);
  // 1,000 seven-digit indexes fit.
  std::string sparse;
  for (int i = 0; i < 1000; ++i) absl::StrAppend(&sparse, i == 0 ? "" : ",", 3000000 + 2 * i);
  EXPECT_TRUE(ParseArrayExpression(sparse).ok());
}

TEST(IndexListTest, FormatsAsBatchV1Job) {
  EXPECT_EQ(FormatIndexList({}), "");
  EXPECT_EQ(FormatIndexList({5}), "5");
  EXPECT_EQ(FormatIndexList({1, 3, 4, 5, 7}), "1,3-5,7");
  EXPECT_EQ(FormatIndexList({1, 2}), "1,2");  // a pair is two elements, as Kubernetes writes it
  EXPECT_EQ(FormatIndexList({0, 1, 2, 9, 10}), "0-2,9,10");
  EXPECT_EQ(FormatIndexList(Range(0, 999)), "0-999");
}

TEST(IndexListTest, RoundTrips) {
  for (const IndexSet& s : {IndexSet{}, IndexSet{0}, IndexSet{1, 3, 4, 5, 7}, IndexSet{1, 2},
                            Range(0, 31, 2), Range(10, 20)}) {
    absl::StatusOr<IndexSet> back = ParseIndexList(FormatIndexList(s));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, s) << FormatIndexList(s);
  }
  EXPECT_FALSE(ParseIndexList("1-5:2").ok());
  EXPECT_FALSE(ParseIndexList("1,,2").ok());
  EXPECT_FALSE(ParseIndexList("x").ok());
}

TEST(IndexListTest, ExpressionForARetryKeepsTheThrottle) {
  EXPECT_EQ(ArrayExpressionText({1, 2, 3, 7}, 2), "1-3,7%2");
  EXPECT_EQ(ArrayExpressionText({1, 2}, std::nullopt), "1-2");
  EXPECT_EQ(ArrayExpressionText({4}, std::nullopt), "4");
}

JobDescriptor ArrayJobDescriptor() {
  JobDescriptor j;
  j.script = "#!/bin/bash\necho $SLURM_ARRAY_TASK_ID\n";
  j.current_working_directory = "/tmp";
  j.environment = {{"PATH", "/bin"}};
  j.comment = "slurmjob-operator:ns/uid/1";
  j.array = "0-3%2";
  return j;
}

TEST(ArraySubmitTest, EveryVersionSendsArray) {
  for (const std::string& v : SupportedVersions()) {
    absl::StatusOr<const Dialect*> d = DialectFor(v);
    ASSERT_TRUE(d.ok());
    absl::StatusOr<json> body = (*d)->RenderSubmit(ArrayJobDescriptor());
    ASSERT_TRUE(body.ok()) << v << ": " << body.status();
    EXPECT_EQ((*body)["job"]["array"], "0-3%2") << v;
    EXPECT_EQ((*body)["job"]["comment"], "slurmjob-operator:ns/uid/1") << v;
    JobDescriptor plain = ArrayJobDescriptor();
    plain.array.clear();
    EXPECT_FALSE((*(*d)->RenderSubmit(plain))["job"].contains("array")) << v;
    JobDescriptor bad = ArrayJobDescriptor();
    bad.array = "3-1";
    EXPECT_FALSE((*d)->RenderSubmit(bad).ok()) << v;
    // extra may not set it: the operator tracks what it submitted.
    JobDescriptor extra = ArrayJobDescriptor();
    extra.array.clear();
    extra.extra = {{"array", "0-999"}};
    EXPECT_FALSE((*(*d)->RenderSubmit(extra))["job"].contains("array")) << v;
  }
}

// Slurm's number for v0.0.38 (plain; NO_VAL as null for array_task_id) or
// v0.0.39+ (UINT32_NO_VAL: {"set", "infinite", "number"}).
json Num(bool wrapped, std::optional<int64_t> n) {
  if (!wrapped) return n ? json(*n) : json(nullptr);
  return {{"set", n.has_value()}, {"infinite", false}, {"number", n.value_or(0)}};
}

// One slurmctld record of array 100 in a version's shape.
json Record(bool wrapped, int64_t job_id, std::optional<int64_t> task, const std::string& state,
            std::optional<int64_t> exit_code, const std::string& task_string = "") {
  json r = {{"job_id", job_id},
            {"name", "arr"},
            {"comment", "slurmjob-operator:ns/uid/1"},
            {"partition", "debug"},
            {"array_job_id", Num(wrapped, 100)},
            {"array_task_id", Num(wrapped, task)},
            {"array_max_tasks", Num(wrapped, 2)},
            {"array_task_string", task_string},
            {"submit_time", Num(wrapped, 1700000000)},
            {"start_time", Num(wrapped, state == "PENDING" ? 0 : 1700000010 + job_id)},
            {"end_time", Num(wrapped, 1700000100 + job_id)},
            {"current_working_directory", "/tmp"}};
  if (wrapped) {
    r["job_state"] = json::array({state});
    if (exit_code) {
      r["exit_code"] = {{"status", json::array({*exit_code == 0 ? "SUCCESS" : "ERROR"})},
                        {"return_code", Num(true, *exit_code)},
                        {"signal", {{"id", Num(true, std::nullopt)}, {"name", ""}}}};
    }
  } else {
    r["job_state"] = state;
    if (exit_code) r["exit_code"] = *exit_code << 8;  // 22.05: a wait status
  }
  return r;
}

json Body(const std::vector<json>& records) {
  json jobs = json::array();
  for (const json& r : records) jobs.push_back(r);
  return {{"jobs", jobs}, {"errors", json::array()}, {"warnings", json::array()}};
}

class ArrayRecordsTest : public ::testing::TestWithParam<std::string> {
 protected:
  const Dialect& dialect() const { return **DialectFor(GetParam()); }
  bool wrapped() const { return GetParam() != "v0.0.38"; }
};

TEST_P(ArrayRecordsTest, AllPendingIsOneRemainderRecord) {
  json body = Body({Record(wrapped(), 100, std::nullopt, "PENDING", std::nullopt, "0-3%2")});
  absl::StatusOr<JobList> list = dialect().ParseJobs(200, body);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->jobs.size(), 1u);
  const JobInfo& a = list->jobs[0];
  EXPECT_EQ(a.job_id, 100);
  EXPECT_EQ(a.comment, "slurmjob-operator:ns/uid/1");
  EXPECT_EQ(a.state, BaseState::kPending);
  ASSERT_TRUE(a.array.has_value());
  EXPECT_TRUE(a.array->tasks.empty());
  EXPECT_EQ(a.array->pending_indexes, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(a.array->max_running, 2);
}

TEST_P(ArrayRecordsTest, TasksAndRemainderFoldIntoOneRecordAmongOthers) {
  json other = Record(wrapped(), 7, std::nullopt, "RUNNING", std::nullopt);
  other["array_job_id"] = Num(wrapped(), 0);
  json body = Body({Record(wrapped(), 101, 0, "COMPLETED", 0), other,
                    Record(wrapped(), 102, 1, "RUNNING", std::nullopt),
                    Record(wrapped(), 100, std::nullopt, "PENDING", std::nullopt, "2-3%2")});
  absl::StatusOr<JobList> list = dialect().ParseJobs(200, body);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->jobs.size(), 2u);
  const JobInfo& a = list->jobs[0];
  EXPECT_EQ(a.job_id, 100);
  EXPECT_EQ(a.state, BaseState::kRunning);
  EXPECT_FALSE(a.IsFinal());
  ASSERT_TRUE(a.array.has_value());
  ASSERT_EQ(a.array->tasks.size(), 2u);
  EXPECT_EQ(a.array->tasks[0].index, 0);
  EXPECT_EQ(a.array->tasks[0].job_id, 101);
  EXPECT_EQ(a.array->tasks[0].state, BaseState::kCompleted);
  EXPECT_EQ(a.array->tasks[0].exit_code, 0);
  EXPECT_EQ(a.array->tasks[1].state, BaseState::kRunning);
  EXPECT_EQ(a.array->pending_indexes, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(list->jobs[1].job_id, 7);
  EXPECT_FALSE(list->jobs[1].array.has_value());
}

// The tracker's path: records added to a JobListDecoder as they stream in
// (the rest left in the body) are packed one by one, an array's records
// kept until the end and folded at the place of its first, so the list is
// the whole body's, record for record and in order.
TEST_P(ArrayRecordsTest, AStreamedListFoldsArraysInPlaceAsTheWholeBodyDoes) {
  json other = Record(wrapped(), 7, std::nullopt, "COMPLETED", 0);
  other["array_job_id"] = Num(wrapped(), 0);
  json second = Record(wrapped(), 201, 0, "RUNNING", std::nullopt);
  second["array_job_id"] = Num(wrapped(), 200);
  const std::vector<json> records = {Record(wrapped(), 101, 0, "COMPLETED", 0), other, second,
                                     Record(wrapped(), 102, 1, "RUNNING", std::nullopt),
                                     Record(wrapped(), 100, 2, "FAILED", 3)};
  absl::StatusOr<JobList> whole = dialect().ParseJobs(200, Body(records));
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_EQ(whole->jobs.size(), 3u);  // array 100, job 7, array 200
  for (size_t streamed = 0; streamed <= records.size(); ++streamed) {
    SCOPED_TRACE(absl::StrCat(streamed, " records streamed"));
    JobListDecoder decoder;
    for (size_t i = 0; i < streamed; ++i) decoder.Add(records[i]);
    json body = Body(std::vector<json>(records.begin() + streamed, records.end()));
    absl::StatusOr<PackedJobList> packed = dialect().ParseJobs(200, body, decoder);
    ASSERT_TRUE(packed.ok()) << packed.status();
    EXPECT_EQ(decoder.records(), 0u);  // taken
    ASSERT_EQ(packed->jobs.size(), whole->jobs.size());
    for (size_t i = 0; i < packed->jobs.size(); ++i) {
      EXPECT_EQ(packed->jobs[i].job_id, whole->jobs[i].job_id);
      EXPECT_EQ(packed->jobs[i].final, whole->jobs[i].IsFinal());
      EXPECT_EQ(*UnpackJob(packed->jobs[i].bytes), whole->jobs[i]);
    }
  }
}

TEST_P(ArrayRecordsTest, AStreamedListFailsOnItsFirstBadRecord) {
  json bad = Record(wrapped(), 7, std::nullopt, "RUNNING", std::nullopt);
  bad["job_id"] = "seven";
  JobListDecoder decoder;
  decoder.Add(Record(wrapped(), 101, 0, "COMPLETED", 0));
  decoder.Add(bad);
  absl::StatusOr<PackedJobList> packed =
      dialect().ParseJobs(200, Body({Record(wrapped(), 100, 1, "RUNNING", std::nullopt)}), decoder);
  EXPECT_FALSE(packed.ok());
  EXPECT_EQ(packed.status(), dialect().ParseJobs(200, Body({bad})).status());
  EXPECT_EQ(decoder.records(), 0u);  // emptied, as after an answer that parses
  EXPECT_TRUE(decoder.first_error().ok());
  // An unchanged answer (304) leaves it empty too.
  decoder.Add(Record(wrapped(), 101, 0, "COMPLETED", 0));
  absl::StatusOr<PackedJobList> unchanged = dialect().ParseJobs(304, nullptr, decoder);
  ASSERT_TRUE(unchanged.ok()) << unchanged.status();
  EXPECT_TRUE(unchanged->unchanged);
  EXPECT_TRUE(unchanged->jobs.empty());
  EXPECT_EQ(decoder.records(), 0u);
}

TEST_P(ArrayRecordsTest, EndedArrayIsFinalWithTheLowestFailure) {
  // The last task keeps the array's own job id.
  json body =
      Body({Record(wrapped(), 101, 0, "COMPLETED", 0), Record(wrapped(), 102, 1, "FAILED", 3),
            Record(wrapped(), 103, 2, "COMPLETED", 0), Record(wrapped(), 100, 3, "FAILED", 5)});
  absl::StatusOr<JobList> list = dialect().ParseJobs(200, body);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->jobs.size(), 1u);
  const JobInfo& a = list->jobs[0];
  EXPECT_TRUE(a.IsFinal());
  EXPECT_EQ(a.state, BaseState::kFailed);
  EXPECT_EQ(a.exit_code, 3);
  ASSERT_EQ(a.array->tasks.size(), 4u);
  EXPECT_EQ(a.array->tasks[3].job_id, 100);
  EXPECT_TRUE(a.array->pending_indexes.empty());
  ASSERT_TRUE(a.end_time.has_value());
  EXPECT_EQ(*a.end_time, Time(std::chrono::seconds(1700000100 + 103)));
}

TEST_P(ArrayRecordsTest, AllCompletedIsCompleted) {
  json body =
      Body({Record(wrapped(), 101, 0, "COMPLETED", 0), Record(wrapped(), 100, 1, "COMPLETED", 0)});
  absl::StatusOr<JobList> list = dialect().ParseJobs(200, body);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->jobs[0].state, BaseState::kCompleted);
  EXPECT_EQ(list->jobs[0].exit_code, 0);
}

TEST_P(ArrayRecordsTest, ATruncatedRemainderIsNeverFinal) {
  // slurmrestd cuts a long remainder at SLURM_BITSTR_LEN (64) with "...".
  json body = Body({Record(wrapped(), 101, 0, "COMPLETED", 0),
                    Record(wrapped(), 100, std::nullopt, "CANCELLED", std::nullopt,
                           "1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,35,37,39,...")});
  absl::StatusOr<JobList> list = dialect().ParseJobs(200, body);
  ASSERT_TRUE(list.ok());
  EXPECT_FALSE(list->jobs[0].IsFinal());
}

TEST_P(ArrayRecordsTest, ACancelledRemainderEndsItsIndexes) {
  // Cancelled while 1-3 were pending: slurmctld keeps them in the meta record, CANCELLED.
  json body = Body({Record(wrapped(), 101, 0, "CANCELLED", 0),
                    Record(wrapped(), 100, std::nullopt, "CANCELLED", 0, "1-3%1")});
  absl::StatusOr<JobList> list = dialect().ParseJobs(200, body);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->jobs.size(), 1u);
  const JobInfo& a = list->jobs[0];
  EXPECT_TRUE(a.IsFinal());
  EXPECT_EQ(a.state, BaseState::kCancelled);
  ASSERT_EQ(a.array->tasks.size(), 4u);
  EXPECT_EQ(a.array->tasks[3].index, 3);
  EXPECT_EQ(a.array->tasks[3].state, BaseState::kCancelled);
  EXPECT_TRUE(a.array->pending_indexes.empty());
}

TEST_P(ArrayRecordsTest, LookupOfTheArrayIdFoldsEveryTask) {
  json body = Body({Record(wrapped(), 101, 0, "COMPLETED", 0),
                    Record(wrapped(), 100, 1, "RUNNING", std::nullopt)});
  absl::StatusOr<JobLookup> got = dialect().ParseJob(200, body, 100);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->job.has_value());
  EXPECT_EQ(got->job->job_id, 100);
  ASSERT_TRUE(got->job->array.has_value());
  EXPECT_EQ(got->job->array->tasks.size(), 2u);
  EXPECT_FALSE(got->job->IsFinal());
}

TEST_P(ArrayRecordsTest, RecordKeysKeepTheArrayFields) {
  for (const char* key :
       {"array_job_id", "array_task_id", "array_task_string", "array_max_tasks"}) {
    const std::vector<std::string>& keys = dialect().JobRecordKeys();
    EXPECT_NE(std::find(keys.begin(), keys.end(), key), keys.end()) << key;
  }
}

// An accounting record of array 100's task `task` (its `array` object).
json DbRecord(bool wrapped, int64_t job_id, int64_t task, const std::string& state, int exit) {
  json r = {
      {"job_id", job_id},
      {"name", "arr"},
      {"comment", {{"job", "slurmjob-operator:ns/uid/1"}}},
      {"array",
       {{"job_id", 100},
        {"task_id", wrapped ? Num(true, task) : json(task)},
        {"task", ""},
        {"limits", {{"max", {{"running", {{"tasks", 2}}}}}}}}},
      {"time", {{"submission", 1700000000}, {"start", 1700000010}, {"end", 1700000100}}},
      {"state", {{"current", wrapped ? json::array({state}) : json(state)}, {"reason", "None"}}}};
  if (wrapped) {
    r["exit_code"] = {{"status", json::array({exit == 0 ? "SUCCESS" : "ERROR"})},
                      {"return_code", Num(true, exit)}};
  } else {
    r["exit_code"] = {{"status", exit == 0 ? "SUCCESS" : "FAILED"}, {"return_code", exit}};
  }
  return r;
}

TEST_P(ArrayRecordsTest, AccountingFoldsTheArraysTasks) {
  json body =
      Body({DbRecord(wrapped(), 101, 0, "COMPLETED", 0), DbRecord(wrapped(), 102, 1, "FAILED", 1),
            DbRecord(wrapped(), 100, 2, "COMPLETED", 0)});
  absl::StatusOr<JobLookup> got = dialect().ParseDbJob(200, body, 100);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->job.has_value());
  EXPECT_EQ(got->job->job_id, 100);
  ASSERT_TRUE(got->job->array.has_value());
  ASSERT_EQ(got->job->array->tasks.size(), 3u);
  EXPECT_EQ(got->job->array->tasks[1].state, BaseState::kFailed);
  EXPECT_EQ(got->job->array->max_running, 2);
  EXPECT_TRUE(got->job->IsFinal());
  EXPECT_EQ(got->job->state, BaseState::kFailed);
  EXPECT_EQ(got->job->comment, "slurmjob-operator:ns/uid/1");
  // The tag search of accounting sees one record for the array.
  absl::StatusOr<JobList> list = dialect().ParseDbJobs(200, body);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->jobs.size(), 1u);
  EXPECT_EQ(list->jobs[0].job_id, 100);
}

TEST_P(ArrayRecordsTest, AccountingByIdFoldsTheArraysTasksUnderItsId) {
  json plain = DbRecord(wrapped(), 7, 0, "COMPLETED", 0);
  plain.erase("array");
  json body =
      Body({DbRecord(wrapped(), 101, 0, "COMPLETED", 0), DbRecord(wrapped(), 102, 1, "FAILED", 1),
            DbRecord(wrapped(), 100, 2, "COMPLETED", 0), plain});
  absl::StatusOr<DbRecordsById> got = dialect().ParseDbJobsById(200, body, {100, 7, 8});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->jobs.size(), 2u);  // 8: no record of its own
  const JobInfo& array = got->jobs.at(100);
  ASSERT_TRUE(array.array.has_value());
  EXPECT_EQ(array.array->tasks.size(), 3u);
  EXPECT_EQ(array.state, BaseState::kFailed);
  EXPECT_EQ(got->jobs.at(7).job_id, 7);
  EXPECT_FALSE(got->jobs.at(7).array.has_value());
}

INSTANTIATE_TEST_SUITE_P(EveryVersion, ArrayRecordsTest, ::testing::ValuesIn(SupportedVersions()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '.') c = '_';
                           }
                           return n;
                         });

TEST(ArrayFoldingTest, ARequeuedTaskKeepsItsLatestRecord) {
  JobInfo older, newer;
  older.job_id = 101;
  older.array_job_id = 100;
  older.array_task_id = 0;
  older.state = BaseState::kNodeFail;
  older.submit_time = Time(std::chrono::seconds(10));
  newer = older;
  newer.state = BaseState::kCompleted;
  newer.submit_time = Time(std::chrono::seconds(20));
  std::vector<JobInfo> folded = FoldArrayRecords({newer, older});
  ASSERT_EQ(folded.size(), 1u);
  ASSERT_EQ(folded[0].array->tasks.size(), 1u);
  EXPECT_EQ(folded[0].array->tasks[0].state, BaseState::kCompleted);
  EXPECT_EQ(folded[0].state, BaseState::kCompleted);
}

TEST(ArrayFoldingTest, NonArrayListsAreUntouched) {
  JobInfo a, b;
  a.job_id = 1;
  b.job_id = 2;
  std::vector<JobInfo> folded = FoldArrayRecords({a, b});
  ASSERT_EQ(folded.size(), 2u);
  EXPECT_EQ(folded[0].job_id, 1);
  EXPECT_FALSE(folded[0].array.has_value());
}

}  // namespace
}  // namespace slurmop::slurm
