// File: tests/reconcile/job_usage_test.cc
//
// #14 item 4: a run's usage from its accounting record, in status.usage and
// status.runs, and the exactly-once rule of the usage counters
// (controller/reconcile/job_usage.h).

#include "controller/reconcile/job_usage.h"

#include <chrono>

#include "controller/reconcile/decide.h"
#include "controller/reconcile/job_status.h"
#include "controller/reconcile/runs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/reconcile/decide_fixtures.h"

namespace slurmop::reconcile {
namespace {

using fixtures::kT0;
using std::chrono::seconds;

slurm::Allocation GpuAllocation() {
  slurm::Allocation a;
  a.tres = {{"cpu", 16},     {"mem", 65536},  {"node", 2},
            {"billing", 24}, {"gres/gpu", 8}, {"gres/gpu:a100", 8}};
  a.elapsed_seconds = 3600;
  return a;
}

slurm::JobInfo Ended(slurm::BaseState state = slurm::BaseState::kCompleted) {
  slurm::JobInfo j;
  j.job_id = 42;
  j.state = state;
  j.exit_code = 0;
  j.submit_time = kT0;
  j.start_time = kT0 + seconds(5);
  j.end_time = kT0 + seconds(3605);
  j.partition = "a3";
  j.account = "proj-llm";
  j.allocation = GpuAllocation();
  return j;
}

v1alpha1::SlurmJobStatus Running() {
  v1alpha1::SlurmJobStatus s = StatusAfterSubmit({}, 42, "a3", false, 1, kT0, nullptr);
  s.set_run(1);
  return s;
}

TEST(JobUsageTest, CountsCpuAndGpuSecondsOfTheAllocation) {
  std::optional<v1alpha1::JobUsage> u = UsageFromJobInfo(Ended(), 1);
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->run(), 1);
  EXPECT_EQ(u->elapsed_seconds(), 3600);
  EXPECT_EQ(u->cpu_seconds(), 16 * 3600);
  EXPECT_EQ(u->gpu_seconds(), 8 * 3600) << "gres/gpu, not also the typed gres/gpu:a100";
  EXPECT_EQ(u->allocated_tres().at("mem"), 65536);
  EXPECT_EQ(u->allocated_tres().at("gres/gpu"), 8);
  EXPECT_EQ(u->allocated_tres().at("billing"), 24);
  EXPECT_EQ(u->account(), "proj-llm");
  EXPECT_EQ(u->partition(), "a3");
}

TEST(JobUsageTest, TypedGpusAloneAreSummed) {
  slurm::Allocation a;
  a.tres = {{"cpu", 4}, {"gres/gpu:a100", 2}, {"gres/gpu:h100", 1}, {"gres/gpumem", 80}};
  EXPECT_EQ(AllocatedGpus(a), 3);
  a.tres["gres/gpu"] = 5;
  EXPECT_EQ(AllocatedGpus(a), 5);
  EXPECT_EQ(AllocatedGpus(slurm::Allocation{}), 0);
}

TEST(JobUsageTest, ElapsedFallsBackToEndMinusStart) {
  slurm::JobInfo j = Ended();
  j.allocation->elapsed_seconds.reset();
  std::optional<v1alpha1::JobUsage> u = UsageFromJobInfo(j, 1);
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->elapsed_seconds(), 3600);
}

TEST(JobUsageTest, NoUsageBeforeTheEndOrWithoutAnAllocation) {
  slurm::JobInfo running = Ended(slurm::BaseState::kRunning);
  EXPECT_FALSE(UsageFromJobInfo(running, 1).has_value());
  slurm::JobInfo live = Ended();
  live.allocation.reset();  // the live queue's record, accounting not read
  EXPECT_FALSE(UsageFromJobInfo(live, 1).has_value());
}

TEST(JobUsageTest, TheFinalStatusRecordsTheRunsUsageOnce) {
  v1alpha1::SlurmJobStatus s =
      StatusFromJobInfo(Running(), Ended(), 1, kT0 + seconds(3606), nullptr);
  ASSERT_TRUE(s.has_usage());
  EXPECT_TRUE(UsageRecorded(s, 1));
  EXPECT_EQ(s.usage().gpu_seconds(), 8 * 3600);
  // A later record (say accounting after the live queue) never replaces it.
  slurm::JobInfo again = Ended();
  again.allocation->elapsed_seconds = 7200;
  v1alpha1::SlurmJobStatus s2 = StatusFromJobInfo(s, again, 1, kT0 + seconds(3700), nullptr);
  EXPECT_EQ(s2.usage().elapsed_seconds(), 3600);
  // A running job has none.
  EXPECT_FALSE(
      StatusFromJobInfo(Running(), Ended(slurm::BaseState::kRunning), 1, kT0, nullptr).has_usage());
}

TEST(JobUsageTest, ANewRunMovesTheUsageIntoTheRunsRecord) {
  v1alpha1::SlurmJobStatus ended =
      StatusFromJobInfo(Running(), Ended(slurm::BaseState::kNodeFail), 1, kT0, nullptr);
  ASSERT_TRUE(ended.has_usage());
  v1alpha1::SlurmJobStatus next =
      StatusForNewRun(ended, "", 1, "Retried", "Retrying", "m", 1, kT0 + seconds(1));
  EXPECT_FALSE(next.has_usage()) << "run 2 has not ended";
  ASSERT_EQ(next.runs_size(), 1);
  ASSERT_TRUE(next.runs(0).has_usage());
  EXPECT_EQ(next.runs(0).usage().run(), 1);
  EXPECT_EQ(next.runs(0).usage().gpu_seconds(), 8 * 3600);
}

// The counters count a run when the status write records its usage first.
TEST(JobUsageTest, NewlyRecordedUsageIsOncePerRun) {
  const v1alpha1::SlurmJobStatus running = Running();
  const v1alpha1::SlurmJobStatus ended = StatusFromJobInfo(running, Ended(), 1, kT0, nullptr);
  ASSERT_EQ(NewlyRecordedUsage(running, ended).size(), 1u);
  EXPECT_EQ(NewlyRecordedUsage(running, ended)[0].run(), 1);
  // A restarted operator re-reading the same final record writes nothing new.
  EXPECT_TRUE(
      NewlyRecordedUsage(ended, StatusFromJobInfo(ended, Ended(), 1, kT0, nullptr)).empty());
  // A retry moves run 1's usage into status.runs: not counted again.
  const v1alpha1::SlurmJobStatus run2 = StatusForNewRun(ended, "", 1, "R", "Retrying", "m", 1, kT0);
  EXPECT_TRUE(NewlyRecordedUsage(ended, run2).empty());
  // Recording run 1's end and starting run 2 in one write counts run 1 once.
  EXPECT_EQ(NewlyRecordedUsage(running, run2).size(), 1u);
  // Run 2's end counts run 2 only.
  v1alpha1::SlurmJobStatus run2_running = StatusAfterSubmit(run2, 43, "a3", false, 1, kT0, nullptr);
  slurm::JobInfo end2 = Ended();
  end2.job_id = 43;
  const v1alpha1::SlurmJobStatus run2_ended =
      StatusFromJobInfo(run2_running, end2, 1, kT0, nullptr);
  std::vector<v1alpha1::JobUsage> counted = NewlyRecordedUsage(run2_running, run2_ended);
  ASSERT_EQ(counted.size(), 1u);
  EXPECT_EQ(counted[0].run(), 2);
}

}  // namespace
}  // namespace slurmop::reconcile
