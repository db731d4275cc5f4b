// File: controller/reconcile/metered_slurm.h
//
// The one way the reconcilers call Slurm: agentplatform::SlurmApi::Call,
// counted in slurmjob_operator_slurm_api_requests_total{method,path,code}
// and timed in slurmjob_operator_slurm_api_request_duration_seconds. Paths
// are reduced to templates ("/slurm/v0.0.42/job/{id}") so that the label set
// stays bounded.

#ifndef SLURMOP_CONTROLLER_RECONCILE_METERED_SLURM_H_
#define SLURMOP_CONTROLLER_RECONCILE_METERED_SLURM_H_

#include <string>

#include "absl/status/statusor.h"
#include "controller/agentplatform/client.h"
#include "nlohmann/json.hpp"
#include "slurmoperator/v1alpha1/slurmcluster.pb.h"

namespace slurmop::reconcile {

class MeteredSlurm {
 public:
  explicit MeteredSlurm(agentplatform::SlurmApi& api) : api_(api) {}

  absl::StatusOr<agentplatform::SlurmResponse> Call(
      const agentplatform::ClusterName& where, agentplatform::TokenSource& credentials,
      agentplatform::HttpMethod method, const std::string& path, const nlohmann::json* body,
      const agentplatform::CallOptions& options = agentplatform::CallOptions());

 private:
  agentplatform::SlurmApi& api_;
};

// Where a SlurmCluster's calls go, and what it asks of the call budget
// (spec.callBudget). `key`: "namespace/name" of a SlurmCluster, "/name" of a
// ClusterSlurmCluster (whose callBudget sets its project and region's budget;
// a SlurmCluster's caps only its own calls).
agentplatform::ClusterName ClusterNameOf(const ::slurmoperator::v1alpha1::SlurmClusterSpec& spec,
                                         const std::string& key);

// Declares the call budget's series and reads them from `api` at each scrape:
// slurmjob_operator_call_budget_requests_per_minute and _paused per
// {endpoint, project, region}; MeteredSlurm counts the calls the budget held
// back in slurmjob_operator_call_budget_held_back_total{project, region, priority}.
void RegisterCallBudgetMetrics(agentplatform::SlurmApi& api);

// "/slurm/v0.0.42/job/123?x=1" -> "/slurm/v0.0.42/job/{id}".
std::string PathTemplate(const std::string& path);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_METERED_SLURM_H_
