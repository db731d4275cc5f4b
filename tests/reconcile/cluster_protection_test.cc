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
// way) both stay; the last one gone takes the annotation off, releases the Secret, then the
// cluster.
TEST(PlanProtection, LastJobGoneReleasesTheSecretBeforeTheCluster) {
  EXPECT_THAT(PlanProtection(Facts(false, true, "creds", "creds", /*deleting=*/true)),
              ElementsAre(Patch(true, ""), Release("creds"), Patch(false, "")));
  EXPECT_THAT(PlanProtection(Facts(false, true, "creds", "creds")),
              ElementsAre(Patch(true, ""), Release("creds"), Patch(false, "")));
}

// What the steps leave in the store: the cluster's finalizer and annotation, the Secret's
// finalizer.
struct Stored {
  bool cluster_finalizer = false;
  std::string annotation;
  bool secret_kept = false;
};
void ApplyStep(const ProtectionStep& step, Stored& s) {
  switch (step.kind) {
    case Kind::kProtectSecret:
      s.secret_kept = true;
      break;
    case Kind::kReleaseSecret:
      s.secret_kept = false;
      break;
    case Kind::kPatchCluster:
      s.cluster_finalizer = step.finalizer;
      s.annotation = step.secret;
      break;
  }
}
Stored Plan(bool in_use, Stored s, size_t max_steps = SIZE_MAX) {
  const std::vector<ProtectionStep> steps =
      PlanProtection(Facts(in_use, s.cluster_finalizer, "creds", s.annotation));
  for (size_t i = 0; i < steps.size() && i < max_steps; ++i) ApplyStep(steps[i], s);
  return s;
}

// The last SlurmJob goes, the release stops after any of its steps (a conflict, a crash), and a
// new SlurmJob names the cluster: the Secret is kept again. Before, the Secret was released
// first: stopped there, the annotation still named it and the new SlurmJob's plan was empty,
// so a namespace deletion took the Secret a cancel or a search needed (seed 9120748 of the
// simulation).
TEST(PlanProtection, AReleaseStoppedAnywhereIsUndoneByTheNextJob) {
  const Stored kept = Plan(true, Stored{});
  ASSERT_TRUE(kept.secret_kept);
  ASSERT_EQ(kept.annotation, "creds");
  for (size_t stopped_after = 0; stopped_after <= 3; ++stopped_after) {
    const Stored partly = Plan(false, kept, stopped_after);
    EXPECT_TRUE(partly.annotation.empty() || partly.secret_kept)
        << "after " << stopped_after << " steps the annotation names a released Secret";
    const Stored again = Plan(true, partly);
    EXPECT_TRUE(again.secret_kept) << "release stopped after " << stopped_after << " steps";
    EXPECT_TRUE(again.cluster_finalizer);
    EXPECT_EQ(again.annotation, "creds");
    // And with no SlurmJob left, everything is released.
    const Stored released = Plan(false, partly);
    EXPECT_FALSE(released.secret_kept) << "release stopped after " << stopped_after << " steps";
    EXPECT_FALSE(released.cluster_finalizer);
  }
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
              ElementsAre(Release("creds"), Patch(false, "")));  // no finalizer to keep meanwhile
}

}  // namespace
}  // namespace slurmop::reconcile
