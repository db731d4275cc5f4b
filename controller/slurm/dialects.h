// File: controller/slurm/dialects.h
//
// The registry of supported Slurm REST API versions: v0.0.38 (Slurm 22.05)
// through v0.0.44 (Slurm 25.11). Dialects are process-lifetime singletons.

#ifndef SLURMOP_CONTROLLER_SLURM_DIALECTS_H_
#define SLURMOP_CONTROLLER_SLURM_DIALECTS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/slurm/dialect.h"

namespace slurmop::slurm {

// The dialect for `version` ("v0.0.42", exact spelling). InvalidArgument
// "unsupported Slurm REST API version \"v0.0.99\"; supported: v0.0.38, ..."
// otherwise. The pointer stays valid for the life of the process.
absl::StatusOr<const Dialect*> DialectFor(std::string_view version);

// "v0.0.38", ..., "v0.0.44", oldest first.
const std::vector<std::string>& SupportedVersions();

// The version of a SlurmCluster whose spec.slurmApiVersion is empty (the
// proto's default_json says the same; a test checks that they agree).
inline constexpr std::string_view kDefaultVersion = "v0.0.42";

// `version`, or kDefaultVersion when it is empty.
inline std::string VersionOrDefault(std::string_view version) {
  return std::string(version.empty() ? kDefaultVersion : version);
}

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_DIALECTS_H_
