// File: tests/reconcile/versions_agree_test.cc
//
// The Slurm REST versions the operator accepts are written in three places:
// the proto's (crd.field).enum_values of SlurmClusterSpec.slurm_api_version
// (and its default_json), the dialect table (slurm::SupportedVersions(),
// slurm::kDefaultVersion) and the generated CRD's enum. They must agree: a
// version in the CRD without a dialect would be accepted by the API server
// and then refused by every call.

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "controller/slurm/dialects.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "slurmoperator/crd/options.pb.h"
#include "slurmoperator/v1alpha1/slurmcluster.pb.h"

namespace slurmop {
namespace {

const slurmoperator::crd::Field& VersionFieldOptions() {
  const google::protobuf::FieldDescriptor* f =
      slurmoperator::v1alpha1::SlurmClusterSpec::descriptor()->FindFieldByName("slurm_api_version");
  EXPECT_NE(f, nullptr);
  return f->options().GetExtension(slurmoperator::crd::field);
}

// The `enum:` list under slurmApiVersion in the generated CRD.
std::vector<std::string> CrdEnum() {
  std::ifstream in(std::string(SLURMOP_SOURCE_DIR) +
                   "/crds/hpc.slurmoperator.dev_slurmclusters.yaml");
  std::vector<std::string> values;
  std::string line;
  bool in_field = false, in_enum = false;
  while (std::getline(in, line)) {
    const std::string trimmed =
        line.substr(line.find_first_not_of(' ') == std::string::npos ? line.size()
                                                                     : line.find_first_not_of(' '));
    if (trimmed == "slurmApiVersion:") in_field = true;
    if (!in_field) continue;
    if (trimmed == "enum:") {
      in_enum = true;
      continue;
    }
    if (in_enum && trimmed.rfind("- ", 0) == 0) {
      values.push_back(trimmed.substr(2));
      continue;
    }
    if (in_enum) break;
  }
  return values;
}

TEST(VersionsAgree, ProtoEnumValuesAreTheDialectTable) {
  const auto& values = VersionFieldOptions().enum_values();
  EXPECT_EQ(std::vector<std::string>(values.begin(), values.end()), slurm::SupportedVersions());
}

TEST(VersionsAgree, ProtoDefaultIsTheDialectDefault) {
  EXPECT_EQ(VersionFieldOptions().default_json(),
            "\"" + std::string(slurm::kDefaultVersion) + "\"");
  EXPECT_TRUE(slurm::DialectFor(slurm::kDefaultVersion).ok());
}

TEST(VersionsAgree, CrdEnumIsTheDialectTable) { EXPECT_EQ(CrdEnum(), slurm::SupportedVersions()); }

}  // namespace
}  // namespace slurmop
