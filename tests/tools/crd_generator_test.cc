// File: tests/tools/crd_generator_test.cc
//
// Unit tests of tools/protoc-gen-crd's schema mapping. The generator runs in-process on protos
// parsed from disk (with their comments) by protobuf's Importer, exactly as protoc would hand them
// to the plugin; its YAML output is parsed back with yaml-cpp and inspected. The real API protos
// cover the SlurmJob/SlurmCluster CRDs; small protos written to a temp dir cover the remaining
// type mappings and the annotation errors.

#include "tools/protoc-gen-crd/crd_generator.h"

#include <gmock/gmock.h>
#include <google/protobuf/compiler/importer.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace slurmop::crdgen {
namespace {

using ::google::protobuf::FileDescriptor;
using ::google::protobuf::compiler::DiskSourceTree;
using ::google::protobuf::compiler::Importer;
using ::google::protobuf::compiler::MultiFileErrorCollector;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class CollectingErrors : public MultiFileErrorCollector {
 public:
  void AddError(const std::string& filename, int line, int column,
                const std::string& message) override {
    text += filename + ":" + std::to_string(line + 1) + ": " + message + "\n";
  }
  std::string text;
};

// Parses protos from the repository's proto/ (plus any test protos written with Write()) the way
// protoc does, comments included.
class ProtoWorkspace {
 public:
  ProtoWorkspace() {
    static int counter = 0;
    scratch_ = std::filesystem::path(::testing::TempDir()) /
               ("crdgen-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(scratch_);
    tree_.MapPath("", scratch_.string());
    tree_.MapPath("", SLURMOP_PROTO_DIR);
    tree_.MapPath("", SLURMOP_PROTOBUF_INCLUDE_DIR);
    importer_ = std::make_unique<Importer>(&tree_, &errors_);
  }
  ~ProtoWorkspace() { std::filesystem::remove_all(scratch_); }

  void Write(const std::string& name, const std::string& text) {
    std::ofstream(scratch_ / name) << text;
  }

  const FileDescriptor* Import(const std::string& name) {
    const FileDescriptor* file = importer_->Import(name);
    EXPECT_NE(file, nullptr) << errors_.text;
    return file;
  }

 private:
  std::filesystem::path scratch_;
  DiskSourceTree tree_;
  CollectingErrors errors_;
  std::unique_ptr<Importer> importer_;
};

std::map<std::string, std::string> ByName(const std::vector<GeneratedFile>& files) {
  std::map<std::string, std::string> by_name;
  for (const GeneratedFile& file : files) by_name[file.name] = file.content;
  return by_name;
}

// The generated files for the real API protos, computed once.
const std::vector<GeneratedFile>& RealFiles() {
  static const std::vector<GeneratedFile>* files = [] {
    ProtoWorkspace workspace;
    std::vector<const FileDescriptor*> protos = {
        workspace.Import("slurmoperator/v1alpha1/common.proto"),
        workspace.Import("slurmoperator/v1alpha1/slurmcluster.proto"),
        workspace.Import("slurmoperator/v1alpha1/slurmjob.proto")};
    absl::StatusOr<std::vector<GeneratedFile>> generated = GenerateCrds(protos, {});
    EXPECT_TRUE(generated.ok()) << generated.status();
    return new std::vector<GeneratedFile>(generated.ok() ? *generated
                                                         : std::vector<GeneratedFile>{});
  }();
  return *files;
}

YAML::Node LoadReal(const std::string& name) {
  auto by_name = ByName(RealFiles());
  EXPECT_TRUE(by_name.contains(name)) << name;
  return YAML::Load(by_name[name]);
}

const YAML::Node SlurmJobCrd() {
  static const YAML::Node crd = LoadReal("hpc.slurmoperator.dev_slurmjobs.yaml");
  return crd;
}
const YAML::Node SlurmClusterCrd() {
  static const YAML::Node crd = LoadReal("hpc.slurmoperator.dev_slurmclusters.yaml");
  return crd;
}

const YAML::Node Root(const YAML::Node& crd) {
  return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
}

// node.properties.<a>.properties.<b>... ; "[]" steps into array items.
YAML::Node At(const YAML::Node& start, const std::vector<std::string>& path, size_t step = 0) {
  if (step == path.size()) return start;
  const YAML::Node next = path[step] == "[]" ? start["items"] : start["properties"][path[step]];
  if (!next.IsDefined()) {
    ADD_FAILURE() << "no schema node at step " << path[step];
    return next;
  }
  return At(next, path, step + 1);
}

std::vector<std::string> Strings(const YAML::Node& node) {
  return node.IsSequence() ? node.as<std::vector<std::string>>() : std::vector<std::string>{};
}

std::vector<std::string> Keys(const YAML::Node& map) {
  std::vector<std::string> keys;
  for (const auto& entry : map) keys.push_back(entry.first.as<std::string>());
  return keys;
}

TEST(RealCrdsTest, WritesOneCrdPerResourceAndAKustomization) {
  std::vector<std::string> names;
  for (const GeneratedFile& file : RealFiles()) names.push_back(file.name);
  EXPECT_THAT(names, ElementsAre("hpc.slurmoperator.dev_clusterslurmclusters.yaml",
                                 "hpc.slurmoperator.dev_slurmclusters.yaml",
                                 "hpc.slurmoperator.dev_slurmjobs.yaml", "kustomization.yaml"));
  const YAML::Node kustomization = LoadReal("kustomization.yaml");
  EXPECT_EQ(kustomization["kind"].as<std::string>(), "Kustomization");
  EXPECT_THAT(Strings(kustomization["resources"]),
              ElementsAre("hpc.slurmoperator.dev_clusterslurmclusters.yaml",
                          "hpc.slurmoperator.dev_slurmclusters.yaml",
                          "hpc.slurmoperator.dev_slurmjobs.yaml"));
}

TEST(RealCrdsTest, ClusterSlurmClusterIsClusterScopedWithTheSlurmClusterStatus) {
  const YAML::Node crd = LoadReal("hpc.slurmoperator.dev_clusterslurmclusters.yaml");
  EXPECT_EQ(crd["spec"]["scope"].as<std::string>(), "Cluster");
  EXPECT_EQ(crd["spec"]["names"]["kind"].as<std::string>(), "ClusterSlurmCluster");
  EXPECT_THAT(Strings(crd["spec"]["names"]["shortNames"]), ElementsAre("cscl"));
  const YAML::Node version = crd["spec"]["versions"][0];
  ASSERT_TRUE(version["subresources"]["status"].IsMap());
  EXPECT_EQ(version["additionalPrinterColumns"].size(),
            SlurmClusterCrd()["spec"]["versions"][0]["additionalPrinterColumns"].size());
  const YAML::Node selector = At(Root(crd), {"spec", "namespaceSelector"});
  EXPECT_EQ(selector["properties"]["matchLabels"]["type"].as<std::string>(), "object");
  EXPECT_THAT(Strings(At(selector, {"matchExpressions", "[]", "operator"})["enum"]),
              ElementsAre("In", "NotIn", "Exists", "DoesNotExist"));
  // Same spec fields as a SlurmCluster, plus the selector.
  std::vector<std::string> plain = Keys(At(Root(SlurmClusterCrd()), {"spec"})["properties"]);
  plain.push_back("namespaceSelector");
  std::vector<std::string> scoped = Keys(At(Root(crd), {"spec"})["properties"]);
  std::sort(plain.begin(), plain.end());  // fields in proto order; the selector is 9 of 10
  std::sort(scoped.begin(), scoped.end());
  EXPECT_EQ(scoped, plain);
  EXPECT_EQ(Keys(At(Root(crd), {"status"})["properties"]),
            Keys(At(Root(SlurmClusterCrd()), {"status"})["properties"]));
}

TEST(RealCrdsTest, StartsWithGeneratedHeader) {
  auto by_name = ByName(RealFiles());
  EXPECT_THAT(by_name["hpc.slurmoperator.dev_slurmjobs.yaml"],
              StartsWith("# Generated by tools/protoc-gen-crd from "
                         "proto/slurmoperator/v1alpha1/slurmjob.proto; DO NOT EDIT.\n"));
  EXPECT_THAT(by_name["kustomization.yaml"],
              StartsWith("# Generated by tools/protoc-gen-crd from "
                         "proto/slurmoperator/v1alpha1/slurmcluster.proto, "
                         "proto/slurmoperator/v1alpha1/slurmjob.proto; DO NOT EDIT.\n"));
}

TEST(RealCrdsTest, NamesScopeAndVersion) {
  const YAML::Node crd = SlurmJobCrd();
  EXPECT_EQ(crd["apiVersion"].as<std::string>(), "apiextensions.k8s.io/v1");
  EXPECT_EQ(crd["kind"].as<std::string>(), "CustomResourceDefinition");
  EXPECT_EQ(crd["metadata"]["name"].as<std::string>(), "slurmjobs.hpc.slurmoperator.dev");
  EXPECT_EQ(crd["spec"]["group"].as<std::string>(), "hpc.slurmoperator.dev");
  EXPECT_EQ(crd["spec"]["scope"].as<std::string>(), "Namespaced");
  const YAML::Node names = crd["spec"]["names"];
  EXPECT_EQ(names["kind"].as<std::string>(), "SlurmJob");
  EXPECT_EQ(names["listKind"].as<std::string>(), "SlurmJobList");
  EXPECT_EQ(names["plural"].as<std::string>(), "slurmjobs");
  EXPECT_EQ(names["singular"].as<std::string>(), "slurmjob");
  EXPECT_THAT(Strings(names["shortNames"]), ElementsAre("sj"));
  EXPECT_THAT(Strings(names["categories"]), ElementsAre("hpc"));
  ASSERT_EQ(crd["spec"]["versions"].size(), 1u);
  const YAML::Node version = crd["spec"]["versions"][0];
  EXPECT_EQ(version["name"].as<std::string>(), "v1alpha1");
  EXPECT_TRUE(version["served"].as<bool>());
  EXPECT_TRUE(version["storage"].as<bool>());
  ASSERT_TRUE(version["subresources"]["status"].IsMap());
  EXPECT_EQ(version["subresources"]["status"].size(), 0u);
  EXPECT_EQ(SlurmClusterCrd()["spec"]["names"]["shortNames"][0].as<std::string>(), "scl");
}

TEST(RealCrdsTest, PrinterColumnsComeFromTheResourceOption) {
  const YAML::Node columns = SlurmJobCrd()["spec"]["versions"][0]["additionalPrinterColumns"];
  ASSERT_TRUE(columns.IsSequence());
  std::map<std::string, YAML::Node> by_name;
  for (const YAML::Node& column : columns) by_name[column["name"].as<std::string>()] = column;
  ASSERT_TRUE(by_name.contains("JobID"));
  EXPECT_EQ(by_name["JobID"]["type"].as<std::string>(), "integer");
  EXPECT_EQ(by_name["JobID"]["jsonPath"].as<std::string>(), ".status.jobId");
  EXPECT_EQ(by_name["JobID"]["description"].as<std::string>(), "Slurm job id");
  EXPECT_FALSE(by_name["JobID"]["priority"].IsDefined());
  EXPECT_EQ(by_name["Reason"]["priority"].as<int>(), 1);
  EXPECT_EQ(by_name["Age"]["type"].as<std::string>(), "date");
  EXPECT_EQ(by_name["Ready"]["jsonPath"].as<std::string>(),
            ".status.conditions[?(@.type==\"Ready\")].status");
  EXPECT_EQ(by_name["Run"]["jsonPath"].as<std::string>(), ".status.run");
  EXPECT_EQ(by_name["Run"]["priority"].as<int>(), 1);
  EXPECT_EQ(by_name["ClusterKind"]["jsonPath"].as<std::string>(), ".spec.clusterRef.kind");
  EXPECT_EQ(by_name["ClusterKind"]["priority"].as<int>(), 1);
  EXPECT_EQ(columns.size(), 9u);
}

TEST(RealCrdsTest, EnvelopeThenFieldsInDeclarationOrder) {
  const YAML::Node root = Root(SlurmJobCrd());
  EXPECT_EQ(root["type"].as<std::string>(), "object");
  EXPECT_THAT(Keys(root["properties"]),
              ElementsAre("apiVersion", "kind", "metadata", "spec", "status"));
  EXPECT_EQ(root["properties"]["metadata"]["type"].as<std::string>(), "object");
  EXPECT_EQ(root["properties"]["metadata"].size(), 1u);
  EXPECT_THAT(Strings(root["required"]), ElementsAre("spec"));
  const std::vector<std::string> spec_keys = Keys(At(root, {"spec"})["properties"]);
  ASSERT_EQ(spec_keys.size(), 32u);
  EXPECT_EQ(spec_keys.front(), "clusterRef");
  EXPECT_EQ(spec_keys[13], "memoryPerNodeMB");  // json_name honoured, field 14
  EXPECT_EQ(spec_keys[23], "deletionPolicy");
  EXPECT_EQ(spec_keys[28], "dependsOn");
  EXPECT_EQ(spec_keys[29], "ttlSecondsAfterFinished");
  EXPECT_EQ(spec_keys[30], "activeDeadlineSeconds");
  EXPECT_EQ(spec_keys.back(), "array");
}

TEST(RealCrdsTest, RequiredFieldsAreListedOnTheirParent) {
  EXPECT_THAT(Strings(At(Root(SlurmClusterCrd()), {"spec"})["required"]),
              ElementsAre("projectId", "region", "clusterId"));
  EXPECT_THAT(Strings(At(Root(SlurmJobCrd()), {"spec", "clusterRef"})["required"]),
              ElementsAre("name"));
  // No required list where nothing is required.
  EXPECT_FALSE(At(Root(SlurmJobCrd()), {"status"})["required"].IsDefined());
}

TEST(RealCrdsTest, ConditionsAreAListMapKeyedByType) {
  const YAML::Node conditions = At(Root(SlurmJobCrd()), {"status", "conditions"});
  EXPECT_EQ(conditions["type"].as<std::string>(), "array");
  EXPECT_EQ(conditions["x-kubernetes-list-type"].as<std::string>(), "map");
  EXPECT_THAT(Strings(conditions["x-kubernetes-list-map-keys"]), ElementsAre("type"));
  EXPECT_THAT(Strings(conditions["items"]["required"]),
              ElementsAre("type", "status", "lastTransitionTime", "reason", "message"));
  const YAML::Node status = At(conditions, {"[]", "status"});
  EXPECT_THAT(Strings(status["enum"]), ElementsAre("True", "False", "Unknown"));
  // "True" must be a quoted YAML string; plain `True` reads back as a boolean in kubectl.
  EXPECT_EQ(status["enum"][0].Tag(), "!");
  EXPECT_EQ(At(conditions, {"[]", "lastTransitionTime"})["format"].as<std::string>(), "date-time");
  EXPECT_EQ(At(conditions, {"[]", "observedGeneration"})["minimum"].as<int>(), 0);
}

TEST(RealCrdsTest, ScalarTypesAndFormats) {
  const YAML::Node root = Root(SlurmJobCrd());
  EXPECT_EQ(At(root, {"spec", "nodes"})["type"].as<std::string>(), "integer");
  EXPECT_EQ(At(root, {"spec", "nodes"})["format"].as<std::string>(), "int32");
  EXPECT_EQ(At(root, {"spec", "nodes"})["minimum"].as<int>(), 1);
  EXPECT_EQ(At(root, {"spec", "memoryPerNodeMB"})["format"].as<std::string>(), "int64");
  EXPECT_EQ(At(root, {"status", "jobId"})["type"].as<std::string>(), "integer");
  EXPECT_EQ(At(root, {"status", "jobId"})["format"].as<std::string>(), "int64");
  EXPECT_EQ(At(root, {"status", "submitTime"})["type"].as<std::string>(), "string");
  EXPECT_EQ(At(root, {"status", "submitTime"})["format"].as<std::string>(), "date-time");
  EXPECT_EQ(At(root, {"spec", "timeLimitMinutes"})["maximum"].as<int64_t>(), 5256000);
  EXPECT_EQ(At(root, {"spec", "name"})["maxLength"].as<int>(), 200);
  EXPECT_EQ(At(root, {"spec", "environment", "[]", "name"})["pattern"].as<std::string>(),
            "^[A-Za-z_][A-Za-z0-9_]*$");
}

TEST(RealCrdsTest, DeletionPolicyHasEnumAndDefault) {
  const YAML::Node policy = At(Root(SlurmJobCrd()), {"spec", "deletionPolicy"});
  EXPECT_EQ(policy["type"].as<std::string>(), "string");
  EXPECT_THAT(Strings(policy["enum"]), ElementsAre("Cancel", "Orphan"));
  EXPECT_EQ(policy["default"].as<std::string>(), "Cancel");
  const YAML::Node version = At(Root(SlurmClusterCrd()), {"spec", "slurmApiVersion"});
  EXPECT_EQ(version["default"].as<std::string>(), "v0.0.42");
}

TEST(RealCrdsTest, StructExtraPreservesUnknownFields) {
  const YAML::Node extra = At(Root(SlurmJobCrd()), {"spec", "extra"});
  EXPECT_EQ(extra["type"].as<std::string>(), "object");
  EXPECT_TRUE(extra["x-kubernetes-preserve-unknown-fields"].as<bool>());
  EXPECT_FALSE(extra["properties"].IsDefined());
}

TEST(RealCrdsTest, MessageValidationsBecomeCelRulesOnTheObject) {
  const YAML::Node rules = At(Root(SlurmJobCrd()), {"spec"})["x-kubernetes-validations"];
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0]["rule"].as<std::string>(), "has(self.script) != has(self.scriptFrom)");
  EXPECT_EQ(rules[0]["message"].as<std::string>(),
            "exactly one of script and scriptFrom must be set");
  EXPECT_THAT(rules[1]["rule"].as<std::string>(), StartsWith("!has(self.nodes)"));
  EXPECT_EQ(rules[2]["rule"].as<std::string>(),
            "!has(self.activeDeadlineSeconds) || !has(self.timeLimitMinutes) || "
            "self.timeLimitMinutes * 60 <= self.activeDeadlineSeconds");
}

TEST(RealCrdsTest, DescriptionsComeFromComments) {
  const YAML::Node root = Root(SlurmJobCrd());
  EXPECT_THAT(root["description"].as<std::string>(),
              StartsWith("A Slurm batch job that the operator submits"));
  // A two-line comment becomes one sentence flow, with one space at the line break.
  EXPECT_EQ(At(root, {"spec", "script"})["description"].as<std::string>(),
            "The batch script's text, starting with a `#!` line. The whole request must stay "
            "under 1 MB; larger programs belong on the cluster's shared storage, called from a "
            "short script.");
  // A message field takes its field comment, not its message's comment...
  EXPECT_THAT(At(root, {"spec", "clusterRef"})["description"].as<std::string>(),
              StartsWith("The cluster to submit to: a SlurmCluster of this namespace, or a "
                         "ClusterSlurmCluster"));
  // ...while list items, which have no field of their own, take the message comment.
  EXPECT_EQ(At(root, {"spec", "environment", "[]"})["description"].as<std::string>(),
            "One environment variable of a SlurmJob: a literal `value`, or `valueFrom` a Secret of "
            "the SlurmJob's namespace (read when the job is submitted; the value is never written "
            "to the SlurmJob's status, to Events or to the operator's log).");
  EXPECT_EQ(At(root, {"spec", "deletionPolicy"})["description"].as<std::string>(),
            "What deleting the SlurmJob does to a Slurm job that is still queued or running: "
            "`Cancel` (default) cancels it, `Orphan` leaves it running.");
}

// Structural schema: every node below the root has a type, unless it preserves unknown fields.
// With `require_descriptions`, every field also has a description (except the envelope's
// metadata, which Kubernetes describes).
void CheckStructural(const YAML::Node& node, const std::string& path,
                     bool require_descriptions = true) {
  const bool preserves = node["x-kubernetes-preserve-unknown-fields"].IsDefined();
  if (!preserves) {
    EXPECT_TRUE(node["type"].IsDefined()) << path << " has no type";
  }
  if (node["properties"].IsDefined()) {
    for (const auto& entry : node["properties"]) {
      const std::string child = path + "." + entry.first.as<std::string>();
      if (require_descriptions && child != ".metadata") {
        EXPECT_TRUE(entry.second["description"].IsDefined()) << child << " has no description";
      }
      CheckStructural(entry.second, child, require_descriptions);
    }
  }
  if (node["items"].IsDefined()) {
    CheckStructural(node["items"], path + "[]", require_descriptions);
  }
  if (node["additionalProperties"].IsDefined()) {
    CheckStructural(node["additionalProperties"], path + "{}", require_descriptions);
  }
}

TEST(RealCrdsTest, SchemasAreStructural) {
  CheckStructural(Root(SlurmJobCrd()), "");
  CheckStructural(Root(SlurmClusterCrd()), "");
}

// The SlurmCronJob CRD (its own proto, which imports slurmjob.proto for the template's spec).
const YAML::Node SlurmCronJobCrd() {
  static const YAML::Node crd = [] {
    ProtoWorkspace workspace;
    absl::StatusOr<std::vector<GeneratedFile>> generated =
        GenerateCrds({workspace.Import("slurmoperator/v1alpha1/slurmcronjob.proto")}, {});
    EXPECT_TRUE(generated.ok()) << generated.status();
    if (!generated.ok()) return YAML::Node();
    auto by_name = ByName(*generated);
    EXPECT_TRUE(by_name.contains("hpc.slurmoperator.dev_slurmcronjobs.yaml"));
    return YAML::Load(by_name["hpc.slurmoperator.dev_slurmcronjobs.yaml"]);
  }();
  return crd;
}

TEST(RealCrdsTest, SlurmCronJobSchemaIsStructuralAndEmbedsTheSlurmJobSpec) {
  const YAML::Node crd = SlurmCronJobCrd();
  ASSERT_TRUE(crd.IsMap());
  CheckStructural(Root(crd), "");
  EXPECT_EQ(crd["spec"]["names"]["kind"].as<std::string>(), "SlurmCronJob");
  EXPECT_THAT(Strings(crd["spec"]["names"]["shortNames"]), ElementsAre("scj"));
  EXPECT_TRUE(crd["spec"]["versions"][0]["subresources"]["status"].IsMap());
  // The template's spec is a SlurmJob's spec, with its own CEL rules (checked at admission).
  EXPECT_EQ(Keys(At(Root(crd), {"spec", "jobTemplate", "spec"})["properties"]),
            Keys(At(Root(SlurmJobCrd()), {"spec"})["properties"]));
  EXPECT_EQ(At(Root(crd), {"spec", "jobTemplate", "spec"})["x-kubernetes-validations"].size(),
            At(Root(SlurmJobCrd()), {"spec"})["x-kubernetes-validations"].size());
  EXPECT_THAT(Strings(At(Root(crd), {"spec"})["required"]), ElementsAre("schedule", "jobTemplate"));
}

TEST(RealCrdsTest, SlurmCronJobValidatesAtAdmission) {
  const YAML::Node spec = At(Root(SlurmCronJobCrd()), {"spec"});
  const YAML::Node schedule_rules = spec["properties"]["schedule"]["x-kubernetes-validations"];
  ASSERT_EQ(schedule_rules.size(), 2u);
  EXPECT_THAT(schedule_rules[0]["rule"].as<std::string>(), HasSubstr("CRON_TZ="));
  EXPECT_THAT(schedule_rules[1]["rule"].as<std::string>(), HasSubstr("size() == 5"));
  EXPECT_THAT(Strings(spec["properties"]["concurrencyPolicy"]["enum"]),
              ElementsAre("Allow", "Forbid", "Replace"));
  EXPECT_EQ(spec["properties"]["concurrencyPolicy"]["default"].as<std::string>(), "Allow");
  EXPECT_EQ(spec["properties"]["successfulJobsHistoryLimit"]["default"].as<int>(), 3);
  EXPECT_EQ(spec["properties"]["failedJobsHistoryLimit"]["default"].as<int>(), 1);
  EXPECT_EQ(spec["properties"]["startingDeadlineSeconds"]["minimum"].as<int>(), 0);
  EXPECT_TRUE(spec["properties"]["timeZone"]["pattern"].IsDefined());
  // Its name must leave room for the children's suffix (CronJob's 52).
  const YAML::Node root_rules = Root(SlurmCronJobCrd())["x-kubernetes-validations"];
  ASSERT_EQ(root_rules.size(), 1u);
  EXPECT_EQ(root_rules[0]["rule"].as<std::string>(), "self.metadata.name.size() <= 52");
}

TEST(RealCrdsTest, SlurmCronJobPrinterColumns) {
  const YAML::Node columns = SlurmCronJobCrd()["spec"]["versions"][0]["additionalPrinterColumns"];
  std::vector<std::string> names;
  for (const YAML::Node& column : columns) names.push_back(column["name"].as<std::string>());
  EXPECT_THAT(names, ElementsAre("Schedule", "TimeZone", "Suspend", "Active", "LastSchedule",
                                 "Ready", "Reason", "Age"));
  EXPECT_EQ(columns[3]["jsonPath"].as<std::string>(), ".status.activeCount");
  EXPECT_EQ(columns[4]["jsonPath"].as<std::string>(), ".status.lastScheduleTime");
}

TEST(RealCrdsTest, OutputIsDeterministicAndIndependentOfFileOrder) {
  ProtoWorkspace workspace;
  std::vector<const FileDescriptor*> reversed = {
      workspace.Import("slurmoperator/v1alpha1/slurmjob.proto"),
      workspace.Import("slurmoperator/v1alpha1/slurmcluster.proto")};
  absl::StatusOr<std::vector<GeneratedFile>> again = GenerateCrds(reversed, {});
  ASSERT_TRUE(again.ok()) << again.status();
  auto first = ByName(RealFiles());
  auto second = ByName(*again);
  EXPECT_EQ(first, second);
}

// --- Mappings the API protos do not exercise -------------------------------------------------

constexpr char kWidgetProto[] = R"pb(
  syntax = "proto3"
  ;
package mapping.test;

import "google/protobuf/struct.proto";
import "google/protobuf/duration.proto";
import "slurmoperator/crd/options.proto";

// A kind for mapping tests.
//
// Its second paragraph
//   spans two lines.
message Widget {
  option (slurmoperator.crd.resource) = {
    group: "test.example.com" version: "v1" kind: "Widget" plural: "widgets" scope: "Cluster"
  };
  WidgetSpec spec = 1;
}

/* The widget's spec,
 * from a block comment. */
message WidgetSpec {
  // On or off.
  bool enabled = 1;
  repeated string tags = 2 [(slurmoperator.crd.field) = {list_type: "set", max_items: 8, min_length: 1}];
  map<string, int64> limits = 3;
  google.protobuf.Value anything = 4;
  google.protobuf.ListValue list = 5;
  Color color = 6;
  uint32 count = 7 [(slurmoperator.crd.field) = {default_json: "3"}];
  string renamed_field = 8 [json_name = "customName"];
  double ratio = 9;
  bytes blob = 10;
  optional int32 maybe = 11;
  string checked = 12 [(slurmoperator.crd.field) = {
    validations: [{rule: "self.size() < 10", message: "too long", reason: "FieldValueInvalid"}]
  }];
  google.protobuf.Duration timeout = 13;
  repeated Part parts = 14 [(slurmoperator.crd.field) = {list_type: "atomic"}];
}

message Part {
  string id = 1;
}

enum Color {
  COLOR_UNSPECIFIED = 0;
  RED = 1;
}
)pb";

class WidgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    workspace_.Write("widget.proto", kWidgetProto);
    const FileDescriptor* file = workspace_.Import("widget.proto");
    ASSERT_NE(file, nullptr);
    absl::StatusOr<std::vector<GeneratedFile>> generated = GenerateCrds({file}, {});
    ASSERT_TRUE(generated.ok()) << generated.status();
    files_ = ByName(*generated);
    ASSERT_TRUE(files_.contains("test.example.com_widgets.yaml"));
    crd_ = YAML::Load(files_["test.example.com_widgets.yaml"]);
    spec_ = At(Root(crd_), {"spec"});
  }

  ProtoWorkspace workspace_;
  std::map<std::string, std::string> files_;
  YAML::Node crd_;
  YAML::Node spec_;
};

TEST_F(WidgetTest, DefaultsForOmittedResourceOptions) {
  EXPECT_EQ(crd_["spec"]["scope"].as<std::string>(), "Cluster");
  EXPECT_EQ(crd_["spec"]["names"]["singular"].as<std::string>(), "widget");
  EXPECT_FALSE(crd_["spec"]["names"]["shortNames"].IsDefined());
  // No status field: no status subresource; no columns: no additionalPrinterColumns.
  EXPECT_FALSE(crd_["spec"]["versions"][0]["subresources"].IsDefined());
  EXPECT_FALSE(crd_["spec"]["versions"][0]["additionalPrinterColumns"].IsDefined());
  EXPECT_FALSE(Root(crd_)["required"].IsDefined());
}

TEST_F(WidgetTest, CommentsAreTrimmedJoinedAndSplitIntoParagraphs) {
  EXPECT_EQ(Root(crd_)["description"].as<std::string>(),
            "A kind for mapping tests.\n\nIts second paragraph spans two lines.");
  EXPECT_EQ(spec_["description"].as<std::string>(), "The widget's spec, from a block comment.");
  EXPECT_EQ(At(spec_, {"enabled"})["description"].as<std::string>(), "On or off.");
  EXPECT_FALSE(At(spec_, {"tags"})["description"].IsDefined());
}

TEST_F(WidgetTest, ScalarAndContainerMappings) {
  EXPECT_EQ(At(spec_, {"enabled"})["type"].as<std::string>(), "boolean");
  const YAML::Node tags = At(spec_, {"tags"});
  EXPECT_EQ(tags["type"].as<std::string>(), "array");
  EXPECT_EQ(tags["maxItems"].as<int>(), 8);
  EXPECT_EQ(tags["x-kubernetes-list-type"].as<std::string>(), "set");
  EXPECT_EQ(tags["items"]["type"].as<std::string>(), "string");
  EXPECT_EQ(tags["items"]["minLength"].as<int>(), 1);  // element constraints go on the items
  const YAML::Node limits = At(spec_, {"limits"});
  EXPECT_EQ(limits["type"].as<std::string>(), "object");
  EXPECT_EQ(limits["additionalProperties"]["format"].as<std::string>(), "int64");
  EXPECT_FALSE(At(spec_, {"anything"})["type"].IsDefined());
  EXPECT_TRUE(At(spec_, {"anything"})["x-kubernetes-preserve-unknown-fields"].as<bool>());
  EXPECT_EQ(At(spec_, {"list"})["type"].as<std::string>(), "array");
  EXPECT_THAT(Strings(At(spec_, {"color"})["enum"]), ElementsAre("COLOR_UNSPECIFIED", "RED"));
  EXPECT_EQ(At(spec_, {"count"})["default"].as<int>(), 3);
  EXPECT_EQ(At(spec_, {"count"})["minimum"].as<int>(), 0);
  EXPECT_TRUE(At(spec_, {"customName"})["type"].IsDefined());
  EXPECT_FALSE(spec_["properties"]["renamedField"].IsDefined());
  EXPECT_EQ(At(spec_, {"ratio"})["format"].as<std::string>(), "double");
  EXPECT_EQ(At(spec_, {"blob"})["format"].as<std::string>(), "byte");
  EXPECT_EQ(At(spec_, {"maybe"})["format"].as<std::string>(), "int32");
  EXPECT_EQ(At(spec_, {"timeout"})["type"].as<std::string>(), "string");
  EXPECT_EQ(At(spec_, {"parts"})["x-kubernetes-list-type"].as<std::string>(), "atomic");
  const YAML::Node rule = At(spec_, {"checked"})["x-kubernetes-validations"][0];
  EXPECT_EQ(rule["rule"].as<std::string>(), "self.size() < 10");
  EXPECT_EQ(rule["message"].as<std::string>(), "too long");
  EXPECT_EQ(rule["reason"].as<std::string>(), "FieldValueInvalid");
  CheckStructural(Root(crd_), "", /*require_descriptions=*/false);
}

TEST_F(WidgetTest, KustomizationListsTheCrd) {
  EXPECT_THAT(Strings(YAML::Load(files_["kustomization.yaml"])["resources"]),
              ElementsAre("test.example.com_widgets.yaml"));
}

TEST(GenerateCrdsTest, NoResourcesNoFiles) {
  ProtoWorkspace workspace;
  absl::StatusOr<std::vector<GeneratedFile>> generated =
      GenerateCrds({workspace.Import("slurmoperator/v1alpha1/common.proto")}, {});
  ASSERT_TRUE(generated.ok()) << generated.status();
  EXPECT_TRUE(generated->empty());
}

// --- Annotation errors -----------------------------------------------------------------------

struct BadAnnotation {
  std::string name;
  std::string resource_extra;  // appended inside the resource option
  std::string kind_fields;     // extra fields of the kind message
  std::string spec_fields;     // fields of the spec message
  std::string other;           // further declarations
  std::string expected_error;
};

std::string BadProto(const BadAnnotation& c) {
  return R"(syntax = "proto3";
package bad.test;
import "slurmoperator/crd/options.proto";
message Thing {
  option (slurmoperator.crd.resource) = {
    group: "g.example.com" version: "v1" kind: "Thing" plural: "things" )" +
         c.resource_extra + R"(
  };
  ThingSpec spec = 1;
)" + c.kind_fields +
         R"(}
message ThingSpec {
)" + c.spec_fields +
         "}\n" + c.other;
}

TEST(GenerateCrdsTest, RejectsInconsistentAnnotations) {
  const std::vector<BadAnnotation> cases = {
      {"enum on an integer", "", "",
       "int32 n = 1 [(slurmoperator.crd.field) = {enum_values: [\"1\"]}];", "",
       "bad.test.ThingSpec.n: `enum_values` needs a string field"},
      {"length on an integer", "", "", "int64 n = 1 [(slurmoperator.crd.field) = {max_length: 3}];",
       "", "bad.test.ThingSpec.n: `min_length`/`max_length`/`pattern` need a string field"},
      {"default that is not JSON", "", "",
       "string s = 1 [(slurmoperator.crd.field) = {default_json: \"Cancel\"}];", "",
       "default_json is not JSON"},
      {"default of the wrong type", "", "",
       "int32 n = 1 [(slurmoperator.crd.field) = {default_json: \"\\\"3\\\"\"}];", "",
       "does not match type integer"},
      {"default outside the enum", "", "",
       "string s = 1 [(slurmoperator.crd.field) = {enum_values: [\"A\"], default_json: "
       "\"\\\"B\\\"\"}];",
       "", "is not in enum"},
      {"optional list-map key", "", "",
       "repeated Item items = 1 [(slurmoperator.crd.field) = {list_type: \"map\", list_map_keys: "
       "[\"key\"]}];",
       "message Item { string key = 1; }", "list map key \"key\" must be required or defaulted"},
      {"list-map without keys", "", "",
       "repeated Item items = 1 [(slurmoperator.crd.field) = {list_type: \"map\"}];",
       "message Item { string key = 1; }", "list_type `map` needs `list_map_keys`"},
      {"list type on a scalar", "", "",
       "string s = 1 [(slurmoperator.crd.field) = {list_type: \"set\"}];", "",
       "`list_type` needs a repeated field"},
      {"recursive message", "", "", "Node root = 1;",
       "message Node { repeated Node children = 1; }", "bad.test.Node contains itself"},
      {"printer column on a missing field",
       "printer_columns: [{name: \"X\", type: \"string\", "
       "json_path: \".spec.nope\"}]",
       "", "string s = 1;", "", "printer column X: no property \"nope\" in .spec.nope"},
      {"printer column of an unknown type",
       "printer_columns: [{name: \"X\", type: \"text\", "
       "json_path: \".spec.s\"}]",
       "", "string s = 1;", "", "needs a name, a type"},
      {"field named like the envelope", "", "string kind = 2;", "", "",
       "field \"kind\" is reserved"},
      {"unknown validation reason", "", "",
       "string s = 1 [(slurmoperator.crd.field) = {validations: [{rule: \"true\", reason: "
       "\"Nope\"}]}];",
       "", "unknown validation reason \"Nope\""},
      {"bad scope", "scope: \"Global\"", "", "", "", "scope must be Namespaced or Cluster"},
  };
  for (const BadAnnotation& c : cases) {
    SCOPED_TRACE(c.name);
    ProtoWorkspace workspace;
    workspace.Write("bad.proto", BadProto(c));
    const FileDescriptor* file = workspace.Import("bad.proto");
    ASSERT_NE(file, nullptr);
    absl::StatusOr<std::vector<GeneratedFile>> generated = GenerateCrds({file}, {});
    ASSERT_FALSE(generated.ok());
    EXPECT_EQ(generated.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(generated.status().message()), HasSubstr(c.expected_error));
  }
}

// --- Helpers ---------------------------------------------------------------------------------

TEST(ToYamlTest, StringsReadBackExactly) {
  const std::vector<std::string> tricky = {
      "True",       "false",      "yes",       "off",
      "null",       "~",          "1",         "-1",
      "1.5",        ".5",         "0x1F",      "1e3",
      "1:20",       "",           "a: b",      "`Cancel` (default)",
      "\"quoted\"", "#!/bin/sh",  "- x",       "it's",
      "a #b",       "two\nlines", "tab\there", "trailing ",
      "% percent",  "@at",        "[x]",       "{y}",
      "*star",      "&amp",       "!bang",     "|pipe",
      ">gt",        "?q"};
  nlohmann::ordered_json document = nlohmann::ordered_json::object();
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const std::string& s : tricky) list.push_back(s);
  document["values"] = list;
  const YAML::Node loaded = YAML::Load(ToYaml(document, "# header\n"));
  ASSERT_EQ(loaded["values"].size(), tricky.size());
  for (size_t i = 0; i < tricky.size(); ++i) {
    EXPECT_EQ(loaded["values"][i].as<std::string>(), tricky[i]) << i;
  }
  // Strings that plain YAML would read as booleans, numbers or null are quoted.
  for (size_t i = 0; i < 13; ++i) {
    EXPECT_EQ(loaded["values"][i].Tag(), "!") << tricky[i] << " was not quoted";
  }
}

TEST(ToYamlTest, ScalarsKeepTheirTypesAndEmptyContainersStayFlow) {
  nlohmann::ordered_json document = {{"b", true},
                                     {"i", -3},
                                     {"u", 7u},
                                     {"m", nlohmann::ordered_json::object()},
                                     {"a", nlohmann::ordered_json::array()}};
  const std::string yaml = ToYaml(document, "# h\n");
  EXPECT_THAT(yaml, StartsWith("# h\nb: true\ni: -3\nu: 7\nm: {}\na: []\n"));
}

TEST(CommentToDescriptionTest, TrimsJoinsAndKeepsParagraphs) {
  EXPECT_EQ(CommentToDescription(" First line\n second line.\n"), "First line second line.");
  EXPECT_EQ(CommentToDescription(" One.\n\n Two.\n"), "One.\n\nTwo.");
  EXPECT_EQ(CommentToDescription("\n\n"), "");
  EXPECT_EQ(CommentToDescription(" Block\n * comment\n "), "Block comment");
}

TEST(ParseParameterTest, SourcePrefixAndUnknownKeys) {
  absl::StatusOr<GeneratorOptions> defaults = ParseParameter("");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->source_prefix, "proto/");
  absl::StatusOr<GeneratorOptions> custom = ParseParameter("source_prefix=api/");
  ASSERT_TRUE(custom.ok());
  EXPECT_EQ(custom->source_prefix, "api/");
  EXPECT_FALSE(ParseParameter("colour=blue").ok());
}

}  // namespace
}  // namespace slurmop::crdgen
