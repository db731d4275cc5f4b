// File: tests/reconcile/cluster_protection_test.cc

#include "controller/reconcile/cluster_protection.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Kind = ProtectionStep::Kind;

ProtectionStep Protect(const std::string& s) { return {Kind::kProtectSecret, s, false}; }
ProtectionStep Release(const std::string& s) { return {Kind::kReleaseSecret, s, false}; }
ProtectionStep Patch(bool finalizer, const std::string& s) {
  return {Kind::kPatchCluster, s, finalizer};
}

ProtectionFacts Facts(bool in_use, bool has_finalizer, const std::string& wanted,
                      const std::string& protected_secret, bool deleting = false) {
  ProtectionFacts f;
  f.in_use = in_use;
  f.has_finalizer = has_finalizer;
  f.wanted_secret = wanted;
  f.protected_secret = protected_secret;
  f.deleting = deleting;
  return f;
}

TEST(PlanProtection, AClusterNoJobNamesNeedsNothing) {
  EXPECT_THAT(PlanProtection(Facts(false, false, "creds", "")), IsEmpty());
}

// The cluster's finalizer first (deleting the namespace now cannot take the cluster and leave
// the Secret protected for good), then the Secret: a crash before the last patch leaves a
// protected Secret the annotation does not name yet, and the next reconcile protects it again
// (idempotent) and records it.
TEST(PlanProtection, FirstJobKeepsTheClusterThenTheSecret) {
  EXPECT_THAT(PlanProtection(Facts(true, false, "creds", "")),
              ElementsAre(Patch(true, ""), Protect("creds"), Patch(true, "creds")));
}

// A failure between protecting the Secret and recording it, then the last SlurmJob gone: the
// Secret the cluster names is released too (the namespace's deletion completes).
TEST(PlanProtection, AnUnrecordedSecretIsReleasedWithTheCluster) {
  EXPECT_THAT(PlanProtection(Facts(false, true, "creds", "", /*deleting=*/true)),
              ElementsAre(Release("creds"), Patch(false, "")));
}

TEST(PlanProtection, WithoutCredentialsOnlyTheClusterIsKept) {
  EXPECT_THAT(PlanProtection(Facts(true, false, "", "")), ElementsAre(Patch(true, "")));
}

TEST(PlanProtection, AProtectedClusterInUseNeedsNothing) {
  EXPECT_THAT(PlanProtection(Facts(true, true, "creds", "creds")), IsEmpty());
  EXPECT_THAT(PlanProtection(Facts(true, true, "creds", "creds", /*deleting=*/true)), IsEmpty());
}

// The namespace is being deleted: while a SlurmJob still names the cluster (its cancel is under
// way) both stay; the last one gone releases the Secret, then the cluster.
TEST(PlanProtection, LastJobGoneReleasesTheSecretBeforeTheCluster) {
  EXPECT_THAT(PlanProtection(Facts(false, true, "creds", "creds", /*deleting=*/true)),
              ElementsAre(Release("creds"), Patch(false, "")));
  EXPECT_THAT(PlanProtection(Facts(false, true, "creds", "creds")),
              ElementsAre(Release("creds"), Patch(false, "")));
}

TEST(PlanProtection, AChangedSecretReferenceMovesTheProtection) {
  EXPECT_THAT(PlanProtection(Facts(true, true, "new", "old")),
              ElementsAre(Protect("new"), Release("old"), Patch(true, "new")));
  EXPECT_THAT(PlanProtection(Facts(true, true, "", "old")),
              ElementsAre(Release("old"), Patch(true, "")));
}

// The API server refuses a new finalizer on an object being deleted: do not ask for one.
TEST(PlanProtection, ADeletedClusterWithoutTheFinalizerIsNotReprotected) {
  EXPECT_THAT(PlanProtection(Facts(true, false, "creds", "", /*deleting=*/true)), IsEmpty());
  EXPECT_THAT(PlanProtection(Facts(true, false, "creds", "creds", /*deleting=*/true)),
              ElementsAre(Release("creds"), Patch(false, "")));
}

}  // namespace
}  // namespace slurmop::reconcile
