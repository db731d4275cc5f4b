// File: tests/reconcile/lifecycle_test.cc
//
// The job lifecycle of issue #5, decided with plain values and an injected
// time: runs and their tags, the failure policy and backoffLimit, re-runs by
// spec.runId, spec.suspend, spec.dependsOn, deletionPolicy Orphan, and a
// table of every Slurm state and flag, in every REST version's shape, from
// the wire to status.jobState / phase / conditions / the failure verdict.

#include <chrono>
#include <string>
#include <vector>

#include "controller/reconcile/conditions.h"
#include "controller/reconcile/decide.h"
#include "controller/reconcile/runs.h"
#include "controller/slurm/dialects.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/reconcile/decide_fixtures.h"

namespace slurmop::reconcile {
namespace {

using fixtures::Cluster;
using fixtures::kT0;
using fixtures::TargetRecorded;

// The shared job, with the CRD's default backoffLimit of 3 as the API server sets it.
JobFacts NewJob() {
  JobFacts f = fixtures::NewJob();
  f.spec.set_backoff_limit(3);
  return f;
}
using nlohmann::json;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

JobFacts Submitted(int64_t id = 42) {
  JobFacts f = NewJob();
  f.has_finalizer = true;
  f.status = StatusAfterSubmit(f.status, id, "a3", false, 1, kT0, nullptr);
  f.status.set_run(1);
  fixtures::SubmittedToCluster(&f.status);
  return f;
}

Memo Fresh(int32_t run = 1) {
  Memo m;
  m.uid = "uid-1";
  m.run = run;
  m.no_earlier_submit = true;
  return m;
}

slurm::JobInfo Ended(int64_t id, slurm::BaseState state, int32_t exit_code = 0) {
  slurm::JobInfo j;
  j.job_id = id;
  j.state = state;
  j.exit_code = exit_code;
  j.submit_time = kT0;
  j.start_time = kT0 + seconds(5);
  j.end_time = kT0 + seconds(60);
  j.comment = fixtures::TagOfRun(1);
  return j;
}

Outcomes Queried(const slurm::JobInfo& info) {
  Outcomes o;
  o.query = SlurmView{info};
  return o;
}

std::string CondStatus(const v1alpha1::SlurmJobStatus& s, std::string_view type) {
  const v1alpha1::Condition* c = FindCondition(s.conditions(), type);
  return c ? c->status() : "<none>";
}

// --- tags ------------------------------------------------------------------------------------

TEST(SubmissionTagTest, CarriesNamespaceUidAndRunAndParsesBack) {
  JobIdentity id{"team-a", "train", "0b7c-uid", /*installation=*/""};
  EXPECT_EQ(SubmissionTag(id, 3), "slurmjob-operator:team-a/0b7c-uid/3");
  std::optional<ParsedTag> t = ParseSubmissionTag(SubmissionTag(id, 3));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->ns, "team-a");
  EXPECT_EQ(t->uid, "0b7c-uid");
  EXPECT_EQ(t->run, 3);
  EXPECT_NE(SubmissionTag(id, 1), SubmissionTag(id, 2));
  for (const char* other :
       {"", "slurmjob-operator:", "slurmjob-operator:ns/uid/", "slurmjob-operator:ns//1",
        "slurmjob-operator:/u/1", "slurmjob-operator:ns/u/x", "slurmjob-operator:ns/u/0",
        "e2e test job"}) {
    EXPECT_FALSE(ParseSubmissionTag(other).has_value()) << other;
  }
  // A disowned job's comment is not a tag: the orphan sweep leaves it alone.
  EXPECT_FALSE(ParseSubmissionTag(DisownedTag(id, 1)).has_value());
}

TEST(SubmissionTagTest, NamesTheInstallationLastAndTheLegacyTagStillParses) {
  JobIdentity id{"team-a", "train", "0b7c-uid", "prod-1"};
  EXPECT_EQ(SubmissionTag(id, 3), "slurmjob-operator:team-a/0b7c-uid/3@prod-1");
  EXPECT_EQ(LegacySubmissionTag(id, 3), "slurmjob-operator:team-a/0b7c-uid/3");
  std::optional<ParsedTag> t = ParseSubmissionTag(SubmissionTag(id, 3));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->ns, "team-a");
  EXPECT_EQ(t->uid, "0b7c-uid");
  EXPECT_EQ(t->run, 3);
  EXPECT_EQ(t->installation, "prod-1");
  std::optional<ParsedTag> legacy = ParseSubmissionTag(LegacySubmissionTag(id, 3));
  ASSERT_TRUE(legacy.has_value());
  EXPECT_EQ(legacy->installation, "");
  for (const char* other : {"slurmjob-operator:ns/u/1@", "slurmjob-operator:ns/u/1@a b",
                            "slurmjob-operator:ns/u/1@a/b", "slurmjob-operator:ns/u/@x"}) {
    EXPECT_FALSE(ParseSubmissionTag(other).has_value()) << other;
  }
  EXPECT_TRUE(ValidateInstallationId("3f2a9c1e-0b7d-4e55-9a63-1c2d3e4f5a6b").ok());
  EXPECT_FALSE(ValidateInstallationId("").ok());
  EXPECT_FALSE(ValidateInstallationId(std::string(64, 'a')).ok());
  EXPECT_FALSE(ValidateInstallationId("prod@eu").ok());
}

TEST(LifecycleTest, SubmitCarriesTheRunInItsTagAndStatusRecordsTheRun) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  TargetRecorded(&job.status);
  job.status.set_run(2);
  job.spec.set_run_id("b");
  Memo memo = Fresh(2);
  Decision d = Decide(job, Cluster(), {}, {}, memo, kT0);
  ASSERT_EQ(d.action, Action::kSubmit) << d.why;
  EXPECT_EQ(d.descriptor.comment, "slurmjob-operator:team-a/uid-1/2");
  Outcomes out;
  out.submit = int64_t{77};
  d = Decide(job, Cluster(), {}, out, memo, kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.job_id(), 77);
  EXPECT_EQ(d.status.run(), 2);
  EXPECT_EQ(d.status.run_id(), "b");
}

// --- failure policy --------------------------------------------------------------------------

struct PolicyCase {
  std::string state;
  int32_t exit_code;
  std::vector<v1alpha1::FailurePolicyRule> rules;
  int32_t retries;
  FailureVerdict::Kind want;
};

v1alpha1::FailurePolicyRule Rule(std::string action, std::vector<std::string> states,
                                 std::string op = "", std::vector<int32_t> codes = {}) {
  v1alpha1::FailurePolicyRule r;
  r.set_action(action);
  for (auto& s : states) r.add_on_job_states(s);
  if (!op.empty()) {
    r.mutable_on_exit_codes()->set_operator_(op);
    for (int32_t c : codes) r.mutable_on_exit_codes()->add_values(c);
  }
  return r;
}

TEST(FailurePolicyTest, Table) {
  using K = FailureVerdict::Kind;
  const std::vector<PolicyCase> cases = {
      // Defaults: NODE_FAIL, BOOT_FAIL, PREEMPTED retried; everything else fails.
      {"COMPLETED", 0, {}, 0, K::kSucceeded},
      {"NODE_FAIL", 1, {}, 0, K::kRetry},
      {"BOOT_FAIL", 1, {}, 0, K::kRetry},
      {"PREEMPTED", 0, {}, 2, K::kRetry},
      {"PREEMPTED", 0, {}, 3, K::kFail},  // backoffLimit 3 reached
      {"FAILED", 1, {}, 0, K::kFail},
      {"FAILED", 0, {}, 0, K::kFail},
      {"TIMEOUT", 0, {}, 0, K::kFail},
      {"OUT_OF_MEMORY", 0, {}, 0, K::kFail},
      {"CANCELLED", 0, {}, 0, K::kFail},
      {"DEADLINE", 0, {}, 0, K::kFail},
      // Rules: first match wins; criteria are ANDed.
      {"FAILED", 42, {Rule("Retry", {}, "In", {42, 43})}, 0, K::kRetry},
      {"FAILED", 1, {Rule("Retry", {}, "In", {42, 43})}, 0, K::kFail},
      {"FAILED", 1, {Rule("Retry", {"FAILED"}, "NotIn", {2})}, 0, K::kRetry},
      {"FAILED", 2, {Rule("Retry", {"FAILED"}, "NotIn", {2})}, 0, K::kFail},
      {"TIMEOUT", 0, {Rule("Retry", {"FAILED"}, "In", {0})}, 0, K::kFail},
      {"NODE_FAIL", 1, {Rule("FailJob", {"NODE_FAIL"}), Rule("Retry", {"NODE_FAIL"})}, 0, K::kFail},
      {"PREEMPTED", 0, {Rule("Ignore", {"PREEMPTED"})}, 100, K::kRetryUncounted},
      // With rules, the defaults no longer apply.
      {"NODE_FAIL", 1, {Rule("Retry", {"TIMEOUT"})}, 0, K::kFail},
      {"TIMEOUT", 0, {Rule("Retry", {"TIMEOUT"})}, 0, K::kRetry},
  };
  for (const PolicyCase& c : cases) {
    v1alpha1::SlurmJobSpec spec;
    spec.set_backoff_limit(3);
    for (const auto& r : c.rules) *spec.mutable_failure_policy()->add_rules() = r;
    v1alpha1::SlurmJobStatus st;
    st.set_job_state(c.state);
    st.set_exit_code(c.exit_code);
    st.set_retries(c.retries);
    FailureVerdict v = EvaluateFailurePolicy(spec, st);
    EXPECT_EQ(v.kind, c.want) << c.state << " exit " << c.exit_code << " rules " << c.rules.size()
                              << " retries " << c.retries << ": " << v.why;
  }
}

TEST(LifecycleTest, NodeFailStartsRunTwoInOneWriteWithTheFirstRunRecorded) {
  JobFacts job = Submitted();
  Decision d = Decide(job, Cluster(), {}, Queried(Ended(42, slurm::BaseState::kNodeFail, 1)),
                      Fresh(), kT0 + seconds(61));
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(d.status.run(), 2);
  EXPECT_EQ(d.status.retries(), 1);
  EXPECT_EQ(d.status.job_id(), 0);
  EXPECT_EQ(d.status.phase(), "Pending");
  ASSERT_EQ(d.status.runs_size(), 1);
  EXPECT_EQ(d.status.runs(0).run(), 1);
  EXPECT_EQ(d.status.runs(0).job_id(), 42);
  EXPECT_EQ(d.status.runs(0).job_state(), "NODE_FAIL");
  EXPECT_THAT(d.status.runs(0).message(), HasSubstr("Retried"));
  EXPECT_EQ(CondStatus(d.status, kReconciling), "True");
  EXPECT_EQ(CondStatus(d.status, kStalled), "False");
  EXPECT_EQ(CondStatus(d.status, kSubmitted), "False");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "Retrying");

  // The next step submits run 2 under its own tag, without a tag search:
  // this process started the run.
  JobFacts next = job;
  next.status = d.status;
  Memo memo = Fresh();
  Outcomes started;
  started.started_run = true;
  UpdateMemo(&memo, started, next, Cluster(), kT0 + seconds(61));
  EXPECT_EQ(memo.run, 2);
  // The new run records where its submit goes first (the last run's target was cleared).
  Decision target = Decide(next, Cluster(), {}, {}, memo, kT0 + seconds(61));
  ASSERT_EQ(target.action, Action::kWriteStatus) << target.why;
  ASSERT_TRUE(target.status.has_submit_target());
  next.status = target.status;
  Decision s = Decide(next, Cluster(), {}, {}, memo, kT0 + seconds(61));
  ASSERT_EQ(s.action, Action::kSubmit) << s.why;
  EXPECT_EQ(s.descriptor.comment, "slurmjob-operator:team-a/uid-1/2");
}

TEST(LifecycleTest, RunTwoAfterARestartSearchesForItsOwnTagFirst) {
  JobFacts job = Submitted();
  job.status = StatusForNewRun(job.status, "", 1, "Retried", "Retrying", "m", 1, kT0);
  Memo memo;  // a new process
  UpdateMemo(&memo, {}, job, Cluster(), kT0);
  Decision d = Decide(job, Cluster(), {}, {}, memo, kT0);
  EXPECT_EQ(d.action, Action::kFindByTag) << d.why;
}

TEST(LifecycleTest, BackoffLimitReachedFailsAndSaysWhy) {
  JobFacts job = Submitted();
  job.status.set_retries(3);
  Decision d = Decide(job, Cluster(), {}, Queried(Ended(42, slurm::BaseState::kPreempted)), Fresh(),
                      kT0 + seconds(61));
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.run(), 1);
  EXPECT_EQ(d.status.job_state(), "PREEMPTED");
  EXPECT_EQ(CondStatus(d.status, kStalled), "True");
  EXPECT_THAT(d.status.message(), HasSubstr("backoffLimit 3 is reached"));
}

TEST(LifecycleTest, ExitCodeFailureIsNotRetriedByDefault) {
  JobFacts job = Submitted();
  Decision d = Decide(job, Cluster(), {}, Queried(Ended(42, slurm::BaseState::kFailed, 3)), Fresh(),
                      kT0 + seconds(61));
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.job_state(), "FAILED");
  EXPECT_EQ(d.status.exit_code(), 3);
  EXPECT_EQ(d.status.run(), 1);
  EXPECT_THAT(d.status.message(), HasSubstr("Not retried"));
}

TEST(LifecycleTest, RunHistoryIsBounded) {
  v1alpha1::SlurmJobStatus s;
  s.set_job_id(1);
  for (int i = 0; i < kMaxRunHistory + 5; ++i) {
    s.set_job_id(100 + i);
    s.set_job_state("NODE_FAIL");
    s = StatusForNewRun(s, "", i + 1, "Retried", "Retrying", "m", 1, kT0);
  }
  EXPECT_EQ(s.runs_size(), kMaxRunHistory);
  EXPECT_EQ(s.runs(kMaxRunHistory - 1).job_id(), 100 + kMaxRunHistory + 4);  // newest last
  EXPECT_EQ(s.run(), kMaxRunHistory + 6);
}

// --- output paths (#14 item 5) -------------------------------------------------------------------

slurm::JobInfo WithOutput(slurm::JobInfo j, std::string out, std::string err) {
  j.standard_output = std::move(out);
  j.standard_error = std::move(err);
  return j;
}

TEST(OutputPathsTest, StatusShowsWhereTheRunningJobWrites) {
  slurm::JobInfo running =
      WithOutput(Ended(42, slurm::BaseState::kRunning), "/w/train-42.out", "/w/train-42.err");
  running.end_time.reset();
  v1alpha1::SlurmJobStatus s = StatusFromJobInfo(Submitted().status, running, 1, kT0, nullptr);
  EXPECT_EQ(s.standard_output(), "/w/train-42.out");
  EXPECT_EQ(s.standard_error(), "/w/train-42.err");
  // A record that cannot tell (accounting, or a %N before the start) keeps what was shown.
  v1alpha1::SlurmJobStatus later =
      StatusFromJobInfo(s, Ended(42, slurm::BaseState::kCompleted), 1, kT0, nullptr);
  EXPECT_EQ(later.standard_output(), "/w/train-42.out");
  EXPECT_EQ(later.standard_error(), "/w/train-42.err");
}

TEST(OutputPathsTest, AFailedRunNamesItsOutputInTheMessageConditionAndEvent) {
  JobFacts job = Submitted();
  Decision d = Decide(
      job, Cluster(), {},
      Queried(WithOutput(Ended(42, slurm::BaseState::kFailed, 3), "/w/o-42.out", "/w/o-42.out")),
      Fresh(), kT0 + seconds(61));
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  const std::string hint = "Its output is in /w/o-42.out on the cluster.";
  EXPECT_THAT(d.status.message(), HasSubstr(hint));
  const v1alpha1::Condition* failed = FindCondition(d.status.conditions(), kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_THAT(failed->message(), HasSubstr(hint));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "Failed");
  EXPECT_THAT(d.events[0].note, HasSubstr(hint));
}

TEST(OutputPathsTest, DifferentFilesAreBothNamedAndASuccessNamesNone) {
  v1alpha1::SlurmJobStatus failed = StatusFromJobInfo(
      Submitted().status, WithOutput(Ended(42, slurm::BaseState::kTimeout), "/w/o", "/w/e"), 1, kT0,
      nullptr);
  EXPECT_THAT(failed.message(),
              HasSubstr("Its standard output is in /w/o and its standard error in /w/e on the "
                        "cluster."));
  v1alpha1::SlurmJobStatus ok = StatusFromJobInfo(
      Submitted().status, WithOutput(Ended(42, slurm::BaseState::kCompleted), "/w/o", "/w/e"), 1,
      kT0, nullptr);
  EXPECT_EQ(ok.standard_output(), "/w/o");
  EXPECT_THAT(ok.message(), Not(HasSubstr("/w/o")));
  v1alpha1::SlurmJobStatus unknown = StatusFromJobInfo(
      Submitted().status, Ended(42, slurm::BaseState::kFailed, 1), 1, kT0, nullptr);
  EXPECT_THAT(unknown.message(), Not(HasSubstr("on the cluster")));
}

TEST(OutputPathsTest, ARetryKeepsTheFailedRunsPathsInItsRecordAndItsEvent) {
  JobFacts job = Submitted();
  Decision d = Decide(
      job, Cluster(), {},
      Queried(WithOutput(Ended(42, slurm::BaseState::kNodeFail), "/w/o-42.out", "/w/o-42.out")),
      Fresh(), kT0 + seconds(61));
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(d.status.run(), 2);
  ASSERT_EQ(d.status.runs_size(), 1);
  EXPECT_EQ(d.status.runs(0).standard_output(), "/w/o-42.out");
  EXPECT_EQ(d.status.runs(0).standard_error(), "/w/o-42.out");
  EXPECT_EQ(d.status.standard_output(), "") << "run 2 has no job yet";
  EXPECT_EQ(d.status.standard_error(), "");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "Retrying");
  EXPECT_THAT(d.events[0].note, HasSubstr("/w/o-42.out"));
}

TEST(OutputPathsTest, ANewJobIdClearsTheLastJobsPaths) {
  v1alpha1::SlurmJobStatus s = Submitted().status;
  s.set_standard_output("/w/old");
  s.set_standard_error("/w/old");
  s = StatusAfterSubmit(s, 43, "a3", false, 1, kT0, nullptr);
  EXPECT_EQ(s.standard_output(), "");
  EXPECT_EQ(s.standard_error(), "");
}

// --- runId -------------------------------------------------------------------------------------

TEST(LifecycleTest, RunIdChangeOnAFinishedJobStartsANewRun) {
  JobFacts job = Submitted();
  job.status =
      StatusFromJobInfo(job.status, Ended(42, slurm::BaseState::kCompleted), 1, kT0, nullptr);
  job.spec.set_run_id("second");
  Decision d = Decide(job, Cluster(), {}, {}, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(d.status.run(), 2);
  EXPECT_EQ(d.status.run_id(), "second");
  EXPECT_EQ(d.status.retries(), 0);
  ASSERT_EQ(d.status.runs_size(), 1);
  EXPECT_EQ(d.status.runs(0).job_state(), "COMPLETED");
  EXPECT_THAT(d.status.runs(0).message(), HasSubstr("Superseded"));
}

TEST(LifecycleTest, RunIdChangeOnAnActiveJobCancelsItFirst) {
  JobFacts job = Submitted();
  job.spec.set_run_id("second");
  // A look first: only a job found ours is cancelled (#13 L1).
  Decision d = Decide(job, Cluster(), {}, {}, Fresh(), kT0 + seconds(10));
  ASSERT_EQ(d.action, Action::kQuery) << d.why;
  slurm::JobInfo running = Ended(42, slurm::BaseState::kRunning);
  running.end_time.reset();
  d = Decide(job, Cluster(), {}, Queried(running), Fresh(), kT0 + seconds(10));
  ASSERT_EQ(d.action, Action::kCancel) << d.why;
  EXPECT_EQ(d.job_id, 42);
  // Once Slurm says it ended (cancelled), the new run starts; no retry counted.
  Outcomes out = Queried(Ended(42, slurm::BaseState::kCancelled));
  out.cancel = slurm::CancelResponse{};
  d = Decide(job, Cluster(), {}, out, Fresh(), kT0 + seconds(11));
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.run(), 2);
  EXPECT_EQ(d.status.run_id(), "second");
  EXPECT_EQ(d.status.runs(0).job_state(), "CANCELLED");
}

// --- suspend -----------------------------------------------------------------------------------

TEST(LifecycleTest, SuspendedJobIsNotSubmittedUntilCleared) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  TargetRecorded(&job.status);
  job.spec.set_suspend(true);
  Decision d = Decide(job, Cluster(), {}, {}, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(d.status.reason(), "Suspended");
  EXPECT_EQ(CondStatus(d.status, kReconciling), "False");
  EXPECT_EQ(CondStatus(d.status, kStalled), "False");
  job.status = d.status;
  d = Decide(job, Cluster(), {}, {}, Fresh(), kT0);
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_FALSE(d.requeue_after.has_value());
  job.spec.set_suspend(false);
  d = Decide(job, Cluster(), {}, {}, Fresh(), kT0);
  EXPECT_EQ(d.action, Action::kSubmit);
}

TEST(LifecycleTest, SuspendHoldsAPendingJobAndClearingReleasesIt) {
  JobFacts job = Submitted();
  job.spec.set_suspend(true);
  slurm::JobInfo pending;
  pending.job_id = 42;
  pending.state = slurm::BaseState::kPending;
  pending.submit_time = kT0;
  pending.comment = fixtures::TagOfRun(1);
  Decision d = Decide(job, Cluster(), {}, Queried(pending), Fresh(), kT0 + seconds(5));
  ASSERT_EQ(d.action, Action::kUpdateJob) << d.why;
  ASSERT_TRUE(d.update.hold.has_value());
  EXPECT_TRUE(*d.update.hold);
  Outcomes out = Queried(pending);
  out.update = slurm::UpdateResponse{};
  d = Decide(job, Cluster(), {}, out, Fresh(), kT0 + seconds(5));
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_TRUE(d.status.held());

  job.status = d.status;
  job.spec.set_suspend(false);
  pending.state_reason = "JobHeldUser";
  d = Decide(job, Cluster(), {}, Queried(pending), Fresh(), kT0 + seconds(9));
  ASSERT_EQ(d.action, Action::kUpdateJob);
  EXPECT_FALSE(*d.update.hold);
  // "hold": false in every version (it releases on 22.05's v0.0.38 too,
  // which refuses the INFINITE priority that scontrol sends); v0.0.39 also
  // sends it wrapped, for 23.02.0/1 (wire_format.h UpdateFormat).
  for (const std::string& v : slurm::SupportedVersions()) {
    json want = {{"hold", false}};
    if (v == "v0.0.39") want["job"] = {{"hold", false}};
    EXPECT_EQ(*(*slurm::DialectFor(v))->RenderUpdate(d.update), want) << v;
  }
  // Slurm's answers: 2084 (finished meanwhile) settles it; 2017 too.
  const slurm::Dialect& v38 = **slurm::DialectFor("v0.0.38");
  auto finished = v38.ParseUpdate(
      200, json::parse(R"({"errors": [{"error_number": 2084, "error": "Job has already finished",
                                        "description": "job update failed"}]})"));
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_TRUE(finished->already_finished);
  auto refused = v38.ParseUpdate(
      200, json::parse(R"({"errors": [{"error_number": -1, "error": "Priority too large"}]})"));
  EXPECT_FALSE(refused.ok());
}

// --- dependencies --------------------------------------------------------------------------------

DependencyFacts Dep(std::string name, std::string cond, bool found, int64_t id,
                    std::string state = "") {
  return {std::move(name), std::move(cond), found, id, std::move(state)};
}

TEST(DependenciesTest, PlanGroupsByConditionAndSkipsWhatIsAlreadyMet) {
  DependencyPlan p = PlanDependencies(
      {Dep("a", "afterok", true, 12, "RUNNING"), Dep("b", "afterok", true, 13, "PENDING"),
       Dep("c", "afterany", true, 14, "FAILED"), Dep("d", "afterany", true, 15, "RUNNING"),
       Dep("e", "afternotok", true, 16, "PENDING")});
  EXPECT_EQ(p.expression, "afterok:12:13,afterany:15,afternotok:16");
  EXPECT_TRUE(p.waiting_for.empty());
  EXPECT_TRUE(p.impossible.empty());

  p = PlanDependencies({Dep("a", "afterok", false, 0), Dep("b", "afterok", true, 0)});
  EXPECT_THAT(p.waiting_for, HasSubstr("\"a\" (it does not exist yet)"));
  EXPECT_THAT(p.waiting_for, HasSubstr("\"b\" (not submitted yet)"));

  p = PlanDependencies({Dep("a", "afterok", true, 12, "FAILED")});
  EXPECT_THAT(p.impossible, HasSubstr("\"a\" ended FAILED"));
  p = PlanDependencies({Dep("a", "afternotok", true, 12, "COMPLETED")});
  EXPECT_FALSE(p.impossible.empty());
  p = PlanDependencies({Dep("a", "afterok", true, 12, "COMPLETED")});
  EXPECT_EQ(p.expression, "");
}

TEST(DependenciesTest, WaitsThenSubmitsWithSlurmsOwnDependency) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  TargetRecorded(&job.status);
  job.spec.add_depends_on()->set_name("prep");
  job.dependencies = {Dep("prep", "afterok", true, 0)};
  Decision d = Decide(job, Cluster(), {}, {}, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(d.status.reason(), "WaitingForDependencies");
  EXPECT_THAT(d.status.message(), HasSubstr("prep"));
  job.status = d.status;
  job.dependencies = {Dep("prep", "afterok", true, 12, "RUNNING")};
  d = Decide(job, Cluster(), {}, {}, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kSubmit);
  EXPECT_EQ(d.descriptor.dependency, "afterok:12");
  auto body = (*slurm::DialectFor("v0.0.38"))->RenderSubmit(d.descriptor);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ((*body)["job"]["dependency"], "afterok:12");

  job.dependencies = {Dep("prep", "afterok", true, 12, "FAILED")};
  d = Decide(job, Cluster(), {}, {}, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(CondStatus(d.status, kStalled), "True");
  EXPECT_EQ(FindCondition(d.status.conditions(), kStalled)->reason(), "DependencyNeverSatisfied");
}

// --- deletionPolicy Orphan
// -------------------------------------------------------------------------

TEST(LifecycleTest, OrphanPolicyDisownsTheJobBeforeReleasing) {
  JobFacts job = Submitted();
  job.deleting = true;
  job.spec.set_deletion_policy("Orphan");
  Decision d = Decide(job, Cluster(), {}, {}, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kUpdateJob) << d.why;
  ASSERT_TRUE(d.update.comment.has_value());
  EXPECT_EQ(*d.update.comment, "slurmjob-operator-orphaned:team-a/uid-1/1");
  Outcomes out;
  out.update = slurm::UpdateResponse{};
  d = Decide(job, Cluster(), {}, out, Fresh(), kT0);
  EXPECT_EQ(d.action, Action::kRemoveFinalizer);
  out.update = absl::UnavailableError("down");
  d = Decide(job, Cluster(), {}, out, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus) << "the status says the re-tag failed";
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "OrphanFailed");
  job.status = d.status;
  d = Decide(job, Cluster(), {}, out, Fresh(), kT0);
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_TRUE(d.retry_with_backoff);
}

// --- every state and flag, every version, through to the status ------------------------------

TEST(StateToStatusTable, EveryStateAndFlagInEveryVersion) {
  const std::vector<std::string> flags = {
      "",          "REQUEUED",  "COMPLETING",   "CONFIGURING",  "RESIZING",
      "STAGE_OUT", "SIGNALING", "SPECIAL_EXIT", "LAUNCH_FAILED"};
  int checked = 0;
  for (const std::string& version : slurm::SupportedVersions()) {
    const slurm::Dialect& dialect = **slurm::DialectFor(version);
    const bool legacy = version == "v0.0.38" || version == "v0.0.39";
    for (slurm::BaseState base : slurm::AllKnownBaseStates()) {
      const std::string name(slurm::BaseStateName(base));
      for (const std::string& flag : flags) {
        json state = legacy ? (flag.empty() ? json(name) : json(flag))
                            : (flag.empty() ? json::array({name}) : json::array({name, flag}));
        json body = {
            {"jobs", {{{"job_id", 42}, {"job_state", state}, {"submit_time", 1700000000}}}},
            {"errors", json::array()}};
        absl::StatusOr<slurm::JobLookup> got = dialect.ParseJob(200, body, 42);
        ASSERT_TRUE(got.ok() && got->job) << version << " " << name << "+" << flag;
        JobFacts job = Submitted();
        v1alpha1::SlurmJobStatus s =
            StatusFromJobInfo(job.status, *got->job, 1, kT0 + seconds(1), nullptr);
        const std::string where = version + " " + name + "+" + flag;
        const bool final = got->job->IsFinal();
        // A state is only final when Slurm says the job is done (no COMPLETING);
        // phases match the base state.
        if (final) {
          EXPECT_EQ(s.job_state(), name) << where;
          const std::string want_phase = name == "COMPLETED"   ? "Succeeded"
                                         : name == "CANCELLED" ? "Cancelled"
                                                               : "Failed";
          EXPECT_EQ(s.phase(), want_phase) << where;
          EXPECT_EQ(CondStatus(s, kReady), name == "COMPLETED" ? "True" : "False") << where;
          EXPECT_EQ(CondStatus(s, kStalled), name == "COMPLETED" ? "False" : "True") << where;
          EXPECT_EQ(CondStatus(s, kReconciling), "False") << where;
          EXPECT_EQ(CondStatus(s, name == "COMPLETED" ? kSucceeded : kFailed), "True") << where;
          const FailureVerdict v = EvaluateFailurePolicy(job.spec, s);
          const bool retried = name == "NODE_FAIL" || name == "BOOT_FAIL" || name == "PREEMPTED";
          EXPECT_EQ(v.kind, name == "COMPLETED" ? FailureVerdict::Kind::kSucceeded
                            : retried           ? FailureVerdict::Kind::kRetry
                                                : FailureVerdict::Kind::kFail)
              << where;
        } else {
          EXPECT_FALSE(IsFinalJobState(s.job_state())) << where << " shows " << s.job_state();
          EXPECT_NE(s.phase(), "Succeeded") << where;
          EXPECT_NE(s.phase(), "Failed") << where;
          EXPECT_EQ(CondStatus(s, kReconciling), "True") << where;
          EXPECT_EQ(CondStatus(s, kReady), "False") << where;
          if (flag == "COMPLETING" && slurm::IsTerminalState(base)) {
            EXPECT_EQ(s.job_state(), "COMPLETING") << where;
          }
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 7 * 12 * 9);
}

}  // namespace
}  // namespace slurmop::reconcile
