// File: tests/reconcile/array_test.cc
//
// Array jobs (spec.array) in the decisions: validation, the submit of one
// Slurm array job, status.array from the folded record (array_status.h), the
// retry of failed indexes only as a new run, maxFailedIndexes and
// backoffLimitPerIndex. Plain values, no I/O.

#include <chrono>

#include "controller/reconcile/array_status.h"
#include "controller/reconcile/conditions.h"
#include "controller/reconcile/decide.h"
#include "controller/reconcile/runs.h"
#include "controller/slurm/array_folding.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/reconcile/decide_fixtures.h"

namespace slurmop::reconcile {
namespace {

using fixtures::Cluster;
using fixtures::kT0;
using fixtures::NewJob;
using std::chrono::seconds;
using ::testing::HasSubstr;

JobFacts ArrayJob(const std::string& indexes = "0-3%2", int32_t per_index = 0,
                  std::optional<int32_t> max_failed = std::nullopt) {
  JobFacts f = NewJob();
  f.spec.mutable_array()->set_indexes(indexes);
  f.spec.mutable_array()->set_backoff_limit_per_index(per_index);
  if (max_failed) f.spec.mutable_array()->set_max_failed_indexes(*max_failed);
  return f;
}

JobFacts SubmittedArray(JobFacts f, int64_t id = 100, int32_t run = 1) {
  f.has_finalizer = true;
  f.status = StatusAfterSubmit(f.status, id, "a3", false, 1, kT0, nullptr);
  f.status.set_run(run);
  fixtures::SubmittedToCluster(&f.status, run);
  return f;
}

Memo Fresh(int32_t run = 1) {
  Memo m;
  m.uid = "uid-1";
  m.run = run;
  m.no_earlier_submit = true;
  return m;
}

slurm::ArrayTask Task(int32_t index, slurm::BaseState state, int32_t exit_code = 0) {
  slurm::ArrayTask t;
  t.index = index;
  t.job_id = 100 + index + 1;
  t.state = state;
  if (slurm::IsTerminalState(state)) {
    t.exit_code = exit_code;
    t.end_time = kT0 + seconds(60 + index);
  }
  if (state != slurm::BaseState::kPending) t.start_time = kT0 + seconds(5);
  return t;
}

// The folded record of array `id` (slurm/array_folding.h) with these tasks
// and pending indexes; its state as the folding computes it.
slurm::JobInfo Array(int64_t id, std::vector<slurm::ArrayTask> tasks,
                     std::vector<int32_t> pending = {}, int32_t run = 1) {
  std::vector<slurm::JobInfo> records;
  for (const slurm::ArrayTask& t : tasks) {
    slurm::JobInfo r;
    r.job_id = t.job_id;
    r.array_job_id = id;
    r.array_task_id = t.index;
    r.state = t.state;
    r.exit_code = t.exit_code;
    r.start_time = t.start_time;
    r.end_time = t.end_time;
    r.submit_time = kT0;
    r.comment = fixtures::TagOfRun(run);
    records.push_back(r);
  }
  if (!pending.empty()) {
    slurm::JobInfo r;
    r.job_id = id;
    r.array_job_id = id;
    r.state = slurm::BaseState::kPending;
    r.array_task_string = slurm::ArrayExpressionText({pending.begin(), pending.end()}, 2);
    r.submit_time = kT0;
    r.comment = fixtures::TagOfRun(run);
    records.push_back(r);
  }
  std::vector<slurm::JobInfo> folded = slurm::FoldArrayRecords(std::move(records));
  EXPECT_EQ(folded.size(), 1u);
  return folded.front();
}

Outcomes Queried(const slurm::JobInfo& info) {
  Outcomes o;
  o.query = SlurmView{info};
  return o;
}

const v1alpha1::Condition& Cond(const v1alpha1::SlurmJobStatus& s, std::string_view type) {
  const v1alpha1::Condition* c = FindCondition(s.conditions(), type);
  EXPECT_NE(c, nullptr) << "no condition " << type;
  static v1alpha1::Condition none;
  return c ? *c : none;
}

using slurm::BaseState;

// --- validation -----------------------------------------------------------------------------

TEST(ArrayDecideTest, BadIndexesStallWithInvalidSpecAndSubmitNothing) {
  for (const char* bad : {"3-1", "1,,2", "0-1000", "1-3%0", "x"}) {
    JobFacts job = ArrayJob(bad);
    Decision d = Decide(job, Cluster(), {}, {}, {}, kT0);
    ASSERT_EQ(d.action, Action::kWriteStatus) << bad << ": " << d.why;
    EXPECT_EQ(Cond(d.status, kStalled).reason(), "InvalidSpec") << bad;
    EXPECT_THAT(d.status.message(), HasSubstr("spec.array.indexes")) << bad;
    EXPECT_THAT(d.status.message(), HasSubstr("Nothing was submitted")) << bad;
    ASSERT_EQ(d.events.size(), 1u);
    EXPECT_EQ(d.events[0].reason, "InvalidSpec");
  }
}

TEST(ArrayDecideTest, ExtraMayNotSetArray) {
  JobFacts job = NewJob();
  (*job.spec.mutable_extra()->mutable_fields())["array"].set_string_value("0-9");
  Decision d = Decide(job, Cluster(), {}, {}, {}, kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_THAT(d.status.message(), HasSubstr("spec.extra sets array"));
}

// --- submit and tracking --------------------------------------------------------------------

TEST(ArrayDecideTest, SubmitsOneArrayJobWithTheRunsTag) {
  JobFacts job = ArrayJob("0-31%4");
  job.has_finalizer = true;
  fixtures::TargetRecorded(&job.status);
  Decision d = Decide(job, Cluster(), {}, {}, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kSubmit) << d.why;
  EXPECT_EQ(d.descriptor.array, "0-31%4");
  EXPECT_EQ(d.descriptor.comment, "slurmjob-operator:team-a/uid-1/1");
  EXPECT_EQ(d.submit_body["job"]["array"], "0-31%4");
}

TEST(ArrayDecideTest, StatusCountsTasksPerState) {
  JobFacts job = SubmittedArray(ArrayJob());
  slurm::JobInfo a =
      Array(100, {Task(0, BaseState::kCompleted), Task(1, BaseState::kRunning)}, {2, 3});
  Decision d = Decide(job, Cluster(), {}, Queried(a), Fresh(), kT0 + seconds(30));
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  const v1alpha1::ArrayStatus& s = d.status.array();
  EXPECT_EQ(s.total(), 4);
  EXPECT_EQ(s.pending(), 2);
  EXPECT_EQ(s.active(), 1);
  EXPECT_EQ(s.succeeded(), 1);
  EXPECT_EQ(s.failed(), 0);
  EXPECT_EQ(s.completed_indexes(), "0");
  EXPECT_EQ(d.status.phase(), "Running");
  EXPECT_EQ(d.status.job_id(), 100);
}

TEST(ArrayDecideTest, SucceededOnlyWhenEveryIndexCompleted) {
  JobFacts job = SubmittedArray(ArrayJob());
  slurm::JobInfo a = Array(100, {Task(0, BaseState::kCompleted), Task(1, BaseState::kCompleted),
                                 Task(2, BaseState::kCompleted), Task(3, BaseState::kCompleted)});
  Decision d = Decide(job, Cluster(), {}, Queried(a), Fresh(), kT0 + seconds(90));
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(d.status.phase(), "Succeeded");
  EXPECT_EQ(d.status.array().completed_indexes(), "0-3");
  EXPECT_EQ(d.status.array().succeeded(), 4);
  EXPECT_EQ(Cond(d.status, kReady).status(), "True");
}

TEST(ArrayDecideTest, ATaskWhoseRecordLeftTheQueueStillCounts) {
  // Index 1 failed and its record was dropped (MinJobAge) before the others ended: the array
  // is not COMPLETED though every record left says so.
  JobFacts job = SubmittedArray(ArrayJob());
  slurm::JobInfo early = Array(100, {Task(0, BaseState::kCompleted), Task(1, BaseState::kFailed, 2),
                                     Task(2, BaseState::kRunning), Task(3, BaseState::kRunning)});
  Decision d = Decide(job, Cluster(), {}, Queried(early), Fresh(), kT0 + seconds(70));
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(d.status.array().failed_indexes(), "1");
  EXPECT_EQ(d.status.array().index_failures(), "1:1");
  job.status = d.status;
  slurm::JobInfo late = Array(100, {Task(0, BaseState::kCompleted), Task(2, BaseState::kCompleted),
                                    Task(3, BaseState::kCompleted)});
  ASSERT_EQ(late.state, BaseState::kCompleted);
  d = Decide(job, Cluster(), {}, Queried(late), Fresh(), kT0 + seconds(400));
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(d.status.phase(), "Failed");
  EXPECT_EQ(d.status.array().completed_indexes(), "0,2,3");
  EXPECT_EQ(d.status.array().failed_indexes(), "1");
  EXPECT_EQ(d.status.array().index_failures(), "1:1");  // counted once
  EXPECT_THAT(d.status.message(), HasSubstr("Not retried"));
}

TEST(ArrayDecideTest, AnIndexNeverSeenEndedKeepsTheArrayOpen) {
  // Records of indexes 0 and 1 left the queue before any look saw them end: the array is not
  // concluded from the rest (accounting lists every task once the queue drops them all).
  JobFacts job = SubmittedArray(ArrayJob());
  slurm::JobInfo a = Array(100, {Task(2, BaseState::kCompleted), Task(3, BaseState::kCompleted)});
  Decision d = Decide(job, Cluster(), {}, Queried(a), Fresh(), kT0 + seconds(400));
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_NE(d.status.phase(), "Succeeded");
  EXPECT_NE(d.status.phase(), "Failed");
  EXPECT_EQ(d.status.array().pending(), 2);
  EXPECT_EQ(d.status.array().completed_indexes(), "2,3");
}

TEST(ArrayDecideTest, AFailedIndexIsNotRetriedWhileOthersWentUnseen) {
  // As above, with index 2 failed: whether 0 and 1 failed too is unknown, so nothing is retried
  // yet (a retry of 2 alone would end the SlurmJob with 0 and 1 never accounted for).
  JobFacts job = SubmittedArray(ArrayJob("0-3", /*per_index=*/1));
  slurm::JobInfo a = Array(100, {Task(2, BaseState::kFailed, 1), Task(3, BaseState::kCompleted)});
  ASSERT_TRUE(a.IsFinal());
  Decision d = Decide(job, Cluster(), {}, Queried(a), Fresh(), kT0 + seconds(400));
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(d.status.run(), 1) << "not retried";
  EXPECT_EQ(d.status.job_id(), 100);
  EXPECT_NE(d.status.phase(), "Failed");
  EXPECT_EQ(d.status.array().failed_indexes(), "2");
  EXPECT_EQ(d.status.array().pending(), 2);
  EXPECT_TRUE(d.events.empty() || d.events[0].reason != "Retrying");
}

// --- retries of failed indexes --------------------------------------------------------------

TEST(ArrayDecideTest, AFailedIndexIsRetriedAloneAsANewRunThenSucceeds) {
  JobFacts job = SubmittedArray(ArrayJob("0-3%2", /*per_index=*/1));
  slurm::JobInfo a = Array(100, {Task(0, BaseState::kCompleted), Task(1, BaseState::kCompleted),
                                 Task(2, BaseState::kFailed, 3), Task(3, BaseState::kCompleted)});
  Decision d = Decide(job, Cluster(), {}, Queried(a), Fresh(), kT0 + seconds(90));
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(d.status.run(), 2);
  EXPECT_EQ(d.status.job_id(), 0);
  EXPECT_EQ(d.status.array().run_indexes(), "2");
  EXPECT_EQ(d.status.array().failed_indexes(), "");
  EXPECT_EQ(d.status.array().completed_indexes(), "0,1,3");
  EXPECT_EQ(d.status.array().index_failures(), "2:1");
  ASSERT_EQ(d.status.runs_size(), 1);
  EXPECT_EQ(d.status.runs(0).job_id(), 100);
  EXPECT_THAT(d.status.runs(0).message(), HasSubstr("Retried indexes 2"));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "Retrying");

  // Run 2 submits index 2 alone, with the spec's throttle, under its own tag.
  JobFacts next = job;
  next.status = d.status;
  Memo memo = Fresh(2);
  fixtures::TargetRecorded(&next.status);
  Decision s = Decide(next, Cluster(), {}, {}, memo, kT0 + seconds(91));
  ASSERT_EQ(s.action, Action::kSubmit) << s.why;
  EXPECT_EQ(s.descriptor.array, "2%2");
  EXPECT_EQ(s.descriptor.comment, "slurmjob-operator:team-a/uid-1/2");

  // Its job 200 completes: every index completed.
  JobFacts second = SubmittedArray(job, 200, 2);
  *second.status.mutable_array() = d.status.array();
  slurm::JobInfo b = Array(200, {Task(2, BaseState::kCompleted)}, {}, 2);
  Decision e = Decide(second, Cluster(), {}, Queried(b), Fresh(2), kT0 + seconds(150));
  ASSERT_EQ(e.action, Action::kWriteStatus) << e.why;
  EXPECT_EQ(e.status.phase(), "Succeeded");
  EXPECT_EQ(e.status.array().completed_indexes(), "0-3");
  EXPECT_EQ(e.status.array().succeeded(), 4);
  EXPECT_EQ(e.status.array().failed(), 0);
}

TEST(ArrayDecideTest, AnIndexFailingBeyondItsLimitFailsTheSlurmJob) {
  JobFacts job = SubmittedArray(ArrayJob("0-3", /*per_index=*/1), 200, 2);
  job.status.mutable_array()->set_run_indexes("2");
  job.status.mutable_array()->set_completed_indexes("0,1,3");
  job.status.mutable_array()->set_index_failures("2:1");
  slurm::JobInfo b = Array(200, {Task(2, BaseState::kFailed, 3)}, {}, 2);
  Decision d = Decide(job, Cluster(), {}, Queried(b), Fresh(2), kT0 + seconds(150));
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(d.status.run(), 2);
  EXPECT_EQ(d.status.phase(), "Failed");
  EXPECT_EQ(d.status.array().failed_indexes(), "2");
  EXPECT_EQ(d.status.array().index_failures(), "2:2");
  EXPECT_THAT(d.status.message(), HasSubstr("backoffLimitPerIndex"));
}

TEST(ArrayDecideTest, MoreFailedIndexesThanAllowedFailsWithoutRetry) {
  JobFacts job = SubmittedArray(ArrayJob("0-3", /*per_index=*/0, /*max_failed=*/1));
  slurm::JobInfo a = Array(100, {Task(0, BaseState::kFailed, 1), Task(1, BaseState::kFailed, 1),
                                 Task(2, BaseState::kCompleted), Task(3, BaseState::kCompleted)});
  Decision d = Decide(job, Cluster(), {}, Queried(a), Fresh(), kT0 + seconds(90));
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(d.status.phase(), "Failed");
  EXPECT_EQ(d.status.reason(), "MaxFailedIndexesExceeded");
  EXPECT_THAT(d.status.message(), HasSubstr("more than spec.array.maxFailedIndexes 1"));
}

TEST(ArrayDecideTest, ANewRunIdStartsTheArrayAfresh) {
  JobFacts job = SubmittedArray(ArrayJob());
  job.status.mutable_array()->set_completed_indexes("0-3");
  v1alpha1::SlurmJobStatus s = StatusForNewRun(job.status, "b", 0, "m", "r", "m", 1, kT0);
  EXPECT_FALSE(s.has_array());
  v1alpha1::SlurmJobStatus retry =
      StatusForNewRun(job.status, job.status.run_id(), 1, "m", "r", "m", 1, kT0);
  EXPECT_TRUE(retry.has_array());
}

// --- array_status.h -------------------------------------------------------------------------

TEST(ArrayStatusTest, IndexFailuresRoundTrip) {
  std::map<int32_t, int32_t> m{{3, 1}, {7, 2}};
  EXPECT_EQ(FormatIndexFailures(m), "3:1,7:2");
  EXPECT_EQ(ParseIndexFailures("3:1,7:2"), m);
  EXPECT_TRUE(ParseIndexFailures("").empty());
  EXPECT_TRUE(ParseIndexFailures("x:1,-1:2,3:0").empty());
}

TEST(ArrayStatusTest, RetryIndexesSplitsByThePerIndexLimit) {
  v1alpha1::ArraySpec spec;
  spec.set_indexes("0-9");
  spec.set_backoff_limit_per_index(1);
  v1alpha1::ArrayStatus st;
  st.set_failed_indexes("1,4,5");
  st.set_index_failures("1:1,4:2,5:1");
  IndexRetry r = RetryIndexes(spec, st);
  EXPECT_EQ(r.retry, (slurm::IndexSet{1, 5}));
  EXPECT_EQ(r.failed_for_good, slurm::IndexSet{4});
  v1alpha1::ArrayStatus next = ArrayStatusForRetry(st, r.retry);
  EXPECT_EQ(next.failed_indexes(), "4");
  EXPECT_EQ(next.run_indexes(), "1,5");
  EXPECT_EQ(RunArrayExpression(spec, next), "1,5");
  spec.set_indexes("0-9%3");
  EXPECT_EQ(RunArrayExpression(spec, next), "1,5%3");
  EXPECT_EQ(RunArrayExpression(spec, v1alpha1::ArrayStatus()), "0-9%3");
}

}  // namespace
}  // namespace slurmop::reconcile
