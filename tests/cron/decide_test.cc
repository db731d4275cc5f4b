// File: tests/cron/decide_test.cc
//
// DecideCron transition by transition: first schedule, missed schedules, startingDeadlineSeconds,
// each concurrency policy, suspend, history limits, a child that already exists (a lost status
// write, AlreadyExists), a lastScheduleTime that forbids re-creating a deleted child, bad input.

#include "controller/cron/decide.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <string>
#include <vector>

#include "controller/common/time_format.h"
#include "controller/reconcile/conditions.h"

namespace slurmop::cron {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Time T(const char* rfc3339) { return *ParseRfc3339(rfc3339); }

int64_t Secs(Time t) { return std::chrono::duration_cast<seconds>(t.time_since_epoch()).count(); }

// An hourly SlurmCronJob created at 09:10.
CronFacts Hourly() {
  CronFacts f;
  f.name = "nightly";
  f.ns = "team";
  f.uid = "cron-uid";
  f.generation = 1;
  f.creation_time = T("2026-12-01T09:10:00Z");
  f.spec.set_schedule("0 * * * *");
  f.spec.set_concurrency_policy("Allow");
  f.spec.mutable_job_template()->mutable_spec()->set_script("#!/bin/bash\ntrue\n");
  return f;
}

Child ChildAt(const char* scheduled, const std::string& phase) {
  Child c;
  c.scheduled_time = T(scheduled);
  c.name = ChildName("nightly", *c.scheduled_time);
  c.uid = "uid-" + c.name;
  c.phase = phase;
  if (phase == "Succeeded" || phase == "Failed") c.end_time = *c.scheduled_time + minutes(5);
  return c;
}

std::vector<std::string> Names(const std::vector<ChildToDelete>& deletes) {
  std::vector<std::string> names;
  for (const ChildToDelete& d : deletes) names.push_back(d.name);
  return names;
}

std::vector<std::string> ActiveNames(const v1alpha1::SlurmCronJobStatus& status) {
  std::vector<std::string> names;
  for (const v1alpha1::ObjectReference& r : status.active()) names.push_back(r.name());
  return names;
}

std::vector<std::string> Reasons(const CronPlan& plan) {
  std::vector<std::string> reasons;
  for (const reconcile::EventSpec& e : plan.events) reasons.push_back(e.reason);
  return reasons;
}

TEST(ChildNameTest, IsTheNameAndTheScheduledUnixMinute) {
  EXPECT_EQ(ChildName("nightly", T("2026-12-01T10:00:00Z")), "nightly-29935320");
  EXPECT_EQ(Secs(T("2026-12-01T10:00:00Z")) / 60, 29935320);
}

TEST(DecideCronTest, NothingDueYetRequeuesAtTheFirstScheduledTime) {
  const CronPlan plan = DecideCron(Hourly(), T("2026-12-01T09:30:00Z"));
  EXPECT_FALSE(plan.create);
  ASSERT_TRUE(plan.requeue_after);
  EXPECT_EQ(*plan.requeue_after, minutes(30));
  EXPECT_EQ(plan.status.next_schedule_time().seconds(), Secs(T("2026-12-01T10:00:00Z")));
  EXPECT_FALSE(plan.status.has_last_schedule_time());
  const v1alpha1::Condition* ready =
      reconcile::FindCondition(plan.status.conditions(), reconcile::kReady);
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->status(), "True");
  EXPECT_EQ(ready->reason(), "Scheduled");
  EXPECT_EQ(plan.status.observed_generation(), 1);
}

TEST(DecideCronTest, FirstScheduleCreatesTheChildAndRecordsIt) {
  const CronPlan plan = DecideCron(Hourly(), T("2026-12-01T10:00:07Z"));
  ASSERT_TRUE(plan.create);
  EXPECT_EQ(plan.create->name, "nightly-29935320");
  EXPECT_EQ(plan.create->scheduled_time, T("2026-12-01T10:00:00Z"));
  EXPECT_EQ(plan.status.last_schedule_time().seconds(), Secs(T("2026-12-01T10:00:00Z")));
  EXPECT_THAT(ActiveNames(plan.status), ElementsAre("nightly-29935320"));
  EXPECT_EQ(plan.status.active_count(), 1);
  EXPECT_EQ(plan.status.active(0).kind(), "SlurmJob");
  EXPECT_EQ(plan.status.active(0).namespace_(), "team");
  EXPECT_EQ(*plan.requeue_after, minutes(60) - seconds(7));
  EXPECT_TRUE(plan.replace.empty());
}

TEST(DecideCronTest, OnlyTheMostRecentMissedScheduleIsStarted) {
  CronFacts f = Hourly();
  *f.status.mutable_last_schedule_time() = google::protobuf::Timestamp();
  f.status.mutable_last_schedule_time()->set_seconds(Secs(T("2026-12-01T10:00:00Z")));
  // Down from 10:30 to 14:20: 11:00, 12:00, 13:00 and 14:00 were missed.
  const CronPlan plan = DecideCron(f, T("2026-12-01T14:20:00Z"));
  ASSERT_TRUE(plan.create);
  EXPECT_EQ(plan.create->scheduled_time, T("2026-12-01T14:00:00Z"));
  EXPECT_EQ(*plan.requeue_after, minutes(40));
}

TEST(DecideCronTest, LongOutagesStartOnlyTheLatestTimeWhateverTheSchedulesPeriod) {
  CronFacts f = Hourly();
  f.spec.set_schedule("* * * * *");
  CronPlan plan = DecideCron(f, T("2027-06-01T10:00:30Z"));  // six months after creation
  ASSERT_TRUE(plan.create);
  EXPECT_EQ(plan.create->scheduled_time, T("2027-06-01T10:00:00Z"));
  // A yearly schedule whose last time is more than a day ago: found in the year's window.
  f.spec.set_schedule("0 0 1 1 *");
  plan = DecideCron(f, T("2027-06-01T10:00:30Z"));
  ASSERT_TRUE(plan.create);
  EXPECT_EQ(plan.create->scheduled_time, T("2027-01-01T00:00:00Z"));
  // Every four years, and two years down: found from the last schedule time.
  f.spec.set_schedule("0 0 29 2 *");
  f.creation_time = T("2026-12-01T00:00:00Z");
  plan = DecideCron(f, T("2029-01-01T00:00:00Z"));
  ASSERT_TRUE(plan.create);
  EXPECT_EQ(plan.create->scheduled_time, T("2028-02-29T00:00:00Z"));
}

// due + 10,000,000,000 s overflowed a Time's nanoseconds into the past: every time was missed.
TEST(DecideCronTest, AHugeStartingDeadlineMissesNothing) {
  CronFacts f = Hourly();
  for (int64_t d : {int64_t{10'000'000'000}, std::numeric_limits<int64_t>::max()}) {
    f.spec.set_starting_deadline_seconds(d);
    CronPlan plan = DecideCron(f, T("2026-12-01T10:05:01Z"));
    ASSERT_TRUE(plan.create) << d;
    EXPECT_THAT(Reasons(plan), ::testing::Not(::testing::Contains("MissSchedule"))) << d;
  }
}

TEST(DecideCronTest, StartingDeadlineSkipsATimeMissedByMoreThanIt) {
  CronFacts f = Hourly();
  f.spec.set_starting_deadline_seconds(300);
  CronPlan plan = DecideCron(f, T("2026-12-01T10:05:01Z"));
  EXPECT_FALSE(plan.create);
  EXPECT_THAT(Reasons(plan), ElementsAre("MissSchedule"));
  EXPECT_FALSE(plan.status.has_last_schedule_time());
  EXPECT_EQ(*plan.requeue_after, minutes(55) - seconds(1));
  // Within the deadline it starts.
  plan = DecideCron(f, T("2026-12-01T10:05:00Z"));
  ASSERT_TRUE(plan.create);
  EXPECT_EQ(plan.create->scheduled_time, T("2026-12-01T10:00:00Z"));
}

TEST(DecideCronTest, AllowStartsAlongsideAnActiveChild) {
  CronFacts f = Hourly();
  f.children = {ChildAt("2026-12-01T10:00:00Z", "Running")};
  const CronPlan plan = DecideCron(f, T("2026-12-01T11:00:00Z"));
  ASSERT_TRUE(plan.create);
  EXPECT_EQ(plan.create->scheduled_time, T("2026-12-01T11:00:00Z"));
  EXPECT_THAT(ActiveNames(plan.status), ElementsAre("nightly-29935320", "nightly-29935380"));
  EXPECT_EQ(plan.status.active(0).uid(), "uid-nightly-29935320");
  EXPECT_TRUE(plan.replace.empty());
}

TEST(DecideCronTest, ForbidSkipsWhileAChildIsActiveAndStartsOnceItFinished) {
  CronFacts f = Hourly();
  f.spec.set_concurrency_policy("Forbid");
  f.children = {ChildAt("2026-12-01T10:00:00Z", "Pending")};
  CronPlan plan = DecideCron(f, T("2026-12-01T11:00:30Z"));
  EXPECT_FALSE(plan.create);
  EXPECT_THAT(Reasons(plan), ElementsAre("JobAlreadyActive"));
  EXPECT_EQ(plan.status.last_schedule_time().seconds(), Secs(T("2026-12-01T10:00:00Z")));
  EXPECT_EQ(*plan.requeue_after, minutes(59) + seconds(30));
  // The child finished at 11:20: the 11:00 time (still the latest due) starts now.
  f.children[0].phase = "Succeeded";
  f.children[0].end_time = T("2026-12-01T11:20:00Z");
  plan = DecideCron(f, T("2026-12-01T11:20:05Z"));
  ASSERT_TRUE(plan.create);
  EXPECT_EQ(plan.create->scheduled_time, T("2026-12-01T11:00:00Z"));
  EXPECT_EQ(plan.status.last_successful_time().seconds(), Secs(T("2026-12-01T11:20:00Z")));
}

TEST(DecideCronTest, ForbidDoesNotCountAFinishedOrDeletedChild) {
  CronFacts f = Hourly();
  f.spec.set_concurrency_policy("Forbid");
  f.children = {ChildAt("2026-12-01T09:00:00Z", "Failed"),
                ChildAt("2026-12-01T10:00:00Z", "Running")};
  f.children[1].being_deleted = true;
  const CronPlan plan = DecideCron(f, T("2026-12-01T11:00:00Z"));
  EXPECT_TRUE(plan.create);
}

TEST(DecideCronTest, ReplaceDeletesTheActiveChildrenThenCreates) {
  CronFacts f = Hourly();
  f.spec.set_concurrency_policy("Replace");
  f.children = {ChildAt("2026-12-01T10:00:00Z", "Running"),
                ChildAt("2026-12-01T09:00:00Z", "Succeeded")};
  const CronPlan plan = DecideCron(f, T("2026-12-01T11:00:00Z"));
  EXPECT_THAT(Names(plan.replace), ElementsAre("nightly-29935320"));
  EXPECT_EQ(plan.replace[0].uid, "uid-nightly-29935320");
  EXPECT_THAT(plan.replace[0].why, HasSubstr("concurrencyPolicy Replace"));
  ASSERT_TRUE(plan.create);
  EXPECT_THAT(ActiveNames(plan.status), ElementsAre("nightly-29935380"));
}

TEST(DecideCronTest, ReplaceWithNothingDueDeletesNothing) {
  CronFacts f = Hourly();
  f.spec.set_concurrency_policy("Replace");
  f.children = {ChildAt("2026-12-01T10:00:00Z", "Running")};
  const CronPlan plan = DecideCron(f, T("2026-12-01T10:30:00Z"));
  EXPECT_TRUE(plan.replace.empty());
  EXPECT_FALSE(plan.create);
}

TEST(DecideCronTest, SuspendCreatesNothingAndDoesNotRequeue) {
  CronFacts f = Hourly();
  f.spec.set_suspend(true);
  f.children = {ChildAt("2026-12-01T10:00:00Z", "Running")};
  const CronPlan plan = DecideCron(f, T("2026-12-01T12:00:00Z"));
  EXPECT_FALSE(plan.create);
  EXPECT_FALSE(plan.requeue_after);
  EXPECT_THAT(ActiveNames(plan.status), ElementsAre("nightly-29935320"));
  EXPECT_EQ(reconcile::FindCondition(plan.status.conditions(), reconcile::kReady)->reason(),
            "Suspended");
  // Resumed at 12:30: the missed 12:00 starts (no startingDeadlineSeconds).
  f.spec.set_suspend(false);
  const CronPlan resumed = DecideCron(f, T("2026-12-01T12:30:00Z"));
  ASSERT_TRUE(resumed.create);
  EXPECT_EQ(resumed.create->scheduled_time, T("2026-12-01T12:00:00Z"));
}

TEST(DecideCronTest, HistoryLimitsDeleteTheOldestFinishedChildren) {
  CronFacts f = Hourly();
  f.creation_time = T("2026-12-01T00:00:00Z");
  f.children = {
      ChildAt("2026-12-01T05:00:00Z", "Succeeded"), ChildAt("2026-12-01T01:00:00Z", "Succeeded"),
      ChildAt("2026-12-01T02:00:00Z", "Failed"),    ChildAt("2026-12-01T03:00:00Z", "Succeeded"),
      ChildAt("2026-12-01T04:00:00Z", "Succeeded"), ChildAt("2026-12-01T06:00:00Z", "Cancelled"),
      ChildAt("2026-12-01T07:00:00Z", "Running")};
  CronPlan plan = DecideCron(f, T("2026-12-01T07:30:00Z"));
  // Defaults: 3 succeeded (01:00 goes), 1 failed (02:00 goes, the 06:00 cancelled one stays).
  EXPECT_THAT(Names(plan.history), ElementsAre(ChildName("nightly", T("2026-12-01T01:00:00Z")),
                                               ChildName("nightly", T("2026-12-01T02:00:00Z"))));
  EXPECT_EQ(plan.status.last_successful_time().seconds(), Secs(T("2026-12-01T05:05:00Z")));
  f.spec.set_successful_jobs_history_limit(0);
  f.spec.set_failed_jobs_history_limit(5);
  plan = DecideCron(f, T("2026-12-01T07:30:00Z"));
  EXPECT_EQ(plan.history.size(), 4u);
  // A child already being deleted is not deleted again nor counted.
  f.spec.set_successful_jobs_history_limit(3);
  f.children[1].being_deleted = true;
  plan = DecideCron(f, T("2026-12-01T07:30:00Z"));
  EXPECT_THAT(plan.history, IsEmpty());
}

TEST(DecideCronTest, AChildThatExistsForTheDueTimeIsNotCreatedAgain) {
  // The create went through but the status write was lost (or the informer shows another
  // replica's create): the child's scheduled time counts as the last schedule time.
  CronFacts f = Hourly();
  f.children = {ChildAt("2026-12-01T10:00:00Z", "")};
  const CronPlan plan = DecideCron(f, T("2026-12-01T10:00:09Z"));
  EXPECT_FALSE(plan.create);
  EXPECT_EQ(plan.status.last_schedule_time().seconds(), Secs(T("2026-12-01T10:00:00Z")));
  EXPECT_THAT(ActiveNames(plan.status), ElementsAre("nightly-29935320"));
}

TEST(DecideCronTest, LastScheduleTimeForbidsRecreatingADeletedChild) {
  // The 10:00 child ran, finished and was deleted by the history limit (or by hand) before the
  // 11:00 time: it is gone from the children, but lastScheduleTime still says 10:00 was started.
  CronFacts f = Hourly();
  f.status.mutable_last_schedule_time()->set_seconds(Secs(T("2026-12-01T10:00:00Z")));
  for (const char* now : {"2026-12-01T10:00:30Z", "2026-12-01T10:59:59Z"}) {
    const CronPlan plan = DecideCron(f, T(now));
    EXPECT_FALSE(plan.create) << now;
  }
  EXPECT_TRUE(DecideCron(f, T("2026-12-01T11:00:00Z")).create);
}

TEST(DecideCronTest, AnInvalidScheduleIsStalledWithAnEventAndNoRequeue) {
  CronFacts f = Hourly();
  f.spec.set_schedule("0 25 * * *");
  f.children = {ChildAt("2026-12-01T08:00:00Z", "Running"),
                ChildAt("2026-12-01T07:00:00Z", "Failed"),
                ChildAt("2026-12-01T06:00:00Z", "Failed")};
  const CronPlan plan = DecideCron(f, T("2026-12-01T10:00:00Z"));
  EXPECT_FALSE(plan.create);
  EXPECT_FALSE(plan.requeue_after);
  const v1alpha1::Condition* ready =
      reconcile::FindCondition(plan.status.conditions(), reconcile::kReady);
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->status(), "False");
  EXPECT_EQ(ready->reason(), "InvalidSchedule");
  EXPECT_THAT(ready->message(), HasSubstr("hour field \"25\": 25 is out of range 0-23"));
  EXPECT_TRUE(reconcile::IsConditionTrue(plan.status.conditions(), reconcile::kStalled));
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].type, "Warning");
  EXPECT_EQ(plan.events[0].reason, "InvalidSchedule");
  EXPECT_TRUE(plan.history.empty());  // nothing is deleted while the schedule is unusable
  EXPECT_THAT(ActiveNames(plan.status),
              ElementsAre(ChildName("nightly", T("2026-12-01T08:00:00Z"))));
  // Fixed: Ready again, Stalled gone.
  CronFacts fixed = f;
  fixed.spec.set_schedule("0 * * * *");
  fixed.status = plan.status;
  const CronPlan after = DecideCron(fixed, T("2026-12-01T10:00:00Z"));
  EXPECT_EQ(reconcile::FindCondition(after.status.conditions(), reconcile::kStalled), nullptr);
}

TEST(DecideCronTest, AnUnknownTimeZoneIsStalled) {
  CronFacts f = Hourly();
  f.spec.set_time_zone("Europe/Atlantis");
  const CronPlan plan = DecideCron(f, T("2026-12-01T10:00:00Z"));
  EXPECT_FALSE(plan.create);
  EXPECT_EQ(reconcile::FindCondition(plan.status.conditions(), reconcile::kReady)->reason(),
            "InvalidTimeZone");
  EXPECT_THAT(Reasons(plan), ElementsAre("InvalidTimeZone"));
}

TEST(DecideCronTest, TheTimeZoneMovesTheScheduledTimes) {
  CronFacts f = Hourly();
  f.spec.set_schedule("30 9 * * *");
  f.spec.set_time_zone("Asia/Kolkata");  // +05:30: 09:30 there is 04:00 UTC
  f.creation_time = T("2026-12-01T03:00:00Z");
  const CronPlan plan = DecideCron(f, T("2026-12-01T04:00:01Z"));
  ASSERT_TRUE(plan.create);
  EXPECT_EQ(plan.create->scheduled_time, T("2026-12-01T04:00:00Z"));
}

TEST(DecideCronTest, BeingDeletedDoesNothing) {
  CronFacts f = Hourly();
  f.being_deleted = true;
  const CronPlan plan = DecideCron(f, T("2026-12-01T12:00:00Z"));
  EXPECT_FALSE(plan.create);
  EXPECT_FALSE(plan.requeue_after);
  EXPECT_TRUE(plan.history.empty());
}

}  // namespace
}  // namespace slurmop::cron
