// File: controller/reconcile/installation_id.h
//
// The id of this operator installation, which every Slurm job's tag carries
// (SubmissionTag, job_descriptor.h) so that the orphan sweep of one
// installation never touches the jobs of another sharing a Slurm cluster
// (staging and prod, blue/green, DR; #13 E3).
//
// Contract:
//  * `--installation-id`, when given, is the id (checked by
//    ValidateInstallationId).
//  * Otherwise the id is the UID of Namespace kube-system: the same for every
//    replica and across restarts, upgrades and reinstalls of the operator
//    (kube-system lives as long as the Kubernetes cluster), and distinct
//    between Kubernetes clusters. Two installations in one Kubernetes cluster
//    must each set --installation-id.
//  * A failure to read it is an error naming the fix (RBAC or the flag), with
//    the failed read's code (main.cc waits out one the API server did not
//    answer, startup_retry.h): the operator never runs with a guessed id.

#ifndef SLURMOP_CONTROLLER_RECONCILE_INSTALLATION_ID_H_
#define SLURMOP_CONTROLLER_RECONCILE_INSTALLATION_ID_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "controller/kube/client.h"

namespace slurmop::reconcile {

absl::StatusOr<std::string> ResolveInstallationId(kube::Client& kube, std::string_view flag_value);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_INSTALLATION_ID_H_
