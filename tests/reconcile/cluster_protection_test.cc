// File: tests/reconcile/cluster_protection_test.cc

#include "controller/reconcile/cluster_protection.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Kind = ProtectionStep::Kind;

ProtectionStep Protect(const std::string& s) { return {Kind::kProtectSecret, s, false}; }
ProtectionStep Release(const std::string& s) { return {Kind::kReleaseSecret, s, false}; }
ProtectionStep Patch(bool finalizer, const std::string& s, const std::string& pending = "") {
  return {Kind::kPatchCluster, s, finalizer, pending};
}

ProtectionFacts Facts(bool in_use, bool has_finalizer, const std::string& wanted,
                      const std::string& protected_secret, bool deleting = false,
                      const std::string& pending = "") {
  ProtectionFacts f;
  f.in_use = in_use;
  f.has_finalizer = has_finalizer;
  f.wanted_secret = wanted;
  f.protected_secret = protected_secret;
  f.deleting = deleting;
  f.pending_secret = pending;
  return f;
}

TEST(PlanProtection, AClusterNoJobNamesNeedsNothing) {
  EXPECT_THAT(PlanProtection(Facts(false, false, "creds", "")), IsEmpty());
}

// The cluster's finalizer, with the Secret named as pending, in one patch (deleting the
// namespace now cannot take the cluster and leave the Secret protected for good); then the
// Secret; then the record that it is protected. Two patches, as before the pending annotation.
TEST(PlanProtection, FirstJobKeepsTheClusterThenTheSecret) {
  EXPECT_THAT(PlanProtection(Facts(true, false, "creds", "")),
              ElementsAre(Patch(true, "", "creds"), Protect("creds"), Patch(true, "creds")));
}

// Stopped before the record, then the last SlurmJob gone: the pending Secret is released too
// (the namespace's deletion completes).
TEST(PlanProtection, APendingSecretIsReleasedWithTheCluster) {
  EXPECT_THAT(PlanProtection(Facts(false, true, "creds", "", /*deleting=*/true, "creds")),
              ElementsAre(Release("creds"), Patch(false, "")));
}

// An operator from before the pending annotation protected the Secret before recording it: with
// nothing recorded, the Secret the cluster names is released with it.
TEST(PlanProtection, AnUnrecordedSecretOfAnOlderOperatorIsReleasedWithTheCluster) {
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
// way) both stay; the last one gone moves the Secret from the protected annotation to the
// pending one, releases it, then the cluster.
TEST(PlanProtection, LastJobGoneReleasesTheSecretBeforeTheCluster) {
  EXPECT_THAT(PlanProtection(Facts(false, true, "creds", "creds", /*deleting=*/true)),
              ElementsAre(Patch(true, "", "creds"), Release("creds"), Patch(false, "")));
  EXPECT_THAT(PlanProtection(Facts(false, true, "creds", "creds")),
              ElementsAre(Patch(true, "", "creds"), Release("creds"), Patch(false, "")));
}

// A model of one SlurmCluster and the Secrets it may name, for the plans below.
struct World {
  bool deleting = false;  // the SlurmCluster's deletionTimestamp (once set, it stays)
  bool cluster_finalizer = false;
  std::string protected_secret, pending_secret;
  std::set<std::string> kept;  // Secrets carrying kCredentialsInUseFinalizer

  ProtectionFacts FactsFor(bool in_use, const std::string& wanted) const {
    return Facts(in_use, cluster_finalizer, wanted, protected_secret, deleting, pending_secret);
  }
  void Apply(const ProtectionStep& step) {
    switch (step.kind) {
      case Kind::kProtectSecret:
        kept.insert(step.secret);
        break;
      case Kind::kReleaseSecret:
        kept.erase(step.secret);
        break;
      case Kind::kPatchCluster:
        cluster_finalizer = step.finalizer;
        protected_secret = step.secret;
        pending_secret = step.pending;
        break;
    }
  }
  // Plans for these facts and carries out the first `max_steps` steps (a conflict or a crash
  // stops the rest).
  void Run(bool in_use, const std::string& wanted, size_t max_steps = SIZE_MAX) {
    const std::vector<ProtectionStep> steps = PlanProtection(FactsFor(in_use, wanted));
    for (size_t i = 0; i < steps.size() && i < max_steps; ++i) Apply(steps[i]);
  }
  // What a SlurmJob relies on (KeptWhileInUse) is true, and every protected Secret is one the
  // annotations remember (so that a later plan can release it).
  std::string Broken(const std::string& wanted) const {
    if (KeptWhileInUse(FactsFor(true, wanted)) && !wanted.empty() && !kept.contains(wanted)) {
      return "the cluster counts as kept but its Secret " + wanted + " is not";
    }
    for (const std::string& s : kept) {
      if (s != protected_secret && s != pending_secret) return s + " is kept and forgotten";
    }
    return "";
  }
  std::string Describe() const {
    return absl::StrCat("finalizer=", cluster_finalizer, " protected=", protected_secret,
                        " pending=", pending_secret, " kept={", absl::StrJoin(kept, ","), "}");
  }
};

// Every history of up to three plans, each for any use, any Secret reference, with the
// SlurmCluster being deleted from any point on, and each stopped after any of its steps: what the
// annotations say is true after each, and a last plan run to the end keeps exactly the wanted
// Secret, or releases everything. Before the pending annotation, a first protection stopped before
// its record, or a changed reference stopped midway, and then a changed reference left a Secret
// protected for good (a namespace that never finishes deleting), or the old Secret named but
// released (a namespace deletion takes the Secret a cancel needs). A release stopped anywhere and a
// new SlurmJob (seed 9120748 of the simulation) is one of these histories.
TEST(PlanProtection, AnyHistoryOfStoppedPlansEndsKeptOrReleased) {
  const std::vector<std::string> refs = {"a", "b", ""};
  struct Run {
    bool in_use;
    std::string wanted;
    size_t stop;
    bool deleting;
  };
  std::vector<Run> runs;
  for (bool in_use : {true, false}) {
    for (const std::string& w : refs) {
      for (size_t stop = 0; stop <= 6; ++stop) {
        for (bool deleting : {false, true}) runs.push_back({in_use, w, stop, deleting});
      }
    }
  }
  int histories = 0;
  for (const Run& r1 : runs) {
    for (const Run& r2 : runs) {
      for (const Run& r3 : runs) {
        World w;
        std::string trace;
        for (const Run& r : {r1, r2, r3}) {
          w.deleting = w.deleting || r.deleting;
          w.Run(r.in_use, r.wanted, r.stop);
          absl::StrAppend(&trace, " | in_use=", r.in_use, " wanted=", r.wanted, " stop=", r.stop,
                          " deleting=", w.deleting, " -> ", w.Describe());
          const std::string broken = w.Broken(r.wanted);
          ASSERT_EQ(broken, "") << trace;
        }
        for (const std::string& wanted : refs) {
          World kept = w;
          kept.Run(true, wanted);
          ASSERT_EQ(kept.Broken(wanted), "") << trace;
          // Without its finalizer, a SlurmCluster being deleted cannot be kept (and is gone).
          const bool can_keep = !w.deleting || w.cluster_finalizer;
          ASSERT_EQ(KeptWhileInUse(kept.FactsFor(true, wanted)), can_keep) << trace;
          const std::set<std::string> only =
              wanted.empty() || !can_keep ? std::set<std::string>{} : std::set<std::string>{wanted};
          ASSERT_EQ(kept.kept, only) << trace << " | then kept for " << wanted;
          World released = w;
          released.Run(false, wanted);
          ASSERT_THAT(released.kept, IsEmpty()) << trace << " | then released";
          ASSERT_FALSE(released.cluster_finalizer) << trace << " | then released";
        }
        ++histories;
      }
    }
  }
  EXPECT_EQ(histories, 84 * 84 * 84);
}

// The new Secret is pending, then protected, then recorded with the old one pending; the old one
// is released; the pending annotation goes.
TEST(PlanProtection, AChangedSecretReferenceMovesTheProtection) {
  EXPECT_THAT(PlanProtection(Facts(true, true, "new", "old")),
              ElementsAre(Patch(true, "old", "new"), Protect("new"), Patch(true, "new", "old"),
                          Release("old"), Patch(true, "new")));
  EXPECT_THAT(PlanProtection(Facts(true, true, "", "old")),
              ElementsAre(Patch(true, "", "old"), Release("old"), Patch(true, "")));
}

// Stopped after the new Secret was protected, and the reference changed back: the new one is
// released, the old one is still the protected one.
TEST(PlanProtection, AMoveStoppedMidwayAndTurnedBackReleasesTheNewSecret) {
  EXPECT_THAT(PlanProtection(Facts(true, true, "old", "old", false, "new")),
              ElementsAre(Release("new"), Patch(true, "old")));
  // Stopped after the record (and maybe the release of the old one): the old one is protected
  // again before the annotation names it.
  EXPECT_THAT(
      PlanProtection(Facts(true, true, "old", "new", false, "old")),
      ElementsAre(Protect("old"), Patch(true, "old", "new"), Release("new"), Patch(true, "old")));
}

// The API server refuses a new finalizer on an object being deleted: do not ask for one.
TEST(PlanProtection, ADeletedClusterWithoutTheFinalizerIsNotReprotected) {
  EXPECT_THAT(PlanProtection(Facts(true, false, "creds", "", /*deleting=*/true)), IsEmpty());
  EXPECT_THAT(PlanProtection(Facts(true, false, "creds", "creds", /*deleting=*/true)),
              ElementsAre(Patch(false, "", "creds"), Release("creds"), Patch(false, "")));
}

}  // namespace
}  // namespace slurmop::reconcile
