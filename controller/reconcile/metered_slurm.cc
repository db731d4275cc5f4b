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

}  // namespace

absl::StatusOr<agentplatform::SlurmResponse> MeteredSlurm::Call(
    const agentplatform::ClusterName& where, agentplatform::TokenSource& credentials,
    agentplatform::HttpMethod method, const std::string& path, const nlohmann::json* body,
    const agentplatform::CallOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<agentplatform::SlurmResponse> r =
      api_.Call(where, credentials, method, path, body, options);
  RecordSlurmCall(method, path, r,
                  std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - started));
  return r;
}

agentplatform::ClusterName ClusterNameOf(const ::slurmoperator::v1alpha1::SlurmClusterSpec& spec) {
  agentplatform::ClusterName n;
  n.endpoint = spec.endpoint();
  n.project_id = spec.project_id();
  n.region = spec.region();
  n.cluster_id = spec.cluster_id();
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
