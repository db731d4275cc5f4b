// File: controller/reconcile/metered_slurm.cc

#include "controller/reconcile/metered_slurm.h"

#include <chrono>

#include "controller/common/clock.h"
#include "controller/server/metric_names.h"
#include "controller/server/metrics.h"

namespace slurmop::reconcile {
namespace {

void RecordSlurmCall(agentplatform::HttpMethod method, const std::string& path,
                     const absl::StatusOr<agentplatform::SlurmResponse>& r, Duration took) {
  server::Labels labels = {{"method", std::string(agentplatform::HttpMethodName(method))},
                           {"path", PathTemplate(path)}};
  server::Labels with_code = labels;
  with_code["code"] =
      r.ok() ? std::to_string(r->status) : absl::StatusCodeToString(r.status().code());
  server::GlobalMetrics().Add(server::metric::kSlurmApiRequestsTotal, with_code);
  server::GlobalMetrics().Observe(server::metric::kSlurmApiRequestDurationSeconds, labels,
                                  std::chrono::duration<double>(took).count());
}

// The budget's labels from a QuotaKey(): "<endpoint>|projects/<p>/locations/<r>".
server::Labels BudgetLabels(const std::string& key) {
  const size_t bar = key.find('|');
  const std::string name = bar == std::string::npos ? key : key.substr(bar + 1);
  const size_t locations = name.find("/locations/");
  const std::string projects = "projects/";
  server::Labels l = {{"endpoint", bar == std::string::npos ? "" : key.substr(0, bar)}};
  l["project"] = locations == std::string::npos || name.rfind(projects, 0) != 0
                     ? name
                     : name.substr(projects.size(), locations - projects.size());
  l["region"] = locations == std::string::npos ? "" : name.substr(locations + 11);
  return l;
}

void RecordHeldBack(const agentplatform::ClusterName& where, agentplatform::HttpMethod method,
                    const agentplatform::CallOptions& options,
                    const absl::StatusOr<agentplatform::SlurmResponse>& r) {
  if (r.ok() || !agentplatform::HeldBackByBudget(r.status())) return;
  const agentplatform::CallPriority priority = options.priority.value_or(
      method == agentplatform::HttpMethod::kGet ? agentplatform::CallPriority::kTrack
                                                : agentplatform::CallPriority::kChange);
  server::GlobalMetrics().Add(server::metric::kCallBudgetHeldBackTotal,
                              {{"project", where.project_id},
                               {"region", where.region},
                               {"priority", agentplatform::CallPriorityName(priority)}});
}

}  // namespace

void RegisterCallBudgetMetrics(agentplatform::SlurmApi& api) {
  server::Metrics& m = server::GlobalMetrics();
  m.Declare(server::metric::kCallBudgetRequestsPerMinute, server::Metrics::Type::kGauge,
            "The client-side budget of callSlurmRestApi calls per minute of each project and "
            "region (after RESOURCE_EXHAUSTED shrank it, while it grows back).");
  m.Declare(server::metric::kCallBudgetPaused, server::Metrics::Type::kGauge,
            "1 while a project and region's calls are paused after RESOURCE_EXHAUSTED.");
  m.Declare(server::metric::kCallBudgetHeldBackTotal, server::Metrics::Type::kCounter,
            "callSlurmRestApi calls not sent because the budget had no room (they are retried "
            "when it has), by project, region and priority (change, track, probe).");
  m.SetCallback(server::metric::kCallBudgetRequestsPerMinute, [&api] {
    std::vector<std::pair<server::Labels, double>> out;
    for (const agentplatform::BudgetState& b : api.Budgets()) {
      out.push_back({BudgetLabels(b.key), b.requests_per_minute});
    }
    return out;
  });
  m.SetCallback(server::metric::kCallBudgetPaused, [&api] {
    std::vector<std::pair<server::Labels, double>> out;
    for (const agentplatform::BudgetState& b : api.Budgets()) {
      out.push_back({BudgetLabels(b.key), b.paused ? 1.0 : 0.0});
    }
    return out;
  });
}

absl::StatusOr<agentplatform::SlurmResponse> MeteredSlurm::Call(
    const agentplatform::ClusterName& where, agentplatform::TokenSource& credentials,
    agentplatform::HttpMethod method, const std::string& path, const nlohmann::json* body,
    const agentplatform::CallOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<agentplatform::SlurmResponse> r =
      api_.Call(where, credentials, method, path, body, options);
  RecordSlurmCall(method, path, r,
                  std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - started));
  RecordHeldBack(where, method, options, r);
  return r;
}

agentplatform::ClusterName ClusterNameOf(const ::slurmoperator::v1alpha1::SlurmClusterSpec& spec,
                                         const std::string& key) {
  agentplatform::ClusterName n;
  n.endpoint = spec.endpoint();
  n.project_id = spec.project_id();
  n.region = spec.region();
  n.cluster_id = spec.cluster_id();
  n.budget.owner = key;
  if (spec.has_call_budget() && spec.call_budget().requests_per_minute() > 0) {
    const bool cluster_scoped = !key.empty() && key.front() == '/';
    (cluster_scoped ? n.budget.project_requests_per_minute : n.budget.own_requests_per_minute) =
        spec.call_budget().requests_per_minute();
  }
  return n;
}

std::string PathTemplate(const std::string& path) {
  std::string out;
  const std::string p = path.substr(0, path.find('?'));
  size_t i = 0;
  while (i <= p.size()) {
    size_t slash = p.find('/', i);
    std::string seg = p.substr(i, slash == std::string::npos ? std::string::npos : slash - i);
    bool digits = !seg.empty() && seg.find_first_not_of("0123456789_") == std::string::npos;
    out += digits ? "{id}" : seg;
    if (slash == std::string::npos) break;
    out += '/';
    i = slash + 1;
  }
  return out;
}

}  // namespace slurmop::reconcile
