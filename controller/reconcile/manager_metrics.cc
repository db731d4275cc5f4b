// File: controller/reconcile/manager_metrics.cc
//
// Manager::RegisterMetrics: the operator's own metric families and the gauges computed at scrape
// time from the manager's state (queue, workers, tracked jobs, SlurmJob phases, SlurmCluster
// readiness, the oldest Pending SlurmJob). The standard families are declared by
// InstallControllerMetrics (controller_metrics.h).

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "controller/agentplatform/cached_token_source.h"
#include "controller/reconcile/manager.h"
#include "controller/server/metric_names.h"
#include "controller/server/metrics.h"

namespace slurmop::reconcile {
namespace {

namespace metric = server::metric;
using server::Metrics;
using Series = std::vector<std::pair<server::Labels, double>>;

// A bounded label from the token fetcher's description (which names accounts).
std::string CredentialType(const std::string& source) {
  auto starts = [&](const char* p) { return source.rfind(p, 0) == 0; };
  return starts("the metadata server") ? "metadata_server"
         : starts("service account")   ? "service_account"
         : starts("workload identity") ? "external_account"
         : starts("user")              ? "authorized_user"
                                       : "other";
}

void DeclareOwnFamilies(Metrics& m) {
  m.Declare(metric::kSlurmApiRequestsTotal, Metrics::Type::kCounter,
            "callSlurmRestApi calls by method, Slurm path template and code (Slurm's HTTP "
            "status, or the canonical error code when no Slurm answer arrived).");
  m.Declare(metric::kSlurmApiRequestDurationSeconds, Metrics::Type::kHistogram,
            "Latency of callSlurmRestApi calls, retries included.", server::LatencyBuckets());
  m.Declare(metric::kJobQueueWaitSeconds, Metrics::Type::kHistogram,
            "Time Slurm jobs waited in the queue (start - submit), observed when they end.",
            server::JobDurationBuckets());
  m.Declare(metric::kJobRunSeconds, Metrics::Type::kHistogram,
            "Run time of Slurm jobs (end - start) by final state.", server::JobDurationBuckets());
  m.Declare(metric::kAllocatedCpuSecondsTotal, Metrics::Type::kCounter,
            "Allocated CPUs times elapsed seconds of finished runs, from Slurm's accounting, "
            "counted once per run by the status write that records the run's usage.");
  m.Declare(metric::kAllocatedGpuSecondsTotal, Metrics::Type::kCounter,
            "Allocated GPUs (gres/gpu) times elapsed seconds of finished runs, from Slurm's "
            "accounting, counted once per run by the status write that records the run's usage.");
  m.Declare(metric::kTokenRefreshesTotal, Metrics::Type::kCounter,
            "Access token exchanges by credential type and result (ok, or the error code).");
  m.Declare(metric::kTrackedJobs, Metrics::Type::kGauge,
            "Active Slurm jobs followed through the per-cluster batched list.");
  m.Declare(metric::kOrphansCancelledTotal, Metrics::Type::kCounter,
            "Slurm jobs carrying the operator's tag whose SlurmJob no longer existed, cancelled by "
            "the orphan sweep.");
  m.Declare(metric::kSlurmJobs, Metrics::Type::kGauge,
            "SlurmJobs known to the operator, by status.phase (\"\" before the first status).");
  m.Declare(metric::kSlurmClusterReady, Metrics::Type::kGauge,
            "1 if the SlurmCluster's Ready condition is True, else 0.");
  m.Declare(metric::kOldestPendingSeconds, Metrics::Type::kGauge,
            "Per namespace, how long the longest-waiting Pending SlurmJob has waited (since "
            "status.submitTime, or its creation before a submit).");
}

}  // namespace

void Manager::DeclareMetrics() {
  DeclareOwnFamilies(server::GlobalMetrics());
  agentplatform::SetTokenRefreshObserver([](const std::string& source, const absl::Status& s) {
    server::GlobalMetrics().Add(metric::kTokenRefreshesTotal,
                                {{"type", CredentialType(source)},
                                 {"result", s.ok() ? "ok" : absl::StatusCodeToString(s.code())}});
  });
}

void Manager::RegisterMetrics() {
  DeclareMetrics();
  // This manager lives as long as the process's registry is scraped (main.cc): not owned here.
  const Manager* self = this;
  RegisterGauges([self] {
    return std::vector<std::shared_ptr<const Manager>>{
        std::shared_ptr<const Manager>(std::shared_ptr<void>(), self)};
  });
}

namespace {

// The sum of `value` over the managers `list` returns now.
template <typename Value>
double SumOver(const Manager::ManagerList& list, Value value) {
  double total = 0;
  for (const auto& mgr : list()) total += value(*mgr);
  return total;
}

}  // namespace

// Sums (or, for ages and durations, the largest) over the managers `list` returns at scrape
// time: one manager, or those of the shards a replica holds (they keep them alive meanwhile).
void Manager::RegisterGauges(ManagerList list) {
  RegisterWorkGauges(list);
  RegisterStateGauges(list);
}

void Manager::RegisterWorkGauges(const ManagerList& list) {
  Metrics& m = server::GlobalMetrics();
  const server::Labels queue = {{"name", "slurmjob"}, {"controller", "slurmjob"}};
  m.SetCallback(metric::kWorkqueueDepth, [list, queue] {
    return Series{{queue, SumOver(list, [](const Manager& g) {
                     return static_cast<double>(g.queue_.Len());
                   })}};
  });
  m.SetCallback(metric::kWorkqueueUnfinishedWorkSeconds, [list, queue] {
    return Series{{queue, SumOver(list, [](const Manager& g) {
                     return g.queue_.Processing().unfinished_seconds;
                   })}};
  });
  m.SetCallback(metric::kWorkqueueLongestRunningProcessorSeconds, [list, queue] {
    double longest = 0;
    for (const auto& g : list())
      longest = std::max(longest, g->queue_.Processing().longest_seconds);
    return Series{{queue, longest}};
  });
  // One pool of workers serves both controllers: each may use all of them.
  m.SetCallback(metric::kMaxConcurrentReconciles, [list] {
    const double workers = SumOver(list, [](const Manager& g) {
      return static_cast<double>(std::max(1, g.options_.workers));
    });
    return Series{{{{"controller", "slurmcluster"}}, workers},
                  {{{"controller", "slurmjob"}}, workers}};
  });
  m.SetCallback(metric::kActiveWorkers, [list] {
    auto active = [&list](int i) {
      return SumOver(list,
                     [i](const Manager& g) { return static_cast<double>(g.active_[i].load()); });
    };
    return Series{{{{"controller", "slurmcluster"}}, active(1)},
                  {{{"controller", "slurmjob"}}, active(0)}};
  });
}

void Manager::RegisterStateGauges(const ManagerList& list) {
  Metrics& m = server::GlobalMetrics();
  m.SetCallback(metric::kTrackedJobs, [list] {
    return Series{{{}, SumOver(list, [](const Manager& g) {
                     return g.tracker_ ? static_cast<double>(g.tracker_->TrackedCount()) : 0.0;
                   })}};
  });
  m.SetCallback(metric::kOrphansCancelledTotal, [list] {
    return Series{{{}, SumOver(list, [](const Manager& g) {
                     return g.tracker_ ? static_cast<double>(g.tracker_->OrphansCancelled()) : 0.0;
                   })}};
  });
  m.SetCallback(metric::kSlurmJobs, [list] {
    std::map<std::string, double> by_phase;
    for (const auto& g : list()) {
      for (const auto& [phase, n] : g->index_.CountByPhase()) by_phase[phase] += n;
    }
    Series out;
    for (const auto& [phase, n] : by_phase) out.push_back({{{"phase", phase}}, n});
    return out;
  });
  m.SetCallback(metric::kSlurmClusterReady, [list] {
    Series out;
    for (const auto& g : list()) {
      for (const auto& [key, ready] : g->cluster_changes_.Readiness()) {
        const size_t slash = key.find('/');
        out.push_back({{{"namespace", key.substr(0, slash)}, {"name", key.substr(slash + 1)}},
                       ready ? 1.0 : 0.0});
      }
    }
    return out;
  });
  m.SetCallback(metric::kOldestPendingSeconds, [list] {
    std::map<std::string, double> oldest;
    for (const auto& g : list()) {
      for (const auto& [ns, age] : g->index_.OldestPendingByNamespace(g->clock_.Now())) {
        oldest[ns] = std::max(oldest[ns], age);
      }
    }
    Series out;
    for (const auto& [ns, age] : oldest) out.push_back({{{"namespace", ns}}, age});
    return out;
  });
}

}  // namespace slurmop::reconcile
