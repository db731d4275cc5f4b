// File: tests/reconcile/cluster_status_test.cc

#include "controller/reconcile/cluster_status.h"

#include "controller/reconcile/conditions.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

using ::testing::HasSubstr;

const Time kT0 = Time(std::chrono::seconds(1'700'000'000));

v1alpha1::SlurmClusterSpec Spec() {
  v1alpha1::SlurmClusterSpec s;
  s.set_project_id("proj");
  s.set_region("us-central1");
  s.set_cluster_id("c1");
  s.set_slurm_api_version("v0.0.40");
  return s;
}

const v1alpha1::Condition& Ready(const v1alpha1::SlurmClusterStatus& s) {
  const v1alpha1::Condition* c = FindCondition(s.conditions(), kReady);
  EXPECT_NE(c, nullptr);
  static v1alpha1::Condition none;
  return c ? *c : none;
}

TEST(ClusterStatus, ReachableIsReadyAndProbedSlowly) {
  ProbeOutcome p;
  p.slurm_http_status = 200;
  v1alpha1::SlurmClusterStatus s = ClusterStatusFromProbe({}, Spec(), p, 3, kT0);
  EXPECT_EQ(Ready(s).status(), "True");
  EXPECT_EQ(Ready(s).reason(), "Reachable");
  EXPECT_THAT(Ready(s).message(), HasSubstr("v0.0.40"));
  EXPECT_EQ(s.observed_generation(), 3);
  EXPECT_EQ(NextProbe(s), std::chrono::minutes(5));
}

struct Case {
  std::string name;
  ProbeOutcome probe;
  std::string reason;
  std::string message_part;
};

class ClusterNotReady : public ::testing::TestWithParam<Case> {};

TEST_P(ClusterNotReady, SaysWhyAndRetriesSooner) {
  v1alpha1::SlurmClusterStatus s = ClusterStatusFromProbe({}, Spec(), GetParam().probe, 1, kT0);
  EXPECT_EQ(Ready(s).status(), "False");
  EXPECT_EQ(Ready(s).reason(), GetParam().reason);
  EXPECT_THAT(Ready(s).message(), HasSubstr(GetParam().message_part));
  EXPECT_EQ(NextProbe(s), std::chrono::minutes(1));
}

ProbeOutcome Call(absl::Status s) {
  ProbeOutcome p;
  p.call = std::move(s);
  return p;
}

ProbeOutcome Slurm(int status, std::string detail) {
  ProbeOutcome p;
  p.slurm_http_status = status;
  p.slurm_detail = std::move(detail);
  return p;
}

ProbeOutcome BadSpec() {
  ProbeOutcome p;
  p.spec = absl::InvalidArgumentError("SlurmCluster spec.slurmApiVersion: unsupported");
  return p;
}

INSTANTIATE_TEST_SUITE_P(
    Causes, ClusterNotReady,
    ::testing::Values(
        Case{"Spec", BadSpec(), "InvalidSpec", "unsupported"},
        Case{"Credentials", Call(absl::UnauthenticatedError("no ADC")), "CredentialsInvalid",
             "credentialsSecretRef"},
        Case{"Permission", Call(absl::PermissionDeniedError("denied")), "PermissionDenied",
             "roles/aiplatform.user"},
        Case{"NotFound", Call(absl::NotFoundError("no such cluster")), "ClusterNotFound",
             "projects/proj/locations/us-central1/modelDevelopmentClusters/c1"},
        Case{"Unavailable", Call(absl::UnavailableError("503")), "Unreachable", "retrying"},
        Case{"VersionNotServed", Slurm(404, "Unable find requested URL"), "VersionNotServed",
             "spec.slurmApiVersion"},
        Case{"SlurmError", Slurm(500, "slurmctld down"), "SlurmUnhealthy", "slurmctld down"}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(ClusterStatus, TransitionTimeStaysWhileTheStatusHolds) {
  ProbeOutcome ok;
  ok.slurm_http_status = 200;
  v1alpha1::SlurmClusterStatus s1 = ClusterStatusFromProbe({}, Spec(), ok, 1, kT0);
  v1alpha1::SlurmClusterStatus s2 =
      ClusterStatusFromProbe(s1, Spec(), ok, 1, kT0 + std::chrono::minutes(5));
  EXPECT_EQ(Ready(s2).last_transition_time().seconds(), Ready(s1).last_transition_time().seconds());
}

}  // namespace
}  // namespace slurmop::reconcile
