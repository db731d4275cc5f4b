// File: tests/reconcile/cluster_changes_test.cc
//
// ClusterChanges: which watch events of a SlurmCluster wake the cluster's own
// reconcile and which wake the SlurmJobs naming it.

#include "controller/reconcile/cluster_changes.h"

#include "controller/reconcile/cluster_protection.h"
#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

nlohmann::json Cluster(int64_t generation) {
  return {{"metadata", {{"name", "c"}, {"namespace", "ns"}, {"generation", generation}}},
          {"spec", {{"endpoint", "https://example"}}}};
}

nlohmann::json Kept(nlohmann::json cluster) {
  cluster["metadata"]["finalizers"] = {kClusterInUseFinalizer};
  return cluster;
}

nlohmann::json Ready(nlohmann::json cluster, bool ready) {
  cluster["status"]["conditions"] = {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}};
  return cluster;
}

void ExpectWake(ClusterChanges::Wake wake, bool cluster, bool jobs) {
  EXPECT_EQ(wake.cluster, cluster);
  EXPECT_EQ(wake.jobs, jobs);
}

TEST(ClusterChanges, FirstSightWakesTheClusterAndItsJobs) {
  ClusterChanges changes;
  ExpectWake(changes.Observe("ns/c", false, true, Cluster(1)), true, true);
}

TEST(ClusterChanges, AStatusWriteWakesNothing) {
  ClusterChanges changes;
  changes.Observe("ns/c", false, true, Cluster(1));
  ExpectWake(changes.Observe("ns/c", false, true, Ready(Cluster(1), true)), false, false);
}

TEST(ClusterChanges, ANewGenerationWakesTheClusterAndItsJobs) {
  ClusterChanges changes;
  changes.Observe("ns/c", false, true, Cluster(1));
  ExpectWake(changes.Observe("ns/c", false, true, Cluster(2)), true, true);
}

// The protector's merge patch changes metadata only: the generation stays.
// A SlurmJob waiting for its cluster to be kept must still wake up on it.
TEST(ClusterChanges, BeingKeptWakesTheJobsThatWaitForIt) {
  ClusterChanges changes;
  changes.Observe("ns/c", false, true, Cluster(1));
  ExpectWake(changes.Observe("ns/c", false, true, Kept(Cluster(1))), false, true);
  ExpectWake(changes.Observe("ns/c", false, true, Ready(Kept(Cluster(1)), true)), false, false);
  ExpectWake(changes.Observe("ns/c", false, true, Cluster(1)), false, true);  // released
}

// With a credentials Secret the cluster is kept once the annotation names
// the Secret too; the finalizer alone is not enough.
TEST(ClusterChanges, WithASecretTheClusterIsKeptOnceItIsProtectedToo) {
  nlohmann::json cluster = Cluster(1);
  cluster["spec"]["credentialsSecretRef"] = {{"name", "creds"}};
  ClusterChanges changes;
  changes.Observe("ns/c", false, true, cluster);
  cluster = Kept(cluster);
  ExpectWake(changes.Observe("ns/c", false, true, cluster), false, false);
  cluster["metadata"]["annotations"] = {{kProtectedSecretAnnotation, "creds"}};
  ExpectWake(changes.Observe("ns/c", false, true, cluster), false, true);
}

TEST(ClusterChanges, AClusterScopedClusterIsNeverKept) {
  ClusterChanges changes;
  changes.Observe("/c", false, false, Cluster(1));
  ExpectWake(changes.Observe("/c", false, false, Kept(Cluster(1))), false, false);
}

TEST(ClusterChanges, ADeletionWakesTheJobsAndForgetsTheCluster) {
  ClusterChanges changes;
  changes.Observe("ns/c", false, true, Ready(Cluster(3), true));
  ASSERT_EQ(changes.Readiness(), (std::map<std::string, bool>{{"ns/c", true}}));
  ExpectWake(changes.Observe("ns/c", true, true, Cluster(3)), false, true);
  EXPECT_TRUE(changes.Readiness().empty());
  // Made again under the same name: a first sight.
  ExpectWake(changes.Observe("ns/c", false, true, Cluster(1)), true, true);
  EXPECT_EQ(changes.Readiness(), (std::map<std::string, bool>{{"ns/c", false}}));
}

}  // namespace
}  // namespace slurmop::reconcile
