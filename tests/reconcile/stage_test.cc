// File: tests/reconcile/stage_test.cc
//
// Walks every row of the stage table (controller/reconcile/stage.h): for each
// stage, facts that satisfy its guard, the action Decide() takes there, and
// the stage the job is in once that action's outcome is known. Plain values,
// no I/O.

#include "controller/reconcile/stage.h"

#include <chrono>
#include <set>

#include "controller/reconcile/conditions.h"
#include "controller/reconcile/job_descriptor.h"
#include "controller/reconcile/ownership.h"
#include "controller/reconcile/runs.h"
#include "controller/reconcile/tag_search.h"
#include "controller/slurm/array_folding.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/reconcile/decide_fixtures.h"

namespace slurmop::reconcile {
namespace {

using fixtures::kT0;
using std::chrono::seconds;
using ::testing::HasSubstr;

// Everything Decide() reads, held by value so that a row can edit it.
struct World {
  JobFacts job = fixtures::NewJob();
  ClusterFacts cluster = fixtures::Cluster();
  ScriptFacts script;
  Outcomes out;
  Memo memo;
  Time now = kT0;
  DecideOptions opt;

  World() {
    memo.uid = "uid-1";
    opt.process_start = kT0 - std::chrono::minutes(5);
  }
  Known known() const { return Known{job, cluster, script, out, memo, now, opt}; }
  Stage stage() const { return StageOf(known()); }
  Decision decide() const { return Decide(job, cluster, script, out, memo, now, opt); }
  // The executor's step: fold the outcomes into the memo, then decide.
  Decision step() {
    UpdateMemo(&memo, out, job, cluster, now, opt);
    return decide();
  }
  // The status says where the next submit goes (stage kRecordingTarget's write).
  void TargetRecorded() { *job.status.mutable_submit_target() = LocationOf(cluster.spec); }
  // A status write that succeeded (the object now carries it).
  void Wrote(const Decision& d) {
    if (CurrentRun(d.status) > CurrentRun(job.status)) out.started_run = true;
    job.status = d.status;
  }
  // A new reconcile: this one's outcomes are gone.
  void NextReconcile(Duration later = seconds(1)) {
    out = Outcomes{};
    now += later;
  }
  // A SlurmJob whose run 1 is Slurm job 42 in `state`, submitted to the
  // cluster the SlurmCluster points at.
  void Submitted(std::string_view state = "RUNNING") {
    job.has_finalizer = true;
    job.status = StatusAfterSubmit(job.status, 42, "a3", false, 1, kT0, nullptr);
    job.status.set_job_state(std::string(state));
    *job.status.mutable_submitted_to() = LocationOf(cluster.spec);
    job.status.set_job_tag(RunTag(job));
    memo.no_earlier_submit = true;
  }
  // Slurm's record of job 42, carrying `comment` (default: the run's tag).
  void SlurmSays(slurm::BaseState state, std::optional<std::string> comment = std::nullopt) {
    slurm::JobInfo info;
    info.job_id = 42;
    info.comment = comment.value_or(RunTag(job));
    info.state = state;
    info.submit_time = kT0;
    if (state == slurm::BaseState::kCompleted) info.end_time = kT0;
    out.query = SlurmView{info};
  }
};

// Asserts the stage and the action there.
void ExpectRow(const World& w, Stage stage, Action action) {
  ASSERT_EQ(StageName(w.stage()), std::string(StageName(stage)));
  EXPECT_EQ(w.decide().action, action) << "in stage " << StageName(stage) << ": " << w.decide().why;
}

// A failed cancel is retried, and told as a Warning Event naming why it was sent.
void ExpectCancelFailedEvent(const World& w, const std::string& why) {
  const Decision d = w.decide();
  ASSERT_EQ(d.events.size(), 1u) << d.why;
  EXPECT_EQ(d.events[0].type, kWarning);
  EXPECT_EQ(d.events[0].reason, "CancelFailed");
  EXPECT_NE(d.events[0].note.find(why), std::string::npos) << d.events[0].note;
}

// ---------------------------------------------------------------- deletion

void Released() {
  World w;
  w.job.deleting = true;
  ExpectRow(w, Stage::kReleased, Action::kNone);
}

void DeletingUnsubmitted() {
  World w;
  w.job.deleting = true;
  w.job.has_finalizer = true;
  // An earlier process may have submitted: look for its tag first.
  ExpectRow(w, Stage::kDeletingUnsubmitted, Action::kFindByTag);
  w.out.tag_lookup = std::optional<int64_t>(42);
  EXPECT_EQ(w.stage(), Stage::kCancelling) << "found: cancel it";
  w.out.tag_lookup = std::optional<int64_t>();
  w.memo.no_earlier_submit = true;
  ExpectRow(w, Stage::kDeletingUnsubmitted, Action::kRemoveFinalizer);
  w.job.has_finalizer = false;
  EXPECT_EQ(w.stage(), Stage::kReleased);
}

// #13 L2: deleting a SlurmJob whose submit outcome is unknown. A search that
// finds nothing while the submit may still land keeps the finalizer; once the
// window closed the search is made again and the late job is cancelled.
void DeletionSettling() {
  World w;
  w.job.deleting = true;
  w.job.has_finalizer = true;
  w.memo.no_earlier_submit = true;              // this process added the finalizer ...
  w.memo.submit_outcome_unknown = true;         // ... and its submit's answer was lost
  w.memo.submit_attempt_at = kT0 - seconds(5);  // in flight until kT0 + 55 s
  ExpectRow(w, Stage::kDeletingUnsubmitted, Action::kFindByTag);
  w.out.tag_lookup = std::optional<int64_t>();
  w.out.tag_lookup_at = w.now;
  const Decision d = w.step();
  ASSERT_EQ(StageName(w.stage()), std::string("DeletionSettling"));
  EXPECT_EQ(d.action, Action::kNone) << "the finalizer stays: " << d.why;
  EXPECT_EQ(d.requeue_after, std::optional<Duration>(seconds(56)));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "WaitingForSubmitOutcome");
  // Requeued before the window's end: still waiting, no second Event.
  w.NextReconcile(seconds(30));
  ExpectRow(w, Stage::kDeletionSettling, Action::kNone);
  EXPECT_TRUE(w.decide().events.empty());
  // The window closed: search again; the submit landed as job 42.
  w.NextReconcile(seconds(26));
  ExpectRow(w, Stage::kDeletingUnsubmitted, Action::kFindByTag);
  w.out.tag_lookup = std::optional<int64_t>(42);
  w.out.tag_lookup_at = w.now;
  EXPECT_EQ(w.step().action, Action::kQuery);
  EXPECT_EQ(w.stage(), Stage::kCancelling) << "the late job is cancelled";
}

TEST(StageTable, DeletionAfterTheSettleWindowFindingNothingReleases) {
  World w;
  w.job.deleting = true;
  w.job.has_finalizer = true;
  w.memo.submit_outcome_unknown = true;
  w.memo.submit_attempt_at = kT0 - seconds(61);
  w.out.tag_lookup = std::optional<int64_t>();
  w.out.tag_lookup_at = w.now;
  EXPECT_EQ(w.step().action, Action::kRemoveFinalizer);
}

void Disowning() {
  World w;
  w.Submitted();
  w.job.deleting = true;
  w.job.spec.set_deletion_policy("Orphan");
  ExpectRow(w, Stage::kDisowning, Action::kUpdateJob);
  EXPECT_EQ(w.decide().update.comment, DisownedTag(w.job.id, 1));
  w.out.update = slurm::UpdateResponse{};
  EXPECT_EQ(w.step().action, Action::kRemoveFinalizer);
  EXPECT_TRUE(w.memo.disowned);
  w.job.has_finalizer = false;
  EXPECT_EQ(w.stage(), Stage::kReleased);
}

void DeletingEnded() {
  World w;
  w.Submitted("COMPLETED");
  w.job.deleting = true;
  ExpectRow(w, Stage::kDeletingEnded, Action::kRemoveFinalizer);
  w.job.spec.set_deletion_policy("Orphan");
  ExpectRow(w, Stage::kDeletingEnded, Action::kRemoveFinalizer);
  EXPECT_TRUE(w.decide().events.empty()) << "an ended job is not said to be left running";
  w.job.has_finalizer = false;
  EXPECT_EQ(w.stage(), Stage::kReleased);
}

void CancelBlocked() {
  World w;
  w.Submitted();
  w.job.deleting = true;
  w.cluster.kind = ClusterFacts::Kind::kNotFound;
  ExpectRow(w, Stage::kCancelBlocked, Action::kWriteStatus);
  EXPECT_EQ(w.decide().events.at(0).reason, "CancelBlocked");
  w.Wrote(w.decide());
  ExpectRow(w, Stage::kCancelBlocked, Action::kNone);
  w.cluster = fixtures::Cluster();
  EXPECT_EQ(w.stage(), Stage::kCancelling);
}

// #13 L1: the SlurmCluster was repointed after the submit. A cancel by id
// there would hit whatever job has that id now: blocked until pointed back.
void DeletionClusterMoved() {
  World w;
  w.Submitted();
  w.job.deleting = true;
  w.cluster.spec.set_cluster_id("elsewhere");
  ExpectRow(w, Stage::kDeletionClusterMoved, Action::kWriteStatus);
  const Decision d = w.decide();
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "CancelBlocked");
  EXPECT_NE(d.events[0].note.find("now points at projects/proj/locations/us-central1/"
                                  "modelDevelopmentClusters/elsewhere"),
            std::string::npos)
      << d.events[0].note;
  w.Wrote(d);
  ExpectRow(w, Stage::kDeletionClusterMoved, Action::kNone);
  EXPECT_TRUE(w.decide().requeue_after.has_value());
  w.cluster = fixtures::Cluster();  // pointed back
  EXPECT_EQ(w.stage(), Stage::kCancelling);
}

// #13 L1: the record under the job's id carries another tag (the cluster's
// ids started again): never cancelled, and the finalizer stays.
void DeletionNotOurs() {
  World w;
  w.Submitted();
  w.job.deleting = true;
  ExpectRow(w, Stage::kCancelling, Action::kQuery);
  w.SlurmSays(slurm::BaseState::kRunning, "slurmjob-operator:team-b/other-uid/1");
  ExpectRow(w, Stage::kDeletionNotOurs, Action::kWriteStatus);
  EXPECT_EQ(w.decide().events.at(0).reason, "CancelBlocked");
  w.Wrote(w.decide());
  ExpectRow(w, Stage::kDeletionNotOurs, Action::kNone);
  w.SlurmSays(slurm::BaseState::kRunning);  // its own record again
  EXPECT_EQ(w.decide().action, Action::kCancel);
}

void Cancelling() {
  World w;
  w.Submitted();
  w.job.deleting = true;
  ExpectRow(w, Stage::kCancelling, Action::kQuery);
  w.SlurmSays(slurm::BaseState::kRunning);
  EXPECT_EQ(w.step().action, Action::kCancel);
  w.out.cancel = slurm::CancelResponse{};
  w.out.query.reset();  // the executor looks again after a cancel
  EXPECT_EQ(w.step().action, Action::kQuery);
  w.SlurmSays(slurm::BaseState::kRunning);
  EXPECT_EQ(w.step().action, Action::kNone) << "waits for the job to end";
  w.SlurmSays(slurm::BaseState::kCancelled);
  EXPECT_EQ(w.step().action, Action::kRemoveFinalizer);
}

// ---------------------------------------------------------------- submission

void RecordingSubmit() {
  World w;
  w.job.has_finalizer = true;
  w.out.submit = int64_t{42};
  ExpectRow(w, Stage::kRecordingSubmit, Action::kWriteStatus);
  w.Wrote(w.step());
  EXPECT_EQ(w.job.status.job_id(), 42);
  w.NextReconcile();
  EXPECT_EQ(w.stage(), Stage::kFollowing);
}

void Blocked() {
  World w;
  w.cluster.kind = ClusterFacts::Kind::kNotFound;
  ExpectRow(w, Stage::kBlocked, Action::kWriteStatus);
  EXPECT_EQ(FindCondition(w.decide().status.conditions(), kStalled)->reason(), "ClusterNotFound");
  w.cluster = fixtures::Cluster();
  EXPECT_EQ(w.stage(), Stage::kUnprotected);
  // A SlurmCluster being deleted (kept only while SlurmJobs name it) takes no new job.
  w.cluster.deleting = true;
  ExpectRow(w, Stage::kBlocked, Action::kWriteStatus);
  EXPECT_EQ(FindCondition(w.decide().status.conditions(), kStalled)->reason(),
            "ClusterBeingDeleted");
}

// A job already submitted to a SlurmCluster being deleted is still followed (and so cancelled
// when its SlurmJob goes).
// A job id known only from the memo (the status write recording it failed)
// was submitted where the memo says: after a repoint it is neither cancelled
// nor disowned by that id on the other cluster (the simulation's repoint
// step, seed 8640: the disown's update went to the new cluster).
TEST(StageTable, AJobKnownOnlyFromTheMemoIsNotTouchedAfterARepoint) {
  World w;
  w.job.has_finalizer = true;
  w.job.deleting = true;
  w.memo.no_earlier_submit = true;
  w.memo.submitted_job_id = 42;
  w.memo.submitted_to = LocationOf(w.cluster.spec);
  w.cluster.spec.set_cluster_id("elsewhere");
  ExpectRow(w, Stage::kDeletionClusterMoved, Action::kWriteStatus);
  const Decision d = w.decide();
  EXPECT_EQ(FindCondition(d.status.conditions(), kSubmitted), nullptr)
      << "a job known from the memo is not said to be unsubmitted";
  EXPECT_EQ(FindCondition(d.status.conditions(), kReconciling)->reason(), "CancelBlocked");
  w.Wrote(d);
  ExpectRow(w, Stage::kDeletionClusterMoved, Action::kNone);
  w.job.spec.set_deletion_policy("Orphan");
  ExpectRow(w, Stage::kDisowning, Action::kRemoveFinalizer);
  EXPECT_EQ(w.decide().events.at(0).reason, "OrphanNotRetagged");
}

TEST(StageTable, AJobOnAClusterBeingDeletedIsStillFollowed) {
  World w;
  w.job.has_finalizer = true;
  w.out.submit = int64_t{42};
  w.Wrote(w.step());
  w.NextReconcile();
  w.cluster.deleting = true;
  EXPECT_EQ(w.stage(), Stage::kFollowing);
}

void LoadingScript() {
  World w;
  w.job.spec.clear_script();
  w.job.spec.mutable_script_from()->mutable_config_map_key_ref()->set_name("scripts");
  w.job.spec.mutable_script_from()->mutable_config_map_key_ref()->set_key("run.sh");
  ExpectRow(w, Stage::kLoadingScript, Action::kLoadScript);
  w.script.kind = ScriptFacts::Kind::kLoaded;
  w.script.text = "#!/bin/bash\necho hi\n";
  EXPECT_EQ(w.stage(), Stage::kUnprotected);
  w.script.kind = ScriptFacts::Kind::kMissing;
  EXPECT_EQ(w.stage(), Stage::kBlocked);
}

void Unprotected() {
  World w;
  ExpectRow(w, Stage::kUnprotected, Action::kAddFinalizer);
  w.job.has_finalizer = true;
  w.out.added_finalizer = true;
  // No search: this process knows no earlier submit; it records the target, then submits.
  EXPECT_EQ(w.step().action, Action::kWriteStatus);
  EXPECT_EQ(w.stage(), Stage::kRecordingTarget);
}

void Refused() {
  World w;
  w.job.has_finalizer = true;
  w.TargetRecorded();
  w.memo.no_earlier_submit = true;
  w.memo.submit_refused_at = kT0 - seconds(1);
  w.memo.refused_generation = 1;
  w.memo.refused_cluster_generation = 0;
  ExpectRow(w, Stage::kRefused, Action::kNone);
  EXPECT_TRUE(w.decide().requeue_after.has_value());
  w.job.generation = 2;  // the user edits the spec
  EXPECT_EQ(w.stage(), Stage::kReadyToSubmit);
}

void Settling() {
  World w;
  w.job.has_finalizer = true;
  w.memo.submit_outcome_unknown = true;
  w.memo.settle_until = kT0 + seconds(30);
  ExpectRow(w, Stage::kSettling, Action::kWriteStatus);
  EXPECT_EQ(FindCondition(w.decide().status.conditions(), kReconciling)->reason(),
            "SubmitOutcomeUnknown");
  w.now = kT0 + seconds(31);
  EXPECT_EQ(w.stage(), Stage::kSearching);
}

void Searching() {
  World w;
  w.job.has_finalizer = true;  // an earlier process added it: it may have submitted
  w.TargetRecorded();          // ... to where the SlurmCluster still points
  ExpectRow(w, Stage::kSearching, Action::kFindByTag);
  w.out.tag_lookup = std::optional<int64_t>();
  w.out.tag_lookup_at = w.now;  // after any earlier submit has settled
  w.step();
  EXPECT_EQ(w.stage(), Stage::kReadyToSubmit);
  w.out.tag_lookup = std::optional<int64_t>(41);
  w.step();
  EXPECT_EQ(w.stage(), Stage::kRecordingSubmit) << "adopts what it found";
}

// #13 (the simulation's repoint.unknown-submit.second-job): a process that
// restarts after sending a submit to c1, while SlurmCluster a3 was repointed
// to c2, looks for the job on c1, where status.submitTarget says it went.
TEST(StageTable, AfterARepointTheSearchLooksWhereTheSubmitWent) {
  World w;
  w.job.has_finalizer = true;
  *w.job.status.mutable_submit_target() = LocationOf(w.cluster.spec);  // c1
  w.cluster.spec.set_cluster_id("c2");
  ExpectRow(w, Stage::kSearching, Action::kFindByTag);
  const Decision search = w.decide();
  ASSERT_TRUE(search.search_at.has_value());
  EXPECT_EQ(search.search_at->cluster_id(), "c1");
  // Found there: recorded where it runs, then reported as moved (never
  // followed, nor a second job submitted to c2).
  w.out.tag_lookup = std::optional<int64_t>(41);
  w.out.tag_lookup_where = *search.search_at;
  w.out.tag_lookup_at = w.now;
  const Decision record = w.step();
  ASSERT_EQ(w.stage(), Stage::kRecordingSubmit);
  EXPECT_EQ(record.status.submitted_to().cluster_id(), "c1");
  w.Wrote(record);
  w.NextReconcile();
  EXPECT_EQ(w.stage(), Stage::kClusterMoved);
}

// #16 item 2: with a note key, a new job's first submit target rides with
// its finalizer (submit_target_note.h): one write before the submit, not two.
TEST(StageTable, WithANoteKeyTheFinalizerPatchRecordsTheTargetAndTheSubmitFollows) {
  World w;
  w.opt.note_target_with_finalizer = true;
  ExpectRow(w, Stage::kUnprotected, Action::kAddFinalizer);
  const Decision protect = w.decide();
  ASSERT_TRUE(protect.note_target.has_value()) << protect.why;
  EXPECT_TRUE(SameLocation(*protect.note_target, LocationOf(w.cluster.spec)));
  // The patch landed: the finalizer and the verified note (the executor's part).
  w.job.has_finalizer = true;
  w.job.noted_target = *protect.note_target;
  w.out.added_finalizer = true;
  EXPECT_EQ(w.step().action, Action::kSubmit);
  EXPECT_EQ(w.stage(), Stage::kReadyToSubmit);
  // The write that records the job copies the target into the status.
  w.out.submit = int64_t{42};
  w.out.submit_sent_at = w.now;
  const Decision record = w.step();
  ASSERT_EQ(w.stage(), Stage::kRecordingSubmit);
  ASSERT_TRUE(record.status.has_submit_target());
  EXPECT_TRUE(SameLocation(record.status.submit_target(), LocationOf(w.cluster.spec)));
}

TEST(StageTable, WithoutANoteKeyTheTargetHasAStatusWriteOfItsOwn) {
  World w;
  ExpectRow(w, Stage::kUnprotected, Action::kAddFinalizer);
  EXPECT_FALSE(w.decide().note_target.has_value());
}

// The note is written only when the submit is the very next step: a job that
// waits (suspended, say) records nothing yet, so a later repoint cannot leave
// a stale note pointing where no submit went.
TEST(StageTable, ANoteRidesWithTheFinalizerOnlyWhenTheSubmitIsNext) {
  World w;
  w.opt.note_target_with_finalizer = true;
  w.job.spec.set_suspend(true);
  ExpectRow(w, Stage::kUnprotected, Action::kAddFinalizer);
  EXPECT_FALSE(w.decide().note_target.has_value());
  w.job.spec.set_suspend(false);
  w.cluster.unprotected = true;
  EXPECT_FALSE(w.decide().note_target.has_value()) << "waits for the cluster to be kept first";
}

// The crash the note exists for: the finalizer patch with the note landed
// and the submit went to c1, then the process died before recording the job,
// and SlurmCluster a3 was repointed to c2. The next process looks on c1.
TEST(StageTable, AfterARepointTheSearchLooksWhereTheNoteSaysTheSubmitWent) {
  World w;
  w.opt.note_target_with_finalizer = true;
  w.job.has_finalizer = true;
  w.job.noted_target = LocationOf(w.cluster.spec);  // c1
  w.cluster.spec.set_cluster_id("c2");
  ExpectRow(w, Stage::kSearching, Action::kFindByTag);
  const Decision search = w.decide();
  ASSERT_TRUE(search.search_at.has_value());
  EXPECT_EQ(search.search_at->cluster_id(), "c1");
  // Nothing there: the new target goes through the status before the submit.
  w.out.tag_lookup = std::optional<int64_t>();
  w.out.tag_lookup_where = *search.search_at;
  w.out.tag_lookup_at = w.now;
  const Decision next = w.step();
  EXPECT_EQ(w.stage(), Stage::kRecordingTarget);
  ASSERT_EQ(next.action, Action::kWriteStatus);
  EXPECT_EQ(next.status.submit_target().cluster_id(), "c2");
}

// The status, which only the operator writes, wins over a note.
TEST(StageTable, TheStatusTargetTakesPrecedenceOverANote) {
  World w;
  w.job.has_finalizer = true;
  *w.job.status.mutable_submit_target() = LocationOf(w.cluster.spec);  // c1
  v1alpha1::SlurmJobLocation elsewhere = LocationOf(w.cluster.spec);
  elsewhere.set_cluster_id("c9");
  w.job.noted_target = elsewhere;
  ExpectRow(w, Stage::kSearching, Action::kFindByTag);
  EXPECT_EQ(w.decide().search_at->cluster_id(), "c1");
}

TEST(StageTable, AfterARepointNothingFoundWhereTheSubmitWentRecordsTheNewTarget) {
  World w;
  w.job.has_finalizer = true;
  *w.job.status.mutable_submit_target() = LocationOf(w.cluster.spec);  // c1
  w.cluster.spec.set_cluster_id("c2");
  w.out.tag_lookup = std::optional<int64_t>();
  w.out.tag_lookup_where = LocationOf(fixtures::Cluster().spec);
  w.out.tag_lookup_at = w.now;  // past the settle window
  w.step();
  ExpectRow(w, Stage::kRecordingTarget, Action::kWriteStatus);
  EXPECT_EQ(w.decide().status.submit_target().cluster_id(), "c2");
  w.Wrote(w.decide());
  EXPECT_EQ(w.stage(), Stage::kReadyToSubmit);
}

// This process's own submit to c1 got no answer; the informer cache still
// shows the status from before its target was written, and a3 now points at
// c2: the memo says where to look.
TEST(StageTable, AnUnknownSubmitIsLookedForWhereThisProcessSentIt) {
  World w;
  w.job.has_finalizer = true;
  w.memo.no_earlier_submit = true;
  w.memo.submit_outcome_unknown = true;
  w.memo.submit_attempt_at = kT0 - std::chrono::minutes(2);
  w.memo.submit_target = LocationOf(w.cluster.spec);  // c1
  w.cluster.spec.set_cluster_id("c2");
  ExpectRow(w, Stage::kSearching, Action::kFindByTag);
  EXPECT_EQ(w.decide().search_at->cluster_id(), "c1");
}

TEST(StageTable, AnUnknownSubmitSetsTheMemosTarget) {
  World w;
  w.job.has_finalizer = true;
  w.memo.no_earlier_submit = true;
  w.out.submit = absl::UnavailableError("reply lost");
  w.out.submit_may_have_been_delivered = true;
  w.out.submit_sent_at = w.now;
  w.step();
  ASSERT_TRUE(w.memo.submit_target.has_value());
  EXPECT_EQ(w.memo.submit_target->cluster_id(), "c1");
}

// #13 (the simulation's namespace.secret-gone-before-kept): the namespace's
// deletion took the credentials Secret before any submit. With no submit
// recorded, a search that cannot be sent releases the SlurmJob (an Event
// says so) instead of keeping the namespace Terminating for good.
TEST(StageTable, DeletingWithNoSubmitRecordedAndNoCredentialsReleases) {
  World w;
  w.job.deleting = true;
  w.job.has_finalizer = true;  // an earlier process added it
  ExpectRow(w, Stage::kDeletingUnsubmitted, Action::kFindByTag);
  w.out.tag_lookup = absl::UnauthenticatedError("Secret \"creds\" does not exist");
  w.out.tag_lookup_unsent = true;
  ExpectRow(w, Stage::kDeletingUnsubmitted, Action::kRemoveFinalizer);
  ASSERT_EQ(w.decide().events.size(), 1u);
  EXPECT_EQ(w.decide().events[0].reason, "ReleasedUnsubmitted");
  // A transient failure to read the Secret proves nothing: back off.
  w.out.tag_lookup = absl::UnavailableError("reading Secret: timeout");
  EXPECT_EQ(w.decide().action, Action::kNone);
  EXPECT_TRUE(w.decide().retry_with_backoff);
  // A recorded target means a submit may have been sent: never released unseen, and the
  // refusal is told (a condition and a Warning Event) with how to finish by hand.
  w.out.tag_lookup = absl::UnauthenticatedError("Secret \"creds\" does not exist");
  *w.job.status.mutable_submit_target() = LocationOf(w.cluster.spec);
  EXPECT_EQ(w.decide().action, Action::kWriteStatus);
  ASSERT_EQ(w.decide().events.size(), 1u);
  EXPECT_EQ(w.decide().events[0].reason, "CredentialsInvalid");
  // So does a search that was sent and failed.
  w.job.status.clear_submit_target();
  w.out.tag_lookup_unsent = false;
  EXPECT_EQ(w.decide().action, Action::kWriteStatus);
}

TEST(StageTable, SearchingTooEarlySettles) {
  World w;
  w.job.has_finalizer = true;
  w.opt.process_start = kT0;  // just restarted: a submit may still land
  w.out.tag_lookup = std::optional<int64_t>();
  w.out.tag_lookup_at = w.now;
  w.step();
  EXPECT_EQ(w.stage(), Stage::kSettling);
}

void SearchFailed() {
  World w;
  w.job.has_finalizer = true;
  w.out.tag_lookup = absl::UnavailableError("list failed");
  ExpectRow(w, Stage::kSearchFailed, Action::kWriteStatus);
  w.Wrote(w.decide());
  w.NextReconcile();
  EXPECT_EQ(w.stage(), Stage::kSearching);
}

void Suspended() {
  World w;
  w.job.has_finalizer = true;
  w.TargetRecorded();
  w.memo.no_earlier_submit = true;
  w.job.spec.set_suspend(true);
  ExpectRow(w, Stage::kSuspended, Action::kWriteStatus);
  w.job.spec.set_suspend(false);
  EXPECT_EQ(w.stage(), Stage::kReadyToSubmit);
}

void WaitingForDeps() {
  World w;
  w.job.has_finalizer = true;
  w.TargetRecorded();
  w.memo.no_earlier_submit = true;
  auto* dep = w.job.spec.add_depends_on();
  dep->set_name("prepare");
  w.job.dependencies = {{"prepare", "afterok", false, 0, ""}};
  ExpectRow(w, Stage::kWaitingForDeps, Action::kWriteStatus);
  w.job.dependencies = {{"prepare", "afterok", true, 7, "RUNNING"}};
  ASSERT_EQ(w.stage(), Stage::kReadyToSubmit);
  EXPECT_EQ(w.decide().descriptor.dependency, "afterok:7");
  EXPECT_EQ(w.decide().submit_body.dump().find("afterok:7") != std::string::npos, true);
}

// #13 item 8: a SlurmCluster the protector has not kept yet takes no job:
// deleting its namespace would delete it at once, and the job could never be
// cancelled (the simulation's namespace deletion step found it).
void ClusterUnprotected() {
  World w;
  w.job.has_finalizer = true;
  w.TargetRecorded();
  w.memo.no_earlier_submit = true;
  w.cluster.unprotected = true;
  ExpectRow(w, Stage::kClusterUnprotected, Action::kNone);
  EXPECT_EQ(w.decide().requeue_after, std::chrono::seconds(1));
  EXPECT_TRUE(w.decide().events.empty()) << "keeping it takes a patch or two: only a wait";

  // The protector was refused: the status and a Warning Event say why, once.
  w.cluster.protection_problem =
      "patching the finalizer of Secret tenant-creds failed: secrets \"tenant-creds\" is "
      "forbidden";
  ExpectRow(w, Stage::kClusterUnprotected, Action::kWriteStatus);
  const Decision d = w.decide();
  const v1alpha1::Condition* reconciling = FindCondition(d.status.conditions(), kReconciling);
  ASSERT_NE(reconciling, nullptr);
  EXPECT_EQ(reconciling->reason(), "ClusterProtectionFailed");
  EXPECT_THAT(reconciling->message(), HasSubstr("is forbidden"));
  EXPECT_THAT(reconciling->message(), HasSubstr("nothing is submitted"));
  EXPECT_EQ(d.status.phase(), "Pending");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].type, kWarning);
  EXPECT_EQ(d.events[0].reason, "ClusterProtectionFailed");
  w.Wrote(d);
  ExpectRow(w, Stage::kClusterUnprotected, Action::kNone);
  EXPECT_EQ(w.decide().requeue_after, w.opt.permission_retry) << "the cluster's change wakes it";
  EXPECT_TRUE(w.decide().events.empty());

  w.cluster.unprotected = false;
  EXPECT_EQ(w.stage(), Stage::kReadyToSubmit);
}

// #13: before a submit is sent, the status says where it goes; a crash or a
// repoint after it then looks for the job there.
void RecordingTarget() {
  World w;
  w.job.has_finalizer = true;
  w.memo.no_earlier_submit = true;
  ExpectRow(w, Stage::kRecordingTarget, Action::kWriteStatus);
  const Decision d = w.decide();
  EXPECT_TRUE(SameLocation(d.status.submit_target(), LocationOf(w.cluster.spec)));
  EXPECT_EQ(d.status.job_id(), 0);
  w.Wrote(d);
  w.NextReconcile();
  ASSERT_EQ(w.stage(), Stage::kReadyToSubmit);
  // Repointed before the submit was sent: the new place is recorded first.
  w.cluster.spec.set_cluster_id("c2");
  ExpectRow(w, Stage::kRecordingTarget, Action::kWriteStatus);
  EXPECT_EQ(w.decide().status.submit_target().cluster_id(), "c2");
}

// A status write that recorded the target got no answer (it may have landed), and the view
// still shows the record as it was: the stored object is read before anything acts on where
// the submit goes (seed 7268161 of the simulation submitted twice without this).
void ConfirmingWrite() {
  World w;
  w.job.has_finalizer = true;
  w.memo.no_earlier_submit = true;
  w.TargetRecorded();  // c1, as the view shows it
  w.memo.write_outcome_unknown = true;
  ExpectRow(w, Stage::kConfirmingWrite, Action::kReread);
  // The stored object names c2 (the unanswered write landed); the SlurmCluster points at c1
  // again: the record is rewritten before the submit, not trusted from the view.
  w.job.status.mutable_submit_target()->set_cluster_id("c2");
  w.memo.write_outcome_unknown = false;  // the executor's Reread
  ExpectRow(w, Stage::kRecordingTarget, Action::kWriteStatus);
  EXPECT_EQ(w.decide().status.submit_target().cluster_id(), "c1");
  // The flag belongs to the incarnation, not the run: a new run keeps it.
  w.memo.write_outcome_unknown = true;
  w.job.status.set_run(2);
  w.step();
  EXPECT_TRUE(w.memo.write_outcome_unknown);
  EXPECT_EQ(w.stage(), Stage::kConfirmingWrite);
}

// A rejected spec retried after its SlurmCluster changed: the record write first takes the
// rejection out of the status, so that a restart does not read the retry as refused.
void RecordingTargetTakesARejectionOut() {
  World w;
  w.job.has_finalizer = true;
  w.memo.no_earlier_submit = true;
  w.TargetRecorded();
  SetCondition(w.job.status.mutable_conditions(), kStalled, ConditionStatus::kTrue,
               "SubmitRejected", "bad partition", w.job.generation, w.now);
  w.memo.submit_refused_at = w.now;
  w.memo.refused_generation = w.job.generation;
  w.memo.refused_cluster_generation = w.cluster.generation;
  ExpectRow(w, Stage::kRefused, Action::kNone);
  w.cluster.generation += 1;  // the SlurmCluster changed
  ExpectRow(w, Stage::kRecordingTarget, Action::kWriteStatus);
  const Decision d = w.decide();
  EXPECT_EQ(FindCondition(d.status.conditions(), kStalled)->status(), "False");
  w.Wrote(d);
  EXPECT_EQ(w.stage(), Stage::kReadyToSubmit);
}

void ReadyToSubmit() {
  World w;
  w.job.has_finalizer = true;
  w.memo.no_earlier_submit = true;
  *w.job.status.mutable_submit_target() = LocationOf(w.cluster.spec);
  ExpectRow(w, Stage::kReadyToSubmit, Action::kSubmit);
  EXPECT_FALSE(w.decide().submit_body.is_null()) << "rendered once, in the core";
  w.out.submit = int64_t{42};
  w.step();
  EXPECT_EQ(w.stage(), Stage::kRecordingSubmit);
}

void SubmitFailed() {
  World w;
  w.job.has_finalizer = true;
  w.memo.no_earlier_submit = true;
  w.out.submit = absl::FailedPreconditionError("Invalid partition name specified");
  w.memo.submit_refused_at.reset();
  Decision d = w.step();
  ExpectRow(w, Stage::kSubmitFailed, Action::kWriteStatus);
  w.Wrote(d);
  w.NextReconcile();
  EXPECT_EQ(w.stage(), Stage::kRefused) << "not sent again for this spec";
  // A submit whose outcome is unknown is followed by a search for its tag,
  // in the same reconcile, never by a second submit.
  World u;
  u.job.has_finalizer = true;
  u.memo.no_earlier_submit = true;
  u.out.submit = absl::UnavailableError("connection reset");
  u.out.submit_may_have_been_delivered = true;
  u.out.submit_sent_at = kT0;
  EXPECT_EQ(u.step().action, Action::kFindByTag);
  EXPECT_EQ(u.stage(), Stage::kSearching);
  // Found nothing while the submit may still land: wait, do not submit.
  u.out.tag_lookup = std::optional<int64_t>();
  u.out.tag_lookup_at = kT0 + seconds(1);
  u.step();
  EXPECT_EQ(u.stage(), Stage::kSettling);
}

// ---------------------------------------------------------------- tracking

void Ended() {
  World w;
  w.Submitted("COMPLETED");
  ExpectRow(w, Stage::kEnded, Action::kNone);  // nothing left to do
  w.job.spec.set_run_id("again");
  ASSERT_EQ(w.stage(), Stage::kEnded);
  Decision d = w.decide();
  ASSERT_EQ(d.action, Action::kWriteStatus);
  w.Wrote(d);
  w.step();
  EXPECT_EQ(w.stage(), Stage::kRecordingTarget) << "the next run, whose target is recorded first";
}

// A run that ended at kT0 with spec.ttlSecondsAfterFinished `ttl`.
void FinishedWithTtl(World& w, int32_t ttl) {
  w.Submitted("COMPLETED");
  w.job.status.mutable_end_time()->set_seconds(
      std::chrono::duration_cast<seconds>(kT0.time_since_epoch()).count());
  w.job.spec.set_ttl_seconds_after_finished(ttl);
}

// Waits exactly until the TTL passes (not stretched, not early), then deletes.
void TtlWaiting() {
  World w;
  FinishedWithTtl(w, 600);
  w.now = kT0 + seconds(100);
  ExpectRow(w, Stage::kTtlWaiting, Action::kNone);
  EXPECT_EQ(w.decide().requeue_after, std::optional<Duration>(seconds(500)));
  w.now = kT0 + seconds(600);
  EXPECT_EQ(w.stage(), Stage::kTtlExpired);
}

// The delete carries the uid: a SlurmJob re-created under the name is never
// deleted; the deletion then removes the finalizer without a cancel.
void TtlExpired() {
  World w;
  FinishedWithTtl(w, 0);
  ExpectRow(w, Stage::kTtlExpired, Action::kDeleteJob);
  const Decision d = w.decide();
  EXPECT_EQ(d.uid, "uid-1");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "TTLExpired");
  w.job.deleting = true;
  ExpectRow(w, Stage::kDeletingEnded, Action::kRemoveFinalizer);
}

// A run that ran and ended at kT0 before accounting showed its end: no usage.
void RanAndEndedWithoutUsage(World& w) {
  w.Submitted("COMPLETED");
  const int64_t end = std::chrono::duration_cast<seconds>(kT0.time_since_epoch()).count();
  w.job.status.mutable_start_time()->set_seconds(end - 60);
  w.job.status.mutable_end_time()->set_seconds(end);
  w.job.status.set_run(1);
}

// Looked at again on NextUsageLook's schedule (2, 5, 10 ... 300 s after the end), and only the
// usage is written once a look shows it; then nothing is left to do.
void AwaitingUsage() {
  World w;
  RanAndEndedWithoutUsage(w);
  w.now = kT0 + seconds(1);
  ExpectRow(w, Stage::kAwaitingUsage, Action::kNone);
  EXPECT_EQ(w.decide().requeue_after, std::optional<Duration>(seconds(1)));
  w.now = kT0 + seconds(3);
  ExpectRow(w, Stage::kAwaitingUsage, Action::kQuery);
  EXPECT_TRUE(w.decide().accounting_only) << "the end is known: only accounting is read";
  // Accounting does not show the end yet: the next look is 5 s after the end.
  w.SlurmSays(slurm::BaseState::kCompleted);
  Decision later = w.step();
  EXPECT_EQ(later.action, Action::kNone) << later.why;
  EXPECT_EQ(later.requeue_after, std::optional<Duration>(seconds(2)));
  // Now it does: status.usage is written, the rest of the status as it was.
  w.NextReconcile(seconds(2));
  ASSERT_EQ(w.decide().action, Action::kQuery);
  w.SlurmSays(slurm::BaseState::kCompleted);
  slurm::JobInfo& record = *w.out.query->value().job;
  record.start_time = kT0 - seconds(60);
  record.end_time = kT0;
  record.allocation = slurm::Allocation{{{"cpu", 4}, {"gres/gpu", 2}}, 60};
  Decision d = w.step();
  ASSERT_EQ(d.action, Action::kWriteStatus) << d.why;
  EXPECT_EQ(d.status.usage().run(), 1);
  EXPECT_EQ(d.status.usage().gpu_seconds(), 120);
  v1alpha1::SlurmJobStatus without_usage = d.status;
  without_usage.clear_usage();
  EXPECT_TRUE(SameStatus(without_usage, w.job.status)) << "only status.usage is written";
  EXPECT_TRUE(d.events.empty());
  w.Wrote(d);
  w.NextReconcile();
  EXPECT_EQ(w.stage(), Stage::kEnded);
}

// Argo CD or Flux would re-create it (new uid, run again): kept, said once.
void KeptForGitOps() {
  World w;
  FinishedWithTtl(w, 0);
  w.job.labels["kustomize.toolkit.fluxcd.io/name"] = "apps";
  ExpectRow(w, Stage::kKeptForGitOps, Action::kWriteStatus);
  const Decision d = w.decide();
  const v1alpha1::Condition* skipped = FindCondition(d.status.conditions(), kTtlSkipped);
  ASSERT_NE(skipped, nullptr);
  EXPECT_EQ(skipped->status(), "True");
  EXPECT_EQ(skipped->reason(), "GitOpsManaged");
  EXPECT_NE(skipped->message().find("Flux"), std::string::npos) << skipped->message();
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "TTLSkippedGitOpsManaged");
  w.Wrote(d);
  w.NextReconcile(std::chrono::hours(1));
  ExpectRow(w, Stage::kKeptForGitOps, Action::kNone);
  EXPECT_TRUE(w.decide().events.empty()) << "the Event is not sent again";
  EXPECT_FALSE(w.decide().requeue_after.has_value());
}

void ClusterGone() {
  World w;
  w.Submitted();
  w.cluster.kind = ClusterFacts::Kind::kNotFound;
  ExpectRow(w, Stage::kClusterGone, Action::kWriteStatus);
  w.cluster = fixtures::Cluster();
  EXPECT_EQ(w.stage(), Stage::kFollowing);
}

void Superseded() {
  World w;
  w.Submitted();
  w.job.spec.set_run_id("again");
  // Nothing is cancelled before a look found the job ours.
  ExpectRow(w, Stage::kFollowing, Action::kQuery);
  w.SlurmSays(slurm::BaseState::kRunning);
  ExpectRow(w, Stage::kSuperseded, Action::kCancel);
  w.out.cancel = slurm::CancelResponse{};
  w.out.query.reset();  // the executor looks again after a cancel
  w.step();
  EXPECT_EQ(w.stage(), Stage::kFollowing);
  w.SlurmSays(slurm::BaseState::kRunning);
  w.out.cancel = absl::UnavailableError("x");
  EXPECT_EQ(w.stage(), Stage::kSuperseded);
  EXPECT_TRUE(w.decide().retry_with_backoff);
  ExpectCancelFailedEvent(w, "spec.runId changed");
  w.SlurmSays(slurm::BaseState::kRunning, "someone else's job");
  EXPECT_EQ(w.stage(), Stage::kNotOurs) << "another job is never cancelled";
}

// #13 L1: the SlurmCluster now points at another cluster than the one the
// job was submitted to: neither followed nor cancelled there; reported.
void ClusterMoved() {
  World w;
  w.Submitted();
  w.cluster.spec.set_cluster_id("elsewhere");
  ExpectRow(w, Stage::kClusterMoved, Action::kWriteStatus);
  const Decision d = w.decide();
  EXPECT_EQ(FindCondition(d.status.conditions(), kReconciling)->reason(), "ClusterChanged");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].type, kWarning);
  w.job.spec.set_run_id("again");
  EXPECT_EQ(w.stage(), Stage::kClusterMoved) << "not even a runId change cancels there";
  w.cluster = fixtures::Cluster();
  EXPECT_EQ(w.stage(), Stage::kFollowing);
}

// #13 L1: the job's id names another job (its comment is not the tag).
void NotOurs() {
  World w;
  w.Submitted();
  w.SlurmSays(slurm::BaseState::kPending, "slurmjob-operator:team-b/other-uid/1@prod");
  ExpectRow(w, Stage::kNotOurs, Action::kWriteStatus);
  const Decision d = w.decide();
  EXPECT_EQ(d.status.phase(), "Unknown");
  EXPECT_EQ(d.status.job_state(), "RUNNING") << "the stranger's state is not shown";
  EXPECT_EQ(FindCondition(d.status.conditions(), kReconciling)->reason(), "JobNotOurs");
  w.job.spec.set_suspend(true);
  EXPECT_EQ(w.stage(), Stage::kNotOurs) << "never held either";
}

// The upgrade rule (ownership.h): a status written by the previous version
// has no submittedTo and no jobTag, and its job the legacy tag. It is
// followed, and its first look records where the job runs and its tag.
TEST(StageTable, AStatusFromBeforeSubmittedToLearnsItFromItsFirstLook) {
  World w;
  w.job.id.installation = "prod";
  w.Submitted("PENDING");
  w.job.status.clear_submitted_to();
  w.job.status.clear_job_tag();
  w.cluster.spec.set_cluster_id("anywhere");  // no record of where it was: not "moved"
  ExpectRow(w, Stage::kFollowing, Action::kQuery);
  w.SlurmSays(slurm::BaseState::kRunning, LegacySubmissionTag(w.job.id, 1));
  ExpectRow(w, Stage::kActive, Action::kWriteStatus);
  const Decision d = w.decide();
  EXPECT_EQ(d.status.submitted_to().cluster_id(), "anywhere");
  EXPECT_EQ(d.status.job_tag(), LegacySubmissionTag(w.job.id, 1));
  // A restored SlurmJob (new uid) is still matched by its recorded tag.
  w.Wrote(d);
  w.job.id.uid = "restored-uid";
  EXPECT_EQ(w.stage(), Stage::kActive);
}

TEST(StageTable, AnAccountingRecordWithoutCommentCannotBeToldAndIsOurs) {
  World w;
  w.Submitted();
  w.SlurmSays(slurm::BaseState::kCompleted, "");
  w.out.query->value().from_accounting = true;
  EXPECT_EQ(w.stage(), Stage::kJobEnded);
  w.out.query->value().from_accounting = false;  // the live queue always has the comment
  EXPECT_EQ(w.stage(), Stage::kNotOurs);
}

void Following() {
  World w;
  w.Submitted();
  ExpectRow(w, Stage::kFollowing, Action::kQuery);
  w.memo.last_query_at = w.now;  // looked a moment ago
  EXPECT_EQ(w.decide().why, "polled recently");
  w.SlurmSays(slurm::BaseState::kRunning);
  EXPECT_EQ(w.stage(), Stage::kActive);
}

// Found by the simulation (simulation_test, seed 6): the poll interval grows
// with the job's age (a tenth of it), so "polled recently" computed with
// the interval at `now` requeued for the remainder, and at the requeue the
// interval had grown by a tenth of that remainder: another, ten times
// shorter requeue, and so on (a Zeno series of reconciles that, with a
// fake clock, never reached the poll). The poll is due one interval after
// the last look, the interval as it was at that look.
void PolledRecentlyEndsAtThePoll() {
  World w;
  w.Submitted();
  w.memo.last_query_at = kT0 + seconds(100);  // the interval then: 10 s
  w.now = kT0 + seconds(105);
  const Decision d = w.decide();
  ASSERT_EQ(d.why, "polled recently");
  ASSERT_TRUE(d.requeue_after.has_value());
  EXPECT_EQ(*d.requeue_after, seconds(5));
  w.now += *d.requeue_after;
  EXPECT_EQ(w.decide().action, Action::kQuery) << w.decide().why;
}

// A spec change after the last look (here spec.suspend on a pending job) is
// not answered by that look: the reconcile it wakes looks again, then holds.
// (Before, it stopped as "polled recently" and the hold waited for the
// tracker's stretched requeue: RealSlurm.SuspendHolds... timed out in CI.)
void FollowingAfterASpecChange() {
  World w;
  w.Submitted("PENDING");
  w.memo.last_query_at = w.now;
  ASSERT_EQ(w.decide().why, "polled recently");
  w.job.generation += 1;
  w.job.spec.set_suspend(true);
  ExpectRow(w, Stage::kFollowing, Action::kQuery);
  w.SlurmSays(slurm::BaseState::kPending);
  EXPECT_EQ(w.stage(), Stage::kHolding);
}

// #13 item 9: the status write after a look failed (the API server
// unreachable). The retry, however soon, looks again rather than counting
// that look as recent: before, it found the cached status unchanged, wrote
// nothing and waited out the poll, stretched by the tracker to minutes,
// while status showed RUNNING for a job Slurm had finished.
void FollowingAfterAFailedStatusWrite() {
  World w;
  w.Submitted();
  w.SlurmSays(slurm::BaseState::kCompleted);
  ASSERT_EQ(w.step().action, Action::kWriteStatus);  // the look, and its status
  w.memo.look_unrecorded = true;                     // what the executor does when that write fails
  w.NextReconcile(std::chrono::milliseconds(10));    // the backoff retry
  EXPECT_EQ(w.step().action, Action::kQuery) << "the failed write's look counted as recent";
  EXPECT_EQ(w.stage(), Stage::kFollowing);
  w.SlurmSays(slurm::BaseState::kCompleted);
  EXPECT_EQ(w.step().action, Action::kWriteStatus);
  EXPECT_FALSE(w.memo.look_unrecorded) << "cleared by the new look";
}

void QueryFailed() {
  World w;
  w.Submitted();
  w.out.query = absl::UnavailableError("x");
  ExpectRow(w, Stage::kQueryFailed, Action::kNone);
  w.NextReconcile();
  EXPECT_EQ(w.stage(), Stage::kFollowing);
  // Failing for longer than the grace: the status says so before the backoff.
  w.memo.looks_failing_since = w.now - w.opt.tracking_failure_grace;
  w.out.query = absl::UnavailableError("x");
  ExpectRow(w, Stage::kQueryFailed, Action::kWriteStatus);
  w.Wrote(w.decide());
  ExpectRow(w, Stage::kQueryFailed, Action::kNone);
}

void JobMissing() {
  World w;
  w.Submitted();
  w.out.query = SlurmView{};
  ExpectRow(w, Stage::kJobMissing, Action::kWriteStatus);
  EXPECT_EQ(w.decide().status.phase(), "Unknown");
  w.NextReconcile();
  EXPECT_EQ(w.stage(), Stage::kFollowing);
}

void JobEnded() {
  World w;
  w.Submitted();
  w.SlurmSays(slurm::BaseState::kCompleted);
  ExpectRow(w, Stage::kJobEnded, Action::kWriteStatus);
  w.Wrote(w.decide());
  w.NextReconcile();
  EXPECT_EQ(w.stage(), Stage::kEnded);
}

// ------------------------------------------------- spec.activeDeadlineSeconds

int64_t Unix(Time t) { return std::chrono::duration_cast<seconds>(t.time_since_epoch()).count(); }

// Running since its first submit at kT0, with 600 s to go from there.
void RunningWithDeadline(World& w, std::string_view state = "RUNNING") {
  w.Submitted(state);
  w.job.spec.set_active_deadline_seconds(600);
  w.job.status.mutable_first_submit_time()->set_seconds(Unix(kT0));
}

// Slurm's record of array job 42: `failed` indexes FAILED, `running` RUNNING.
void ArraySays(World& w, std::vector<int32_t> failed, std::vector<int32_t> running,
               slurm::BaseState cancelled_rest = slurm::BaseState::kUnknown) {
  std::vector<slurm::JobInfo> records;
  int64_t id = 43;
  auto add = [&](int32_t index, slurm::BaseState state, int32_t exit_code) {
    slurm::JobInfo r;
    r.job_id = id++;
    r.array_job_id = 42;
    r.array_task_id = index;
    r.state = state;
    if (slurm::IsTerminalState(state)) r.exit_code = exit_code;
    r.submit_time = kT0;
    r.comment = RunTag(w.job);
    records.push_back(r);
  };
  for (int32_t i : failed) add(i, slurm::BaseState::kFailed, 1);
  for (int32_t i : running)
    add(i,
        cancelled_rest == slurm::BaseState::kUnknown ? slurm::BaseState::kRunning : cancelled_rest,
        0);
  w.out.query = SlurmView{slurm::FoldArrayRecords(std::move(records)).front()};
}

// spec.array.maxFailedIndexes exceeded while tasks still run: a verified cancel of the array
// (its own id), then Failed with reason MaxFailedIndexesExceeded, nothing retried.
void TooManyFailedIndexes() {
  World w;
  w.Submitted();
  w.job.spec.mutable_array()->set_indexes("0-3");
  w.job.spec.mutable_array()->set_max_failed_indexes(1);
  ArraySays(w, {0}, {1, 2, 3});
  EXPECT_EQ(w.stage(), Stage::kActive) << "one failed index is allowed";
  ArraySays(w, {0, 1}, {2, 3});
  ExpectRow(w, Stage::kTooManyFailedIndexes, Action::kCancel);
  EXPECT_EQ(w.decide().job_id, 42);
  ASSERT_EQ(w.decide().events.size(), 1u);
  EXPECT_EQ(w.decide().events[0].reason, "MaxFailedIndexesExceeded");
  w.out.cancel = slurm::CancelResponse{};
  ExpectRow(w, Stage::kTooManyFailedIndexes, Action::kNone);
  EXPECT_EQ(w.decide().requeue_after, std::optional<Duration>(w.opt.cancel_wait_poll));
  w.out.cancel = absl::UnavailableError("x");
  EXPECT_TRUE(w.decide().retry_with_backoff);
  ExpectCancelFailedEvent(w, "maxFailedIndexes");
  w.out.cancel.reset();
  ArraySays(w, {0, 1}, {2, 3}, slurm::BaseState::kCancelled);
  ExpectRow(w, Stage::kJobEnded, Action::kWriteStatus);
  const Decision d = w.decide();
  EXPECT_EQ(d.status.phase(), "Failed");
  EXPECT_EQ(d.status.reason(), "MaxFailedIndexesExceeded");
  EXPECT_EQ(CurrentRun(d.status), 1);
}

// Slurm drops a task's record MinJobAge after it ends, so a slow look can miss
// tasks: tasks 0 and 1 gone unseen, 2 FAILED and 3 COMPLETED make a final
// record, but whether 0 and 1 failed is unknown. Nothing is judged or retried
// until accounting lists every task (it failed before: index 2 was retried at
// once and the SlurmJob ended with 0 and 1 never accounted for).
TEST(StageTable, AnArrayIsNotJudgedEndedWhileIndexesWentUnseen) {
  World w;
  w.Submitted();
  w.job.spec.mutable_array()->set_indexes("0-3");
  w.job.spec.mutable_array()->set_backoff_limit_per_index(1);
  ArraySays(w, {2}, {3}, slurm::BaseState::kCompleted);
  ASSERT_TRUE(w.out.query->value().job->IsFinal()) << "the record Slurm shows is final";
  EXPECT_TRUE(guards::ArrayIndexesUnseen(w.known()));
  ExpectRow(w, Stage::kActive, Action::kWriteStatus);
  Decision d = w.decide();
  EXPECT_EQ(CurrentRun(d.status), 1) << "nothing retried yet";
  EXPECT_FALSE(IsFinalJobState(d.status.job_state())) << d.status.job_state();
  EXPECT_EQ(d.status.array().completed_indexes(), "3");
  EXPECT_EQ(d.status.array().failed_indexes(), "2");
  EXPECT_EQ(d.status.array().pending(), 2) << "0 and 1 are not known ended";
  w.Wrote(d);
  w.NextReconcile();
  ArraySays(w, {1, 2}, {0, 3}, slurm::BaseState::kCompleted);  // accounting: every task
  EXPECT_FALSE(guards::ArrayIndexesUnseen(w.known()));
  ExpectRow(w, Stage::kJobEnded, Action::kWriteStatus);
  d = w.decide();
  EXPECT_EQ(CurrentRun(d.status), 2);
  EXPECT_EQ(d.status.array().run_indexes(), "1,2") << "both failed indexes, and only those";
  EXPECT_EQ(d.status.array().completed_indexes(), "0,3");
}

// The deadline passed: a look first (however recent the last), then a
// verified cancel, then Failed with reason DeadlineExceeded, not retried.
void DeadlineExceeded() {
  World w;
  RunningWithDeadline(w);
  w.now = kT0 + seconds(600);
  w.memo.last_query_at = w.now - seconds(1);
  ExpectRow(w, Stage::kFollowing, Action::kQuery);
  w.SlurmSays(slurm::BaseState::kRunning, "someone else's job");
  EXPECT_EQ(w.stage(), Stage::kNotOurs) << "another job is never cancelled";
  w.SlurmSays(slurm::BaseState::kRunning);
  ExpectRow(w, Stage::kDeadlineExceeded, Action::kCancel);
  ASSERT_EQ(w.decide().events.size(), 1u);
  EXPECT_EQ(w.decide().events[0].reason, "DeadlineExceeded");
  w.out.cancel = slurm::CancelResponse{};
  w.out.query.reset();  // the executor looks again after a cancel
  w.step();
  EXPECT_EQ(w.stage(), Stage::kFollowing);
  w.SlurmSays(slurm::BaseState::kRunning);
  ExpectRow(w, Stage::kDeadlineExceeded, Action::kNone);
  EXPECT_EQ(w.decide().requeue_after, std::optional<Duration>(w.opt.cancel_wait_poll));
  w.out.cancel = absl::UnavailableError("x");
  EXPECT_TRUE(w.decide().retry_with_backoff);
  ExpectCancelFailedEvent(w, "activeDeadlineSeconds");
  w.out.cancel.reset();
  w.job.spec.set_backoff_limit(3);  // CANCELLED is never retried; NODE_FAIL would be
  w.SlurmSays(slurm::BaseState::kCancelled);
  ExpectRow(w, Stage::kJobEnded, Action::kWriteStatus);
  const Decision d = w.decide();
  EXPECT_EQ(d.status.phase(), "Failed");
  EXPECT_EQ(d.status.reason(), "DeadlineExceeded");
  EXPECT_EQ(CurrentRun(d.status), 1);
  EXPECT_EQ(FindCondition(d.status.conditions(), kFailed)->reason(), "DeadlineExceeded");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "DeadlineExceeded");
}

// Before the deadline, the requeue of an active job ends at the deadline.
TEST(StageTable, AnActiveJobIsLookedAtAgainAtItsDeadline) {
  World w;
  RunningWithDeadline(w);
  w.now = kT0 + seconds(597);
  w.SlurmSays(slurm::BaseState::kRunning);
  ASSERT_EQ(w.stage(), Stage::kActive);
  w.Wrote(w.decide());
  EXPECT_EQ(w.decide().requeue_after, std::optional<Duration>(seconds(3)));
  w.memo.last_query_at = w.now;
  w.NextReconcile(seconds(1));
  ASSERT_EQ(w.stage(), Stage::kFollowing);
  EXPECT_EQ(w.decide().requeue_after, std::optional<Duration>(seconds(2)))
      << "polled recently: still due at the deadline";
}

// A run that failed by itself just before the deadline is not retried after it.
TEST(StageTable, NoRetryIsStartedPastTheDeadline) {
  World w;
  RunningWithDeadline(w);
  w.job.spec.set_backoff_limit(3);
  w.now = kT0 + seconds(601);
  w.SlurmSays(slurm::BaseState::kNodeFail);
  w.out.query->value().job->end_time = kT0 + seconds(590);
  ExpectRow(w, Stage::kJobEnded, Action::kWriteStatus);
  const Decision d = w.decide();
  EXPECT_EQ(CurrentRun(d.status), 1) << "not retried";
  EXPECT_EQ(d.status.phase(), "Failed");
  EXPECT_NE(d.status.message().find("activeDeadlineSeconds"), std::string::npos)
      << d.status.message();
  w.now = kT0 + seconds(595);
  EXPECT_EQ(CurrentRun(w.decide().status), 2) << "before the deadline it is retried";
}

// firstSubmitTime is recorded by the first submit, kept by a retry, and
// starts afresh with a new runId; every submit sends Slurm that deadline.
TEST(StageTable, TheFirstSubmitTimeIsKeptByRetriesNotByANewRunId) {
  World w;
  w.job.has_finalizer = true;
  w.memo.no_earlier_submit = true;
  w.job.spec.set_active_deadline_seconds(600);
  w.TargetRecorded();
  EXPECT_EQ(w.decide().descriptor.deadline, std::optional<int64_t>(Unix(kT0) + 600));
  w.out.submit = int64_t{42};
  w.out.submit_sent_at = kT0;
  w.now = kT0 + seconds(2);
  const Decision recorded = w.step();
  ASSERT_EQ(w.stage(), Stage::kRecordingSubmit);
  EXPECT_EQ(recorded.status.first_submit_time().seconds(), Unix(kT0));
  const v1alpha1::SlurmJobStatus retry =
      StatusForNewRun(recorded.status, "", 1, "retried", "Retrying", "m", 1, kT0 + seconds(60));
  EXPECT_EQ(retry.first_submit_time().seconds(), Unix(kT0));
  World again;
  again.job = w.job;
  again.job.status = retry;
  again.TargetRecorded();
  again.job.has_finalizer = true;
  again.memo.no_earlier_submit = true;
  again.memo.started_run = true;
  again.memo.run = 2;
  again.now = kT0 + seconds(300);
  ASSERT_EQ(again.stage(), Stage::kReadyToSubmit);
  EXPECT_EQ(again.decide().descriptor.deadline, std::optional<int64_t>(Unix(kT0) + 600));
  EXPECT_FALSE(StatusForNewRun(recorded.status, "v2", 0, "superseded", "NewRun", "m", 1, kT0)
                   .has_first_submit_time());
}

void Holding() {
  World w;
  w.Submitted("PENDING");
  w.job.spec.set_suspend(true);
  w.SlurmSays(slurm::BaseState::kPending);
  ExpectRow(w, Stage::kHolding, Action::kUpdateJob);
  EXPECT_TRUE(w.decide().update.hold.value_or(false));
  w.out.update = slurm::UpdateResponse{};
  ASSERT_EQ(w.stage(), Stage::kActive);
  EXPECT_TRUE(w.decide().status.held());
}

void Active() {
  World w;
  w.Submitted("PENDING");
  w.SlurmSays(slurm::BaseState::kRunning);
  ExpectRow(w, Stage::kActive, Action::kWriteStatus);
  w.Wrote(w.step());
  w.NextReconcile();
  EXPECT_EQ(w.stage(), Stage::kFollowing);
}

// One walk per row of the table, by stage.
const std::vector<std::pair<Stage, void (*)()>>& Rows() {
  static const auto* rows = new std::vector<std::pair<Stage, void (*)()>>{
      {Stage::kReleased, Released},
      {Stage::kDeletionSettling, DeletionSettling},
      {Stage::kDeletingUnsubmitted, DeletingUnsubmitted},
      {Stage::kDisowning, Disowning},
      {Stage::kDeletingEnded, DeletingEnded},
      {Stage::kCancelBlocked, CancelBlocked},
      {Stage::kDeletionClusterMoved, DeletionClusterMoved},
      {Stage::kDeletionNotOurs, DeletionNotOurs},
      {Stage::kCancelling, Cancelling},
      {Stage::kRecordingSubmit, RecordingSubmit},
      {Stage::kBlocked, Blocked},
      {Stage::kLoadingScript, LoadingScript},
      {Stage::kUnprotected, Unprotected},
      {Stage::kConfirmingWrite, ConfirmingWrite},
      {Stage::kRefused, Refused},
      {Stage::kSettling, Settling},
      {Stage::kSearching, Searching},
      {Stage::kSearchFailed, SearchFailed},
      {Stage::kSuspended, Suspended},
      {Stage::kWaitingForDeps, WaitingForDeps},
      {Stage::kClusterUnprotected, ClusterUnprotected},
      {Stage::kRecordingTarget, RecordingTarget},
      {Stage::kReadyToSubmit, ReadyToSubmit},
      {Stage::kSubmitFailed, SubmitFailed},
      {Stage::kKeptForGitOps, KeptForGitOps},
      {Stage::kTtlWaiting, TtlWaiting},
      {Stage::kTtlExpired, TtlExpired},
      {Stage::kAwaitingUsage, AwaitingUsage},
      {Stage::kEnded, Ended},
      {Stage::kClusterGone, ClusterGone},
      {Stage::kSuperseded, Superseded},
      {Stage::kClusterMoved, ClusterMoved},
      {Stage::kNotOurs, NotOurs},
      {Stage::kFollowing, Following},
      {Stage::kQueryFailed, QueryFailed},
      {Stage::kJobMissing, JobMissing},
      {Stage::kDeadlineExceeded, DeadlineExceeded},
      {Stage::kTooManyFailedIndexes, TooManyFailedIndexes},
      {Stage::kJobEnded, JobEnded},
      {Stage::kHolding, Holding},
      {Stage::kActive, Active},
  };
  return *rows;
}

class StageRow : public ::testing::TestWithParam<std::pair<Stage, void (*)()>> {};

TEST_P(StageRow, Walk) { GetParam().second(); }

INSTANTIATE_TEST_SUITE_P(StageTable, StageRow, ::testing::ValuesIn(Rows()),
                         [](const auto& info) { return StageName(info.param.first); });

TEST(StageTable, ASpecChangeIsAnsweredByAFreshLook) { FollowingAfterASpecChange(); }
TEST(StageTable, APolledRecentlyRequeueEndsAtThePoll) { PolledRecentlyEndsAtThePoll(); }
TEST(StageTable, ALookWhoseStatusWriteFailedIsNotRecent) { FollowingAfterAFailedStatusWrite(); }

TEST(StageTable, ARetryAfterARejectionRecordsItFirst) { RecordingTargetTakesARejectionOut(); }

TEST(StageTable, EveryStageHasItsRowWalked) {
  std::set<Stage> walked;
  for (const auto& [stage, walk] : Rows()) walked.insert(stage);
  for (int s = static_cast<int>(Stage::kReleased); s <= static_cast<int>(Stage::kActive); ++s) {
    EXPECT_TRUE(walked.contains(static_cast<Stage>(s)))
        << "no test walks stage " << StageName(static_cast<Stage>(s));
  }
}

// Not awaited: a run that never started, once the window passed, or with its TTL expired.
TEST(StageTable, UsageIsNotAwaitedForARunThatNeverStartedPastTheWindowOrPastItsTtl) {
  World w;
  RanAndEndedWithoutUsage(w);
  w.now = kT0 + std::chrono::minutes(6);
  EXPECT_EQ(w.stage(), Stage::kEnded);
  w.now = kT0 + seconds(3);
  w.job.status.clear_start_time();
  EXPECT_EQ(w.stage(), Stage::kEnded);
  RanAndEndedWithoutUsage(w);
  w.job.spec.set_ttl_seconds_after_finished(0);
  EXPECT_EQ(w.stage(), Stage::kTtlExpired);
  w.job.spec.set_ttl_seconds_after_finished(60);
  EXPECT_EQ(w.stage(), Stage::kAwaitingUsage) << "before the TTL is waited for";
}

// SameStatus compares bytes (job_status.cc): the cases where bytes could
// differ for equal statuses, or agree for different ones.
TEST(SameStatusTest, MapOrderDoesNotCountButEveryFieldAndPresenceDoes) {
  // A status whose usage map gets its entries in the order given.
  auto status_with_tres = [](const std::vector<std::pair<std::string, int64_t>>& tres) {
    v1alpha1::SlurmJobStatus s;
    s.set_job_id(42);
    s.set_job_state("RUNNING");
    s.mutable_usage()->set_run(1);
    for (const auto& [name, value] : tres)
      (*s.mutable_usage()->mutable_allocated_tres())[name] = value;
    return s;
  };
  const v1alpha1::SlurmJobStatus a = status_with_tres({{"cpu", 4}, {"gres/gpu", 8}, {"mem", 1024}});
  const v1alpha1::SlurmJobStatus b = status_with_tres({{"mem", 1024}, {"gres/gpu", 8}, {"cpu", 4}});
  EXPECT_TRUE(SameStatus(a, b)) << "map entries inserted in another order";

  v1alpha1::SlurmJobStatus c = b;
  (*c.mutable_usage()->mutable_allocated_tres())["cpu"] = 5;
  EXPECT_FALSE(SameStatus(a, c)) << "one map value differs";

  v1alpha1::SlurmJobStatus d = a;
  d.set_message("x");
  EXPECT_FALSE(SameStatus(a, d));
  EXPECT_FALSE(SameStatus(d, a));

  v1alpha1::SlurmJobStatus e = a;
  v1alpha1::SlurmJobStatus f = a;
  f.mutable_runs()->Add()->set_exit_code(0);
  e.mutable_runs()->Add();
  EXPECT_FALSE(SameStatus(e, f)) << "an optional field set to 0 is not an unset one";

  v1alpha1::SlurmJobStatus g = a;
  g.add_conditions()->set_type("Ready");
  v1alpha1::SlurmJobStatus h = a;
  h.add_conditions()->set_type("Ready");
  EXPECT_TRUE(SameStatus(g, h));
  h.mutable_conditions(0)->set_status("True");
  EXPECT_FALSE(SameStatus(g, h));
}

}  // namespace
}  // namespace slurmop::reconcile
