// File: controller/reconcile/job_descriptor.h
//
// From a SlurmJob's spec (plus its SlurmCluster's defaults and the resolved
// script text) to the version-neutral slurm::JobDescriptor, and the checks
// that the CRD schema cannot make on its own (or that an older CRD in a
// cluster did not make). Pure: no I/O.

#ifndef SLURMOP_CONTROLLER_RECONCILE_JOB_DESCRIPTOR_H_
#define SLURMOP_CONTROLLER_RECONCILE_JOB_DESCRIPTOR_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/slurm/job_model.h"
#include "slurmoperator/v1alpha1/slurmcluster.pb.h"
#include "slurmoperator/v1alpha1/slurmjob.pb.h"

namespace slurmop::reconcile {

namespace v1alpha1 = ::slurmoperator::v1alpha1;

// Who a Slurm job belongs to.
struct JobIdentity {
  std::string ns;
  std::string name;
  std::string uid;
  // The operator installation the SlurmJob belongs to (--installation-id;
  // see README "Ownership"); "" only in tests of the previous tag format.
  std::string installation;
};

// The tag every Slurm job submitted for a SlurmJob carries in its `comment`,
// so that the job can be found again when a submit's outcome is unknown, and
// so that jobs whose SlurmJob is gone can be found by the orphan sweep:
// "slurmjob-operator:<namespace>/<uid>/<run>@<installation>". The
// installation comes last so that operators before it (which read
// "slurmjob-operator:<namespace>/<uid>/<run>", the tag without "@...", the
// legacy tag) find no run number in it and never sweep it.
std::string SubmissionTag(const JobIdentity& id, int32_t run);

// The tag the previous version gave run `run` of the SlurmJob (no
// installation): still recognised as this SlurmJob's own (its uid is unique).
std::string LegacySubmissionTag(const JobIdentity& id, int32_t run);

// Whether `installation` can be part of a tag: 1 to 63 of [A-Za-z0-9._-].
absl::Status ValidateInstallationId(std::string_view installation);

// The comment a Slurm job gets when its SlurmJob is deleted with
// deletionPolicy Orphan: the sweep leaves it alone.
std::string DisownedTag(const JobIdentity& id, int32_t run);

// The parts of a SubmissionTag (or a legacy tag: installation ""); nullopt
// for any other comment.
struct ParsedTag {
  std::string ns;
  std::string uid;
  int32_t run = 0;
  std::string installation;
};
std::optional<ParsedTag> ParseSubmissionTag(std::string_view comment);

// The PATH given to jobs whose environment does not set one: Slurm batch jobs
// run with exactly the environment they are submitted with.
inline constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";
// The working directory of jobs that do not set one (Slurm 23.11+ requires one).
inline constexpr char kDefaultWorkingDirectory[] = "/tmp";

// The values of a SlurmJob's spec.environment[].valueFrom.secretKeyRef, by variable name, read from
// Secrets at submit time. Secret: never logged, never written to status or Events.
using SecretEnv = std::map<std::string, std::string>;

// True when some spec.environment entry takes its value from a Secret.
bool NeedsSecretEnv(const v1alpha1::SlurmJobSpec& spec);

// Checks a spec for mistakes the user must fix. InvalidArgument with a
// message that names the field and says what to do.
absl::Status ValidateJobSpec(const v1alpha1::SlurmJobSpec& spec);

// The most distinct Secrets spec.environment[].valueFrom.secretKeyRef may name (each is read
// whole before a submit): more is InvalidSpec.
inline constexpr size_t kMaxSecretsPerSlurmJob = 32;

// Checks a SlurmCluster's spec (version supported, names present).
absl::Status ValidateClusterSpec(const v1alpha1::SlurmClusterSpec& spec);

// Builds the descriptor of run `run`; `script` is the resolved script text
// (from spec.script or the ConfigMap named by spec.scriptFrom); `dependency`
// is Slurm's dependency expression ("" = none); `secret_env` holds the values of the variables
// whose value comes from a Secret (required when NeedsSecretEnv(spec)).
absl::StatusOr<slurm::JobDescriptor> BuildJobDescriptor(const JobIdentity& id,
                                                        const v1alpha1::SlurmJobSpec& spec,
                                                        const v1alpha1::SlurmClusterSpec& cluster,
                                                        const std::string& script, int32_t run = 1,
                                                        const std::string& dependency = "",
                                                        const SecretEnv* secret_env = nullptr);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_JOB_DESCRIPTOR_H_
