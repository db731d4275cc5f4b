// File: controller/reconcile/cluster_status.h
//
// A SlurmCluster's status from a cheap probe (GET /slurm/<version>/ping/
// through callSlurmRestApi). Pure: the executor does the call and hands the
// outcome in. `Ready` says whether SlurmJobs can reach the cluster; when not,
// its reason names the cause (InvalidSpec, CredentialsInvalid,
// PermissionDenied, ClusterNotFound, VersionNotServed, Unreachable) and the
// message says what to check.

#ifndef SLURMOP_CONTROLLER_RECONCILE_CLUSTER_STATUS_H_
#define SLURMOP_CONTROLLER_RECONCILE_CLUSTER_STATUS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "controller/common/clock.h"
#include "slurmoperator/v1alpha1/slurmcluster.pb.h"

namespace slurmop::reconcile {

namespace v1alpha1 = ::slurmoperator::v1alpha1;

// What the probe found.
struct ProbeOutcome {
  // The spec's own problems (ValidateClusterSpec); when not OK nothing was sent.
  absl::Status spec = absl::OkStatus();
  // Set when the operator may not call the cluster at all (cluster_access.h): nothing was sent,
  // and Ready is False with this reason and message.
  std::string refusal_reason;
  std::string refusal_message;
  // The call: transport/Google errors, or OK with Slurm's HTTP status.
  absl::Status call = absl::OkStatus();
  int slurm_http_status = 0;
  std::string slurm_detail;  // text from Slurm's answer when it is not 200
};

v1alpha1::SlurmClusterStatus ClusterStatusFromProbe(const v1alpha1::SlurmClusterStatus& current,
                                                    const v1alpha1::SlurmClusterSpec& spec,
                                                    const ProbeOutcome& probe, int64_t generation,
                                                    Time now);

// "projects/P/locations/R/modelDevelopmentClusters/C", as Agent Platform
// names the cluster (in messages).
std::string ClusterResourceName(const v1alpha1::SlurmClusterSpec& spec);

// How long until the next probe: slower when all is well.
Duration NextProbe(const v1alpha1::SlurmClusterStatus& status);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_CLUSTER_STATUS_H_
