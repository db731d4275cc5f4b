// File: controller/reconcile/cluster_status.cc

#include "controller/reconcile/cluster_status.h"

#include "absl/strings/str_cat.h"
#include "controller/common/condition_reason.h"
#include "controller/reconcile/conditions.h"
#include "controller/slurm/dialects.h"

namespace slurmop::reconcile {
namespace {

std::string VersionOf(const v1alpha1::SlurmClusterSpec& spec) {
  return slurm::VersionOrDefault(spec.slurm_api_version());
}

}  // namespace

std::string ClusterResourceName(const v1alpha1::SlurmClusterSpec& spec) {
  return absl::StrCat("projects/", spec.project_id(), "/locations/", spec.region(),
                      "/modelDevelopmentClusters/", spec.cluster_id());
}

v1alpha1::SlurmClusterStatus ClusterStatusFromProbe(const v1alpha1::SlurmClusterStatus& current,
                                                    const v1alpha1::SlurmClusterSpec& spec,
                                                    const ProbeOutcome& probe, int64_t generation,
                                                    Time now) {
  v1alpha1::SlurmClusterStatus s = current;
  s.set_observed_generation(generation);
  std::string reason;
  std::string message;
  bool ready = false;
  const std::string name = ClusterResourceName(spec);
  if (!probe.refusal_reason.empty()) {
    reason = probe.refusal_reason;
    message = probe.refusal_message;
  } else if (!probe.spec.ok()) {
    reason = "InvalidSpec";
    message = std::string(probe.spec.message());
  } else if (std::optional<std::string> named = ConditionReason(probe.call)) {
    // The call was refused before anything was sent (e.g. EndpointNotAllowed).
    reason = *named;
    message = absl::StrCat("Not probed: ", probe.call.message(), ".");
  } else if (!probe.call.ok()) {
    const std::string detail(probe.call.message());
    switch (probe.call.code()) {
      case absl::StatusCode::kUnauthenticated:
        reason = "CredentialsInvalid";
        message = absl::StrCat("Cannot authenticate to Agent Platform: ", detail,
                               ". Check the operator's Application Default Credentials or this "
                               "SlurmCluster's credentialsSecretRef.");
        break;
      case absl::StatusCode::kPermissionDenied:
        reason = "PermissionDenied";
        message =
            absl::StrCat("Agent Platform denied access to ", name, ": ", detail,
                         ". Grant roles/aiplatform.user (permission "
                         "aiplatform.googleapis.com/modelDevelopmentClusters.run) on project ",
                         spec.project_id(), ".");
        break;
      case absl::StatusCode::kNotFound:
        reason = "ClusterNotFound";
        message = absl::StrCat("Agent Platform has no cluster ", name, ": ", detail,
                               ". Check projectId, region and clusterId.");
        break;
      case absl::StatusCode::kInvalidArgument:
        reason = "InvalidSpec";
        message = absl::StrCat("Agent Platform refused the probe of ", name, ": ", detail, ".");
        break;
      default:
        reason = "Unreachable";
        message = absl::StrCat("Cannot reach ", name, " right now: ", detail,
                               ". The operator keeps retrying.");
    }
  } else if (probe.slurm_http_status == 404) {
    reason = "VersionNotServed";
    message =
        absl::StrCat("The cluster's slurmrestd does not serve Slurm REST ", VersionOf(spec), " (",
                     probe.slurm_detail, "); set spec.slurmApiVersion to a version it serves.");
  } else if (probe.slurm_http_status != 200) {
    reason = "SlurmUnhealthy";
    message =
        absl::StrCat("Slurm answered the ping with HTTP ", probe.slurm_http_status,
                     probe.slurm_detail.empty() ? "" : absl::StrCat(": ", probe.slurm_detail), ".");
  } else {
    ready = true;
    reason = "Reachable";
    message = absl::StrCat("Slurm REST ", VersionOf(spec), " answers through Agent Platform at ",
                           name, ".");
  }
  SetCondition(s.mutable_conditions(), kReady,
               ready ? ConditionStatus::kTrue : ConditionStatus::kFalse, reason, message,
               generation, now);
  return s;
}

Duration NextProbe(const v1alpha1::SlurmClusterStatus& status) {
  return IsConditionTrue(status.conditions(), kReady) ? Duration(std::chrono::minutes(5))
                                                      : Duration(std::chrono::minutes(1));
}

}  // namespace slurmop::reconcile
