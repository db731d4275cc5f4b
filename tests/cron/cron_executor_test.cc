// File: tests/cron/cron_executor_test.cc
//
// CronExecutor over an in-memory Kubernetes API (tests/reconcile/fakes/fake_kube.h) with a fake
// clock: the child is created owned and named by its scheduled time, the status records it, a
// restart or a stale cache never creates a time twice (AlreadyExists counts as created), Replace
// deletes before it creates, history deletes come after the status write.

#include "controller/cron/cron_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>

#include "controller/cron/cron_resource.h"
#include "controller/reconcile/resource_types.h"
#include "tests/reconcile/fakes/fake_kube.h"

namespace slurmop::cron {
namespace {

using reconcile::testing::CacheView;
using reconcile::testing::InMemoryKube;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class Events : public reconcile::EventSink {
 public:
  void Record(const nlohmann::json&, const reconcile::EventSpec& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    reasons.push_back(e.reason);
  }
  std::mutex mu_;
  std::vector<std::string> reasons;
};

// The fake API server stamps creationTimestamp 2023-11-14T22:13:20Z (unix 1700000000).
constexpr int64_t kCreated = 1700000000;
constexpr int64_t kFirstDue = 1700000100;  // 22:15:00, the first */5 time after creation

nlohmann::json CronObject(const std::string& policy) {
  return nlohmann::json::parse(R"({
    "apiVersion": "hpc.slurmoperator.dev/v1alpha1", "kind": "SlurmCronJob",
    "metadata": {"name": "nightly", "namespace": "team"},
    "spec": {"schedule": "*/5 * * * *", "concurrencyPolicy": ")" +
                               policy + R"(",
             "jobTemplate": {"spec": {"clusterRef": {"name": "local"},
                                      "script": "#!/bin/bash\ntrue\n"}}}
  })");
}

class CronExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override { Init("Allow"); }

  void Init(const std::string& policy) {
    ASSERT_TRUE(kube_.Create(SlurmCronJobsResource(), "team", CronObject(policy)).ok());
    clock_.Set(Time(std::chrono::seconds(kFirstDue + 10)));
  }

  std::unique_ptr<CronExecutor> NewExecutor() {
    return std::make_unique<CronExecutor>(
        kube_, crons_,
        [this](const std::string& ns, const std::string&) {
          std::vector<std::shared_ptr<const nlohmann::json>> out;
          if (children_lag_) return out;  // an informer that has not seen the children yet
          absl::StatusOr<nlohmann::json> list = kube_.List(reconcile::SlurmJobsResource(), ns, {});
          for (const nlohmann::json& item : (*list)["items"]) {
            out.push_back(std::make_shared<const nlohmann::json>(item));
          }
          return out;
        },
        events_, clock_);
  }

  nlohmann::json Cron() { return *kube_.Object("slurmcronjobs", "team", "nightly"); }

  std::vector<std::string> Verbs() {
    std::vector<std::string> verbs;
    for (const reconcile::testing::KubeCall& c : kube_.calls()) {
      if (c.verb != "list" && c.verb != "get") verbs.push_back(c.verb + " " + c.name);
    }
    return verbs;
  }

  void AddChild(int64_t scheduled, const std::string& phase) {
    nlohmann::json child = {{"apiVersion", "hpc.slurmoperator.dev/v1alpha1"},
                            {"kind", "SlurmJob"},
                            {"metadata",
                             {{"name", ChildName("nightly", Time(std::chrono::seconds(scheduled)))},
                              {"labels", {{"hpc.slurmoperator.dev/slurmcronjob", "nightly"}}},
                              {"ownerReferences",
                               {{{"kind", "SlurmCronJob"},
                                 {"uid", Cron()["metadata"]["uid"]},
                                 {"controller", true}}}}}},
                            {"spec", {{"script", "#!/bin/bash\n"}}},
                            {"status", {{"phase", phase}}}};
    ASSERT_TRUE(kube_.Create(reconcile::SlurmJobsResource(), "team", child).ok());
  }

  InMemoryKube kube_;
  CacheView crons_{kube_, "slurmcronjobs"};
  FakeClock clock_;
  Events events_;
  bool children_lag_ = false;
};

TEST_F(CronExecutorTest, CreatesTheOwnedChildAndRecordsIt) {
  const reconcile::ReconcileResult r = NewExecutor()->Reconcile("team/nightly");
  EXPECT_FALSE(r.retry_with_backoff);
  ASSERT_TRUE(r.requeue_after);
  EXPECT_EQ(*r.requeue_after, std::chrono::seconds(290));
  const std::string name = "nightly-" + std::to_string(kFirstDue / 60);
  std::optional<nlohmann::json> child = kube_.Object("slurmjobs", "team", name);
  ASSERT_TRUE(child);
  EXPECT_EQ((*child)["metadata"]["ownerReferences"][0]["uid"], Cron()["metadata"]["uid"]);
  EXPECT_EQ((*child)["metadata"]["labels"]["hpc.slurmoperator.dev/slurmcronjob"], "nightly");
  const nlohmann::json status = Cron()["status"];
  EXPECT_EQ(status["lastScheduleTime"], "2023-11-14T22:15:00Z");
  EXPECT_EQ(status["active"][0]["name"], name);
  EXPECT_EQ(status["active"][0]["uid"], (*child)["metadata"]["uid"]);
  EXPECT_EQ(status["activeCount"], 1);
  EXPECT_THAT(events_.reasons, ElementsAre("SuccessfulCreate"));
  EXPECT_THAT(Verbs(), ElementsAre("create nightly", "create " + name, "update-status nightly"));
}

TEST_F(CronExecutorTest, ARestartedExecutorNeverCreatesTheSameTimeTwice) {
  NewExecutor()->Reconcile("team/nightly");
  kube_.ClearCalls();
  // A new process (no memory), caches caught up: nothing to create, nothing to write.
  const reconcile::ReconcileResult r = NewExecutor()->Reconcile("team/nightly");
  EXPECT_FALSE(r.retry_with_backoff);
  EXPECT_EQ(kube_.Count("create"), 0);
  EXPECT_EQ(kube_.WriteCount(), 0);
}

TEST_F(CronExecutorTest, AlreadyExistsCountsAsCreatedWhenTheCachesLag) {
  // The first create went through, but its status write was lost (a crash).
  kube_.FailNext("update-status", absl::UnavailableError("connection reset"));
  EXPECT_TRUE(NewExecutor()->Reconcile("team/nightly").retry_with_backoff);
  EXPECT_FALSE(Cron().contains("status"));
  // A new leader whose SlurmJob informer has not listed the child yet tries the same name:
  // AlreadyExists, counted as created, and the time is recorded.
  children_lag_ = true;
  const reconcile::ReconcileResult r = NewExecutor()->Reconcile("team/nightly");
  EXPECT_FALSE(r.retry_with_backoff);
  EXPECT_EQ(kube_.Count("create", /*only_ok=*/true), 2);  // the SlurmCronJob and one child
  EXPECT_EQ(kube_.Count("create"), 3);
  EXPECT_EQ(Cron()["status"]["lastScheduleTime"], "2023-11-14T22:15:00Z");
}

TEST_F(CronExecutorTest, AStaleCronCacheAfterOurOwnWriteDoesNotStartTheTimeAgain) {
  auto executor = NewExecutor();
  crons_.Freeze();  // the SlurmCronJob informer lags behind our status write
  executor->Reconcile("team/nightly");
  // The child finished and the history limit (0) removed it before the cache caught up.
  kube_.MutateBehindTheBack("slurmjobs", "team", "nightly-" + std::to_string(kFirstDue / 60),
                            [](nlohmann::json& o) { o["metadata"]["name"] = "gone"; });
  children_lag_ = true;
  kube_.ClearCalls();
  executor->Reconcile("team/nightly");
  EXPECT_EQ(kube_.Count("create"), 0);
}

TEST_F(CronExecutorTest, ReplaceDeletesTheActiveChildBeforeItCreates) {
  ASSERT_TRUE(kube_.Delete(SlurmCronJobsResource(), "team", "nightly").ok());
  Init("Replace");
  AddChild(kFirstDue - 300, "Running");
  kube_.ClearCalls();
  NewExecutor()->Reconcile("team/nightly");
  const std::string old_name = "nightly-" + std::to_string((kFirstDue - 300) / 60);
  const std::string new_name = "nightly-" + std::to_string(kFirstDue / 60);
  EXPECT_THAT(Verbs(),
              ElementsAre("delete " + old_name, "create " + new_name, "update-status nightly"));
  EXPECT_FALSE(kube_.Object("slurmjobs", "team", old_name));
  EXPECT_EQ(kube_.calls()[0].body, nullptr);
}

TEST_F(CronExecutorTest, HistoryDeletesComeAfterTheStatusWrite) {
  AddChild(kFirstDue - 600, "Failed");
  AddChild(kFirstDue - 300, "Failed");
  kube_.ClearCalls();
  NewExecutor()->Reconcile("team/nightly");
  const std::string oldest = "nightly-" + std::to_string((kFirstDue - 600) / 60);
  const std::string created = "nightly-" + std::to_string(kFirstDue / 60);
  EXPECT_THAT(Verbs(),
              ElementsAre("create " + created, "update-status nightly", "delete " + oldest));
  EXPECT_THAT(events_.reasons, ElementsAre("SuccessfulCreate", "SuccessfulDelete"));
}

// A failed create is a Warning Event and Ready False (it stayed True, the Event alone telling);
// the scheduled time is not recorded, so the retry makes it, and Ready is True again.
TEST_F(CronExecutorTest, AFailedCreateIsRetriedWithAWarningAndReadyFalse) {
  kube_.FailNext("create", absl::PermissionDeniedError("slurmjobs is forbidden"));
  std::unique_ptr<CronExecutor> executor = NewExecutor();
  reconcile::ReconcileResult r = executor->Reconcile("team/nightly");
  EXPECT_TRUE(r.retry_with_backoff);
  EXPECT_THAT(events_.reasons, ElementsAre("FailedCreate"));
  nlohmann::json status = Cron().value("status", nlohmann::json::object());
  EXPECT_FALSE(status.contains("lastScheduleTime")) << status.dump();
  EXPECT_FALSE(status.contains("active")) << status.dump();
  ASSERT_TRUE(status.contains("conditions")) << status.dump();
  const nlohmann::json& ready = status["conditions"][0];
  EXPECT_EQ(ready["type"], "Ready");
  EXPECT_EQ(ready["status"], "False");
  EXPECT_EQ(ready["reason"], "FailedCreate");
  EXPECT_THAT(ready["message"].get<std::string>(), HasSubstr("slurmjobs is forbidden"));

  r = executor->Reconcile("team/nightly");
  EXPECT_FALSE(r.retry_with_backoff);
  status = Cron()["status"];
  EXPECT_TRUE(status.contains("lastScheduleTime")) << status.dump();
  EXPECT_EQ(status["conditions"][0]["status"], "True") << status.dump();
}

// A SlurmCronJob the codec refuses (e.g. an int32 field past its range, which API servers
// before 1.36 store) was only logged; it is a Warning Event naming the field.
TEST_F(CronExecutorTest, ASlurmCronJobThatCannotBeReadIsAWarningEvent) {
  kube_.MutateBehindTheBack("slurmcronjobs", "team", "nightly", [](nlohmann::json& o) {
    o["spec"]["successfulJobsHistoryLimit"] = 3000000000LL;
  });
  kube_.ClearCalls();
  const reconcile::ReconcileResult r = NewExecutor()->Reconcile("team/nightly");
  EXPECT_FALSE(r.retry_with_backoff);
  EXPECT_THAT(events_.reasons, ElementsAre("InvalidSpec"));
  EXPECT_THAT(Verbs(), ::testing::IsEmpty()) << "nothing created or written";
}

TEST_F(CronExecutorTest, AStatusWriteRefusedForGoodIsAWarningEvent) {
  kube_.FailNext("update-status", absl::PermissionDeniedError("slurmcronjobs/status is forbidden"));
  const reconcile::ReconcileResult r = NewExecutor()->Reconcile("team/nightly");
  EXPECT_TRUE(r.retry_with_backoff);
  EXPECT_THAT(events_.reasons, ElementsAre("SuccessfulCreate", "WriteRefused"));
}

TEST_F(CronExecutorTest, ARefusedHistoryDeleteIsAWarningEvent) {
  AddChild(kFirstDue - 600, "Failed");
  AddChild(kFirstDue - 300, "Failed");
  kube_.FailNext("delete", absl::PermissionDeniedError("slurmjobs is forbidden"));
  NewExecutor()->Reconcile("team/nightly");
  EXPECT_THAT(events_.reasons, ElementsAre("SuccessfulCreate", "WriteRefused"));
}

TEST_F(CronExecutorTest, AStatusWriteWithoutAnAnswerIsNoEvent) {
  kube_.FailNext("update-status", absl::UnavailableError("connection reset"));
  NewExecutor()->Reconcile("team/nightly");
  EXPECT_THAT(events_.reasons, ElementsAre("SuccessfulCreate"));
}

}  // namespace
}  // namespace slurmop::cron
