// File: tests/reconcile/decide_test.cc
//
// The reconciler's decisions, branch by branch, with plain values and an
// injected time: no I/O anywhere.

#include "controller/reconcile/decide.h"

#include <chrono>
#include <limits>

#include "controller/common/bounded_text.h"
#include "controller/reconcile/conditions.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/reconcile/decide_fixtures.h"

namespace slurmop::reconcile {
namespace {

using fixtures::Cluster;
using fixtures::kT0;
using fixtures::NewJob;
using fixtures::TargetRecorded;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Pair;

slurm::JobInfo Info(int64_t id, slurm::BaseState state) {
  slurm::JobInfo j;
  j.job_id = id;
  j.state = state;
  j.submit_time = kT0;
  j.comment = fixtures::TagOfRun(1);
  return j;
}

// A SlurmJob that was submitted as job 42 at kT0.
JobFacts Submitted() {
  JobFacts f = NewJob();
  f.has_finalizer = true;
  f.status = StatusAfterSubmit(f.status, 42, "a3", false, 1, kT0, nullptr);
  fixtures::SubmittedToCluster(&f.status);
  return f;
}

// The memo of a process that added the finalizer itself: no earlier submit.
// Options of a process (or leader) that started at `t`.
DecideOptions StartedAt(Time t) {
  DecideOptions opt;
  opt.process_start = t;
  return opt;
}

// An empty memo of the SlurmJob with `uid`.
Memo MemoOf(const std::string& uid) {
  Memo memo;
  memo.uid = uid;
  return memo;
}

// A tag search that found nothing in a list sent at `listed_at`.
Outcomes FoundNothingIn(Time listed_at) {
  Outcomes out;
  out.tag_lookup = std::optional<int64_t>();
  out.tag_lookup_at = listed_at;
  return out;
}

Memo Fresh() {
  Memo m;
  m.uid = "uid-1";
  m.no_earlier_submit = true;
  return m;
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

// ---------------------------------------------------------------- submission

TEST(DecideSubmit, AddsFinalizerBeforeSubmitting) {
  Decision d = Decide(NewJob(), Cluster(), {}, {}, {}, kT0);
  EXPECT_EQ(d.action, Action::kAddFinalizer);
}

TEST(DecideSubmit, SubmitsWithClusterDefaultsAndTag) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  TargetRecorded(&job.status);
  Decision d = Decide(job, Cluster(), {}, {}, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kSubmit);
  EXPECT_EQ(d.api_version, "v0.0.42");
  EXPECT_EQ(d.descriptor.partition, "gpu");
  EXPECT_EQ(d.descriptor.name, "train");
  EXPECT_EQ(d.descriptor.comment, "slurmjob-operator:team-a/uid-1/1");
  EXPECT_EQ(d.descriptor.current_working_directory, "/tmp");
  ASSERT_FALSE(d.descriptor.environment.empty());
  EXPECT_THAT(d.descriptor.environment[0], Pair("PATH", kDefaultPath));
}

TEST(DecideSubmit, RecordsTheJobIdAfterASuccessfulSubmit) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  Outcomes out;
  out.submit = int64_t{42};
  Decision d = Decide(job, Cluster(), {}, out, {}, kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.job_id(), 42);
  EXPECT_EQ(d.status.job_state(), "PENDING");
  EXPECT_EQ(d.status.phase(), "Pending");
  EXPECT_EQ(d.status.cluster(), "a3");
  EXPECT_EQ(d.status.observed_generation(), 1);
  EXPECT_EQ(Cond(d.status, kSubmitted).status(), "True");
  EXPECT_EQ(Cond(d.status, kReconciling).status(), "True");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "Submitted");
  EXPECT_THAT(d.events[0].note, HasSubstr("Slurm job 42"));
}

TEST(DecideSubmit, AJobIdInTheMemoIsRecordedNeverResubmitted) {
  // The submit succeeded in an earlier reconcile but the status write failed.
  JobFacts job = NewJob();
  job.has_finalizer = true;
  Memo memo;
  memo.uid = "uid-1";
  memo.submitted_job_id = 77;
  Decision d = Decide(job, Cluster(), {}, {}, memo, kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.job_id(), 77);
}

TEST(DecideSubmit, AStaleCacheAfterOurOwnStatusWriteNeverResubmits) {
  // Reconcile 1 submitted job 42 and recorded it; reconcile 2 starts from an
  // informer cache that has not seen that write yet (no jobId).
  JobFacts job = NewJob();
  job.has_finalizer = true;
  Memo memo = Fresh();
  Outcomes out;
  out.submit = int64_t{42};
  UpdateMemo(&memo, out, job, Cluster(), kT0);
  JobFacts recorded = job;
  recorded.status = StatusAfterSubmit(job.status, 42, "a3", false, 1, kT0, nullptr);
  UpdateMemo(&memo, {}, recorded, Cluster(), kT0);
  Decision d = Decide(job, Cluster(), {}, {}, memo, kT0 + seconds(1));
  ASSERT_EQ(d.action, Action::kWriteStatus) << "must not submit again";
  EXPECT_EQ(d.status.job_id(), 42);
}

TEST(DecideSubmit, RejectionStallsWithTheSlurmMessageAndNoRetry) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  Outcomes out;
  out.submit = absl::FailedPreconditionError("Invalid partition name specified (error 2000)");
  Decision d = Decide(job, Cluster(), {}, out, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(Cond(d.status, kStalled).status(), "True");
  EXPECT_EQ(Cond(d.status, kStalled).reason(), "SubmitRejected");
  EXPECT_THAT(d.status.message(), HasSubstr("Invalid partition name"));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].type, "Warning");

  // Once written, the same facts stop without a requeue: the spec must change.
  job.status = d.status;
  Decision again = Decide(job, Cluster(), {}, out, Fresh(), kT0 + seconds(1));
  EXPECT_EQ(again.action, Action::kNone);
  EXPECT_FALSE(again.requeue_after.has_value());
  EXPECT_FALSE(again.retry_with_backoff);
}

TEST(DecideSubmit, ARejectedSpecIsNotSentAgainUntilSpecOrClusterChanges) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  TargetRecorded(&job.status);
  Memo memo = Fresh();
  Outcomes out;
  out.submit = absl::FailedPreconditionError("Invalid partition name specified (error 2000)");
  UpdateMemo(&memo, out, job, Cluster(), kT0);
  Decision d = Decide(job, Cluster(), {}, out, memo, kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  job.status = d.status;

  // Woken by our own status write, or later by anything: no second submit.
  Decision again = Decide(job, Cluster(), {}, {}, memo, kT0 + std::chrono::hours(1));
  EXPECT_EQ(again.action, Action::kNone);
  EXPECT_FALSE(again.requeue_after.has_value());
  // A restarted process (empty memo) reads the same from the status.
  Memo restarted;
  restarted.uid = "uid-1";
  restarted.no_earlier_submit = true;
  EXPECT_EQ(Decide(job, Cluster(), {}, {}, restarted, kT0).action, Action::kNone);

  // The user fixes the SlurmCluster (e.g. its defaultPartition): submit again, once the status
  // no longer says this generation was rejected (a restart would not look for the job).
  ClusterFacts edited = Cluster();
  edited.generation = 2;
  Decision retry = Decide(job, edited, {}, {}, memo, kT0);
  ASSERT_EQ(retry.action, Action::kWriteStatus);
  EXPECT_EQ(FindCondition(retry.status.conditions(), kStalled)->reason(), "Resubmitting");
  JobFacts retrying = job;
  retrying.status = retry.status;
  EXPECT_EQ(Decide(retrying, edited, {}, {}, memo, kT0).action, Action::kSubmit);
  // Or edits the SlurmJob's spec.
  job.generation = 2;
  EXPECT_EQ(Decide(job, Cluster(), {}, {}, memo, kT0).action, Action::kSubmit);
}

TEST(DecideSubmit, AgentPlatformRefusalsNeverReachedSlurm) {
  EXPECT_FALSE(SubmitMayHaveReachedSlurm(absl::PermissionDeniedError("x"), true));
  EXPECT_FALSE(SubmitMayHaveReachedSlurm(absl::NotFoundError("x"), true));
  EXPECT_FALSE(SubmitMayHaveReachedSlurm(absl::InvalidArgumentError("x"), true));
  EXPECT_FALSE(SubmitMayHaveReachedSlurm(absl::ResourceExhaustedError("x"), true));
  EXPECT_TRUE(SubmitMayHaveReachedSlurm(absl::UnavailableError("x"), true));
  EXPECT_TRUE(SubmitMayHaveReachedSlurm(absl::DeadlineExceededError("x"), true));
  EXPECT_FALSE(SubmitMayHaveReachedSlurm(absl::UnavailableError("refused"), false));
}

TEST(DecideSubmit, PermissionDeniedSaysWhichRoleAndRetriesSlowly) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  TargetRecorded(&job.status);
  Outcomes out;
  out.submit = absl::PermissionDeniedError("Agent Platform: caller lacks permission");
  Decision d = Decide(job, Cluster(), {}, out, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(Cond(d.status, kStalled).reason(), "PermissionDenied");
  EXPECT_THAT(d.status.message(), HasSubstr("roles/aiplatform.user"));
  job.status = d.status;
  Decision again = Decide(job, Cluster(), {}, out, Fresh(), kT0);
  EXPECT_EQ(again.action, Action::kNone);
  ASSERT_TRUE(again.requeue_after.has_value());
  EXPECT_EQ(*again.requeue_after, DecideOptions{}.permission_retry);

  // Next reconciles: no submit until the retry time, then one.
  Memo memo = Fresh();
  UpdateMemo(&memo, out, job, Cluster(), kT0);
  Decision soon = Decide(job, Cluster(), {}, {}, memo, kT0 + std::chrono::minutes(1));
  EXPECT_EQ(soon.action, Action::kNone);
  ASSERT_TRUE(soon.requeue_after.has_value());
  EXPECT_EQ(*soon.requeue_after, std::chrono::minutes(4));
  EXPECT_EQ(Decide(job, Cluster(), {}, {}, memo, kT0 + std::chrono::minutes(5)).action,
            Action::kSubmit);
}

// Only a failure that cannot have reached Slurm (nothing was sent: connection
// refused) is retried as a plain submit. Slurm's own 502/503/504, its
// communication errors and a 2xx without job_id may have queued the job: the
// executor marks them submit_may_have_been_delivered
// (slurm::ClassifySubmitFailure), which leads to a tag search
// (UnknownOutcomeLeadsToATagSearchNotASecondSubmit below).
TEST(DecideSubmit, TransientFailureThatNeverReachedSlurmRetriesWithBackoff) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  Outcomes out;
  out.submit = absl::UnavailableError("connection refused");
  out.submit_may_have_been_delivered = false;
  Decision d = Decide(job, Cluster(), {}, out, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(Cond(d.status, kReconciling).reason(), "SubmitRetrying");
  job.status = d.status;
  Decision again = Decide(job, Cluster(), {}, out, Fresh(), kT0);
  EXPECT_EQ(again.action, Action::kNone);
  EXPECT_TRUE(again.retry_with_backoff);
}

// A submit the project's call budget held back was never sent: it waits for
// the budget's delay, with one stable condition and Event (not a write and
// a Warning per retry) and without the per-key backoff (#16 item 3).
TEST(DecideSubmit, ASubmitHeldBackByTheCallBudgetWaitsForItsRoomWithoutBackoff) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  Outcomes out;
  out.submit = absl::UnavailableError("budget spent; retry in 250 ms");
  out.submit_held_back = std::chrono::milliseconds(250);
  Decision d = Decide(job, Cluster(), {}, out, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(Cond(d.status, kReconciling).reason(), "WaitingForCallBudget");
  EXPECT_THAT(Cond(d.status, kReconciling).message(),
              HasSubstr("--agent-platform-requests-per-minute"));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].type, kNormal);
  job.status = d.status;
  out.submit = absl::UnavailableError("budget spent; retry in 120 ms");
  out.submit_held_back = std::chrono::milliseconds(120);
  Decision again = Decide(job, Cluster(), {}, out, Fresh(), kT0 + seconds(1));
  EXPECT_EQ(again.action, Action::kNone) << "the same condition: nothing to write";
  EXPECT_FALSE(again.retry_with_backoff);
  EXPECT_EQ(again.requeue_after, Duration(std::chrono::milliseconds(120)));
}

// A submit not sent because its cluster did not answer lately (silent_clusters.h): the
// condition names the cluster's trouble, not the budget, and the retry waits the hold, not a
// growing backoff.
TEST(DecideSubmit, ASubmitHeldBackWhileItsClusterIsSilentSaysSoAndWaitsTheHold) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  Outcomes out;
  const std::string why = "Agent Platform: cluster c1 did not answer in time; ...";
  out.submit = absl::UnavailableError(why);
  out.submit_held_back = std::chrono::seconds(5);
  out.submit_held_back_why = why;
  Decision d = Decide(job, Cluster(), {}, out, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(Cond(d.status, kReconciling).reason(), "ClusterNotAnswering");
  EXPECT_THAT(Cond(d.status, kReconciling).message(), HasSubstr("did not answer in time"));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].type, kWarning);
  EXPECT_FALSE(d.retry_with_backoff);
  job.status = d.status;
  out.submit_held_back = std::chrono::seconds(3);
  Decision again = Decide(job, Cluster(), {}, out, Fresh(), kT0 + seconds(2));
  EXPECT_EQ(again.action, Action::kNone) << "the same condition: nothing to write";
  EXPECT_EQ(again.requeue_after, Duration(std::chrono::seconds(3)));
}

TEST(DecideSubmit, UnknownOutcomeLeadsToATagSearchNotASecondSubmit) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  Outcomes out;
  out.submit = absl::DeadlineExceededError("timed out after sending");
  out.submit_may_have_been_delivered = true;
  Memo memo;
  UpdateMemo(&memo, out, job, Cluster(), kT0);
  EXPECT_TRUE(memo.submit_outcome_unknown);

  // Next reconcile: fresh outcomes, the memo remembers.
  Decision d = Decide(job, Cluster(), {}, {}, memo, kT0 + seconds(1));
  EXPECT_EQ(d.action, Action::kFindByTag);
}

TEST(DecideSubmit, TagFoundIsAdoptedAlsoWhenRecordedFromTheMemo) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  Memo memo;
  memo.uid = "uid-1";
  memo.submit_outcome_unknown = true;
  Outcomes out;
  out.tag_lookup = std::optional<int64_t>(55);
  UpdateMemo(&memo, out, job, Cluster(), kT0);  // as the executor does before deciding
  Decision d = Decide(job, Cluster(), {}, out, memo, kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.job_id(), 55);
  EXPECT_EQ(Cond(d.status, kSubmitted).reason(), "Adopted");
}

TEST(DecideSubmit, TagFoundIsAdopted) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  Memo memo;
  memo.uid = "uid-1";
  memo.submit_outcome_unknown = true;
  Outcomes out;
  out.tag_lookup = std::optional<int64_t>(55);
  Decision d = Decide(job, Cluster(), {}, out, memo, kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.job_id(), 55);
  EXPECT_EQ(Cond(d.status, kSubmitted).reason(), "Adopted");
}

TEST(DecideSubmit, AFinalizerLeftByAnEarlierProcessIsSearchedFirst) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  EXPECT_EQ(Decide(job, Cluster(), {}, {}, {}, kT0).action, Action::kFindByTag);
}

TEST(DecideSubmit, AddingTheFinalizerOurselvesMeansNoEarlierSubmit) {
  JobFacts job = NewJob();
  Memo memo;
  Outcomes out;
  out.added_finalizer = true;
  UpdateMemo(&memo, out, job, Cluster(), kT0);
  job.has_finalizer = true;
  // No search: the next step records where the submit goes, then sends it.
  const Decision d = Decide(job, Cluster(), {}, out, memo, kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_TRUE(d.status.has_submit_target());
  job.status = d.status;
  EXPECT_EQ(Decide(job, Cluster(), {}, out, memo, kT0).action, Action::kSubmit);
}

TEST(DecideSubmit, TagNotFoundSubmits) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  TargetRecorded(&job.status);
  Memo memo;
  memo.uid = "uid-1";
  memo.submit_outcome_unknown = true;
  Outcomes out;
  out.tag_lookup = std::optional<int64_t>();
  out.tag_lookup_at = kT0;  // long after any submit could have been in flight
  UpdateMemo(&memo, out, job, Cluster(), kT0);
  EXPECT_FALSE(memo.submit_outcome_unknown);
  Decision d = Decide(job, Cluster(), {}, out, memo, kT0);
  EXPECT_EQ(d.action, Action::kSubmit);
}

// A submit sent at kT0 whose answer was lost may still land in Slurm after a
// search that finds nothing: no second submit until the settle window is
// over and a search made after it finds nothing too.
TEST(DecideSubmit, TagNotFoundWhileASubmitMayBeInFlightWaitsThenSearchesAgain) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  TargetRecorded(&job.status);
  Memo memo = Fresh();
  DecideOptions opt;
  opt.process_start = kT0 - seconds(3600);
  Outcomes out;
  out.submit = absl::DeadlineExceededError("timed out after 30 s");
  out.submit_may_have_been_delivered = true;
  out.submit_sent_at = kT0;
  const Time t1 = kT0 + seconds(30);
  UpdateMemo(&memo, out, job, Cluster(), t1, opt);
  Decision d = Decide(job, Cluster(), {}, out, memo, t1, opt);
  ASSERT_EQ(d.action, Action::kFindByTag) << d.why;
  out.tag_lookup = std::optional<int64_t>();
  out.tag_lookup_at = t1;
  UpdateMemo(&memo, out, job, Cluster(), t1, opt);
  EXPECT_TRUE(memo.submit_outcome_unknown);
  d = Decide(job, Cluster(), {}, out, memo, t1, opt);
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_THAT(d.status.message(),
              HasSubstr("once no submit can still be in flight (60 s after it was sent)"));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "SubmitOutcomeUnknown");
  job.status = d.status;
  d = Decide(job, Cluster(), {}, out, memo, t1, opt);
  EXPECT_EQ(d.action, Action::kNone);
  ASSERT_TRUE(d.requeue_after.has_value());
  EXPECT_EQ(*d.requeue_after, seconds(31));

  // A reconcile inside the window neither searches nor submits (nor rewrites the status).
  d = Decide(job, Cluster(), {}, {}, memo, kT0 + seconds(45), opt);
  EXPECT_EQ(d.action, Action::kNone) << d.why;
  EXPECT_EQ(*d.requeue_after, seconds(16));
  // After it: search again; nothing found now means nothing was submitted.
  const Time t2 = kT0 + seconds(61);
  d = Decide(job, Cluster(), {}, {}, memo, t2, opt);
  ASSERT_EQ(d.action, Action::kFindByTag) << d.why;
  Outcomes later;
  later.tag_lookup = std::optional<int64_t>();
  later.tag_lookup_at = t2;
  UpdateMemo(&memo, later, job, Cluster(), t2, opt);
  d = Decide(job, Cluster(), {}, later, memo, t2, opt);
  EXPECT_EQ(d.action, Action::kSubmit) << d.why;
}

// After a restart, a SlurmJob with our finalizer but no jobId may have a
// submit of the previous process still in flight: found -> adopted at once;
// not found -> looked for again once the window after the restart is over.
TEST(DecideSubmit, AfterARestartNotFoundIsConclusiveOnlyAfterTheWindow) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  const DecideOptions opt = StartedAt(kT0);
  Memo memo = MemoOf("uid-1");
  const Outcomes out = FoundNothingIn(kT0 + seconds(1));
  UpdateMemo(&memo, out, job, Cluster(), kT0 + seconds(1), opt);
  Decision d = Decide(job, Cluster(), {}, out, memo, kT0 + seconds(1), opt);
  EXPECT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_NE(d.action, Action::kSubmit);
  Outcomes found;
  found.tag_lookup = std::optional<int64_t>(77);
  found.tag_lookup_at = kT0 + seconds(2);
  Memo m2;
  m2.uid = "uid-1";
  UpdateMemo(&m2, found, job, Cluster(), kT0 + seconds(2), opt);
  d = Decide(job, Cluster(), {}, found, m2, kT0 + seconds(2), opt);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.job_id(), 77);
}

// A tag search says how old a shared list of the cluster's queue may be
// (#13 item 11): after the settle window any list sent after its end proves
// as much as a fresh one (and one sent before it would never prove anything);
// inside it, our own unknown submit wants a list sent now, an earlier
// process's any list since this process's window began.
TEST(DecideSubmit, ATagSearchSaysHowOldASharedListMayBe) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  const DecideOptions opt = StartedAt(kT0);
  Memo memo = MemoOf("uid-1");
  Decision d = Decide(job, Cluster(), {}, {}, memo, kT0 + seconds(5), opt);
  ASSERT_EQ(d.action, Action::kFindByTag) << d.why;
  EXPECT_EQ(d.search_not_before, kT0) << "an earlier process's submit: any list since the start";
  d = Decide(job, Cluster(), {}, {}, memo, kT0 + seconds(75), opt);
  ASSERT_EQ(d.action, Action::kFindByTag) << d.why;
  EXPECT_EQ(d.search_not_before, kT0 + seconds(60)) << "after the window: a list sent after it";

  memo.submit_outcome_unknown = true;
  memo.submit_attempt_at = kT0 + seconds(100);
  d = Decide(job, Cluster(), {}, {}, memo, kT0 + seconds(101), opt);
  ASSERT_EQ(d.action, Action::kFindByTag) << d.why;
  EXPECT_EQ(d.search_not_before, kT0 + seconds(101)) << "our own unknown submit: a list sent now";
  d = Decide(job, Cluster(), {}, {}, memo, kT0 + seconds(200), opt);
  ASSERT_EQ(d.action, Action::kFindByTag) << d.why;
  EXPECT_EQ(d.search_not_before, kT0 + seconds(160));

  job.deleting = true;  // the deletion's search follows the same rule
  d = Decide(job, Cluster(), {}, {}, memo, kT0 + seconds(200), opt);
  ASSERT_EQ(d.action, Action::kFindByTag) << d.why;
  EXPECT_EQ(d.search_not_before, kT0 + seconds(160));
}

// A shared list sent before the window's end (but after not_before) proves
// nothing: the search ends in settling, never in a submit.
TEST(DecideSubmit, NothingFoundInAListSentInsideTheWindowNeverSubmits) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  const DecideOptions opt = StartedAt(kT0);
  Memo memo = MemoOf("uid-1");
  const Outcomes out = FoundNothingIn(kT0 + seconds(59));  // the search itself ran at +90 s
  UpdateMemo(&memo, out, job, Cluster(), kT0 + seconds(90), opt);
  Decision d = Decide(job, Cluster(), {}, out, memo, kT0 + seconds(90), opt);
  EXPECT_NE(d.action, Action::kSubmit) << d.why;
  EXPECT_FALSE(memo.no_earlier_submit);
  d = Decide(job, Cluster(), {}, {}, memo, kT0 + seconds(90), opt);
  ASSERT_EQ(d.action, Action::kFindByTag) << d.why;
  EXPECT_EQ(d.search_not_before, kT0 + seconds(60)) << "the next search cannot take that list";
}

TEST(DecideSubmit, FailedTagSearchNeverSubmitsAndAHeldBackOneWritesNothing) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  Memo memo;
  memo.uid = "uid-1";
  memo.submit_outcome_unknown = true;
  Outcomes out;
  out.tag_lookup = absl::UnavailableError("down");
  Decision d = Decide(job, Cluster(), {}, out, memo, kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(Cond(d.status, kReconciling).reason(), "SubmitOutcomeUnknown");
  job.status = d.status;
  Decision again = Decide(job, Cluster(), {}, out, memo, kT0);
  EXPECT_EQ(again.action, Action::kNone);
  EXPECT_TRUE(again.retry_with_backoff);

  // One the project's call budget held back was never sent: nothing failed,
  // so the status stays as it was and the retry waits for the budget's room,
  // not for a backoff. (Writing the budget's message into the status made
  // each retry a watch event and an immediate reconcile: about 1,500 status
  // writes for 20 SlurmJobs in 12 s after a restart.)
  job.status = NewJob().status;
  out.tag_lookup = absl::UnavailableError("budget spent");
  out.tag_lookup_held_back = std::chrono::milliseconds(300);
  Decision held = Decide(job, Cluster(), {}, out, memo, kT0);
  EXPECT_EQ(held.action, Action::kNone) << held.why;
  EXPECT_FALSE(held.retry_with_backoff);
  EXPECT_EQ(held.requeue_after, Duration(std::chrono::milliseconds(300)));
  EXPECT_TRUE(held.events.empty());
}

// ------------------------------------------------------------- bad input

struct BadInputCase {
  std::string name;
  std::function<void(JobFacts&, ClusterFacts&)> mutate;
  std::string reason;
  std::string message_part;
};

class DecideBadInput : public ::testing::TestWithParam<BadInputCase> {};

TEST_P(DecideBadInput, StallsWithAClearMessageAndSubmitsNothing) {
  const BadInputCase& tc = GetParam();
  JobFacts job = NewJob();
  ClusterFacts cluster = Cluster();
  tc.mutate(job, cluster);
  Decision d = Decide(job, cluster, {}, {}, {}, kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(Cond(d.status, kStalled).status(), "True");
  EXPECT_EQ(Cond(d.status, kStalled).reason(), tc.reason);
  EXPECT_EQ(Cond(d.status, kSubmitted).status(), "False");
  EXPECT_EQ(Cond(d.status, kReady).status(), "False");
  EXPECT_THAT(d.status.message(), HasSubstr(tc.message_part));
  EXPECT_THAT(d.status.message(), HasSubstr("Nothing was submitted"));
  EXPECT_EQ(d.status.job_id(), 0);
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].type, "Warning");
  EXPECT_EQ(d.events[0].reason, tc.reason);

  // After the write, nothing more happens until something changes.
  job.status = d.status;
  Decision again = Decide(job, cluster, {}, {}, {}, kT0 + seconds(5));
  EXPECT_EQ(again.action, Action::kNone);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DecideBadInput,
    ::testing::Values(
        BadInputCase{"UnknownCluster",
                     [](JobFacts&, ClusterFacts& c) {
                       c.kind = ClusterFacts::Kind::kNotFound;
                       c.spec.Clear();
                     },
                     "ClusterNotFound",
                     "SlurmCluster \"a3\" does not exist in namespace \"team-a\""},
        BadInputCase{"EmptyScript", [](JobFacts& j, ClusterFacts&) { j.spec.clear_script(); },
                     "InvalidSpec", "spec.script is empty"},
        BadInputCase{"WhitespaceScript",
                     [](JobFacts& j, ClusterFacts&) { j.spec.set_script("  \n"); }, "InvalidSpec",
                     "the batch script is empty"},
        BadInputCase{"NoShebang",
                     [](JobFacts& j, ClusterFacts&) { j.spec.set_script("echo hi\n"); },
                     "InvalidSpec", "#! line"},
        BadInputCase{"ScriptAndScriptFrom",
                     [](JobFacts& j, ClusterFacts&) {
                       j.spec.mutable_script_from()->mutable_config_map_key_ref()->set_name("cm");
                       j.spec.mutable_script_from()->mutable_config_map_key_ref()->set_key("k");
                     },
                     "InvalidSpec", "both set"},
        BadInputCase{"NodesAndRange",
                     [](JobFacts& j, ClusterFacts&) {
                       j.spec.set_nodes(2);
                       j.spec.set_minimum_nodes(1);
                     },
                     "InvalidSpec", "spec.nodes cannot be combined"},
        BadInputCase{"MinAboveMax",
                     [](JobFacts& j, ClusterFacts&) {
                       j.spec.set_minimum_nodes(4);
                       j.spec.set_maximum_nodes(2);
                     },
                     "InvalidSpec", "greater than spec.maximumNodes"},
        BadInputCase{"BadEnvName",
                     [](JobFacts& j, ClusterFacts&) {
                       auto* e = j.spec.add_environment();
                       e->set_name("1BAD");
                     },
                     "InvalidSpec", "not a valid environment variable name"},
        BadInputCase{"DuplicateEnv",
                     [](JobFacts& j, ClusterFacts&) {
                       j.spec.add_environment()->set_name("A");
                       j.spec.add_environment()->set_name("A");
                     },
                     "InvalidSpec", "listed twice"},
        BadInputCase{"ReservedKeysInExtra",
                     [](JobFacts& j, ClusterFacts&) {
                       auto& fields = *j.spec.mutable_extra()->mutable_fields();
                       fields["comment"].set_string_value("slurmjob-operator:team-a/x/1");
                       fields["user_id"].set_number_value(0);
                       fields["nice"].set_number_value(5);
                     },
                     "InvalidSpec", "spec.extra sets comment, user_id, which the operator"},
        // The deadline is spec.activeDeadlineSeconds' alone: one from extra would
        // override it in Slurm (and hold while the operator is down).
        BadInputCase{"DeadlineInExtra",
                     [](JobFacts& j, ClusterFacts&) {
                       auto& fields = *j.spec.mutable_extra()->mutable_fields();
                       fields["deadline"].set_number_value(1900000000);
                     },
                     "InvalidSpec", "spec.extra sets deadline, which the operator"},
        // Slurm would never start it (deadline_ok): refused before any submit, also where the
        // API server did not apply the CRD's rule.
        BadInputCase{"TimeLimitLongerThanTheDeadline",
                     [](JobFacts& j, ClusterFacts&) {
                       j.spec.set_time_limit_minutes(5);
                       j.spec.set_active_deadline_seconds(120);
                     },
                     "InvalidSpec", "spec.timeLimitMinutes (5 min) is longer than"},
        BadInputCase{"BadDeletionPolicy",
                     [](JobFacts& j, ClusterFacts&) { j.spec.set_deletion_policy("Keep"); },
                     "InvalidSpec", "deletionPolicy"},
        BadInputCase{"UnsupportedVersion",
                     [](JobFacts&, ClusterFacts& c) { c.spec.set_slurm_api_version("v0.0.99"); },
                     "InvalidCluster", "v0.0.99"},
        BadInputCase{"ClusterMissingProject",
                     [](JobFacts&, ClusterFacts& c) { c.spec.clear_project_id(); },
                     "InvalidCluster", "projectId"},
        BadInputCase{"NoClusterNamed",
                     [](JobFacts& j, ClusterFacts& c) {
                       j.spec.clear_cluster_ref();
                       c.kind = ClusterFacts::Kind::kUnspecified;
                       c.name.clear();
                     },
                     "ClusterNotSpecified", "spec.clusterRef.name is empty"}),
    [](const ::testing::TestParamInfo<BadInputCase>& info) { return info.param.name; });

TEST(DecideSubmit, BadInputAddsNoFinalizer) {
  JobFacts job = NewJob();
  job.spec.clear_script();
  Decision d = Decide(job, Cluster(), {}, {}, {}, kT0);
  EXPECT_NE(d.action, Action::kAddFinalizer);
}

TEST(DecideSubmit, ScriptFromConfigMapIsLoadedThenUsed) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  TargetRecorded(&job.status);
  job.spec.clear_script();
  job.spec.mutable_script_from()->mutable_config_map_key_ref()->set_name("scripts");
  job.spec.mutable_script_from()->mutable_config_map_key_ref()->set_key("train.sh");
  EXPECT_EQ(Decide(job, Cluster(), {}, {}, {}, kT0).action, Action::kLoadScript);

  ScriptFacts script{ScriptFacts::Kind::kLoaded, "#!/bin/sh\ntrain\n", ""};
  Decision d = Decide(job, Cluster(), script, {}, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kSubmit);
  EXPECT_EQ(d.descriptor.script, "#!/bin/sh\ntrain\n");

  ScriptFacts missing{ScriptFacts::Kind::kMissing, "", "ConfigMap \"scripts\" does not exist"};
  Decision m = Decide(job, Cluster(), missing, {}, {}, kT0);
  ASSERT_EQ(m.action, Action::kWriteStatus);
  EXPECT_EQ(Cond(m.status, kStalled).reason(), "ScriptNotFound");
  job.status = m.status;
  Decision again = Decide(job, Cluster(), missing, {}, {}, kT0);
  ASSERT_TRUE(again.requeue_after.has_value());
}

TEST(DecideSubmit, JobEnvironmentOverridesClusterDefaults) {
  JobFacts job = NewJob();
  job.has_finalizer = true;
  TargetRecorded(&job.status);
  auto* e = job.spec.add_environment();
  e->set_name("MODE");
  e->set_value("job");
  ClusterFacts cluster = Cluster();
  auto* d1 = cluster.spec.add_default_environment();
  d1->set_name("MODE");
  d1->set_value("cluster");
  auto* d2 = cluster.spec.add_default_environment();
  d2->set_name("PATH");
  d2->set_value("/opt/bin");
  Decision d = Decide(job, cluster, {}, {}, Fresh(), kT0);
  ASSERT_EQ(d.action, Action::kSubmit);
  EXPECT_THAT(d.descriptor.environment,
              ::testing::ElementsAre(Pair("MODE", "job"), Pair("PATH", "/opt/bin")));
}

// ---------------------------------------------------------------- tracking

TEST(DecideTrack, QueriesAfterThePollInterval) {
  JobFacts job = Submitted();
  Memo memo;
  memo.uid = "uid-1";
  memo.last_query_at = kT0;
  Decision soon = Decide(job, Cluster(), {}, {}, memo, kT0 + std::chrono::milliseconds(300));
  EXPECT_EQ(soon.action, Action::kNone);
  ASSERT_TRUE(soon.requeue_after.has_value());
  EXPECT_EQ(*soon.requeue_after, std::chrono::milliseconds(700));

  Decision later = Decide(job, Cluster(), {}, {}, memo, kT0 + seconds(2));
  ASSERT_EQ(later.action, Action::kQuery);
  EXPECT_EQ(later.job_id, 42);
}

TEST(DecideTrack, RunningIsWrittenOnceWithAStartedEvent) {
  JobFacts job = Submitted();
  slurm::JobInfo info = Info(42, slurm::BaseState::kRunning);
  info.start_time = kT0 + seconds(3);
  Decision d = Decide(job, Cluster(), {}, Queried(info), {}, kT0 + seconds(4));
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.job_state(), "RUNNING");
  EXPECT_EQ(d.status.phase(), "Running");
  EXPECT_EQ(d.status.start_time().seconds(), 1'700'000'003);
  EXPECT_EQ(Cond(d.status, kRunning).status(), "True");
  EXPECT_EQ(Cond(d.status, kReady).status(), "False");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "Started");

  job.status = d.status;
  Decision again = Decide(job, Cluster(), {}, Queried(info), {}, kT0 + seconds(5));
  EXPECT_EQ(again.action, Action::kNone);
  EXPECT_TRUE(again.requeue_after.has_value());
  EXPECT_TRUE(again.events.empty());
}

// A plain life is one status write per visible state: the pending reason and
// submit time Slurm reports right after the submit do not get a write of their
// own while the job is young; they ride on the write that records RUNNING.
TEST(DecideTrack, QueueDetailsOfAYoungPendingJobWaitForTheNextChange) {
  JobFacts job = Submitted();
  slurm::JobInfo info = Info(42, slurm::BaseState::kPending);
  info.state_reason = "Priority";
  info.submit_time = kT0;
  Decision young = Decide(job, Cluster(), {}, Queried(info), {}, kT0 + seconds(2));
  EXPECT_EQ(young.action, Action::kNone) << young.why;
  ASSERT_TRUE(young.requeue_after.has_value());
  EXPECT_LE(*young.requeue_after, seconds(8));  // looked at again by the end of the delay

  info.state = slurm::BaseState::kRunning;
  info.state_reason = "None";
  info.start_time = kT0 + seconds(3);
  Decision running = Decide(job, Cluster(), {}, Queried(info), {}, kT0 + seconds(4));
  ASSERT_EQ(running.action, Action::kWriteStatus);
  EXPECT_EQ(running.status.job_state(), "RUNNING");
  EXPECT_EQ(running.status.submit_time().seconds(), 1'700'000'000);
}

// The first record of a job fills in its output paths (StatusAfterSubmit
// clears them). While the job is young and pending that is no write of its own
// either: at N = 100 in bench/load it was a fourth status write for 33 of the
// 120 SlurmJobs, and on a busy cluster, where jobs pend for minutes, for most.
TEST(DecideTrack, OutputPathsOfAYoungPendingJobWaitForTheNextChange) {
  JobFacts job = Submitted();
  slurm::JobInfo info = Info(42, slurm::BaseState::kPending);
  info.standard_output = "/home/alice/slurm-42.out";
  info.standard_error = "/home/alice/slurm-42.err";
  Decision young = Decide(job, Cluster(), {}, Queried(info), {}, kT0 + seconds(2));
  EXPECT_EQ(young.action, Action::kNone) << young.why;

  info.state = slurm::BaseState::kRunning;
  info.start_time = kT0 + seconds(3);
  Decision running = Decide(job, Cluster(), {}, Queried(info), {}, kT0 + seconds(4));
  ASSERT_EQ(running.action, Action::kWriteStatus);
  EXPECT_EQ(running.status.standard_output(), "/home/alice/slurm-42.out");
  EXPECT_EQ(running.status.standard_error(), "/home/alice/slurm-42.err");

  // Still pending after the delay: written then, with the other details.
  info.state = slurm::BaseState::kPending;
  info.start_time.reset();
  Decision later = Decide(job, Cluster(), {}, Queried(info), {}, kT0 + seconds(10));
  ASSERT_EQ(later.action, Action::kWriteStatus);
  EXPECT_EQ(later.status.standard_output(), "/home/alice/slurm-42.out");
}

TEST(DecideTrack, QueueDetailsOfAJobStillPendingAfterTheDelayAreWritten) {
  JobFacts job = Submitted();
  slurm::JobInfo info = Info(42, slurm::BaseState::kPending);
  info.state_reason = "Resources";
  Decision d = Decide(job, Cluster(), {}, Queried(info), {}, kT0 + seconds(10));
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.reason(), "Resources");
  EXPECT_THAT(d.status.message(), HasSubstr("(Resources)"));

  // With the delay off, at once.
  DecideOptions now_opts;
  now_opts.pending_details_delay = Duration::zero();
  Decision at_once = Decide(job, Cluster(), {}, Queried(info), {}, kT0 + seconds(1), now_opts);
  EXPECT_EQ(at_once.action, Action::kWriteStatus);
}

TEST(DecideTrack, AnythingBeyondQueueDetailsIsWrittenAtOnceEvenWhenYoung) {
  JobFacts job = Submitted();
  slurm::JobInfo info = Info(42, slurm::BaseState::kPending);
  info.state_reason = "Priority";
  // A generation change (an edit of the SlurmJob) is not a queue detail.
  job.generation = 2;
  Decision d = Decide(job, Cluster(), {}, Queried(info), {}, kT0 + seconds(1));
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.observed_generation(), 2);
}

TEST(DecideTrack, CompletingGetsNoWriteOfItsOwnUnlessItLasts) {
  JobFacts job = Submitted();
  slurm::JobInfo running = Info(42, slurm::BaseState::kRunning);
  running.start_time = kT0 + seconds(1);
  Decision r = Decide(job, Cluster(), {}, Queried(running), {}, kT0 + seconds(2));
  ASSERT_EQ(r.action, Action::kWriteStatus);
  job.status = r.status;

  slurm::JobInfo completing = Info(42, slurm::BaseState::kCompleted);
  completing.flags = {"COMPLETING"};
  completing.start_time = kT0 + seconds(1);
  completing.end_time = kT0 + seconds(30);
  completing.exit_code = 0;
  Decision brief = Decide(job, Cluster(), {}, Queried(completing), {}, kT0 + seconds(31));
  EXPECT_EQ(brief.action, Action::kNone) << brief.why;
  ASSERT_TRUE(brief.requeue_after.has_value());
  EXPECT_LE(*brief.requeue_after, seconds(9));

  Decision stuck = Decide(job, Cluster(), {}, Queried(completing), {}, kT0 + seconds(41));
  ASSERT_EQ(stuck.action, Action::kWriteStatus);
  EXPECT_EQ(stuck.status.job_state(), "COMPLETING");

  completing.flags.clear();
  Decision done = Decide(job, Cluster(), {}, Queried(completing), {}, kT0 + seconds(32));
  ASSERT_EQ(done.action, Action::kWriteStatus);
  EXPECT_EQ(done.status.job_state(), "COMPLETED");
}

// 128 + a remote's signal number of 2147483647 overflowed (undefined); a number that no wait
// status carries is no signal, and the exit code is Slurm's own.
TEST(DecideTrack, ASignalNumberPastWhatAWaitStatusHoldsIsNoSignal) {
  slurm::JobInfo info = Info(42, slurm::BaseState::kFailed);
  info.exit_code = 1;
  info.signal = std::numeric_limits<int32_t>::max();
  v1alpha1::SlurmJobStatus s = StatusFromJobInfo(Submitted().status, info, 1, kT0, nullptr);
  ASSERT_TRUE(s.has_exit_code());
  EXPECT_EQ(s.exit_code(), 1);
  info.signal = 9;
  s = StatusFromJobInfo(Submitted().status, info, 1, kT0, nullptr);
  EXPECT_EQ(s.exit_code(), 137);
}

TEST(DecideTrack, CompletedIsReadyAndFinal) {
  JobFacts job = Submitted();
  slurm::JobInfo info = Info(42, slurm::BaseState::kCompleted);
  info.exit_code = 0;
  info.start_time = kT0 + seconds(1);
  info.end_time = kT0 + seconds(9);
  Decision d = Decide(job, Cluster(), {}, Queried(info), {}, kT0 + seconds(10));
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.job_state(), "COMPLETED");
  EXPECT_EQ(d.status.phase(), "Succeeded");
  ASSERT_TRUE(d.status.has_exit_code());
  EXPECT_EQ(d.status.exit_code(), 0);
  EXPECT_EQ(d.status.end_time().seconds(), 1'700'000'009);
  EXPECT_EQ(Cond(d.status, kReady).status(), "True");
  EXPECT_EQ(Cond(d.status, kSucceeded).status(), "True");
  EXPECT_EQ(Cond(d.status, kReconciling).status(), "False");
  EXPECT_EQ(Cond(d.status, kStalled).status(), "False");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "Completed");

  job.status = d.status;
  // Accounting did not show the run's end yet (no allocation in the record): its usage is
  // looked for again (stage kAwaitingUsage) until usage_window after the end, then never.
  Decision looking = Decide(job, Cluster(), {}, {}, {}, kT0 + seconds(60));
  EXPECT_EQ(looking.action, Action::kQuery) << looking.why;
  Decision after = Decide(job, Cluster(), {}, {}, {}, kT0 + seconds(9) + std::chrono::minutes(6));
  EXPECT_EQ(after.action, Action::kNone);
  EXPECT_FALSE(after.requeue_after.has_value()) << "finished jobs are never polled";
  // A run whose usage the final write recorded is never polled.
  info.allocation = slurm::Allocation{{{"cpu", 1}}, 8};
  job.status = Decide(Submitted(), Cluster(), {}, Queried(info), {}, kT0 + seconds(10)).status;
  ASSERT_TRUE(job.status.has_usage());
  Decision recorded = Decide(job, Cluster(), {}, {}, {}, kT0 + seconds(60));
  EXPECT_EQ(recorded.action, Action::kNone);
  EXPECT_FALSE(recorded.requeue_after.has_value()) << "finished jobs are never polled";
}

struct FinalCase {
  slurm::BaseState state;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string phase;
  std::string reason;
  std::optional<int> want_exit;
};

class DecideFinal : public ::testing::TestWithParam<FinalCase> {};

TEST_P(DecideFinal, MapsToPhaseConditionsAndExitCode) {
  const FinalCase& tc = GetParam();
  slurm::JobInfo info = Info(42, tc.state);
  info.exit_code = tc.exit_code;
  info.signal = tc.signal;
  Decision d = Decide(Submitted(), Cluster(), {}, Queried(info), {}, kT0 + seconds(10));
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.job_state(), slurm::BaseStateName(tc.state));
  EXPECT_EQ(d.status.phase(), tc.phase);
  EXPECT_EQ(Cond(d.status, kFailed).reason(), tc.reason);
  EXPECT_EQ(Cond(d.status, kStalled).status(), "True");
  EXPECT_EQ(Cond(d.status, kReady).status(), "False");
  EXPECT_EQ(FindCondition(d.status.conditions(), kSucceeded), nullptr);
  if (tc.want_exit) {
    ASSERT_TRUE(d.status.has_exit_code());
    EXPECT_EQ(d.status.exit_code(), *tc.want_exit);
  } else {
    EXPECT_FALSE(d.status.has_exit_code());
  }
}

INSTANTIATE_TEST_SUITE_P(
    States, DecideFinal,
    ::testing::Values(
        FinalCase{slurm::BaseState::kFailed, 3, std::nullopt, "Failed", "JobFailed", 3},
        FinalCase{slurm::BaseState::kTimeout, std::nullopt, 15, "Failed", "JobTimeout", 143},
        FinalCase{slurm::BaseState::kCancelled, std::nullopt, 9, "Cancelled", "Cancelled", 137},
        FinalCase{slurm::BaseState::kNodeFail, std::nullopt, std::nullopt, "Failed", "JobNodeFail",
                  std::nullopt},
        FinalCase{slurm::BaseState::kOutOfMemory, 0, std::nullopt, "Failed", "JobOutOfMemory", 0},
        FinalCase{slurm::BaseState::kPreempted, std::nullopt, std::nullopt, "Failed",
                  "JobPreempted", std::nullopt},
        FinalCase{slurm::BaseState::kBootFail, std::nullopt, std::nullopt, "Failed", "JobBootFail",
                  std::nullopt},
        FinalCase{slurm::BaseState::kDeadline, std::nullopt, std::nullopt, "Failed", "JobDeadline",
                  std::nullopt}));

TEST(DecideTrack, TerminalStateStillCompletingIsNotFinal) {
  JobFacts job = Submitted();
  slurm::JobInfo info = Info(42, slurm::BaseState::kFailed);
  info.flags = {"COMPLETING"};
  Decision d = Decide(job, Cluster(), {}, Queried(info), {}, kT0 + seconds(5));
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.job_state(), "COMPLETING");
  EXPECT_EQ(d.status.phase(), "Running");
  EXPECT_FALSE(d.status.has_exit_code());
  EXPECT_FALSE(IsFinalJobState(d.status.job_state()));
}

TEST(DecideTrack, AJobNotFoundIsUnknownNeverFailed) {
  JobFacts job = Submitted();
  Outcomes out;
  out.query = SlurmView{std::nullopt};
  Decision d = Decide(job, Cluster(), {}, out, {}, kT0 + seconds(5));
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.phase(), "Unknown");
  EXPECT_EQ(d.status.job_state(), "PENDING") << "the last known state stays";
  EXPECT_EQ(FindCondition(d.status.conditions(), kFailed), nullptr);
  EXPECT_EQ(Cond(d.status, kReady).status(), "Unknown");
  job.status = d.status;
  Decision again = Decide(job, Cluster(), {}, out, {}, kT0 + seconds(6));
  EXPECT_EQ(again.action, Action::kNone);
  EXPECT_TRUE(again.requeue_after.has_value());
}

TEST(DecideTrack, TransientQueryErrorsBackOffWithoutWriting) {
  Outcomes out;
  out.query = absl::UnavailableError("cluster unreachable");
  Decision d = Decide(Submitted(), Cluster(), {}, out, {}, kT0 + seconds(5));
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_TRUE(d.retry_with_backoff);
}

TEST(DecideTrack, ASpecEditAfterTheEndOnlyMovesObservedGeneration) {
  JobFacts job = Submitted();
  slurm::JobInfo info = Info(42, slurm::BaseState::kCompleted);
  info.exit_code = 0;
  job.status = StatusFromJobInfo(job.status, info, 1, kT0 + seconds(9), nullptr);
  job.generation = 2;
  Decision d = Decide(job, Cluster(), {}, {}, {}, kT0 + seconds(30));
  ASSERT_EQ(d.action, Action::kWriteStatus);
  EXPECT_EQ(d.status.observed_generation(), 2);
  EXPECT_EQ(d.status.job_state(), "COMPLETED");
  for (const auto& c : d.status.conditions()) EXPECT_EQ(c.observed_generation(), 2);
}

TEST(DecideTrack, ConditionTimesMoveOnlyOnTransitions) {
  JobFacts job = Submitted();
  slurm::JobInfo running = Info(42, slurm::BaseState::kRunning);
  Decision d1 = Decide(job, Cluster(), {}, Queried(running), {}, kT0 + seconds(5));
  ASSERT_EQ(d1.action, Action::kWriteStatus);
  const int64_t submitted_at = Cond(d1.status, kSubmitted).last_transition_time().seconds();
  EXPECT_EQ(submitted_at, 1'700'000'000);
  job.status = d1.status;
  slurm::JobInfo done = Info(42, slurm::BaseState::kCompleted);
  done.exit_code = 0;
  Decision d2 = Decide(job, Cluster(), {}, Queried(done), {}, kT0 + seconds(50));
  EXPECT_EQ(Cond(d2.status, kSubmitted).last_transition_time().seconds(), submitted_at);
  EXPECT_EQ(Cond(d2.status, kReady).last_transition_time().seconds(), 1'700'000'050);
}

// Whatever a message quotes, a condition holds no more than the CRD's maxLength allows: a longer
// one fails the whole status write (422), and the SlurmJob then says nothing at all.
TEST(DecideTrack, AConditionsMessageFitsTheSchema) {
  v1alpha1::SlurmJobStatus s;
  SetCondition(s.mutable_conditions(), kReady, ConditionStatus::kFalse, "Failed",
               std::string(100000, 'x'), 1, kT0);
  EXPECT_LE(Cond(s, kReady).message().size(), kMaxConditionMessageBytes);
  const std::string cut = Cond(s, kReady).message();
  SetCondition(s.mutable_conditions(), kReady, ConditionStatus::kFalse, "Failed", cut, 1, kT0);
  EXPECT_EQ(Cond(s, kReady).message(), cut) << "written again unchanged: no write loop";
}

TEST(PollInterval, FastAtFirstThenSlowerAndCapped) {
  v1alpha1::SlurmJobStatus s;
  s.mutable_submit_time()->set_seconds(1'700'000'000);
  DecideOptions o;
  EXPECT_EQ(PollInterval(s, kT0, o), seconds(1));
  EXPECT_EQ(PollInterval(s, kT0 + seconds(100), o), seconds(10));
  EXPECT_EQ(PollInterval(s, kT0 + std::chrono::hours(5), o), seconds(30));
}

// ---------------------------------------------------------------- deletion

JobFacts Deleting(JobFacts f) {
  f.deleting = true;
  return f;
}

TEST(DecideDelete, WithoutOurFinalizerNothingToDo) {
  JobFacts job = Deleting(Submitted());
  job.has_finalizer = false;
  EXPECT_EQ(Decide(job, Cluster(), {}, {}, {}, kT0).action, Action::kNone);
}

TEST(DecideDelete, NeverSubmittedReleasesAtOnce) {
  JobFacts job = Deleting(NewJob());
  job.has_finalizer = true;
  EXPECT_EQ(Decide(job, Cluster(), {}, {}, Fresh(), kT0).action, Action::kRemoveFinalizer);
}

TEST(DecideDelete, AfterARestartTheTagIsSearchedBeforeRelease) {
  // A finalizer but no jobId, and this process did not add it: an earlier
  // process may have submitted and died before recording the id.
  JobFacts job = Deleting(NewJob());
  job.has_finalizer = true;
  EXPECT_EQ(Decide(job, Cluster(), {}, {}, {}, kT0).action, Action::kFindByTag);
  Outcomes out;
  out.tag_lookup = std::optional<int64_t>();
  EXPECT_EQ(Decide(job, Cluster(), {}, out, {}, kT0).action, Action::kRemoveFinalizer);
}

TEST(DecideDelete, OrphanReleasesWithoutCancelling) {
  JobFacts job = Deleting(Submitted());
  job.spec.set_deletion_policy("Orphan");
  Decision d = Decide(job, Cluster(), {}, {}, {}, kT0);
  ASSERT_EQ(d.action, Action::kUpdateJob);  // re-tagged first (see lifecycle_test)
  Outcomes retagged;
  retagged.update = slurm::UpdateResponse{};
  d = Decide(job, Cluster(), {}, retagged, {}, kT0);
  ASSERT_EQ(d.action, Action::kRemoveFinalizer);
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "Orphaned");
}

TEST(DecideDelete, FinishedJobReleasesWithoutCancelling) {
  JobFacts job = Deleting(Submitted());
  slurm::JobInfo done = Info(42, slurm::BaseState::kCompleted);
  job.status = StatusFromJobInfo(job.status, done, 1, kT0, nullptr);
  EXPECT_EQ(Decide(job, Cluster(), {}, {}, {}, kT0).action, Action::kRemoveFinalizer);
}

// The credentials Secret is gone (or wrong): the deletion says so, as a condition and a Warning
// Event naming what to fix and how to delete without the cancel, and retries at the refusal's
// pace. Before, it backed off with nothing but a log line (found by the simulation's Secret
// switch: switched back to a Secret the namespace's deletion then took).
TEST(DecideDelete, ALastingReadRefusalSaysWhyAndHowToFinish) {
  JobFacts job = Deleting(Submitted());
  Outcomes out;
  out.query = absl::UnauthenticatedError("Secret team-a/creds: secrets \"creds\" not found");
  Decision d = Decide(job, Cluster(), {}, out, {}, kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus);
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].type, kWarning);
  EXPECT_EQ(d.events[0].reason, "CredentialsInvalid");
  EXPECT_THAT(d.events[0].note, HasSubstr("secrets \"creds\" not found"));
  EXPECT_THAT(d.events[0].note, HasSubstr("credentialsSecretRef"));
  EXPECT_THAT(d.events[0].note, HasSubstr("remove the finalizer hpc.slurmoperator.dev/slurm-job"));
  EXPECT_EQ(Cond(d.status, kReconciling).reason(), "CredentialsInvalid");
  // Written: the next look only waits, at the pace of refusals.
  job.status = d.status;
  d = Decide(job, Cluster(), {}, out, {}, kT0);
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(d.requeue_after, DecideOptions().permission_retry);
  // A refusal that is not about access is not told as a submit's ("fix the spec").
  out.query = absl::InvalidArgumentError("unsupported field");
  d = Decide(Deleting(Submitted()), Cluster(), {}, out, {}, kT0);
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "DeletionBlocked");
  EXPECT_THAT(d.events[0].note, HasSubstr("Reading the job's state failed: unsupported field."));
  EXPECT_THAT(d.events[0].note, Not(HasSubstr("submitted again")));
  // A transient failure is only retried.
  out.query = absl::UnavailableError("connection reset");
  d = Decide(job, Cluster(), {}, out, {}, kT0);
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_TRUE(d.retry_with_backoff);
  EXPECT_THAT(d.events, IsEmpty());
}

TEST(DecideDelete, ActiveJobIsCancelledThenWaitedFor) {
  JobFacts job = Deleting(Submitted());
  Memo memo;
  memo.uid = "uid-1";
  Decision d = Decide(job, Cluster(), {}, {}, memo, kT0);
  ASSERT_EQ(d.action, Action::kQuery);

  Outcomes out = Queried(Info(42, slurm::BaseState::kRunning));
  d = Decide(job, Cluster(), {}, out, memo, kT0);
  ASSERT_EQ(d.action, Action::kCancel);
  EXPECT_EQ(d.job_id, 42);
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "CancelRequested");

  // The cancel was accepted; the job is still completing.
  out.cancel = slurm::CancelResponse{};
  UpdateMemo(&memo, out, job, Cluster(), kT0);
  ASSERT_TRUE(memo.cancel_requested_at.has_value());
  d = Decide(job, Cluster(), {}, out, memo, kT0);
  EXPECT_EQ(d.action, Action::kNone);
  ASSERT_TRUE(d.requeue_after.has_value());

  // Next reconcile: still running, the cancel is recent: no second cancel.
  Outcomes next = Queried(Info(42, slurm::BaseState::kRunning));
  d = Decide(job, Cluster(), {}, next, memo, kT0 + seconds(2));
  EXPECT_EQ(d.action, Action::kNone);

  // Much later and still running: cancel again.
  d = Decide(job, Cluster(), {}, next, memo, kT0 + seconds(40));
  EXPECT_EQ(d.action, Action::kCancel);

  // Slurm reports it ended: release.
  Outcomes ended = Queried(Info(42, slurm::BaseState::kCancelled));
  d = Decide(job, Cluster(), {}, ended, memo, kT0 + seconds(3));
  ASSERT_EQ(d.action, Action::kRemoveFinalizer);
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "Cancelled");
}

TEST(DecideDelete, AJobUnknownToSlurmReleases) {
  JobFacts job = Deleting(Submitted());
  Outcomes out;
  out.query = SlurmView{std::nullopt};
  EXPECT_EQ(Decide(job, Cluster(), {}, out, {}, kT0).action, Action::kRemoveFinalizer);
}

// Looks at a submitted job that keep failing for now (a malformed job list, a record past the
// size bound: Internal) were retried with backoff for ever while the status kept its last phase
// and no condition. Past the grace the status says TrackingRetrying; the next good look writes
// what Slurm says.
TEST(DecideTrack, LooksThatKeepFailingAreToldInTheStatus) {
  JobFacts job = Submitted();
  Memo memo = Fresh();
  Outcomes out;
  out.query = absl::InternalError("record over 2 MiB");
  UpdateMemo(&memo, out, job, Cluster(), kT0);
  const DecideOptions opt;
  const Time past_grace = kT0 + opt.tracking_failure_grace;
  UpdateMemo(&memo, out, job, Cluster(), past_grace);
  ASSERT_EQ(memo.looks_failing_since, kT0) << "kept from the first failure";
  Decision d = Decide(job, Cluster(), {}, out, memo, past_grace - seconds(1));
  EXPECT_EQ(d.action, Action::kNone) << "a short outage passes unseen";
  EXPECT_TRUE(d.retry_with_backoff);
  d = Decide(job, Cluster(), {}, out, memo, past_grace);
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(Cond(d.status, kReconciling).reason(), "TrackingRetrying");
  EXPECT_EQ(Cond(d.status, kReconciling).status(), "True");
  EXPECT_THAT(d.status.message(), HasSubstr("record over 2 MiB"));
  EXPECT_EQ(d.status.job_state(), job.status.job_state()) << "the last known state stays";
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "TrackingRetrying");
  job.status = d.status;
  d = Decide(job, Cluster(), {}, out, memo, past_grace);
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_TRUE(d.retry_with_backoff);

  out = Queried(Info(42, slurm::BaseState::kRunning));
  UpdateMemo(&memo, out, job, Cluster(), past_grace + seconds(5));
  EXPECT_FALSE(memo.looks_failing_since.has_value()) << "a good look clears it";
  d = Decide(job, Cluster(), {}, out, memo, past_grace + seconds(5));
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(Cond(d.status, kReconciling).reason(), "JobRunning");
}

// A look the call budget held back was never sent: nothing failed, so it does not start the
// clock (the budget's own wait is told where submits wait for it).
TEST(DecideTrack, ALookHeldBackByTheBudgetIsNotAFailingLook) {
  JobFacts job = Submitted();
  Memo memo = Fresh();
  Outcomes out;
  out.query = absl::ResourceExhaustedError("held back");
  out.query_held_back = true;
  UpdateMemo(&memo, out, job, Cluster(), kT0);
  EXPECT_FALSE(memo.looks_failing_since.has_value());
  out.query_held_back = false;
  UpdateMemo(&memo, out, job, Cluster(), kT0);
  EXPECT_EQ(memo.looks_failing_since, kT0);
}

TEST(DecideDelete, ReadErrorsKeepTheFinalizer) {
  JobFacts job = Deleting(Submitted());
  Outcomes out;
  out.query = absl::UnavailableError("down");
  Decision d = Decide(job, Cluster(), {}, out, {}, kT0);
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_TRUE(d.retry_with_backoff);
}

// A failed cancel of the deletion is a condition as well as an Event: in a namespace being
// deleted, new Events are refused, and the condition is all the user sees.
TEST(DecideDelete, CancelFailureKeepsTheFinalizerAndSaysSoInTheStatus) {
  JobFacts job = Deleting(Submitted());
  Outcomes out = Queried(Info(42, slurm::BaseState::kRunning));
  out.cancel = absl::UnavailableError("down");
  Decision d = Decide(job, Cluster(), {}, out, {}, kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(Cond(d.status, kReconciling).reason(), "CancelFailed");
  EXPECT_THAT(d.status.message(), HasSubstr("down"));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "CancelFailed");
  job.status = d.status;  // written
  d = Decide(job, Cluster(), {}, out, {}, kT0);
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_TRUE(d.retry_with_backoff);
  EXPECT_TRUE(d.events.empty()) << "told once, with the write";
}

TEST(DecideDelete, MissingClusterKeepsTheFinalizerAndSaysHowToProceed) {
  JobFacts job = Deleting(Submitted());
  ClusterFacts gone;
  gone.kind = ClusterFacts::Kind::kNotFound;
  gone.name = "a3";
  Decision d = Decide(job, gone, {}, {}, {}, kT0);
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(Cond(d.status, kReconciling).reason(), "CancelBlocked");
  EXPECT_THAT(d.status.message(), HasSubstr("remove the finalizer"));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "CancelBlocked");
  EXPECT_THAT(d.events[0].note, HasSubstr("remove the finalizer"));
  job.status = d.status;
  d = Decide(job, gone, {}, {}, {}, kT0);
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_TRUE(d.requeue_after.has_value());
}

// Reading the job's state while deleting keeps failing for now: retried quietly at first, then
// the status says so (DeletionRetrying), with how to finish the deletion by hand.
TEST(DecideDelete, ReadErrorsThatLastAreTold) {
  JobFacts job = Deleting(Submitted());
  Memo memo = Fresh();
  Outcomes out;
  out.query = absl::InternalError("malformed job list");
  UpdateMemo(&memo, out, job, Cluster(), kT0);
  ASSERT_EQ(memo.looks_failing_since, kT0);
  DecideOptions opt;
  Decision d = Decide(job, Cluster(), {}, out, memo, kT0 + opt.tracking_failure_grace - seconds(1));
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_TRUE(d.retry_with_backoff);
  d = Decide(job, Cluster(), {}, out, memo, kT0 + opt.tracking_failure_grace);
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(Cond(d.status, kReconciling).reason(), "DeletionRetrying");
  EXPECT_THAT(d.status.message(), HasSubstr("malformed job list"));
  EXPECT_THAT(d.status.message(), HasSubstr("remove the finalizer"));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "DeletionRetrying");
  job.status = d.status;
  d = Decide(job, Cluster(), {}, out, memo, kT0 + opt.tracking_failure_grace);
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_TRUE(d.retry_with_backoff);
}

TEST(DecideDelete, AJobSubmittedButNotYetRecordedIsCancelled) {
  JobFacts job = Deleting(NewJob());
  job.has_finalizer = true;
  Memo memo;
  memo.uid = "uid-1";
  memo.submitted_job_id = 99;
  Decision d = Decide(job, Cluster(), {}, {}, memo, kT0);
  ASSERT_EQ(d.action, Action::kQuery);
  EXPECT_EQ(d.job_id, 99);
}

TEST(DecideDelete, UnknownSubmitOutcomeIsSearchedBeforeRelease) {
  JobFacts job = Deleting(NewJob());
  job.has_finalizer = true;
  Memo memo;
  memo.uid = "uid-1";
  memo.submit_outcome_unknown = true;
  EXPECT_EQ(Decide(job, Cluster(), {}, {}, memo, kT0).action, Action::kFindByTag);
  Outcomes out;
  out.tag_lookup = std::optional<int64_t>(12);
  Decision d = Decide(job, Cluster(), {}, out, memo, kT0);
  ASSERT_EQ(d.action, Action::kQuery);
  EXPECT_EQ(d.job_id, 12);
}

TEST(UpdateMemo, ANewIncarnationStartsClean) {
  Memo memo;
  memo.uid = "old";
  memo.submitted_job_id = 5;
  JobFacts job = NewJob();
  UpdateMemo(&memo, {}, job, Cluster(), kT0);
  EXPECT_EQ(memo.uid, "uid-1");
  EXPECT_FALSE(memo.submitted_job_id.has_value());
}

}  // namespace
}  // namespace slurmop::reconcile
