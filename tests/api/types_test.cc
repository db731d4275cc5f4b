// File: tests/api/types_test.cc
//
// Tests of controller/api/types.h (typed views of full objects) and controller/api/resources.h
// (names that must agree with the proto resource options, from which the CRDs are generated).

#include "controller/api/types.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "controller/api/cron_resources.h"
#include "controller/api/resources.h"
#include "slurmoperator/crd/options.pb.h"
#include "slurmoperator/v1alpha1/slurmcronjob.pb.h"

namespace slurmop::api {
namespace {

using ::nlohmann::json;

const json kHelloObject = R"({
  "apiVersion": "hpc.slurmoperator.dev/v1alpha1",
  "kind": "SlurmJob",
  "metadata": {
    "name": "hello", "namespace": "default", "resourceVersion": "1234", "generation": 2,
    "finalizers": ["hpc.slurmoperator.dev/slurm-job"]
  },
  "spec": {
    "clusterRef": {"name": "local"},
    "partition": "debug",
    "script": "#!/bin/bash\necho hello\nsleep 3\n",
    "timeLimitMinutes": 5,
    "environment": [{"name": "GREETING", "value": "hello"}],
    "deletionPolicy": "Cancel"
  },
  "status": {
    "jobId": 42, "jobState": "COMPLETED", "phase": "Succeeded", "observedGeneration": 2,
    "exitCode": 0, "endTime": "2024-05-01T12:34:56Z"
  }
})"_json;

TEST(SlurmJobFromObjectTest, ReadsSpecAndStatus) {
  absl::StatusOr<v1alpha1::SlurmJob> job = SlurmJobFromObject(kHelloObject);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec().cluster_ref().name(), "local");
  EXPECT_EQ(job->spec().time_limit_minutes(), 5);
  ASSERT_EQ(job->spec().environment_size(), 1);
  EXPECT_EQ(job->spec().environment(0).value(), "hello");
  EXPECT_EQ(job->status().job_id(), 42);
  EXPECT_TRUE(job->status().has_exit_code());
  EXPECT_EQ(job->status().end_time().seconds(), 1714566896);
}

TEST(SlurmJobFromObjectTest, ObjectWithoutStatusOrEnvelope) {
  absl::StatusOr<v1alpha1::SlurmJob> job =
      SlurmJobFromObject(R"({"spec": {"script": "#!/bin/sh\n"}})"_json);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_FALSE(job->has_status());
  EXPECT_EQ(job->spec().script(), "#!/bin/sh\n");
}

TEST(SlurmJobFromObjectTest, ErrorsNameThePathFromTheObjectRoot) {
  json object = kHelloObject;
  object["spec"]["nodes"] = "abc";
  absl::StatusOr<v1alpha1::SlurmJob> job = SlurmJobFromObject(object);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(job.status().message(), "spec.nodes: expected an integer, got \"abc\"");
}

TEST(SlurmJobFromObjectTest, RejectsOtherKindsAndVersionsAndNonObjects) {
  json cluster = kHelloObject;
  cluster["kind"] = "SlurmCluster";
  EXPECT_EQ(SlurmJobFromObject(cluster).status().message(),
            "kind: expected \"SlurmJob\", got \"SlurmCluster\"");
  json other_version = kHelloObject;
  other_version["apiVersion"] = "hpc.slurmoperator.dev/v1";
  EXPECT_EQ(SlurmJobFromObject(other_version).status().message(),
            "apiVersion: expected \"hpc.slurmoperator.dev/v1alpha1\", got "
            "\"hpc.slurmoperator.dev/v1\"");
  EXPECT_FALSE(SlurmJobFromObject(json::array()).ok());
  EXPECT_FALSE(SlurmJobFromObject(json("SlurmJob")).ok());
}

TEST(SlurmClusterFromObjectTest, ReadsSpec) {
  absl::StatusOr<v1alpha1::SlurmCluster> cluster = SlurmClusterFromObject(R"({
    "apiVersion": "hpc.slurmoperator.dev/v1alpha1", "kind": "SlurmCluster",
    "metadata": {"name": "local"},
    "spec": {"projectId": "demo-project", "region": "us-central1", "clusterId": "demo-cluster",
             "slurmApiVersion": "v0.0.42", "endpoint": "http://127.0.0.1:18443",
             "credentialsSecretRef": {"name": "adc"}},
    "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Reachable",
                               "message": "ok", "lastTransitionTime": "2024-05-01T12:34:56Z"}]}
  })"_json);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_EQ(cluster->spec().project_id(), "demo-project");
  EXPECT_EQ(cluster->spec().endpoint(), "http://127.0.0.1:18443");
  EXPECT_EQ(cluster->spec().credentials_secret_ref().name(), "adc");
  ASSERT_EQ(cluster->status().conditions_size(), 1);
  EXPECT_EQ(cluster->status().conditions(0).reason(), "Reachable");
  EXPECT_FALSE(SlurmClusterFromObject(kHelloObject).ok());  // a SlurmJob
}

// SlurmClusterSpecOf converts through the wire format: every SlurmClusterSpec field must exist in
// ClusterSlurmClusterSpec with the same number, name, type and cardinality, and the only extra
// field is namespaceSelector.
TEST(ClusterSlurmClusterTest, SpecHasExactlySlurmClusterSpecsFieldsPlusTheSelector) {
  const google::protobuf::Descriptor* plain = v1alpha1::SlurmClusterSpec::descriptor();
  const google::protobuf::Descriptor* scoped = v1alpha1::ClusterSlurmClusterSpec::descriptor();
  ASSERT_EQ(scoped->field_count(), plain->field_count() + 1);
  for (int i = 0; i < plain->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = plain->field(i);
    const google::protobuf::FieldDescriptor* g = scoped->FindFieldByNumber(f->number());
    ASSERT_NE(g, nullptr) << f->name();
    EXPECT_EQ(g->name(), f->name());
    EXPECT_EQ(g->type(), f->type()) << f->name();
    EXPECT_EQ(g->is_repeated(), f->is_repeated()) << f->name();
    EXPECT_EQ(g->message_type(), f->message_type()) << f->name();
  }
  const google::protobuf::FieldDescriptor* selector = scoped->FindFieldByName("namespace_selector");
  ASSERT_NE(selector, nullptr);
  EXPECT_EQ(plain->FindFieldByNumber(selector->number()), nullptr);
}

TEST(ClusterSlurmClusterTest, ReadsAsTheSlurmClusterItDescribesPlusItsSelector) {
  absl::StatusOr<ClusterScopedCluster> c = ClusterSlurmClusterFromObject(R"({
    "apiVersion": "hpc.slurmoperator.dev/v1alpha1", "kind": "ClusterSlurmCluster",
    "metadata": {"name": "shared"},
    "spec": {"projectId": "p", "region": "us-central1", "clusterId": "c", "defaultPartition": "a3",
             "credentialsSecretRef": {"name": "installer"},
             "defaultEnvironment": [{"name": "A", "value": "1"}],
             "namespaceSelector": {"matchLabels": {"team": "a"}}},
    "status": {"observedGeneration": 3}
  })"_json);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cluster.spec().project_id(), "p");
  EXPECT_EQ(c->cluster.spec().default_partition(), "a3");
  EXPECT_EQ(c->cluster.spec().credentials_secret_ref().name(), "installer");
  ASSERT_EQ(c->cluster.spec().default_environment_size(), 1);
  EXPECT_EQ(c->cluster.status().observed_generation(), 3);
  ASSERT_TRUE(c->namespace_selector.has_value());
  EXPECT_EQ(c->namespace_selector->match_labels().at("team"), "a");
  EXPECT_TRUE(c->cluster.spec().GetReflection()->GetUnknownFields(c->cluster.spec()).empty());

  absl::StatusOr<ClusterScopedCluster> open = ClusterSlurmClusterFromObject(
      R"({"kind": "ClusterSlurmCluster", "spec": {"namespaceSelector": {}}})"_json);
  ASSERT_TRUE(open.ok());
  EXPECT_TRUE(open->namespace_selector.has_value()) << "{} is a selector (every namespace)";
  absl::StatusOr<ClusterScopedCluster> closed =
      ClusterSlurmClusterFromObject(R"({"kind": "ClusterSlurmCluster", "spec": {}})"_json);
  ASSERT_TRUE(closed.ok());
  EXPECT_FALSE(closed->namespace_selector.has_value());
  EXPECT_FALSE(
      ClusterSlurmClusterFromObject(R"({"kind": "SlurmCluster", "spec": {"projectId": "p"}})"_json)
          .ok());
}

TEST(StatusToJsonTest, WritesOnlyTheStatus) {
  v1alpha1::SlurmJobStatus status;
  status.set_job_id(42);
  status.set_phase("Running");
  status.set_observed_generation(2);
  status.mutable_start_time()->set_seconds(1714566896);
  EXPECT_EQ(StatusToJson(status), R"({"jobId": 42, "phase": "Running", "observedGeneration": 2,
                                      "startTime": "2024-05-01T12:34:56Z"})"_json);
  v1alpha1::SlurmClusterStatus cluster_status;
  cluster_status.set_observed_generation(1);
  EXPECT_EQ(StatusToJson(cluster_status), R"({"observedGeneration": 1})"_json);
}

TEST(ResourcesTest, ConstantsMatchTheProtoResourceOptions) {
  const auto& job =
      v1alpha1::SlurmJob::descriptor()->options().GetExtension(::slurmoperator::crd::resource);
  EXPECT_EQ(job.group(), kGroup);
  EXPECT_EQ(job.version(), kVersion);
  EXPECT_EQ(job.kind(), kSlurmJobKind);
  EXPECT_EQ(job.plural(), kSlurmJobPlural);
  EXPECT_EQ(job.singular(), kSlurmJobSingular);
  const auto& cluster =
      v1alpha1::SlurmCluster::descriptor()->options().GetExtension(::slurmoperator::crd::resource);
  EXPECT_EQ(cluster.group(), kGroup);
  EXPECT_EQ(cluster.version(), kVersion);
  EXPECT_EQ(cluster.kind(), kSlurmClusterKind);
  EXPECT_EQ(cluster.plural(), kSlurmClusterPlural);
  EXPECT_EQ(cluster.singular(), kSlurmClusterSingular);
  const auto& scoped = v1alpha1::ClusterSlurmCluster::descriptor()->options().GetExtension(
      ::slurmoperator::crd::resource);
  EXPECT_EQ(scoped.group(), kGroup);
  EXPECT_EQ(scoped.version(), kVersion);
  EXPECT_EQ(scoped.kind(), kClusterSlurmClusterKind);
  EXPECT_EQ(scoped.plural(), kClusterSlurmClusterPlural);
  EXPECT_EQ(scoped.singular(), kClusterSlurmClusterSingular);
  EXPECT_EQ(scoped.scope(), "Cluster");
  const auto& cron =
      v1alpha1::SlurmCronJob::descriptor()->options().GetExtension(::slurmoperator::crd::resource);
  EXPECT_EQ(cron.group(), kGroup);
  EXPECT_EQ(cron.version(), kVersion);
  EXPECT_EQ(cron.kind(), kSlurmCronJobKind);
  EXPECT_EQ(cron.plural(), kSlurmCronJobPlural);
  EXPECT_EQ(cron.singular(), kSlurmCronJobSingular);
  EXPECT_EQ(kApiVersion, std::string(kGroup) + "/" + std::string(kVersion));
  EXPECT_EQ(kSlurmJobFinalizer, std::string(kGroup) + "/slurm-job");
}

}  // namespace
}  // namespace slurmop::api
