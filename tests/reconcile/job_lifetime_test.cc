// File: tests/reconcile/job_lifetime_test.cc
//
// spec.ttlSecondsAfterFinished (controller/reconcile/job_lifetime.h): when a
// finished SlurmJob is kept, waited for or deleted. Plain values.

#include "controller/reconcile/job_lifetime.h"

#include "controller/reconcile/conditions.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/reconcile/decide_fixtures.h"

namespace slurmop::reconcile {
namespace {

using fixtures::kT0;
using std::chrono::seconds;
using ::testing::HasSubstr;
using Kind = TtlVerdict::Kind;

int64_t Unix(Time t) { return std::chrono::duration_cast<seconds>(t.time_since_epoch()).count(); }

// Slurm job 42 in `state`.
JobFacts JobIn(const std::string& state) {
  JobFacts job = fixtures::NewJob();
  job.status.set_job_id(42);
  job.status.set_job_state(state);
  return job;
}

// A job that ended COMPLETED at kT0, with a TTL of `ttl` seconds.
JobFacts Finished(std::optional<int32_t> ttl) {
  JobFacts job = JobIn("COMPLETED");
  job.status.mutable_end_time()->set_seconds(Unix(kT0));
  if (ttl) job.spec.set_ttl_seconds_after_finished(*ttl);
  return job;
}

TEST(DecideTtl, WithoutTtlTheJobIsKeptForever) {
  EXPECT_EQ(DecideTtl(Finished(std::nullopt), kT0 + std::chrono::hours(24 * 365)).kind,
            Kind::kNone);
}

TEST(DecideTtl, AJobThatHasNotFinishedIsNotTimed) {
  JobFacts running = Finished(0);
  running.status.set_job_state("RUNNING");
  EXPECT_EQ(DecideTtl(running, kT0 + seconds(5)).kind, Kind::kNone);
  JobFacts no_end = Finished(0);
  no_end.status.clear_end_time();
  EXPECT_EQ(DecideTtl(no_end, kT0 + seconds(5)).kind, Kind::kNone);
  JobFacts next_run = Finished(0);
  next_run.spec.set_run_id("again");
  EXPECT_EQ(DecideTtl(next_run, kT0 + seconds(5)).kind, Kind::kNone) << "another run is due";
}

TEST(DecideTtl, TheClockStartsAtEndTime) {
  const JobFacts job = Finished(60);
  TtlVerdict v = DecideTtl(job, kT0 + seconds(15));
  EXPECT_EQ(v.kind, Kind::kWaiting);
  EXPECT_EQ(v.wait, seconds(45));
  EXPECT_EQ(v.expires_at, kT0 + seconds(60));
  EXPECT_EQ(DecideTtl(job, kT0 + seconds(60) - std::chrono::milliseconds(1)).kind, Kind::kWaiting);
  EXPECT_EQ(DecideTtl(job, kT0 + seconds(60)).kind, Kind::kExpired);
  EXPECT_EQ(DecideTtl(Finished(0), kT0).kind, Kind::kExpired) << "0: at once";
}

TEST(DecideTtl, AFailedJobIsFinishedToo) {
  JobFacts failed = Finished(10);
  failed.status.set_job_state("FAILED");
  EXPECT_EQ(DecideTtl(failed, kT0 + seconds(10)).kind, Kind::kExpired);
}

TEST(DecideTtl, AJobAGitOpsToolManagesIsNeverDeleted) {
  JobFacts job = Finished(0);
  job.annotations["argocd.argoproj.io/tracking-id"] = "app:hpc.slurmoperator.dev/SlurmJob:ns/x";
  TtlVerdict v = DecideTtl(job, kT0 + std::chrono::hours(24));
  EXPECT_EQ(v.kind, Kind::kKeptForGitOps);
  ASSERT_TRUE(v.gitops.has_value());
  EXPECT_EQ(v.gitops->tool, "Argo CD");
  EXPECT_EQ(v.gitops->kind, "annotation");
}

// ------------------------------------------------- spec.activeDeadlineSeconds

// A job running since its first submit at kT0, with a deadline of `d` seconds.
JobFacts RunningWithDeadline(std::optional<int64_t> d) {
  JobFacts job = JobIn("RUNNING");
  job.status.mutable_first_submit_time()->set_seconds(Unix(kT0));
  if (d) job.spec.set_active_deadline_seconds(*d);
  return job;
}

TEST(ActiveDeadline, CountsFromTheFirstSubmit) {
  EXPECT_FALSE(ActiveDeadline(RunningWithDeadline(std::nullopt)).has_value());
  const JobFacts job = RunningWithDeadline(600);
  EXPECT_EQ(ActiveDeadline(job), kT0 + seconds(600));
  EXPECT_FALSE(DeadlinePassed(job, kT0 + seconds(599)));
  EXPECT_TRUE(DeadlinePassed(job, kT0 + seconds(600)));
  JobFacts ended = job;
  ended.status.set_job_state("COMPLETED");
  EXPECT_FALSE(DeadlinePassed(ended, kT0 + seconds(900))) << "an ended job is left as it ended";
}

TEST(SlurmDeadline, TheFirstSubmitSendsNowPlusTheDeadlineARetryTheSameTime) {
  JobFacts fresh = fixtures::NewJob();
  EXPECT_FALSE(SlurmDeadline(fresh, kT0).has_value());
  fresh.spec.set_active_deadline_seconds(3600);
  EXPECT_EQ(SlurmDeadline(fresh, kT0), Unix(kT0) + 3600);
  const JobFacts retry = RunningWithDeadline(3600);
  EXPECT_EQ(SlurmDeadline(retry, kT0 + seconds(1000)), Unix(kT0) + 3600)
      << "queue time and earlier runs count";
}

// The CRD sets no maximum: first submit + 10,000,000,000 s overflowed a Time's int64
// nanoseconds and wrapped into the past, so the job was cancelled at once as past its deadline
// (INT64_MAX overflowed the sum itself, and its wrapped value went to Slurm).
TEST(ActiveDeadline, AHugeDeadlineIsFarAwayNotPast) {
  for (int64_t d : {int64_t{10'000'000'000}, std::numeric_limits<int64_t>::max()}) {
    const JobFacts job = RunningWithDeadline(d);
    EXPECT_FALSE(DeadlinePassed(job, kT0 + std::chrono::hours(24 * 365))) << d;
    ASSERT_TRUE(ActiveDeadline(job).has_value());
    EXPECT_GT(*ActiveDeadline(job), kT0 + std::chrono::hours(24 * 365 * 99)) << d;
    const std::optional<int64_t> slurm = SlurmDeadline(job, kT0);
    ASSERT_TRUE(slurm.has_value());
    EXPECT_GT(*slurm, Unix(kT0) + int64_t{99} * 365 * 24 * 3600) << d;
    EXPECT_LT(*slurm, int64_t{10'000'000'000}) << d;
  }
}

TEST(EndedByDeadline, OnlyARunThatDidNotSucceedAndEndedAtTheDeadline) {
  const JobFacts job = RunningWithDeadline(600);
  slurm::JobInfo r;
  r.state = slurm::BaseState::kCancelled;
  r.end_time = kT0 + seconds(601);
  EXPECT_TRUE(EndedByDeadline(job, r, kT0 + seconds(602)));
  r.end_time = kT0 + seconds(100);
  r.state = slurm::BaseState::kFailed;
  EXPECT_FALSE(EndedByDeadline(job, r, kT0 + seconds(602))) << "it failed on its own before";
  r.state = slurm::BaseState::kDeadline;
  EXPECT_TRUE(EndedByDeadline(job, r, kT0 + seconds(602))) << "Slurm ended it at the deadline";
  r.state = slurm::BaseState::kCompleted;
  r.end_time = kT0 + seconds(700);
  EXPECT_FALSE(EndedByDeadline(job, r, kT0 + seconds(702)));
  EXPECT_FALSE(EndedByDeadline(RunningWithDeadline(std::nullopt), r, kT0));
}

TEST(StatusDeadlineExceeded, FailedWithTheReasonEverywhere) {
  JobFacts job = RunningWithDeadline(600);
  v1alpha1::SlurmJobStatus ended = job.status;
  ended.set_job_state("CANCELLED");
  ended.set_phase("Cancelled");
  const v1alpha1::SlurmJobStatus s = StatusDeadlineExceeded(job, ended, kT0 + seconds(601));
  EXPECT_EQ(s.phase(), "Failed");
  EXPECT_EQ(s.reason(), "DeadlineExceeded");
  EXPECT_EQ(s.job_state(), "CANCELLED") << "Slurm's state stays as Slurm says";
  EXPECT_NE(s.message().find("activeDeadlineSeconds (600 s"), std::string::npos) << s.message();
  for (std::string_view type : {kFailed, kStalled, kReady}) {
    const v1alpha1::Condition* c = FindCondition(s.conditions(), type);
    ASSERT_NE(c, nullptr) << type;
    EXPECT_EQ(c->reason(), "DeadlineExceeded") << type;
  }
  EXPECT_EQ(FindCondition(s.conditions(), kFailed)->status(), "True");
}

// Slurm's own ways of keeping the deadline (slurmctld 22.05: deadline_ok, deadline_time_limit).
TEST(EndedByDeadline, SlurmsDeadlineStateAndTheTimeLimitItCutCount) {
  const JobFacts job = RunningWithDeadline(600);  // first submit kT0: deadline kT0 + 600 s
  slurm::JobInfo r;
  r.state = slurm::BaseState::kDeadline;
  r.end_time = kT0 + seconds(1);  // never started
  EXPECT_TRUE(EndedByDeadline(job, r, kT0 + seconds(1)));
  r.state = slurm::BaseState::kTimeout;
  r.end_time = kT0 + seconds(570);  // the limit cut to whole minutes before the deadline
  EXPECT_TRUE(EndedByDeadline(job, r, kT0 + seconds(570)));
  r.end_time = kT0 + seconds(300);  // its own limit, well before the deadline
  EXPECT_FALSE(EndedByDeadline(job, r, kT0 + seconds(300)));
  r.state = slurm::BaseState::kFailed;
  r.end_time = kT0 + seconds(570);
  EXPECT_FALSE(EndedByDeadline(job, r, kT0 + seconds(570)));
  // Our cancel at the deadline landed on the job completing after the TIMEOUT Slurm's cut limit
  // gave it a second earlier: Slurm says CANCELLED, with the timeout's end time.
  r.state = slurm::BaseState::kCancelled;
  r.end_time = kT0 + seconds(599);
  EXPECT_TRUE(EndedByDeadline(job, r, kT0 + seconds(601)));
  r.end_time = kT0 + seconds(300);  // cancelled by someone, well before the deadline
  EXPECT_FALSE(EndedByDeadline(job, r, kT0 + seconds(301)));
}

// The message of a run the deadline ended in `state`, started and ended `ran` seconds apart.
std::string DeadlineMessage(const std::string& state, int64_t ran) {
  const JobFacts job = RunningWithDeadline(600);
  v1alpha1::SlurmJobStatus ended = job.status;
  ended.set_job_state(state);
  ended.mutable_start_time()->set_seconds(1'700'000'001);
  ended.mutable_end_time()->set_seconds(1'700'000'001 + ran);
  return StatusDeadlineExceeded(job, ended, kT0).message();
}

TEST(StatusDeadlineExceeded, SaysHowSlurmKeptTheDeadline) {
  EXPECT_THAT(DeadlineMessage("DEADLINE", 0),
              HasSubstr("Slurm did not start it: its time limit would have ended after the "
                        "deadline"));
  EXPECT_THAT(DeadlineMessage("TIMEOUT", 540),
              HasSubstr("reached the time limit Slurm cut to end by the deadline"));
  EXPECT_THAT(DeadlineMessage("CANCELLED", 600), HasSubstr(") passed. Not retried."));
  // A job Slurm never started wrote nothing: its (default) output file is not named.
  JobFacts job = RunningWithDeadline(600);
  v1alpha1::SlurmJobStatus unstarted = job.status;
  unstarted.set_job_state("DEADLINE");
  unstarted.set_standard_output("/w/slurm-7.out");
  EXPECT_THAT(StatusDeadlineExceeded(job, unstarted, kT0).message(),
              ::testing::Not(HasSubstr("/w/slurm-7.out")));
}

TEST(StatusDeadlineExceeded, NamesWhereTheJobsOutputIs) {
  JobFacts job = RunningWithDeadline(600);
  v1alpha1::SlurmJobStatus ended = job.status;
  ended.set_job_state("CANCELLED");  // the operator's cancel at the deadline: it ran
  ended.set_standard_output("/w/slurm-7.out");
  ended.set_standard_error("/w/slurm-7.out");
  const v1alpha1::SlurmJobStatus s = StatusDeadlineExceeded(job, ended, kT0 + seconds(601));
  EXPECT_NE(s.message().find("Its output is in /w/slurm-7.out on the cluster."), std::string::npos)
      << s.message();
  EXPECT_EQ(FindCondition(s.conditions(), kFailed)->message(), s.message());
}

TEST(GitOpsManager, EveryMarkerIsRecognised) {
  const std::vector<std::pair<std::string, std::string>> labels = {
      {"app.kubernetes.io/instance", "Argo CD"},
      {"argocd.argoproj.io/instance", "Argo CD"},
      {"kustomize.toolkit.fluxcd.io/name", "Flux"},
      {"kustomize.toolkit.fluxcd.io/namespace", "Flux"},
      {"helm.toolkit.fluxcd.io/name", "Flux"},
      {"helm.toolkit.fluxcd.io/namespace", "Flux"},
  };
  for (const auto& [key, tool] : labels) {
    std::optional<GitOpsMarker> m = GitOpsManager({{key, "v"}}, {});
    ASSERT_TRUE(m.has_value()) << key;
    EXPECT_EQ(m->tool, tool) << key;
    EXPECT_EQ(m->key, key);
    EXPECT_EQ(m->value, "v");
    EXPECT_FALSE(GitOpsManager({}, {{key, "v"}}).has_value()) << key << " is a label, not an "
                                                              << "annotation";
  }
  EXPECT_TRUE(GitOpsManager({}, {{"argocd.argoproj.io/tracking-id", "t"}}).has_value());
  EXPECT_FALSE(GitOpsManager({{"app", "x"}, {"team", "a"}}, {{"note", "y"}}).has_value());
}

}  // namespace
}  // namespace slurmop::reconcile
