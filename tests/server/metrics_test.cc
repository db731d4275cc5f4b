// File: tests/server/metrics_test.cc

#include "controller/server/metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::server {
namespace {

using ::testing::HasSubstr;

TEST(Metrics, CountersGaugesAndLabelsInTextFormat) {
  Metrics m;
  m.Declare("requests_total", Metrics::Type::kCounter, "Requests.");
  m.Add("requests_total", {{"code", "200"}, {"path", "/a\"b"}});
  m.Add("requests_total", {{"code", "200"}, {"path", "/a\"b"}}, 2);
  m.Set("depth", {}, 7);
  std::string text = m.Render();
  EXPECT_THAT(text, HasSubstr("# HELP requests_total Requests.\n# TYPE requests_total counter\n"));
  EXPECT_THAT(text, HasSubstr("requests_total{code=\"200\",path=\"/a\\\"b\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE depth gauge\ndepth 7\n"));
  EXPECT_EQ(m.Value("requests_total", {{"code", "200"}, {"path", "/a\"b"}}), 3);
}

// Label values from tenants or remotes (a job's partition and account, a project) added a
// stored series each, for the life of the process. A family keeps at most
// kMaxSeriesPerFamily; past that, new label sets are dropped and counted, old ones still move.
TEST(Metrics, AFamilyKeepsABoundedNumberOfSeries) {
  Metrics m;
  m.Declare("usage_total", Metrics::Type::kCounter, "usage");
  const size_t max = Metrics::kMaxSeriesPerFamily;
  for (size_t i = 0; i < max + 500; ++i) m.Add("usage_total", {{"account", std::to_string(i)}});
  m.Add("usage_total", {{"account", "0"}}, 2);
  EXPECT_EQ(m.Value("usage_total", {{"account", "0"}}), 3);
  EXPECT_EQ(m.Value("usage_total", {{"account", std::to_string(max - 1)}}), 1);
  EXPECT_EQ(m.Value("usage_total", {{"account", std::to_string(max)}}), 0);
  EXPECT_EQ(m.Value(Metrics::kSeriesDroppedTotal, {{"metric", "usage_total"}}), 500);
  for (size_t i = 0; i < max + 10; ++i) m.Observe("took", {{"n", std::to_string(i)}}, 1);
  EXPECT_EQ(m.Value(Metrics::kSeriesDroppedTotal, {{"metric", "took"}}), 10);
  const std::string text = m.Render();
  EXPECT_NE(text.find("# TYPE slurmjob_operator_metric_series_dropped_total counter"),
            std::string::npos);
  EXPECT_EQ(text.find("account=\"" + std::to_string(max) + "\""), std::string::npos);
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  Metrics m;
  m.Declare("latency_seconds", Metrics::Type::kHistogram, "Latency.", {0.1, 1});
  m.Observe("latency_seconds", {}, 0.05);
  m.Observe("latency_seconds", {}, 0.5);
  m.Observe("latency_seconds", {}, 5);
  std::string text = m.Render();
  EXPECT_THAT(text, HasSubstr("latency_seconds_bucket{le=\"0.1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("latency_seconds_bucket{le=\"1\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("latency_seconds_bucket{le=\"+Inf\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("latency_seconds_sum 5.55\n"));
  EXPECT_THAT(text, HasSubstr("latency_seconds_count 3\n"));
}

TEST(Metrics, CallbackGaugesAreComputedAtScrape) {
  Metrics m;
  int calls = 0;
  m.SetCallback("jobs", [&calls] {
    ++calls;
    return std::vector<std::pair<Labels, double>>{{{{"phase", "Running"}}, 4}};
  });
  EXPECT_THAT(m.Render(), HasSubstr("jobs{phase=\"Running\"} 4\n"));
  m.Render();
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace slurmop::server
