// File: controller/reconcile/secret_env.h
//
// Reads the values of a SlurmJob's spec.environment[].valueFrom.secretKeyRef from Secrets of the
// SlurmJob's own namespace, at submit time. Errors name the variable, the Secret and the key,
// never a value: NotFound (no such Secret), FailedPrecondition (no such key, or not base64), or
// the Kubernetes error (transient ones are retried).

#ifndef SLURMOP_CONTROLLER_RECONCILE_SECRET_ENV_H_
#define SLURMOP_CONTROLLER_RECONCILE_SECRET_ENV_H_

#include <string>

#include "absl/status/statusor.h"
#include "controller/kube/client.h"
#include "controller/reconcile/job_descriptor.h"

namespace slurmop::reconcile {

absl::StatusOr<SecretEnv> LoadSecretEnv(kube::Client& kube, const std::string& ns,
                                        const v1alpha1::SlurmJobSpec& spec);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_SECRET_ENV_H_
