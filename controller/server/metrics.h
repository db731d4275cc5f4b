// File: controller/server/metrics.h
//
// Prometheus metrics in the text exposition format (version 0.0.4), without
// a client library: counters, gauges (set, or computed at scrape time by a
// callback) and histograms, each with labels. Thread-safe. The operator
// serves Render() at /metrics (MetricsServer).
//
// Names follow the conventions of controller-runtime and client-go where a
// convention exists (controller_runtime_reconcile_total, workqueue_depth),
// and slurmjob_operator_* otherwise.
//
// Cardinality: some label values come from tenants or remotes (a namespace, a
// job's partition and account, a SlurmCluster's project and region), and a
// stored series lives as long as the process. A family keeps at most
// kMaxSeriesPerFamily stored series; an update that would add one more is
// dropped and counted in slurmjob_operator_metric_series_dropped_total{metric}.
// (Callback gauges are computed from live state at each scrape: not capped.)

#ifndef SLURMOP_CONTROLLER_SERVER_METRICS_H_
#define SLURMOP_CONTROLLER_SERVER_METRICS_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace slurmop::server {

using Labels = std::map<std::string, std::string>;

class Metrics {
 public:
  enum class Type { kCounter, kGauge, kHistogram };

  static constexpr size_t kMaxSeriesPerFamily = 10000;
  static constexpr char kSeriesDroppedTotal[] = "slurmjob_operator_metric_series_dropped_total";

  // Declares a metric family (help text, type, and for histograms the bucket
  // upper bounds). Using an undeclared name declares it as untyped-help.
  void Declare(const std::string& name, Type type, const std::string& help,
               std::vector<double> buckets = {});

  void Add(const std::string& name, const Labels& labels, double delta = 1);
  void Set(const std::string& name, const Labels& labels, double value);
  void Observe(const std::string& name, const Labels& labels, double value);
  // A gauge family computed at scrape time: the callback returns label sets and values.
  void SetCallback(const std::string& name,
                   std::function<std::vector<std::pair<Labels, double>>()> callback);

  std::string Render() const;

  // The value of a counter or gauge series (0 if absent); for tests.
  double Value(const std::string& name, const Labels& labels) const;

 private:
  struct Histogram {
    std::vector<uint64_t> counts;  // per bucket (non-cumulative)
    uint64_t count = 0;
    double sum = 0;
  };
  struct Family {
    Type type = Type::kGauge;
    std::string help;
    std::vector<double> buckets;
    std::map<Labels, double> values;
    std::map<Labels, Histogram> histograms;
    std::function<std::vector<std::pair<Labels, double>>()> callback;
  };
  Family& FamilyLocked(const std::string& name, Type type);
  // Whether `series` may take a new label set (counts the drop when not). With mu_ held.
  template <typename Series>
  bool RoomLocked(const std::string& name, const Series& series, const Labels& labels);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

// The process-wide registry.
Metrics& GlobalMetrics();

// Latency buckets in seconds: 5 ms .. 60 s.
std::vector<double> LatencyBuckets();
// Job duration buckets in seconds: 1 s .. 7 days.
std::vector<double> JobDurationBuckets();

// Serves GET /metrics over HTTP.
class MetricsServer {
 public:
  explicit MetricsServer(const Metrics& metrics);
  ~MetricsServer();
  // address like "0.0.0.0"; port 0 is not supported by the listener, pick one.
  absl::Status Start(const std::string& address, int port);
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace slurmop::server

#endif  // SLURMOP_CONTROLLER_SERVER_METRICS_H_
