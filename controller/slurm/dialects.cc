// File: controller/slurm/dialects.cc
//
// The version table: what differs between versions beyond self-describing
// JSON shapes (see wire_format.h).

#include "controller/slurm/dialects.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/slurm/rest_dialect.h"
#include "controller/slurm/text_compat.h"

namespace slurmop::slurm {
namespace {

// A new version is one row here (and the proto's enum_values, which a test
// ties to this table).
const std::vector<RestDialect>& Dialects() {
  static const auto* const kDialects = new std::vector<RestDialect>{{
      // Slurm 22.05: sbatch-option submit, dbv0.0.38 exit-code bug.
      RestDialect({"v0.0.38", SubmitFormat::kSbatchOptions, SlurmdbExitCodes::kUnreliable,
                   UpdateFormat::kBare, SlurmdbIdList::kCommaSeparated}),
      // Slurm 23.02: first data_parser version; slurmdb exit codes still buggy.
      // Updates sent bare and as {"job": {...}} (wire_format.h UpdateFormat).
      RestDialect({"v0.0.39", SubmitFormat::kJobDescMsg, SlurmdbExitCodes::kUnreliable,
                   UpdateFormat::kBareAndWrapped, SlurmdbIdList::kCommaSeparated}),
      // Slurm 23.11 onwards: the v0.0.40+ family.
      RestDialect({"v0.0.40", SubmitFormat::kJobDescMsg, SlurmdbExitCodes::kReliable}),
      RestDialect({"v0.0.41", SubmitFormat::kJobDescMsg, SlurmdbExitCodes::kReliable}),
      RestDialect({"v0.0.42", SubmitFormat::kJobDescMsg, SlurmdbExitCodes::kReliable}),
      RestDialect({"v0.0.43", SubmitFormat::kJobDescMsg, SlurmdbExitCodes::kReliable}),
      RestDialect({"v0.0.44", SubmitFormat::kJobDescMsg, SlurmdbExitCodes::kReliable}),
  }};
  return *kDialects;
}

}  // namespace

absl::StatusOr<const Dialect*> DialectFor(std::string_view version) {
  for (const RestDialect& d : Dialects()) {
    if (d.version() == version) return &d;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported Slurm REST API version \"", ToAbsl(version),
                   "\"; supported: ", absl::StrJoin(SupportedVersions(), ", ")));
}

const std::vector<std::string>& SupportedVersions() {
  static const std::vector<std::string>* const kVersions = [] {
    auto* versions = new std::vector<std::string>();
    for (const RestDialect& d : Dialects()) versions->emplace_back(d.version());
    return versions;
  }();
  return *kVersions;
}

}  // namespace slurmop::slurm
