// File: controller/reconcile/secret_env.h
//
// Reads the values of a SlurmJob's spec.environment[].valueFrom.secretKeyRef from Secrets of the
// SlurmJob's own namespace, at submit time. Errors name the variable, the Secret and the key,
// never a value: NotFound (no such Secret), FailedPrecondition (no such key, or not base64), or
// the Kubernetes error (transient ones are retried).
//
// Bounded: the values (and their names) come to at most kMaxSecretEnvBytes, the most a submit
// can carry, or the answer is OutOfRange. Before, each entry kept its own copy, so a SlurmJob with
// 1,000 entries naming a 1 MiB Secret held a gigabyte and the operator ran out of memory on every
// restart, for every tenant.

#ifndef SLURMOP_CONTROLLER_RECONCILE_SECRET_ENV_H_
#define SLURMOP_CONTROLLER_RECONCILE_SECRET_ENV_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "controller/kube/client.h"
#include "controller/reconcile/job_descriptor.h"

namespace slurmop::reconcile {

// callSlurmRestApi's documented request limit (agentplatform::ClientOptions::max_request_bytes).
inline constexpr size_t kMaxSecretEnvBytes = 1000 * 1000;

absl::StatusOr<SecretEnv> LoadSecretEnv(kube::Client& kube, const std::string& ns,
                                        const v1alpha1::SlurmJobSpec& spec);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_SECRET_ENV_H_
