// File: tests/reconcile/controller_metrics_test.cc
//
// The standard controller metrics (controller_metrics.h): a named WorkQueue and the REST client
// feed client-go's series with controller-runtime's names, label sets and buckets, read back
// from the exposition text a scraper sees. FakeClock: no sleeping.

#include "controller/reconcile/controller_metrics.h"

#include <string>

#include "controller/common/clock.h"
#include "controller/kube/metrics_hooks.h"
#include "controller/kube/rest_client.h"
#include "controller/kube/workqueue.h"
#include "controller/server/metric_names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ControllerMetricsTest : public ::testing::Test {
 protected:
  ControllerMetricsTest() { InstallControllerMetrics(metrics_); }
  ~ControllerMetricsTest() override { kube::SetMetricsHooks({}); }  // metrics_ dies first

  server::Metrics metrics_;
  FakeClock clock_;
};

constexpr char kQ[] = "{controller=\"q\",name=\"q\"}";

TEST_F(ControllerMetricsTest, AddGetDoneFeedAddsLatencyAndWorkDuration) {
  kube::WorkQueue queue(clock_, {}, "q");
  queue.Add("a");
  queue.Add("a");  // already queued: not an add (client-go counts new keys only)
  EXPECT_EQ(
      metrics_.Value(server::metric::kWorkqueueAddsTotal, {{"name", "q"}, {"controller", "q"}}), 1);
  clock_.Advance(std::chrono::seconds(2));
  ASSERT_EQ(queue.Get(), "a");
  clock_.Advance(std::chrono::seconds(3));
  kube::WorkQueue::ProcessingTimes busy = queue.Processing();
  EXPECT_DOUBLE_EQ(busy.unfinished_seconds, 3);
  EXPECT_DOUBLE_EQ(busy.longest_seconds, 3);
  queue.Done("a");
  EXPECT_DOUBLE_EQ(queue.Processing().longest_seconds, 0);

  const std::string text = metrics_.Render();
  EXPECT_THAT(text, HasSubstr(std::string("workqueue_queue_duration_seconds_sum") + kQ + " 2\n"));
  EXPECT_THAT(text, HasSubstr(std::string("workqueue_queue_duration_seconds_count") + kQ + " 1\n"));
  EXPECT_THAT(text, HasSubstr(std::string("workqueue_work_duration_seconds_sum") + kQ + " 3\n"));
  // controller-runtime's buckets: 1e-08 .. 1000; 2 s falls in le=10, not le=1.
  EXPECT_THAT(
      text,
      HasSubstr(
          "workqueue_queue_duration_seconds_bucket{controller=\"q\",name=\"q\",le=\"1e-08\"} 0\n"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "workqueue_queue_duration_seconds_bucket{controller=\"q\",name=\"q\",le=\"1\"} 0\n"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "workqueue_queue_duration_seconds_bucket{controller=\"q\",name=\"q\",le=\"10\"} 1\n"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "workqueue_queue_duration_seconds_bucket{controller=\"q\",name=\"q\",le=\"1000\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE workqueue_adds_total counter\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE workqueue_work_duration_seconds histogram\n"));
}

TEST_F(ControllerMetricsTest, AddedWhileProcessingIsOneMoreAddAndItsWaitCounts) {
  kube::WorkQueue queue(clock_, {}, "q");
  queue.Add("a");
  ASSERT_EQ(queue.Get(), "a");
  queue.Add("a");  // dirty while processing: a new add, queued again by Done()
  clock_.Advance(std::chrono::seconds(4));
  queue.Done("a");
  ASSERT_EQ(queue.Get(), "a");
  EXPECT_EQ(
      metrics_.Value(server::metric::kWorkqueueAddsTotal, {{"name", "q"}, {"controller", "q"}}), 2);
  EXPECT_THAT(metrics_.Render(),
              HasSubstr(std::string("workqueue_queue_duration_seconds_sum") + kQ + " 4\n"));
}

TEST_F(ControllerMetricsTest, AddRateLimitedIsARetry) {
  kube::WorkQueue queue(clock_, {}, "q");
  queue.AddRateLimited("a");
  queue.AddRateLimited("a");
  EXPECT_EQ(
      metrics_.Value(server::metric::kWorkqueueRetriesTotal, {{"name", "q"}, {"controller", "q"}}),
      2);
}

TEST_F(ControllerMetricsTest, UnnamedQueueReportsNothing) {
  kube::WorkQueue queue(clock_);
  queue.Add("a");
  ASSERT_EQ(queue.Get(), "a");
  queue.Done("a");
  EXPECT_THAT(metrics_.Render(), Not(HasSubstr("workqueue_adds_total{")));
}

// Answers every request with `status`, or fails it when status is 0.
class ScriptedTransport : public http::Transport {
 public:
  int status = 200;
  absl::StatusOr<http::Response> Send(const http::Request&) override {
    if (status == 0) return absl::UnavailableError("connection refused");
    return http::Response{status, {{"content-type", "application/json"}}, "{}"};
  }
  absl::StatusOr<http::Response> Stream(const http::Request&, const http::LineCallback&,
                                        std::shared_ptr<http::StreamHandle>) override {
    return absl::UnimplementedError("no watch here");
  }
};

TEST_F(ControllerMetricsTest, RestClientCountsEachRoundTripByCodeMethodAndHost) {
  kube::ClientConfig config;
  config.server = "https://127.0.0.1:6443/";
  config.token = "t";
  ScriptedTransport transport;
  std::unique_ptr<kube::Client> client = kube::NewClient(config, &transport, clock_);
  const kube::ResourceType pods{"", "v1", "pods", "Pod", true};
  ASSERT_TRUE(client->Get(pods, "ns", "p").ok());
  transport.status = 404;
  EXPECT_FALSE(client->Get(pods, "ns", "p").ok());
  transport.status = 0;
  EXPECT_FALSE(client->Delete(pods, "ns", "p").ok());

  auto count = [&](const char* code, const char* method) {
    return metrics_.Value(server::metric::kRestClientRequestsTotal,
                          {{"code", code}, {"method", method}, {"host", "127.0.0.1:6443"}});
  };
  EXPECT_EQ(count("200", "GET"), 1);
  EXPECT_EQ(count("404", "GET"), 1);
  EXPECT_EQ(count("<error>", "DELETE"), 1);
}

TEST_F(ControllerMetricsTest, LeaderHookSetsMasterStatusByLeaseName) {
  kube::GetMetricsHooks().leader("slurmjob-operator", true);
  EXPECT_EQ(
      metrics_.Value(server::metric::kLeaderElectionMasterStatus, {{"name", "slurmjob-operator"}}),
      1);
  kube::GetMetricsHooks().leader("slurmjob-operator", false);
  EXPECT_EQ(
      metrics_.Value(server::metric::kLeaderElectionMasterStatus, {{"name", "slurmjob-operator"}}),
      0);
}

TEST(ControllerMetricsBuckets, AreControllerRuntimes) {
  std::vector<double> wq = WorkqueueDurationBuckets();
  ASSERT_EQ(wq.size(), 12u);
  EXPECT_DOUBLE_EQ(wq.front(), 1e-8);
  EXPECT_NEAR(wq.back(), 1000, 1e-9);
  std::vector<double> rt = ReconcileTimeBuckets();
  ASSERT_EQ(rt.size(), 40u);
  EXPECT_DOUBLE_EQ(rt.front(), 0.005);
  EXPECT_DOUBLE_EQ(rt.back(), 60);
}

}  // namespace
}  // namespace slurmop::reconcile
