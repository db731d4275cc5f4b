// File: controller/reconcile/installation_id.cc

#include "controller/reconcile/installation_id.h"

#include "absl/strings/str_cat.h"
#include "controller/api/types.h"
#include "controller/kube/resource_types.h"
#include "controller/reconcile/job_descriptor.h"

namespace slurmop::reconcile {

absl::StatusOr<std::string> ResolveInstallationId(kube::Client& kube, std::string_view flag_value) {
  if (!flag_value.empty()) {
    if (absl::Status s = ValidateInstallationId(flag_value); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--installation-id: ", s.message()));
    }
    return std::string(flag_value);
  }
  absl::StatusOr<nlohmann::json> ns = kube.Get(kube::Namespaces(), "", "kube-system");
  const std::string uid = ns.ok() ? api::MetadataString(*ns, "uid") : "";
  if (uid.empty() || !ValidateInstallationId(uid).ok()) {
    // A failed read keeps its code, so that the caller can tell an API server
    // that did not answer (and wait for it) from a refusal.
    return absl::Status(
        ns.ok() ? absl::StatusCode::kFailedPrecondition : ns.status().code(),
        absl::StrCat(
            "cannot tell this installation's id: reading the UID of Namespace kube-system ",
            ns.ok() ? std::string("gave \"") + uid + "\""
                    : absl::StrCat("failed: ", ns.status().message()),
            ". Grant the operator get on namespaces/kube-system (deploy/rbac.yaml does), or set "
            "--installation-id to a name unique among the installations sharing a Slurm "
            "cluster"));
  }
  return uid;
}

}  // namespace slurmop::reconcile
