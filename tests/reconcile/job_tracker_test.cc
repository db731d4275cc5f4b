// File: tests/reconcile/job_tracker_test.cc
//
// The batched tracker with a scripted Slurm (no network) and a FakeClock:
// one list per cluster per tick for any number of jobs, update_time taken from
// Slurm's own last_update, notifications only for jobs whose record changed,
// absent-after-tracking means "left the queue", a failing cluster is not
// hammered, the orphan sweep's two-sweep rule, and that lists ask for only
// the job keys the dialect reads.

#include "controller/reconcile/job_tracker.h"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/agentplatform/client.h"
#include "controller/agentplatform/google_error.h"
#include "controller/slurm/dialects.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// Polls `done` for up to 5 s (work on the tracker's fetch threads).
bool WaitFor(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

class FakeSlurm {
 public:
  // job id -> (state, comment)
  std::map<int64_t, std::pair<std::string, std::string>> jobs;
  // Records listed as they are, after `jobs` (array tasks, v0.0.40+ shapes).
  std::vector<json> raw;
  int64_t last_update = 1000;
  std::vector<std::string> paths;
  std::vector<std::string> deletes;
  std::vector<std::vector<std::string>> options;  // CallOptions::job_fields of each call
  bool fail = false;
  bool held_back = false;  // the client's budget refuses every call, unsent
  // Accounting: job id -> its /slurmdb record; the /slurmdb calls made.
  std::map<int64_t, json> db;
  std::vector<std::string> db_paths;
  bool db_fail = false;

  absl::StatusOr<agentplatform::SlurmResponse> Call(agentplatform::HttpMethod m,
                                                    const std::string& path) {
    if (fail) return absl::UnavailableError("cluster down");
    if (held_back) {
      absl::Status s = absl::UnavailableError("budget spent");
      agentplatform::SetRetryDelay(s, std::chrono::milliseconds(300));
      return agentplatform::MarkHeldBackByBudget(s);
    }
    if (m == agentplatform::HttpMethod::kDelete) {
      deletes.push_back(path);
      return agentplatform::SlurmResponse{200, json{{"errors", json::array()}}};
    }
    if (path.rfind("/slurmdb/", 0) == 0) return Accounting(path);
    paths.push_back(path);
    if (auto q = path.find("update_time="); q != std::string::npos) {
      if (std::stoll(path.substr(q + 12)) - 1 >= last_update) {
        return agentplatform::SlurmResponse{
            200, json{{"jobs", json::array()},
                      {"errors", json::array()},
                      {"warnings", {{{"description", "No job changes since update_time"}}}}}};
      }
    }
    const bool legacy = path.find("v0.0.38") != std::string::npos;
    json list = json::array();
    for (const auto& [id, v] : jobs) {
      list.push_back({{"job_id", id},
                      {"job_state", legacy ? json(v.first) : json::array({v.first})},
                      {"comment", v.second},
                      {"submit_time",
                       legacy ? json(1700000000) : json{{"set", true}, {"number", 1700000000}}}});
    }
    for (const json& r : raw) list.push_back(r);
    json body = {{"jobs", list}, {"errors", json::array()}};
    if (!legacy)
      body["last_update"] = {{"set", true}, {"infinite", false}, {"number", last_update}};
    return agentplatform::SlurmResponse{200, body};
  }

  // GET /slurmdb/v0.0.42/jobs?step=1&step=2: the records of those ids.
  absl::StatusOr<agentplatform::SlurmResponse> Accounting(const std::string& path) {
    db_paths.push_back(path);
    if (db_fail) return absl::UnavailableError("slurmdbd down");
    json records = json::array();
    for (size_t at = path.find("step="); at != std::string::npos; at = path.find("step=", at + 5)) {
      auto it = db.find(std::stoll(path.substr(at + 5)));
      if (it != db.end()) records.push_back(it->second);
    }
    return agentplatform::SlurmResponse{
        200, json{{"jobs", records}, {"errors", json::array()}, {"warnings", json::array()}}};
  }
};

// A v0.0.42 accounting record of job `id` in `state`, with its allocation.
json DbRecord(int64_t id, const std::string& state, int64_t cpus) {
  return {
      {"job_id", id},
      {"name", "x"},
      {"comment", {{"job", ""}}},
      {"state", {{"current", json::array({state})}, {"reason", "None"}}},
      {"time",
       {{"submission", 1700000000}, {"start", 1700000001}, {"end", 1700000061}, {"elapsed", 60}}},
      {"tres", {{"allocated", {{{"type", "cpu"}, {"name", ""}, {"id", 1}, {"count", cpus}}}}}}};
}

class JobTrackerTest : public ::testing::Test {
 protected:
  JobTrackerTest()
      : tracker_(
            [this](const ClusterEndpoint& e, agentplatform::HttpMethod m, const std::string& path,
                   const agentplatform::CallOptions& options) {
              if (e.key == kHole && answer_before_hold_) {
                absl::StatusOr<agentplatform::SlurmResponse> r;
                {
                  std::lock_guard<std::mutex> lock(slurm_mu_);
                  r = slurm_.Call(m, path);
                }
                HoldWhileHoled();
                return r;
              }
              if (e.key == kHole) HoldWhileHoled();
              if (m == agentplatform::HttpMethod::kDelete && hold_cancels_) HoldWhileHoled();
              clock_.Advance(call_takes_);
              std::lock_guard<std::mutex> lock(slurm_mu_);
              if (path.rfind("/slurmdb/", 0) != 0) slurm_.options.push_back(options.job_fields);
              return slurm_.Call(m, path);
            },
            clock_,
            [this](const std::string& key) {
              std::lock_guard<std::mutex> lock(slurm_mu_);
              notified_.push_back(key);
              db_calls_at_notify_.push_back(slurm_.db_paths.size());
            },
            [this](const std::string& ns,
                   const std::string& uid) -> std::optional<JobTracker::Owner> {
              auto it = owners_.find(ns + "/" + uid);
              if (it != owners_.end()) return it->second;
              JobTracker::Owner o;
              o.exists = known_.count(ns + "/" + uid) > 0;
              return o;
            },
            TrackerOptions{}) {}

  ~JobTrackerTest() override { OpenHole(); }

  ClusterEndpoint Endpoint(std::string version = "v0.0.42") {
    return ClusterEndpoint{"team-a/a3", std::move(version), {}, nullptr};
  }

  // Lists run on the tracker's fetch threads: a tick of these tests waits
  // for them.
  void Tick() {
    tracker_.Tick();
    tracker_.WaitIdle();
  }

  // How long each call to the cluster takes (on the fake clock).
  std::atomic<Duration> call_takes_{Duration::zero()};

  // Calls to the cluster kHole black-hole until OpenHole().
  static constexpr char kHole[] = "team-b/hole";
  void HoldWhileHoled() {
    std::unique_lock<std::mutex> lock(hole_mu_);
    ++held_;
    hole_cv_.wait(lock, [this] { return hole_open_; });
  }
  void OpenHole() {
    std::lock_guard<std::mutex> lock(hole_mu_);
    hole_open_ = true;
    hole_cv_.notify_all();
  }
  int Held() {
    std::lock_guard<std::mutex> lock(hole_mu_);
    return held_;
  }

  std::mutex hole_mu_;
  std::condition_variable hole_cv_;
  bool hole_open_ = false;
  int held_ = 0;
  // The hole's answer is what Slurm said when the call was made (a list in flight).
  bool answer_before_hold_ = false;
  // Cancels (of any cluster) hold like the hole's calls.
  std::atomic<bool> hold_cancels_{false};
  std::mutex slurm_mu_;

  FakeClock clock_;
  FakeSlurm slurm_;
  std::vector<std::string> notified_;
  std::vector<size_t> db_calls_at_notify_;  // accounting calls made when each key was told
  std::set<std::string> known_;
  std::map<std::string, JobTracker::Owner> owners_;
  JobTracker tracker_;
};

TEST_F(JobTrackerTest, OneListServesEveryJobOfTheCluster) {
  for (int i = 1; i <= 500; ++i) {
    slurm_.jobs[i] = {"RUNNING", ""};
    tracker_.Track(Endpoint(), i, absl::StrCat("team-a/job", i), seconds(5));
  }
  clock_.Advance(seconds(1));
  for (int i = 1; i <= 500; ++i) {
    auto a = tracker_.Get(Endpoint(), i, clock_.Now() - seconds(5));
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE(a->job.has_value());
    EXPECT_EQ(a->job->state, slurm::BaseState::kRunning);
  }
  EXPECT_EQ(slurm_.paths.size(), 1u);
  EXPECT_EQ(tracker_.ListCalls(), 1);
}

json NoVal(std::optional<int64_t> n) {
  return {{"set", n.has_value()}, {"infinite", false}, {"number", n.value_or(0)}};
}

// A record of array 100 (v0.0.40+ shapes): task `task` as job `id`, or the
// pending remainder (task nullopt, `rest` e.g. "1-3%2").
json ArrayRecord(int64_t id, std::optional<int64_t> task, const std::string& state,
                 const std::string& comment, const std::string& rest = "") {
  return {{"job_id", id},
          {"job_state", json::array({state})},
          {"comment", comment},
          {"array_job_id", NoVal(100)},
          {"array_task_id", NoVal(task)},
          {"array_max_tasks", NoVal(2)},
          {"array_task_string", rest},
          {"submit_time", NoVal(1700000000)}};
}

TEST_F(JobTrackerTest, AnArraysTaskRecordsAreOneJobByTheArraysId) {
  const std::string tag = "slurmjob-operator:team-a/uid-a/1";
  slurm_.raw = {ArrayRecord(101, 0, "RUNNING", tag),
                ArrayRecord(100, std::nullopt, "PENDING", tag, "1-3%2")};
  tracker_.Track(Endpoint(), 100, "team-a/arr", seconds(1));
  clock_.Advance(seconds(1));
  Tick();
  EXPECT_THAT(notified_, ElementsAre("team-a/arr"));
  auto a = tracker_.Get(Endpoint(), 100, clock_.Now() - seconds(5));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(a->job.has_value());
  EXPECT_EQ(a->job->state, slurm::BaseState::kRunning);
  ASSERT_TRUE(a->job->array.has_value());
  EXPECT_EQ(a->job->array->tasks.size(), 1u);
  EXPECT_EQ(a->job->array->pending_indexes, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(a->job->array->max_running, 2);

  // A task's change is the array's change.
  notified_.clear();
  slurm_.raw[0] = ArrayRecord(101, 0, "COMPLETED", tag);
  slurm_.last_update = 1001;
  clock_.Advance(seconds(2));
  Tick();
  EXPECT_THAT(notified_, ElementsAre("team-a/arr"));

  // A tag search finds the array once, by its own id (a lost submit reply adopts 100).
  auto live = tracker_.FindLive(
      Endpoint(), [&](const slurm::JobInfo& j) { return j.comment == tag; },
      clock_.Now() - seconds(10));
  ASSERT_TRUE(live.ok());
  ASSERT_EQ(live->jobs.size(), 1u);
  EXPECT_EQ(live->jobs[0].job_id, 100);
}

TEST_F(JobTrackerTest, AnOrphanedArrayIsCancelledOnceByItsArrayId) {
  known_ = {};
  const std::string tag = "slurmjob-operator:team-a/gone/1";
  slurm_.raw = {ArrayRecord(101, 0, "RUNNING", tag), ArrayRecord(102, 1, "RUNNING", tag),
                ArrayRecord(100, std::nullopt, "PENDING", tag, "2-3%2")};
  tracker_.RegisterCluster(Endpoint());
  Tick();
  clock_.Advance(seconds(61));
  slurm_.last_update = 1001;
  Tick();
  EXPECT_THAT(slurm_.deletes, ElementsAre("/slurm/v0.0.42/job/100"));
}

TEST_F(JobTrackerTest, ListsKeepOnlyTheJobKeysTheDialectReadsAndCancelsEverything) {
  known_ = {};
  slurm_.jobs = {{7, {"RUNNING", "slurmjob-operator:team-a/gone/1"}}};
  tracker_.RegisterCluster(Endpoint("v0.0.40"));
  Tick();
  clock_.Advance(seconds(61));
  slurm_.last_update = 1001;
  Tick();  // second sweep: job 7 is cancelled
  ASSERT_THAT(slurm_.deletes, ElementsAre("/slurm/v0.0.40/job/7"));
  const std::vector<std::string>& keys = (*slurm::DialectFor("v0.0.40"))->JobRecordKeys();
  ASSERT_FALSE(keys.empty());
  ASSERT_EQ(slurm_.options.size(), 3u);  // list, list, cancel
  EXPECT_EQ(slurm_.options[0], keys);
  EXPECT_EQ(slurm_.options[1], keys);
  EXPECT_THAT(slurm_.options[2], IsEmpty());
}

// A remote's last_update at int64's top made the next incremental list ask for last_update + 1,
// a signed overflow (undefined; it wrapped to a negative update_time). It gets full lists.
TEST_F(JobTrackerTest, ALastUpdateAtTheTopOfInt64GetsFullLists) {
  slurm_.jobs = {{1, {"PENDING", ""}}};
  slurm_.last_update = std::numeric_limits<int64_t>::max();
  tracker_.Track(Endpoint(), 1, "team-a/one", seconds(1));
  for (int i = 0; i < 4; ++i) {
    clock_.Advance(seconds(2));
    Tick();
  }
  ASSERT_GE(slurm_.paths.size(), 3u);
  for (const std::string& path : slurm_.paths) {
    EXPECT_EQ(path, "/slurm/v0.0.42/jobs/") << "no incremental list past int64";
  }
}

// A list that hangs until it fails (a remote that never answers: minutes, with the client's
// retries) was due again at once, since its backoff counted from its start: a few such clusters
// kept every fetch thread busy, and every other cluster's lists waited. The backoff counts from
// the failure now.
TEST_F(JobTrackerTest, AListThatHungUntilItFailedWaitsItsBackoffFromTheFailure) {
  slurm_.fail = true;
  call_takes_ = std::chrono::minutes(3);
  tracker_.RegisterCluster(Endpoint());
  Tick();
  ASSERT_EQ(slurm_.options.size(), 1u);
  call_takes_ = Duration::zero();
  clock_.Advance(seconds(1));
  Tick();
  EXPECT_EQ(slurm_.options.size(), 1u) << "listed again right after a failure";
  clock_.Advance(TrackerOptions{}.pace.failure_base);
  Tick();
  EXPECT_EQ(slurm_.options.size(), 2u) << "listed again once the backoff passed";
}

TEST_F(JobTrackerTest, TicksListAtTheEagerestPaceAndNotifyOnlyChanges) {
  slurm_.jobs = {{1, {"PENDING", ""}}, {2, {"RUNNING", ""}}};
  tracker_.Track(Endpoint(), 1, "team-a/one", seconds(1));
  tracker_.Track(Endpoint(), 2, "team-a/two", seconds(30));
  clock_.Advance(seconds(1));
  Tick();
  EXPECT_THAT(notified_, UnorderedElementsAre("team-a/one", "team-a/two"));  // first sight
  notified_.clear();
  Tick();  // not due yet
  EXPECT_EQ(slurm_.paths.size(), 1u);

  // last_update (1000) counts whole seconds: a change later in second 1000
  // would be invisible to update_time=1001, so the next list is full; it
  // confirms 1000 (started >= 1.5 s after the list that first showed it).
  clock_.Advance(seconds(2));
  Tick();
  EXPECT_EQ(slurm_.paths.back(), "/slurm/v0.0.42/jobs/");
  EXPECT_THAT(notified_, IsEmpty());

  clock_.Advance(seconds(1));
  slurm_.jobs[1].first = "RUNNING";
  slurm_.last_update = 1001;
  Tick();
  EXPECT_THAT(notified_, ElementsAre("team-a/one"));
  // Asked with Slurm's own last_update + 1, not our clock.
  EXPECT_EQ(slurm_.paths.back(), "/slurm/v0.0.42/jobs/?update_time=1001");

  notified_.clear();
  clock_.Advance(seconds(2));
  Tick();  // full again: confirms 1001
  clock_.Advance(seconds(1));
  Tick();  // nothing changed: "No job changes" answer, no notification
  EXPECT_THAT(notified_, IsEmpty());
  EXPECT_EQ(slurm_.paths.back(), "/slurm/v0.0.42/jobs/?update_time=1002");

  // Untracked (finished) jobs do not keep the cluster listed.
  tracker_.Untrack("team-a/one");
  tracker_.Untrack("team-a/two");
  const size_t lists = slurm_.paths.size();
  clock_.Advance(seconds(120));
  Tick();
  EXPECT_EQ(slurm_.paths.size(), lists);
}

TEST_F(JobTrackerTest, LegacyVersionsListInFull) {
  slurm_.jobs = {{1, {"RUNNING", ""}}};
  tracker_.Track(Endpoint("v0.0.38"), 1, "team-a/one", seconds(1));
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(seconds(1));
    Tick();
  }
  ASSERT_EQ(slurm_.paths.size(), 3u);
  for (const std::string& p : slurm_.paths) EXPECT_EQ(p, "/slurm/v0.0.38/jobs/");
}

// A job that ended and left the queue before any list saw it (a short job,
// lists delayed by a busy call budget) changes nothing in the snapshot, yet
// its key must hear of it: without a notice it waited for its 2-minute
// safety-net timer (#16 item 3 found it: 18 of 20 short jobs did).
TEST_F(JobTrackerTest, JobsAListShowsEndedAreLookedUpInAccountingInOneCallBeforeTheyAreTold) {
  slurm_.jobs = {{1, {"RUNNING", ""}}, {2, {"RUNNING", ""}}, {3, {"RUNNING", ""}}};
  for (int i = 1; i <= 3; ++i)
    tracker_.Track(Endpoint(), i, absl::StrCat("team-a/j", i), seconds(1));
  clock_.Advance(seconds(1));
  Tick();
  EXPECT_THAT(slurm_.db_paths, IsEmpty());  // nothing ended
  notified_.clear();
  db_calls_at_notify_.clear();

  slurm_.jobs = {{1, {"COMPLETED", ""}}, {2, {"COMPLETED", ""}}, {3, {"FAILED", ""}}};
  slurm_.last_update = 1001;
  slurm_.db = {{1, DbRecord(1, "COMPLETED", 4)},
               {2, DbRecord(2, "RUNNING", 8)}};  // accounting has not learned 2's end yet
  clock_.Advance(seconds(2));
  Tick();
  EXPECT_THAT(slurm_.db_paths, ElementsAre("/slurmdb/v0.0.42/jobs?step=1&step=2&step=3"));
  EXPECT_THAT(notified_, UnorderedElementsAre("team-a/j1", "team-a/j2", "team-a/j3"));
  EXPECT_THAT(db_calls_at_notify_, ElementsAre(1u, 1u, 1u));

  // A reconcile's query tracks its job again, then reads it.
  tracker_.Track(Endpoint(), 1, "team-a/j1", seconds(1));
  absl::StatusOr<JobTracker::Answer> one = tracker_.Get(Endpoint(), 1, clock_.Now() - seconds(5));
  ASSERT_TRUE(one.ok() && one->job.has_value());
  ASSERT_TRUE(one->accounting.has_value() && one->accounting->allocation.has_value());
  EXPECT_EQ(one->accounting->allocation->tres.at("cpu"), 4);
  EXPECT_EQ(one->accounting->allocation->elapsed_seconds, 60);
  // Not final in accounting, or no record: looked at, without an allocation (the executor
  // records the end without usage and looks again later).
  for (int64_t id : {2, 3}) {
    absl::StatusOr<JobTracker::Answer> a = tracker_.Get(Endpoint(), id, clock_.Now() - seconds(5));
    ASSERT_TRUE(a.ok() && a->job.has_value()) << id;
    ASSERT_TRUE(a->accounting.has_value()) << id;
    EXPECT_FALSE(a->accounting->allocation.has_value()) << id;
  }

  // A list that changes nothing looks nothing up again.
  clock_.Advance(seconds(2));
  Tick();
  EXPECT_EQ(slurm_.db_paths.size(), 1u);

  // What was found goes with the tracking.
  tracker_.Untrack("team-a/j1");
  tracker_.Track(Endpoint(), 1, "team-a/j1", seconds(1));
  absl::StatusOr<JobTracker::Answer> again = tracker_.Get(Endpoint(), 1, clock_.Now() - seconds(5));
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->accounting.has_value());
}

// Jobs that left the live queue before a list showed them ended (lists far
// apart under a busy call budget) were read one GET /slurmdb/<v>/job/<id>
// each by their reconciles: 0.9 calls per job in the budgeted 10-cluster
// bench. The list that first misses them looks them up in one call, before
// their keys are told, and Get() answers with the final record.
TEST_F(JobTrackerTest, JobsThatLeftTheQueueAreLookedUpInOneCallBeforeTheyAreTold) {
  slurm_.jobs = {
      {1, {"RUNNING", ""}}, {2, {"RUNNING", ""}}, {3, {"RUNNING", ""}}, {4, {"RUNNING", ""}}};
  for (int i = 1; i <= 4; ++i)
    tracker_.Track(Endpoint(), i, absl::StrCat("team-a/j", i), seconds(1));
  clock_.Advance(seconds(1));
  Tick();
  ASSERT_THAT(slurm_.db_paths, IsEmpty());
  tracker_.Track(Endpoint(), 5, "team-a/j5", seconds(1));  // ends before any list shows it
  notified_.clear();
  db_calls_at_notify_.clear();

  // 1-3 and 5 left the queue; 4 still runs. Accounting shows 1, 3 and 5 ended, 2 not yet.
  slurm_.jobs = {{4, {"RUNNING", ""}}};
  slurm_.last_update = 1001;
  slurm_.db = {{1, DbRecord(1, "COMPLETED", 4)},
               {2, DbRecord(2, "RUNNING", 8)},
               {3, DbRecord(3, "FAILED", 2)},
               {5, DbRecord(5, "COMPLETED", 1)}};
  clock_.Advance(seconds(2));
  Tick();
  EXPECT_THAT(slurm_.db_paths, ElementsAre("/slurmdb/v0.0.42/jobs?step=1&step=2&step=3&step=5"));
  EXPECT_THAT(notified_, UnorderedElementsAre("team-a/j1", "team-a/j2", "team-a/j3", "team-a/j5"));
  EXPECT_THAT(db_calls_at_notify_, Each(1u));

  for (int64_t id : {1, 3, 5}) {
    tracker_.Track(Endpoint(), id, absl::StrCat("team-a/j", id), seconds(1));
    absl::StatusOr<JobTracker::Answer> a = tracker_.Get(Endpoint(), id, clock_.Now() - seconds(5));
    ASSERT_TRUE(a.ok()) << id;
    EXPECT_FALSE(a->job.has_value()) << id;
    ASSERT_TRUE(a->left_record.has_value()) << id;
    EXPECT_EQ(a->left_record->job_id, id);
    EXPECT_TRUE(a->left_record->IsFinal()) << id;
    ASSERT_TRUE(a->left_record->allocation.has_value()) << id;
  }
  EXPECT_EQ(tracker_.Get(Endpoint(), 3, clock_.Now() - seconds(5))->left_record->state,
            slurm::BaseState::kFailed);
  // Not final in accounting yet: the executor reads it itself (it looks again until it is).
  absl::StatusOr<JobTracker::Answer> two = tracker_.Get(Endpoint(), 2, clock_.Now() - seconds(5));
  ASSERT_TRUE(two.ok());
  EXPECT_FALSE(two->job.has_value());
  EXPECT_FALSE(two->left_record.has_value());

  // Looked up once: the next lists ask nothing more.
  slurm_.last_update = 1002;
  clock_.Advance(seconds(2));
  Tick();
  EXPECT_EQ(slurm_.db_paths.size(), 1u);

  // A job listed again (requeued) is read from the queue, and its old record is gone.
  slurm_.jobs[1] = {"PENDING", ""};
  slurm_.last_update = 1003;
  clock_.Advance(seconds(2));
  Tick();
  slurm_.jobs.erase(1);
  slurm_.db.erase(1);
  slurm_.last_update = 1004;
  clock_.Advance(seconds(2));
  Tick();
  ASSERT_EQ(slurm_.db_paths.size(), 2u) << "left again: looked up again";
  EXPECT_EQ(slurm_.db_paths[1], "/slurmdb/v0.0.42/jobs?step=1");
  absl::StatusOr<JobTracker::Answer> one = tracker_.Get(Endpoint(), 1, clock_.Now() - seconds(5));
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(one->left_record.has_value()) << "accounting has no record of it now";

  // What was found goes with the tracking.
  tracker_.Untrack("team-a/j3");
  tracker_.Track(Endpoint(), 3, "team-a/j3", seconds(1));
  EXPECT_FALSE(tracker_.Get(Endpoint(), 3, clock_.Now() - seconds(5))->left_record.has_value());
}

TEST_F(JobTrackerTest, EndedJobsAreLookedUpAHundredPerCallAndAFailedCallLeavesThemUnset) {
  for (int i = 1; i <= 150; ++i) {
    slurm_.jobs[i] = {"RUNNING", ""};
    tracker_.Track(Endpoint("v0.0.38"), i, absl::StrCat("team-a/j", i), seconds(1));
  }
  clock_.Advance(seconds(1));
  Tick();
  for (int i = 1; i <= 150; ++i) {
    slurm_.jobs[i] = {"COMPLETED", ""};
    slurm_.db[i] = DbRecord(i, "COMPLETED", 2);
  }
  slurm_.db_fail = true;
  clock_.Advance(seconds(2));
  Tick();
  ASSERT_EQ(slurm_.db_paths.size(), 2u);
  std::vector<int> last;
  for (int i = 101; i <= 150; ++i) last.push_back(i);
  // dbv0.0.38 reads one comma-separated value, the comma encoded.
  EXPECT_EQ(slurm_.db_paths[0].rfind("/slurmdb/v0.0.38/jobs?step=1%2C2%2C3%2C", 0), 0u);
  EXPECT_EQ(slurm_.db_paths[1], "/slurmdb/v0.0.38/jobs?step=" + absl::StrJoin(last, "%2C"));
  for (int64_t id : {1, 150}) {
    absl::StatusOr<JobTracker::Answer> a =
        tracker_.Get(Endpoint("v0.0.38"), id, clock_.Now() - seconds(5));
    ASSERT_TRUE(a.ok() && a->job.has_value());
    EXPECT_FALSE(a->accounting.has_value()) << "a failed lookup: the executor looks itself";
  }
  EXPECT_EQ(tracker_.AccountingCalls(), 2);
}

TEST_F(JobTrackerTest, ATrackedJobThatLeftTheQueueUnseenIsReportedOnce) {
  tracker_.Track(Endpoint(), 7, "team-a/seven", seconds(1));
  clock_.Advance(seconds(1));
  Tick();  // a list sent after the tracking began, without job 7
  EXPECT_THAT(notified_, ::testing::ElementsAre("team-a/seven"));
  clock_.Advance(seconds(6));
  slurm_.last_update += 1;  // something else changed: a full answer again
  Tick();
  EXPECT_EQ(notified_.size(), 1u) << "reported once, not on every list";
}

// A cluster's entry for a job reads its key and tracking start from the
// SlurmJob that tracks it (not copies): after a key moves to another job,
// another key takes its old job and the first key goes, the job is told
// under the key tracking it now (ASan: no entry outlives its owner).
TEST_F(JobTrackerTest, AJobIsToldUnderTheKeyTrackingItNow) {
  tracker_.Track(Endpoint(), 7, "team-a/first", seconds(1));
  tracker_.Track(Endpoint(), 8, "team-a/first", seconds(1));  // moved to job 8
  tracker_.Track(Endpoint(), 7, "team-a/second", seconds(1));
  tracker_.Untrack("team-a/first");
  EXPECT_EQ(tracker_.TrackedCount(), 1u);
  clock_.Advance(seconds(1));
  Tick();  // a list sent after the tracking began, without job 7
  EXPECT_THAT(notified_, ::testing::ElementsAre("team-a/second"));
}

TEST_F(JobTrackerTest, AJobMissingFromAListTakenAfterItWasTrackedHasLeftTheQueue) {
  slurm_.jobs = {{1, {"RUNNING", ""}}};
  clock_.Advance(seconds(1));
  tracker_.Track(Endpoint(), 7, "team-a/seven", seconds(1));
  auto a = tracker_.Get(Endpoint(), 7, clock_.Now() - seconds(1));
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->job.has_value());
  // A snapshot older than the tracking is never trusted for absence.
  EXPECT_EQ(slurm_.paths.size(), 1u);
  clock_.Advance(seconds(1));
  slurm_.jobs[7] = {"PENDING", ""};
  slurm_.last_update = 1001;
  tracker_.Track(Endpoint(), 8, "team-a/eight", seconds(1));
  a = tracker_.Get(Endpoint(), 8, clock_.Now() - seconds(10));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(slurm_.paths.size(), 2u) << "the job was tracked after the last list: list again";
}

// After a restart or a shard move every running job is tracked anew, one
// reconcile (worker) at a time. A snapshot that shows the job answers it
// whenever the tracking began: one list per cluster for all of them, not one
// list per job (at 100,000 SlurmJobs over 4 replicas, 4 workers each waiting
// for a list of thousands of jobs made a moved shard wait ~5 minutes).
TEST_F(JobTrackerTest, JobsTrackedAnewAreAnsweredByASnapshotThatShowsThem) {
  for (int i = 1; i <= 50; ++i) slurm_.jobs[i] = {"RUNNING", ""};
  tracker_.Track(Endpoint(), 1, "team-a/job1", seconds(30));
  ASSERT_TRUE(tracker_.Get(Endpoint(), 1, clock_.Now() - seconds(30)).ok());
  ASSERT_EQ(slurm_.paths.size(), 1u);
  for (int i = 2; i <= 50; ++i) {
    clock_.Advance(std::chrono::milliseconds(20));
    tracker_.Track(Endpoint(), i, absl::StrCat("team-a/job", i), seconds(30));
    auto a = tracker_.Get(Endpoint(), i, clock_.Now() - seconds(30));
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(a->job.has_value()) << i;
    EXPECT_EQ(a->job->state, slurm::BaseState::kRunning);
  }
  EXPECT_EQ(slurm_.paths.size(), 1u) << "one list answers every job it shows";
  // A job the snapshot does not show may be newer than it: a list sent after
  // its tracking began says whether it left the queue.
  clock_.Advance(std::chrono::milliseconds(20));
  tracker_.Track(Endpoint(), 99, "team-a/job99", seconds(30));
  auto a = tracker_.Get(Endpoint(), 99, clock_.Now() - seconds(30));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->job.has_value());
  EXPECT_EQ(slurm_.paths.size(), 2u);
  // ... and a snapshot too old for the caller is not used for a shown job either.
  clock_.Advance(seconds(40));
  tracker_.Track(Endpoint(), 2, "team-a/job2", seconds(30));
  ASSERT_TRUE(tracker_.Get(Endpoint(), 2, clock_.Now()).ok());
  EXPECT_EQ(slurm_.paths.size(), 3u);
}

// The pace is read from the polls of the jobs tracked now (kept beside them,
// not recomputed from all of them on each Get() and tick): untracking the
// eagerest job, or tracking it on another cluster, slows the lists down.
TEST_F(JobTrackerTest, ThePaceFollowsTheJobsStillTracked) {
  slurm_.jobs = {{1, {"RUNNING", ""}}, {2, {"RUNNING", ""}}};
  tracker_.Track(Endpoint(), 1, "team-a/one", seconds(1));
  tracker_.Track(Endpoint(), 2, "team-a/two", seconds(2));
  Tick();
  ASSERT_EQ(slurm_.paths.size(), 1u);
  clock_.Advance(seconds(1));
  Tick();
  EXPECT_EQ(slurm_.paths.size(), 2u) << "at the eagerest poll, 1 s";
  tracker_.Untrack("team-a/one");
  clock_.Advance(seconds(1));
  Tick();
  EXPECT_EQ(slurm_.paths.size(), 2u) << "job one is gone: every 2 s";
  clock_.Advance(seconds(1));
  Tick();
  EXPECT_EQ(slurm_.paths.size(), 3u);
  tracker_.Track(Endpoint(), 1, "team-a/one", seconds(1));
  clock_.Advance(seconds(1));
  Tick();
  EXPECT_EQ(slurm_.paths.size(), 4u) << "tracked again: every 1 s";
  const ClusterEndpoint other{"team-c/other", "v0.0.42", {}, nullptr};
  tracker_.Track(other, 1, "team-a/one", seconds(1));  // now on another cluster
  Tick();                                              // lists `other` once
  const size_t after_move = slurm_.paths.size();
  clock_.Advance(seconds(1));
  Tick();  // `other` at 1 s; team-a/a3 at 2 s: not yet
  EXPECT_EQ(slurm_.paths.size(), after_move + 1);
  EXPECT_EQ(tracker_.TrackedCount(), 2u);
}

TEST_F(JobTrackerTest, AFailingClusterIsNotListedEveryTick) {
  slurm_.fail = true;
  tracker_.Track(Endpoint(), 1, "team-a/one", seconds(1));
  auto a = tracker_.Get(Endpoint(), 1, clock_.Now());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kUnavailable);
  const int64_t calls = tracker_.ListCalls();
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(std::chrono::milliseconds(200));
    Tick();
  }
  EXPECT_EQ(tracker_.ListCalls(), calls) << "retried within the 5 s pause";
  clock_.Advance(seconds(5));
  Tick();
  EXPECT_EQ(tracker_.ListCalls(), calls + 1);
}

// A list the project's budget held back never reached the cluster: it is
// due again when the budget says, without the failure backoff that grows
// to minutes (#16 item 3).
TEST_F(JobTrackerTest, AListHeldBackByTheBudgetIsRetriedWhenTheBudgetSaysNotBackedOff) {
  slurm_.held_back = true;
  tracker_.Track(Endpoint(), 1, "team-a/one", seconds(1));
  EXPECT_EQ(tracker_.Get(Endpoint(), 1, clock_.Now()).status().code(),
            absl::StatusCode::kUnavailable);
  for (int i = 0; i < 6; ++i) {
    const int64_t calls = tracker_.ListCalls();
    clock_.Advance(std::chrono::milliseconds(100));
    Tick();
    EXPECT_EQ(tracker_.ListCalls(), calls) << "before the budget's 300 ms, round " << i;
    clock_.Advance(std::chrono::milliseconds(250));
    Tick();
    EXPECT_EQ(tracker_.ListCalls(), calls + 1) << "round " << i;
  }
  slurm_.held_back = false;
  slurm_.jobs[1] = {"RUNNING", ""};
  clock_.Advance(std::chrono::milliseconds(350));
  Tick();
  EXPECT_THAT(notified_, ::testing::Contains("team-a/one")) << "the list's news reaches the job";
  absl::StatusOr<JobTracker::Answer> got = tracker_.Get(Endpoint(), 1, clock_.Now());
  EXPECT_TRUE(got.ok()) << got.status();
}

TEST_F(JobTrackerTest, OrphanSweepCancelsOnlyTaggedActiveJobsSeenOrphanedTwice) {
  known_ = {"team-a/alive"};
  slurm_.jobs = {
      {1, {"RUNNING", "slurmjob-operator:team-a/alive/1"}},
      {2, {"RUNNING", "slurmjob-operator:team-a/gone/1"}},
      {3, {"COMPLETED", "slurmjob-operator:team-a/gone2/1"}},
      {4, {"RUNNING", "slurmjob-operator-orphaned:team-a/gone3/1"}},
      {5, {"RUNNING", "someone else's job"}},
  };
  tracker_.RegisterCluster(Endpoint());
  Tick();  // first sweep: job 2 becomes a candidate
  EXPECT_THAT(slurm_.deletes, IsEmpty());
  clock_.Advance(seconds(61));
  slurm_.last_update = 1001;
  Tick();  // second sweep: still orphaned -> cancelled
  EXPECT_THAT(slurm_.deletes, ElementsAre("/slurm/v0.0.42/job/2"));
  EXPECT_EQ(tracker_.OrphansCancelled(), 1);
}

// A tag is a comment any Slurm user can write: thousands of orphans are cancelled a capped number
// per sweep, the rest at the next sweeps, so one sweep cannot take the project's call budget.
TEST_F(JobTrackerTest, OrphanCancelsPerSweepAreCapped) {
  for (int i = 1; i <= 50; ++i) {
    slurm_.jobs[i] = {"RUNNING", absl::StrCat("slurmjob-operator:team-a/gone", i, "/1")};
  }
  tracker_.RegisterCluster(Endpoint());
  Tick();  // first sweep: all become candidates
  for (int sweep = 1; sweep <= 3; ++sweep) {
    clock_.Advance(seconds(61));
    slurm_.last_update = 1000 + sweep;
    Tick();
    EXPECT_EQ(slurm_.deletes.size(), std::min<size_t>(50, 20u * sweep)) << "sweep " << sweep;
    for (const std::string& path : slurm_.deletes) {
      const int id = std::stoi(path.substr(path.rfind('/') + 1));
      slurm_.jobs[id].first = "CANCELLED";
    }
  }
  EXPECT_EQ(slurm_.deletes.front(), "/slurm/v0.0.42/job/1") << "lowest job ids first";
}

// A cluster listed only for its sweep keeps no copy of the queue between sweeps (many
// SlurmClusters can name one busy Slurm cluster); the two-sweep rule still holds, and a cluster
// that tracks a job keeps its snapshot.
TEST_F(JobTrackerTest, AClusterThatTracksNoJobReleasesItsSnapshotAfterTheSweep) {
  for (int i = 1; i <= 300; ++i) slurm_.jobs[i] = {"RUNNING", "someone else's job"};
  slurm_.jobs[1000] = {"RUNNING", "slurmjob-operator:team-a/gone/1"};
  tracker_.RegisterCluster(Endpoint());
  Tick();
  EXPECT_EQ(tracker_.ListCalls(), 1);
  EXPECT_EQ(tracker_.RecordsHeld(), 0u) << "swept, tracked by none: released";
  EXPECT_THAT(slurm_.deletes, IsEmpty()) << "the orphan's first sweep only marks it";
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(seconds(10));
    Tick();
  }
  EXPECT_EQ(tracker_.ListCalls(), 1) << "released, the list still sets the pace: no list a tick";

  clock_.Advance(seconds(11));
  Tick();
  EXPECT_EQ(tracker_.ListCalls(), 2);
  EXPECT_EQ(slurm_.paths.back().find("update_time="), std::string::npos)
      << "no snapshot to update: the list is a full one";
  EXPECT_THAT(slurm_.deletes, ElementsAre("/slurm/v0.0.42/job/1000"))
      << "the candidates outlive the snapshot";
  EXPECT_EQ(tracker_.RecordsHeld(), 0u);

  tracker_.Track(Endpoint(), 5, "team-a/job5", seconds(5));
  clock_.Advance(seconds(61));
  Tick();
  EXPECT_EQ(tracker_.RecordsHeld(), 301u) << "a cluster tracking a job keeps its snapshot";
}

// After a restart, SlurmJobs read their cluster (tag searches, Gets) before any job is tracked:
// the snapshot stays while they do, so one list answers them all (releasing it after each list
// made the restart of the 10,000-SlurmJob bench list the cluster 141 times in 5 s).
TEST_F(JobTrackerTest, AClusterBeingReadKeepsItsSnapshotThoughItTracksNoJob) {
  for (int i = 1; i <= 50; ++i) slurm_.jobs[i] = {"RUNNING", "tag-a"};
  tracker_.RegisterCluster(Endpoint());
  auto any = [](const slurm::JobInfo&) { return true; };
  const Time t0 = clock_.Now();
  ASSERT_TRUE(tracker_.FindLive(Endpoint(), any, t0).ok());
  EXPECT_EQ(tracker_.ListCalls(), 1);
  clock_.Advance(seconds(61));
  ASSERT_TRUE(tracker_.FindLive(Endpoint(), any, t0).ok());
  Tick();  // the sweep's list, a minute after the first: the cluster was read since
  EXPECT_EQ(tracker_.ListCalls(), 2);
  EXPECT_EQ(tracker_.RecordsHeld(), 50u);
  for (int i = 0; i < 20; ++i) {
    clock_.Advance(seconds(1));
    ASSERT_TRUE(tracker_.FindLive(Endpoint(), any, t0).ok());
  }
  EXPECT_EQ(tracker_.ListCalls(), 2) << "reads answered from the kept snapshot";
  clock_.Advance(seconds(45));
  Tick();  // listed again (65 s after the last list), last read 45 s ago: kept
  EXPECT_EQ(tracker_.ListCalls(), 3);
  EXPECT_EQ(tracker_.RecordsHeld(), 50u);
  clock_.Advance(seconds(61));
  Tick();  // nobody read it for over a minute: released
  EXPECT_EQ(tracker_.RecordsHeld(), 0u);
}

// The same before the cluster is registered (its probe held back by the call
// budget after a restart): searches made one after another, not while a list
// is in flight, read one list. The snapshot used to be dropped after each
// search, so each listed the cluster anew (8 lists for 20 SlurmJobs in
// TrackingCost.TagSearchesAfterARestartShareTheClustersList).
TEST_F(JobTrackerTest, SearchesOfAnUnregisteredClusterOneAfterAnotherShareItsList) {
  for (int i = 1; i <= 5; ++i) slurm_.jobs[i] = {"RUNNING", "tag-a"};
  auto any = [](const slurm::JobInfo&) { return true; };
  const Time t0 = clock_.Now();
  for (int i = 0; i < 20; ++i) {
    auto r = tracker_.FindLive(Endpoint(), any, t0, absl::StrCat("team-a/j", i));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->jobs.size(), 5u);
    clock_.Advance(std::chrono::milliseconds(125));
    Tick();
  }
  EXPECT_EQ(tracker_.ListCalls(), 1) << "each search listed the cluster anew";
  EXPECT_EQ(tracker_.RecordsHeld(), 5u);
  clock_.Advance(seconds(61));
  Tick();  // unread for longer than sweep_interval: dropped, and never listed meanwhile
  EXPECT_EQ(tracker_.ListCalls(), 1);
  EXPECT_EQ(tracker_.RecordsHeld(), 0u);
  ASSERT_TRUE(tracker_.FindLive(Endpoint(), any, t0).ok());
  EXPECT_EQ(tracker_.ListCalls(), 2) << "a dropped cluster is listed anew";
}

// A fetch ends only once its orphan sweep has: a Get() waiting for the list
// does not answer while the fetch thread still cancels (before: the fetch was
// counted done before the sweep, which drops the lock while it cancels, so
// any other cluster's list arriving meanwhile let the Get() answer).
TEST_F(JobTrackerTest, GetWaitsUntilTheFetchsSweepHasEnded) {
  known_ = {};
  slurm_.jobs = {{2, {"RUNNING", "slurmjob-operator:team-a/gone/1"}}};
  tracker_.RegisterCluster(Endpoint());
  Tick();  // first sweep: job 2 becomes a candidate
  clock_.Advance(seconds(61));
  slurm_mu_.lock();
  slurm_.last_update = 1001;
  slurm_mu_.unlock();
  hold_cancels_ = true;
  auto waiting =
      std::async(std::launch::async, [this] { return tracker_.Get(Endpoint(), 2, clock_.Now()); });
  ASSERT_TRUE(WaitFor([this] { return Held() == 1; })) << "the second sweep did not cancel";
  // Another cluster's list arrives while the sweep's cancel is in flight.
  const ClusterEndpoint other{"team-c/other", "v0.0.42", {}, nullptr};
  ASSERT_TRUE(tracker_.Get(other, 2, clock_.Now()).ok());
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "Get() answered while its fetch was still cancelling";
  OpenHole();
  ASSERT_EQ(waiting.wait_for(seconds(5)), std::future_status::ready);
  EXPECT_TRUE(waiting.get().ok());
  std::lock_guard<std::mutex> lock(slurm_mu_);
  EXPECT_THAT(slurm_.deletes, ElementsAre("/slurm/v0.0.42/job/2"));
}

// #13 L1/E3: the SlurmCluster is repointed. What the tracker knew of the old
// cluster (its jobs, Slurm's last_update, the sweep's candidates) says
// nothing of the new one, whose job ids are other jobs: a look is answered
// by a full list of the new cluster, and an old candidate is not cancelled
// there by id.
TEST_F(JobTrackerTest, ARepointedClusterStartsAfresh) {
  slurm_.jobs = {{2, {"RUNNING", "slurmjob-operator:team-a/gone/1"}}};
  tracker_.RegisterCluster(Endpoint());
  tracker_.Track(Endpoint(), 2, "team-a/mine", seconds(5));
  Tick();  // job 2 of the old cluster: a sweep candidate
  ClusterEndpoint moved = Endpoint();
  moved.where.cluster_id = "elsewhere";
  tracker_.RegisterCluster(moved);
  slurm_.jobs = {{2, {"PENDING", "slurmjob-operator:team-b/stranger/1"}}};
  slurm_.paths.clear();
  auto a = tracker_.Get(moved, 2, clock_.Now() - seconds(30));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(a->job.has_value());
  EXPECT_EQ(a->job->comment, "slurmjob-operator:team-b/stranger/1") << "the old cluster's record";
  EXPECT_THAT(slurm_.paths, ElementsAre("/slurm/v0.0.42/jobs/")) << "a full list, no update_time";
  clock_.Advance(seconds(61));
  slurm_.jobs = {{2, {"RUNNING", "slurmjob-operator:team-a/gone/1"}}};
  slurm_.last_update = 1001;
  Tick();  // the first sweep of the new cluster
  EXPECT_THAT(slurm_.deletes, IsEmpty()) << "cancelled on the first sweep of another cluster";
}

// #13 L1 with the fetch threads: the SlurmCluster is repointed while a list
// of the old cluster is in flight. That list, arriving after the repoint,
// is dropped (it would show the old cluster's job under the id), and the
// new cluster is listed instead.
TEST_F(JobTrackerTest, AListInFlightFromTheOldClusterIsDropped) {
  answer_before_hold_ = true;
  const ClusterEndpoint old{kHole, "v0.0.42", {}, nullptr};
  slurm_.jobs = {{2, {"RUNNING", "slurmjob-operator:team-b/old/1"}}};
  tracker_.Track(old, 2, "team-b/mine", seconds(1));
  tracker_.Tick();  // the old cluster's list is answered, then held
  ASSERT_TRUE(WaitFor([this] { return Held() == 1; }));
  ClusterEndpoint moved = old;
  moved.where.cluster_id = "elsewhere";
  tracker_.RegisterCluster(moved);
  {
    std::lock_guard<std::mutex> lock(slurm_mu_);
    slurm_.jobs = {{2, {"PENDING", "slurmjob-operator:team-b/stranger/1"}}};
  }
  OpenHole();
  tracker_.WaitIdle();
  EXPECT_EQ(tracker_.ListCalls(), 2) << "the new cluster was not listed after the stale list";
  auto a = tracker_.Get(moved, 2, clock_.Now() - seconds(30));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(a->job.has_value());
  EXPECT_EQ(a->job->comment, "slurmjob-operator:team-b/stranger/1")
      << "served the list of the cluster the key pointed at before";
  EXPECT_EQ(tracker_.ListCalls(), 2);
}

// Tag searches (#13 item 11) read the cluster's shared list: any list sent
// after the search's not_before answers it, and says when it was sent.
// (Every SlurmCluster is registered by the cluster reconciler.)
TEST_F(JobTrackerTest, TagSearchesReadTheSharedListAndSayWhenItWasSent) {
  tracker_.RegisterCluster(Endpoint());
  slurm_.jobs = {{5, {"RUNNING", "tag-a"}}, {6, {"PENDING", "tag-b"}}, {7, {"RUNNING", "tag-a"}}};
  auto tagged_a = [](const slurm::JobInfo& j) { return j.comment == "tag-a"; };
  const Time t0 = clock_.Now();
  auto first = tracker_.FindLive(Endpoint(), tagged_a, t0);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->listed_at, t0);
  std::vector<int64_t> ids;
  for (const slurm::JobInfo& j : first->jobs) ids.push_back(j.job_id);
  EXPECT_THAT(ids, UnorderedElementsAre(5, 7));
  EXPECT_EQ(tracker_.ListCalls(), 1);

  clock_.Advance(seconds(3));
  slurm_.jobs[8] = {"PENDING", "tag-a"};
  slurm_.last_update += 2;
  auto shared = tracker_.FindLive(Endpoint(), tagged_a, t0);
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_EQ(tracker_.ListCalls(), 1) << "a list sent after not_before answers without a call";
  EXPECT_EQ(shared->listed_at, t0) << "the answer is as of its list, not as of now";
  EXPECT_EQ(shared->jobs.size(), 2u);

  auto fresh = tracker_.FindLive(Endpoint(), tagged_a, clock_.Now());
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(tracker_.ListCalls(), 2);
  EXPECT_EQ(fresh->listed_at, clock_.Now());
  EXPECT_EQ(fresh->jobs.size(), 3u);
}

// Searches that arrive while the cluster's list is in flight, or while it is
// being asked for, wait for one list between them: after a restart every
// SlurmJob without a job id searches, and each used to list the whole queue.
TEST_F(JobTrackerTest, ConcurrentTagSearchesWaitForOneList) {
  slurm_.jobs = {{5, {"RUNNING", "tag-a"}}};
  const ClusterEndpoint hole{kHole, "v0.0.42", {}, nullptr};
  constexpr int kSearches = 8;
  std::vector<std::future<absl::StatusOr<JobTracker::LiveJobs>>> searches;
  const Time now = clock_.Now();
  for (int i = 0; i < kSearches; ++i) {
    searches.push_back(std::async(std::launch::async, [&, i] {
      return tracker_.FindLive(
          hole, [](const slurm::JobInfo& j) { return j.comment == "tag-a"; }, now,
          absl::StrCat("team-b/j", i));
    }));
  }
  ASSERT_TRUE(WaitFor([this] { return Held() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let every search queue up
  OpenHole();
  for (auto& f : searches) {
    absl::StatusOr<JobTracker::LiveJobs> r = f.get();
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->jobs.size(), 1u);
  }
  EXPECT_EQ(tracker_.ListCalls(), 1) << kSearches << " searches made their own lists";
}

// A search answered by a failing cluster says why, and during the failure's
// backoff answers it again without a call.
TEST_F(JobTrackerTest, ATagSearchOnAFailingClusterFailsWithoutHammeringIt) {
  slurm_.fail = true;
  auto any = [](const slurm::JobInfo&) { return true; };
  auto r = tracker_.FindLive(Endpoint(), any, clock_.Now());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  clock_.Advance(std::chrono::milliseconds(500));
  r = tracker_.FindLive(Endpoint(), any, clock_.Now());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(tracker_.ListCalls(), 1);
}

TEST_F(JobTrackerTest, ADuplicateOfTheCurrentRunAndAStaleRunAreCancelled) {
  owners_["team-a/u"] = {true, 2, 20};  // run 2 is Slurm job 20
  slurm_.jobs = {
      {10, {"RUNNING", "slurmjob-operator:team-a/u/1"}},  // an earlier run still running
      {20, {"RUNNING", "slurmjob-operator:team-a/u/2"}},  // the recorded job
      {21, {"PENDING", "slurmjob-operator:team-a/u/2"}},  // a submit that landed late
      {30, {"RUNNING", "slurmjob-operator:team-a/u/3"}},  // ahead of a lagging cache: left
  };
  tracker_.RegisterCluster(Endpoint());
  Tick();
  clock_.Advance(seconds(61));
  Tick();
  EXPECT_THAT(slurm_.deletes,
              UnorderedElementsAre("/slurm/v0.0.42/job/10", "/slurm/v0.0.42/job/21"));
}

TEST_F(JobTrackerTest, ASlurmJobThatAppearsBetweenSweepsIsNotCancelled) {
  slurm_.jobs = {{2, {"RUNNING", "slurmjob-operator:team-a/new/1"}}};
  tracker_.RegisterCluster(Endpoint());
  Tick();
  known_.insert("team-a/new");  // the informer caught up
  clock_.Advance(seconds(61));
  Tick();
  EXPECT_THAT(slurm_.deletes, IsEmpty());
}

}  // namespace
}  // namespace slurmop::reconcile

namespace slurmop::reconcile {
namespace {

// A cluster whose every call hangs holds one fetch thread: the ticker goes
// on, other clusters are listed (and their changes notified) on time, and a
// reconcile asking the hung cluster is answered kUnavailable within get_wait
// instead of waiting (#13 item 11: the old tracker listed clusters one after
// another on the ticker thread, and Get() waited on the fetch in flight).
TEST_F(JobTrackerTest, AHungClusterDelaysNoOtherCluster) {
  slurm_.jobs = {{1, {"RUNNING", ""}}};
  const ClusterEndpoint hole{kHole, "v0.0.42", {}, nullptr};
  tracker_.Track(hole, 9, "team-b/stuck", seconds(1));
  tracker_.Track(Endpoint(), 1, "team-a/one", seconds(1));
  clock_.Advance(seconds(1));
  auto ticked = std::async(std::launch::async, [this] { tracker_.Tick(); });
  ASSERT_EQ(ticked.wait_for(seconds(5)), std::future_status::ready) << "Tick() waited on a list";
  ASSERT_TRUE(WaitFor([this] { return tracker_.ListCalls() >= 1 && Held() == 1; }));
  // The healthy cluster's list came in and its job was notified.
  ASSERT_TRUE(WaitFor([this] {
    std::lock_guard<std::mutex> lock(slurm_mu_);
    return !slurm_.paths.empty();
  }));
  auto a = tracker_.Get(Endpoint(), 1, clock_.Now() - seconds(1));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->job.has_value());

  // A reconcile asking the hung cluster is not held beyond get_wait.
  const auto asked = std::chrono::steady_clock::now();
  auto stuck = tracker_.Get(hole, 9, clock_.Now(), "team-b/stuck");
  EXPECT_EQ(stuck.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, seconds(4));

  // Ticks go on for the healthy cluster while the hole still hangs.
  slurm_mu_.lock();
  slurm_.jobs[1].first = "COMPLETED";
  slurm_.last_update = 1001;
  const size_t lists = slurm_.paths.size();
  slurm_mu_.unlock();
  clock_.Advance(seconds(6));
  tracker_.Tick();
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(slurm_mu_);
    return slurm_.paths.size() > lists;
  }));
  ASSERT_TRUE(WaitFor([this] {
    std::lock_guard<std::mutex> lock(slurm_mu_);
    return std::find(notified_.begin(), notified_.end(), "team-a/one") != notified_.end();
  }));

  // When the hole answers at last, the reconcile that gave up is woken.
  OpenHole();
  tracker_.WaitIdle();
  std::lock_guard<std::mutex> lock(slurm_mu_);
  EXPECT_NE(std::find(notified_.begin(), notified_.end(), "team-b/stuck"), notified_.end());
}

}  // namespace
}  // namespace slurmop::reconcile
