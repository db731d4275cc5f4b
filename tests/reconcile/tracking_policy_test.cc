// File: tests/reconcile/tracking_policy_test.cc
//
// The tracker's pure decisions (tracking_policy.h): which SlurmJobs it
// follows, and which Slurm jobs the orphan sweep cancels; and the tag search
// policy (tag_search.h). Plain values, no I/O.

#include "controller/reconcile/tracking_policy.h"

#include <chrono>

#include "controller/reconcile/job_descriptor.h"
#include "controller/reconcile/tag_search.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/reconcile/decide_fixtures.h"

namespace slurmop::reconcile {
namespace {

using fixtures::kT0;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

slurm::JobInfo Job(int64_t id, std::string comment,
                   slurm::BaseState state = slurm::BaseState::kRunning) {
  slurm::JobInfo j;
  j.job_id = id;
  j.state = state;
  j.comment = std::move(comment);
  return j;
}

const JobIdentity kA{"team-a", "train", "uid-a", /*installation=*/""};

std::string Tag(int32_t run) { return SubmissionTag(kA, run); }

// uid-a exists at `run` with `job_id`; anything else is gone.
OwnerOf OwnerIs(bool exists, int32_t run, int64_t job_id) {
  return [=](const std::string& ns, const std::string& uid) -> std::optional<TagOwner> {
    if (ns != "team-a" || uid != "uid-a") return TagOwner{};
    return TagOwner{exists, run, job_id};
  };
}

slurm::PackedJobs Jobs(const std::vector<slurm::JobInfo>& list) {
  slurm::PackedJobs m;
  for (const auto& j : list) m.Put(j);
  return m;
}

// ---------------------------------------------------------------- sweep

TEST(DecideSweep, AnOrphanIsCancelledOnlyOnItsSecondSweep) {
  auto jobs = Jobs({Job(7, Tag(1))});
  SweepVerdict first = DecideSweep(jobs, {}, OwnerIs(false, 0, 0));
  EXPECT_THAT(first.candidates, ElementsAre(7));
  EXPECT_THAT(first.to_cancel, IsEmpty()) << "a brand-new SlurmJob may not be cached yet";
  SweepVerdict second = DecideSweep(jobs, first.candidates, OwnerIs(false, 0, 0));
  EXPECT_THAT(second.to_cancel, ElementsAre(Pair(7, Tag(1))));
}

TEST(DecideSweep, TheRecordedJobOfTheCurrentRunIsKept) {
  auto jobs = Jobs({Job(7, Tag(1))});
  SweepVerdict v = DecideSweep(jobs, {7}, OwnerIs(true, 1, 7));
  EXPECT_THAT(v.candidates, IsEmpty());
  EXPECT_THAT(v.to_cancel, IsEmpty());
}

TEST(DecideSweep, ACurrentRunWithoutRecordedJobKeepsItsJob) {
  // The submit landed, the status write is still to come.
  SweepVerdict v = DecideSweep(Jobs({Job(7, Tag(1))}), {7}, OwnerIs(true, 1, 0));
  EXPECT_THAT(v.to_cancel, IsEmpty());
}

TEST(DecideSweep, ADuplicateOfTheCurrentRunIsCancelled) {
  auto jobs = Jobs({Job(7, Tag(2)), Job(8, Tag(2))});
  SweepVerdict v = DecideSweep(jobs, {8}, OwnerIs(true, 2, 7));
  EXPECT_THAT(v.candidates, ElementsAre(8));
  EXPECT_THAT(v.to_cancel, ElementsAre(Pair(8, Tag(2))));
}

TEST(DecideSweep, AJobOfAnEarlierRunIsCancelled) {
  SweepVerdict v = DecideSweep(Jobs({Job(5, Tag(1))}), {5}, OwnerIs(true, 2, 0));
  EXPECT_THAT(v.to_cancel, ElementsAre(Pair(5, Tag(1))));
  // Run 0 (no status yet) counts as run 1.
  SweepVerdict first = DecideSweep(Jobs({Job(5, Tag(1))}), {5}, OwnerIs(true, 0, 0));
  EXPECT_THAT(first.to_cancel, IsEmpty());
}

TEST(DecideSweep, FinalCompletingDisownedForeignAndUnknownJobsAreLeftAlone) {
  slurm::JobInfo completing = Job(2, Tag(1));
  completing.flags = {"COMPLETING"};
  auto jobs = Jobs({Job(1, Tag(1), slurm::BaseState::kCompleted), completing,
                    Job(3, DisownedTag(kA, 1)), Job(4, "someone else's job")});
  SweepVerdict v = DecideSweep(jobs, {1, 2, 3, 4}, OwnerIs(false, 0, 0));
  EXPECT_THAT(v.candidates, IsEmpty());
  // An owner that cannot be told (namespace not watched, cache not synced).
  OwnerOf unknown = [](const std::string&, const std::string&) -> std::optional<TagOwner> {
    return std::nullopt;
  };
  EXPECT_THAT(DecideSweep(Jobs({Job(7, Tag(1))}), {7}, unknown).candidates, IsEmpty());
}

// #13 E3: two installations (staging and prod, blue/green, DR) share a Slurm
// cluster; each sweeps only its own tags. Legacy tags (the previous version's,
// without installation) may belong to either: left alone.
TEST(DecideSweep, AnotherInstallationsAndLegacyTagsAreLeftAlone) {
  JobIdentity prod = kA, staging = kA;
  prod.installation = "prod";
  staging.installation = "staging";
  auto jobs = Jobs({Job(1, SubmissionTag(prod, 1)), Job(2, SubmissionTag(staging, 1)),
                    Job(3, LegacySubmissionTag(kA, 1))});
  SweepVerdict v = DecideSweep(jobs, {1, 2, 3}, OwnerIs(false, 0, 0), {"prod", {}});
  EXPECT_THAT(v.to_cancel, ElementsAre(Pair(1, SubmissionTag(prod, 1))));
  EXPECT_EQ(v.candidates, std::set<int64_t>({1}));
}

// #13 E3: a SlurmJob restored from a backup has a new uid, so the tag of its
// job names no SlurmJob; its status still names the job, which is kept.
TEST(DecideSweep, AJobIdThatALiveStatusNamesIsLeftAlone) {
  auto jobs = Jobs({Job(7, Tag(1)), Job(8, Tag(1))});
  SweepScope scope{"", [](int64_t id) { return id == 7; }};
  SweepVerdict v = DecideSweep(jobs, {7, 8}, OwnerIs(false, 0, 0), scope);
  EXPECT_THAT(v.to_cancel, ElementsAre(Pair(8, Tag(1))));
  EXPECT_FALSE(v.candidates.contains(7));
}

TEST(DecideSweep, CancelsInIdOrder) {
  auto jobs = Jobs({Job(9, Tag(1)), Job(3, Tag(1)), Job(6, Tag(1))});
  SweepVerdict v = DecideSweep(jobs, {3, 6, 9}, OwnerIs(false, 0, 0));
  ASSERT_EQ(v.to_cancel.size(), 3u);
  EXPECT_EQ(v.to_cancel[0].first, 3);
  EXPECT_EQ(v.to_cancel[2].first, 9);
}

// ---------------------------------------------------------------- tracking

JobFacts Active() {
  JobFacts f = fixtures::NewJob();
  f.status = StatusAfterSubmit(f.status, 42, "a3", false, 1, kT0, nullptr);
  return f;
}

// The poll is the job's poll interval, not what is left of it: a reconcile
// woken by its own status write requeues for the rest of the interval (here
// 3 s), and tracking at that remainder listed the cluster every tick (#13
// item 10).
TEST(TrackingAfterReconcile, AnActiveJobIsTrackedAtItsPollAndItsTimerStretched) {
  TrackingVerdict v = TrackingAfterReconcile(Active(), fixtures::Cluster(), seconds(3), false,
                                             seconds(7), seconds(120));
  EXPECT_EQ(v.kind, TrackingVerdict::Kind::kTrack);
  EXPECT_EQ(v.poll, seconds(7));
  EXPECT_EQ(v.requeue, seconds(120));
}

// spec.activeDeadlineSeconds: no list change announces the deadline, so the
// stretched timer ends there, and is not stretched at all once it passed.
TEST(TrackingAfterReconcile, TheStretchNeverPassesTheDeadline) {
  const ClusterFacts c = fixtures::Cluster();
  EXPECT_EQ(
      TrackingAfterReconcile(Active(), c, seconds(3), false, seconds(7), seconds(120), seconds(40))
          .requeue,
      seconds(40));
  EXPECT_EQ(
      TrackingAfterReconcile(Active(), c, seconds(3), false, seconds(7), seconds(120), seconds(-5))
          .requeue,
      seconds(3))
      << "past the deadline: the reconcile's own requeue (a cancel's wait)";
  EXPECT_EQ(
      TrackingAfterReconcile(Active(), c, seconds(3), false, seconds(7), seconds(120), seconds(600))
          .requeue,
      seconds(120));
}

TEST(TrackingAfterReconcile, NoJobOrAnEndedJobIsUntracked) {
  EXPECT_EQ(TrackingAfterReconcile(fixtures::NewJob(), fixtures::Cluster(), seconds(3), false,
                                   seconds(7), seconds(120))
                .kind,
            TrackingVerdict::Kind::kUntrack);
  JobFacts ended = Active();
  ended.status.set_job_state("COMPLETED");
  EXPECT_EQ(TrackingAfterReconcile(ended, fixtures::Cluster(), seconds(3), false, seconds(7),
                                   seconds(120))
                .kind,
            TrackingVerdict::Kind::kUntrack);
}

TEST(TrackingAfterReconcile, BackoffNoRequeueNoClusterOrDeletionLeaveItAlone) {
  const ClusterFacts c = fixtures::Cluster();
  EXPECT_EQ(TrackingAfterReconcile(Active(), c, seconds(3), true, seconds(7), seconds(120)).kind,
            TrackingVerdict::Kind::kLeave);
  EXPECT_EQ(TrackingAfterReconcile(Active(), c, std::nullopt, false, seconds(7), seconds(120)).kind,
            TrackingVerdict::Kind::kLeave);
  ClusterFacts gone = c;
  gone.kind = ClusterFacts::Kind::kNotFound;
  EXPECT_EQ(
      TrackingAfterReconcile(Active(), gone, seconds(3), false, seconds(7), seconds(120)).kind,
      TrackingVerdict::Kind::kLeave);
  JobFacts deleting = Active();
  deleting.deleting = true;
  EXPECT_EQ(TrackingAfterReconcile(deleting, c, seconds(3), false, seconds(7), seconds(120)).kind,
            TrackingVerdict::Kind::kLeave);
}

// ---------------------------------------------------------------- list pace

ClusterPaceFacts Pace(std::optional<Duration> eagerest, bool young = false, int unchanged = 0,
                      bool registered = false) {
  ClusterPaceFacts c;
  c.eagerest_poll = eagerest;
  c.any_young = young;
  c.unchanged_lists = unchanged;
  c.registered = registered;
  return c;
}

TEST(ListInterval, YoungJobsAreListedAtTheirOwnPollOthersAtLeastEveryFiveSeconds) {
  const ListPace pace;
  EXPECT_EQ(ListInterval(Pace(seconds(1), true), seconds(60), pace), seconds(1));
  EXPECT_EQ(ListInterval(Pace(seconds(1), true, 6), seconds(60), pace), seconds(1));
  EXPECT_EQ(ListInterval(Pace(seconds(1)), seconds(60), pace), seconds(5));
  EXPECT_EQ(ListInterval(Pace(seconds(12)), seconds(60), pace), seconds(12));
}

TEST(ListInterval, BacksOffWhileNothingChangesUpToTheIdleCap) {
  const ListPace pace;
  EXPECT_EQ(ListInterval(Pace(seconds(1), false, 1), seconds(60), pace), seconds(10));
  EXPECT_EQ(ListInterval(Pace(seconds(1), false, 2), seconds(60), pace), seconds(20));
  EXPECT_EQ(ListInterval(Pace(seconds(1), false, 3), seconds(60), pace), seconds(30));
  EXPECT_EQ(ListInterval(Pace(seconds(1), false, 1000), seconds(60), pace), seconds(30));
  // A job that asks for less than the cap is never listed more often than it asks.
  EXPECT_EQ(ListInterval(Pace(seconds(45), false, 3), seconds(60), pace), seconds(45));
}

TEST(ListInterval, RegisteredClustersWithoutJobsAreListedForTheSweepOnly) {
  const ListPace pace;
  EXPECT_EQ(ListInterval(Pace(std::nullopt), seconds(60), pace), std::nullopt);
  EXPECT_EQ(ListInterval(Pace(std::nullopt, false, 0, true), seconds(60), pace), seconds(60));
  EXPECT_EQ(ListInterval(Pace(seconds(120), false, 0, true), seconds(60), pace), seconds(60));
}

TEST(ListFailureBackoff, PermanentFailuresBackOffToMinutesTransientOnesToAMinute) {
  const ListPace pace;
  const auto denied = absl::StatusCode::kPermissionDenied;
  const auto down = absl::StatusCode::kUnavailable;
  EXPECT_TRUE(PermanentListFailure(denied));
  EXPECT_TRUE(PermanentListFailure(absl::StatusCode::kNotFound));
  EXPECT_FALSE(PermanentListFailure(down));
  EXPECT_FALSE(PermanentListFailure(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(ListFailureBackoff(denied, 1, std::nullopt, pace), seconds(5));
  EXPECT_EQ(ListFailureBackoff(denied, 2, std::nullopt, pace), seconds(10));
  EXPECT_EQ(ListFailureBackoff(denied, 4, std::nullopt, pace), seconds(40));
  EXPECT_EQ(ListFailureBackoff(denied, 7, std::nullopt, pace), seconds(300));
  EXPECT_EQ(ListFailureBackoff(denied, 1000, std::nullopt, pace), seconds(300));
  EXPECT_EQ(ListFailureBackoff(down, 1, std::nullopt, pace), seconds(5));
  EXPECT_EQ(ListFailureBackoff(down, 1000, std::nullopt, pace), seconds(60));
  // The server's retry delay is a floor.
  EXPECT_EQ(ListFailureBackoff(down, 1, seconds(90), pace), seconds(90));
}

TEST(QueryPoll, TheDecisionsMaxAgeElseMinPoll) {
  Decision d;
  DecideOptions o;
  o.min_poll = seconds(2);
  EXPECT_EQ(QueryPoll(d, o), seconds(2));
  d.max_age = seconds(9);
  EXPECT_EQ(QueryPoll(d, o), seconds(9));
}

// ---------------------------------------------------------------- tag search

TEST(TagSearch, LiveQueueFirstThenAccounting) {
  EXPECT_THAT(kTagSearchOrder, ElementsAre(TagSource::kLiveQueue, TagSource::kAccounting));
}

TEST(TagSearch, AdoptsTheHighestIdCarryingTheTag) {
  std::vector<slurm::JobInfo> jobs = {Job(5, Tag(1)), Job(9, Tag(1)), Job(12, Tag(2)),
                                      Job(3, Tag(1))};
  EXPECT_EQ(PickTaggedJob(jobs, {Tag(1)}), 9);
  EXPECT_EQ(PickTaggedJob(jobs, {Tag(3)}), std::nullopt);
}

TEST(TagSearch, AccountingIsSearchedByTheJobsName) {
  JobFacts f = fixtures::NewJob();
  EXPECT_EQ(AccountingSearchName(f), "train");
  f.spec.set_name("llm");
  EXPECT_EQ(AccountingSearchName(f), "llm");
  EXPECT_EQ(RunTag(f), "slurmjob-operator:team-a/uid-1/1");
}

}  // namespace
}  // namespace slurmop::reconcile
