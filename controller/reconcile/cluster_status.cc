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

namespace {

// The Ready condition's value, reason and message.
struct Readiness {
  bool ready = false;
  std::string reason;
  std::string message;
};

// Why a probe call that reached no Slurm answer failed, and what to do about it.
Readiness CallFailed(const absl::Status& call, const v1alpha1::SlurmClusterSpec& spec,
                     const std::string& name) {
  const std::string detail(call.message());
  switch (call.code()) {
    case absl::StatusCode::kUnauthenticated:
      return {false, "CredentialsInvalid",
              absl::StrCat("Cannot authenticate to Agent Platform: ", detail,
                           ". Check the operator's Application Default Credentials or this "
                           "SlurmCluster's credentialsSecretRef.")};
    case absl::StatusCode::kPermissionDenied:
      return {false, "PermissionDenied",
              absl::StrCat("Agent Platform denied access to ", name, ": ", detail,
                           ". Grant roles/aiplatform.user (permission "
                           "aiplatform.googleapis.com/modelDevelopmentClusters.run) on project ",
                           spec.project_id(), ".")};
    case absl::StatusCode::kNotFound:
      return {false, "ClusterNotFound",
              absl::StrCat("Agent Platform has no cluster ", name, ": ", detail,
                           ". Check projectId, region and clusterId.")};
    case absl::StatusCode::kInvalidArgument:
      return {false, "InvalidSpec",
              absl::StrCat("Agent Platform refused the probe of ", name, ": ", detail, ".")};
    default:
      return {false, "Unreachable",
              absl::StrCat("Cannot reach ", name, " right now: ", detail,
                           ". The operator keeps retrying.")};
  }
}

// What Slurm's answer to the ping says, once the call itself went through.
Readiness SlurmAnswered(const ProbeOutcome& probe, const v1alpha1::SlurmClusterSpec& spec,
                        const std::string& name) {
  if (probe.slurm_http_status == 404) {
    return {
        false, "VersionNotServed",
        absl::StrCat("The cluster's slurmrestd does not serve Slurm REST ", VersionOf(spec), " (",
                     probe.slurm_detail, "); set spec.slurmApiVersion to a version it serves.")};
  }
  if (probe.slurm_http_status != 200) {
    return {false, "SlurmUnhealthy",
            absl::StrCat("Slurm answered the ping with HTTP ", probe.slurm_http_status,
                         probe.slurm_detail.empty() ? "" : absl::StrCat(": ", probe.slurm_detail),
                         ".")};
  }
  return {true, "Reachable",
          absl::StrCat("Slurm REST ", VersionOf(spec), " answers through Agent Platform at ", name,
                       ".")};
}

Readiness ProbeReadiness(const v1alpha1::SlurmClusterSpec& spec, const ProbeOutcome& probe) {
  const std::string name = ClusterResourceName(spec);
  if (!probe.refusal_reason.empty()) {
    return {false, probe.refusal_reason, probe.refusal_message};
  }
  if (!probe.spec.ok()) return {false, "InvalidSpec", std::string(probe.spec.message())};
  if (std::optional<std::string> named = ConditionReason(probe.call)) {
    // The call was refused before anything was sent (e.g. EndpointNotAllowed).
    return {false, *named, absl::StrCat("Not probed: ", probe.call.message(), ".")};
  }
  if (!probe.call.ok()) return CallFailed(probe.call, spec, name);
  return SlurmAnswered(probe, spec, name);
}

}  // namespace

v1alpha1::SlurmClusterStatus ClusterStatusFromProbe(const v1alpha1::SlurmClusterStatus& current,
                                                    const v1alpha1::SlurmClusterSpec& spec,
                                                    const ProbeOutcome& probe, int64_t generation,
                                                    Time now) {
  v1alpha1::SlurmClusterStatus s = current;
  s.set_observed_generation(generation);
  const Readiness r = ProbeReadiness(spec, probe);
  SetCondition(s.mutable_conditions(), kReady,
               r.ready ? ConditionStatus::kTrue : ConditionStatus::kFalse, r.reason, r.message,
               generation, now);
  return s;
}

Duration NextProbe(const v1alpha1::SlurmClusterStatus& status) {
  return IsConditionTrue(status.conditions(), kReady) ? Duration(std::chrono::minutes(5))
                                                      : Duration(std::chrono::minutes(1));
}

}  // namespace slurmop::reconcile
