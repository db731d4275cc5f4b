// File: tests/reconcile/sim/sim_credentials.h
//
// One replica's CredentialsResolver in the simulation: a SlurmCluster's
// credentials Secret must exist (read through the replica's kube::Client,
// so its faults apply) for its jobs to be called, as with the real
// SecretCredentialsResolver; its content is not looked at (a fixed token).
// The operator's own identity always works; no identity never does.

#ifndef SLURMOP_TESTS_RECONCILE_SIM_SIM_CREDENTIALS_H_
#define SLURMOP_TESTS_RECONCILE_SIM_SIM_CREDENTIALS_H_

#include <memory>

#include "absl/strings/str_cat.h"
#include "controller/kube/client.h"
#include "controller/kube/errors.h"
#include "controller/kube/resource_types.h"
#include "controller/reconcile/cluster_access.h"
#include "controller/reconcile/ports.h"

namespace slurmop::reconcile::sim {

class SimCredentials : public CredentialsResolver {
 public:
  SimCredentials(kube::Client& kube, std::shared_ptr<agentplatform::TokenSource> token)
      : kube_(kube), token_(std::move(token)) {}

  absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> For(
      const ClusterIdentity& identity) override {
    if (identity.source == ClusterIdentity::Source::kNone) {
      return absl::PermissionDeniedError("no identity");
    }
    if (identity.source == ClusterIdentity::Source::kOperator) return token_;
    absl::StatusOr<nlohmann::json> s =
        kube_.Get(kube::Secrets(), identity.secret_namespace, identity.secret_name);
    // As SecretCredentialsResolver: a Secret that is gone is a lasting
    // refusal, any other failure to read it a transient one.
    if (!s.ok() && !kube::IsNotFound(s.status())) {
      return absl::UnavailableError(
          absl::StrCat("reading Secret ", identity.secret_name, ": ", s.status().message()));
    }
    if (!s.ok()) {
      return absl::UnauthenticatedError(absl::StrCat("Secret ", identity.secret_namespace, "/",
                                                     identity.secret_name, ": ",
                                                     s.status().message()));
    }
    return token_;
  }

 private:
  kube::Client& kube_;
  std::shared_ptr<agentplatform::TokenSource> token_;
};

}  // namespace slurmop::reconcile::sim

#endif  // SLURMOP_TESTS_RECONCILE_SIM_SIM_CREDENTIALS_H_
