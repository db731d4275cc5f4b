// File: tests/reconcile/job_index_test.cc
//
// The manager's indexes of the cached SlurmJobs (job_index.h), fed with
// watch events as the informer delivers them.

#include "controller/reconcile/job_index.h"

#include "controller/common/time_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

json Job(const std::string& name, const std::string& uid, json spec = json::object(),
         json status = json::object()) {
  return {{"metadata", {{"namespace", "team-a"}, {"name", name}, {"uid", uid}}},
          {"spec", spec},
          {"status", status}};
}

TEST(JobIndex, KnowsTheRunAndJobOfAUid) {
  JobIndex index;
  EXPECT_FALSE(index.OwnerOfUid("u1").exists);
  index.Apply("ADDED", Job("a", "u1"));
  TagOwner o = index.OwnerOfUid("u1");
  EXPECT_TRUE(o.exists);
  EXPECT_EQ(o.run, 0);
  EXPECT_EQ(o.job_id, 0);
  index.Apply("MODIFIED", Job("a", "u1", {}, {{"run", 2}, {"jobId", 42}}));
  o = index.OwnerOfUid("u1");
  EXPECT_EQ(o.run, 2);
  EXPECT_EQ(o.job_id, 42);
}

TEST(JobIndex, ADeletedOrRecreatedSlurmJobForgetsItsOldUid) {
  JobIndex index;
  index.Apply("ADDED", Job("a", "u1"));
  index.Apply("DELETED", Job("a", "u1"));
  EXPECT_FALSE(index.OwnerOfUid("u1").exists);
  // Same name, new incarnation: only the new uid exists.
  index.Apply("ADDED", Job("a", "u1"));
  index.Apply("MODIFIED", Job("a", "u2"));
  EXPECT_FALSE(index.OwnerOfUid("u1").exists);
  EXPECT_TRUE(index.OwnerOfUid("u2").exists);
}

// The orphan sweep leaves alone every job a cached status names (#13 E3).
TEST(JobIndex, KnowsTheJobIdsThatStatusesName) {
  JobIndex index;
  EXPECT_FALSE(index.NamesJobId(42));
  index.Apply("ADDED", Job("a", "u1", {}, {{"jobId", 42}}));
  index.Apply("ADDED", Job("b", "u2", {}, {{"jobId", 42}}));  // e.g. restored from a backup
  EXPECT_TRUE(index.NamesJobId(42));
  index.Apply("DELETED", Job("a", "u1", {}, {{"jobId", 42}}));
  EXPECT_TRUE(index.NamesJobId(42)) << "b still names it";
  index.Apply("MODIFIED", Job("b", "u2", {}, {{"jobId", 43}}));  // its next run
  EXPECT_FALSE(index.NamesJobId(42));
  EXPECT_TRUE(index.NamesJobId(43));
}

TEST(JobIndex, WakesTheSlurmJobsThatDependOnOne) {
  JobIndex index;
  const json deps = {{"dependsOn", json::array({{{"name", "prep"}}, {{"name", "data"}}})}};
  EXPECT_THAT(index.Apply("ADDED", Job("train", "u1", deps)), IsEmpty());
  EXPECT_THAT(index.Apply("ADDED", Job("eval", "u2", {{"dependsOn", {{{"name", "prep"}}}}})),
              IsEmpty());
  EXPECT_THAT(index.Apply("MODIFIED", Job("prep", "u3")),
              ElementsAre("team-a/eval", "team-a/train"));
  EXPECT_THAT(index.Apply("MODIFIED", Job("data", "u4")), ElementsAre("team-a/train"));
  // Once train is gone, prep wakes only eval.
  index.Apply("DELETED", Job("train", "u1", deps));
  EXPECT_THAT(index.Apply("MODIFIED", Job("prep", "u3")), ElementsAre("team-a/eval"));
  EXPECT_THAT(index.Apply("MODIFIED", Job("data", "u4")), IsEmpty());
}

// An edit of spec.dependsOn forgets the names it drops. Before, they stayed for good: a tenant
// editing a SlurmJob's dependsOn (editable until it is submitted) grew the index without bound.
TEST(JobIndex, AnEditOfDependsOnForgetsTheNamesItDrops) {
  JobIndex index;
  index.Apply("ADDED", Job("train", "u1", {{"dependsOn", {{{"name", "prep"}}}}}));
  index.Apply("MODIFIED", Job("train", "u1", {{"dependsOn", {{{"name", "data"}}}}}));
  EXPECT_THAT(index.Apply("MODIFIED", Job("prep", "u3")), IsEmpty());
  EXPECT_THAT(index.Apply("MODIFIED", Job("data", "u4")), ElementsAre("team-a/train"));
  index.Apply("MODIFIED", Job("train", "u1"));  // no dependsOn left
  EXPECT_THAT(index.Apply("MODIFIED", Job("data", "u4")), IsEmpty());
  // A DELETED event forgets what the SlurmJob named, whatever the object it carries says.
  index.Apply("MODIFIED", Job("train", "u1", {{"dependsOn", {{{"name", "prep"}}}}}));
  index.Apply("DELETED", Job("train", "u1"));
  EXPECT_THAT(index.Apply("MODIFIED", Job("prep", "u3")), IsEmpty());
}

TEST(JobIndex, MalformedDependsOnEntriesAreSkipped) {
  JobIndex index;
  const json deps = {{"dependsOn", json::array({42, {{"name", 7}}, {{"name", "prep"}}})}};
  index.Apply("ADDED", Job("train", "u1", deps));
  EXPECT_THAT(index.Apply("MODIFIED", Job("prep", "u3")), ElementsAre("team-a/train"));
}

TEST(JobIndex, FindsTheSlurmJobsNamingACluster) {
  JobIndex index;
  index.Apply("ADDED", Job("a", "u1", {{"clusterRef", {{"name", "a3"}}}}));
  index.Apply("ADDED", Job("b", "u2"));  // the default cluster
  index.Apply("ADDED", Job("c", "u3", {{"clusterRef", {{"name", "other"}}}}));
  EXPECT_THAT(index.Naming("team-a", "a3", ""), ElementsAre("team-a/a"));
  EXPECT_THAT(index.Naming("team-a", "a3", "a3"), ElementsAre("team-a/a", "team-a/b"));
  EXPECT_THAT(index.Naming("team-b", "a3", "a3"), IsEmpty());
}

// The manager asks which SlurmCluster a SlurmJob named before and after an event, to keep that
// cluster (and its Secret) while SlurmJobs name it (cluster_protector.h).
TEST(JobIndex, TellsWhichNamespacedSlurmClusterASlurmJobNames) {
  JobIndex index;
  EXPECT_EQ(index.NamespacedClusterOf("team-a/a", "dflt"), std::nullopt) << "not cached";
  index.Apply("ADDED", Job("a", "u1", {{"clusterRef", {{"name", "a3"}}}}));
  index.Apply("ADDED", Job("b", "u2"));
  index.Apply("ADDED",
              Job("c", "u3", {{"clusterRef", {{"name", "a3"}, {"kind", "ClusterSlurmCluster"}}}}));
  EXPECT_EQ(index.NamespacedClusterOf("team-a/a", "dflt"), "team-a/a3");
  EXPECT_EQ(index.NamespacedClusterOf("team-a/b", "dflt"), "team-a/dflt") << "the default";
  EXPECT_EQ(index.NamespacedClusterOf("team-a/b", ""), std::nullopt) << "no default";
  EXPECT_EQ(index.NamespacedClusterOf("team-a/c", "dflt"), std::nullopt)
      << "a ClusterSlurmCluster lives outside the namespace";
  EXPECT_THAT(index.Naming("team-a", "a3", ""), ElementsAre("team-a/a"));
  index.Apply("MODIFIED", Job("a", "u1", {{"clusterRef", {{"name", "b7"}}}}));
  EXPECT_EQ(index.NamespacedClusterOf("team-a/a", "dflt"), "team-a/b7");
  index.Apply("DELETED", Job("a", "u1", {{"clusterRef", {{"name", "b7"}}}}));
  EXPECT_EQ(index.NamespacedClusterOf("team-a/a", "dflt"), std::nullopt);
}

TEST(JobIndex, CountsByPhaseWithEveryPhasePresent) {
  JobIndex index;
  index.Apply("ADDED", Job("a", "u1", {}, {{"phase", "Running"}}));
  index.Apply("ADDED", Job("b", "u2", {}, {{"phase", "Running"}}));
  index.Apply("ADDED", Job("c", "u3"));
  std::map<std::string, double> by = index.CountByPhase();
  EXPECT_EQ(by["Running"], 2);
  EXPECT_EQ(by[""], 1);
  EXPECT_EQ(by.count("Succeeded"), 1u);
  EXPECT_EQ(by["Succeeded"], 0);
  index.Apply("DELETED", Job("a", "u1"));
  EXPECT_EQ(index.CountByPhase()["Running"], 1);
}

// A phase none of the known ones (a status written by hand) is counted under its own name, and
// forgotten once the SlurmJob's phase changes.
TEST(JobIndex, CountsAPhaseOfItsOwnUnderItsName) {
  JobIndex index;
  index.Apply("ADDED", Job("a", "u1", {}, {{"phase", "Hibernating"}}));
  EXPECT_EQ(index.CountByPhase()["Hibernating"], 1);
  index.Apply("MODIFIED", Job("a", "u1", {}, {{"phase", "Running"}}));
  std::map<std::string, double> by = index.CountByPhase();
  EXPECT_EQ(by.count("Hibernating"), 0u);
  EXPECT_EQ(by["Running"], 1);
}

// Two SlurmJobs claiming one uid (a restored backup): whichever came last owns it, and
// forgetting either never leaves the index pointing at a SlurmJob that is gone (the uid index
// holds views into the summaries; the sanitizer build checks for a dangling one).
TEST(JobIndex, TwoSlurmJobsWithOneUidLeaveNoDanglingOwner) {
  JobIndex index;
  index.Apply("ADDED", Job("a", "shared-uid-0123456789-0123456789", {}, {{"run", 1}}));
  index.Apply("ADDED", Job("b", "shared-uid-0123456789-0123456789", {}, {{"run", 2}}));
  EXPECT_EQ(index.OwnerOfUid("shared-uid-0123456789-0123456789").run, 2);
  index.Apply("DELETED", Job("a", "shared-uid-0123456789-0123456789"));
  EXPECT_FALSE(index.OwnerOfUid("shared-uid-0123456789-0123456789").exists);
  index.Apply("MODIFIED", Job("b", "shared-uid-0123456789-0123456789", {}, {{"run", 3}}));
  EXPECT_EQ(index.OwnerOfUid("shared-uid-0123456789-0123456789").run, 3);
  index.Apply("DELETED", Job("b", "shared-uid-0123456789-0123456789"));
  EXPECT_FALSE(index.OwnerOfUid("shared-uid-0123456789-0123456789").exists);
}

// OldestPendingByNamespace keys by the namespace, now taken from the key.
TEST(JobIndex, OldestPendingIsPerNamespace) {
  JobIndex index;
  json other = Job("x", "u9", {}, {{"phase", "Pending"}, {"submitTime", "2026-01-01T00:00:00Z"}});
  other["metadata"]["namespace"] = "team-b";
  index.Apply("ADDED", other);
  index.Apply("ADDED",
              Job("a", "u1", {}, {{"phase", "Pending"}, {"submitTime", "2026-01-01T00:00:50Z"}}));
  index.Apply("ADDED",
              Job("b", "u2", {}, {{"phase", "Running"}, {"submitTime", "2026-01-01T00:00:00Z"}}));
  const Time now = *ParseRfc3339("2026-01-01T00:01:40Z");
  std::map<std::string, double> oldest = index.OldestPendingByNamespace(now);
  EXPECT_EQ(oldest.size(), 2u);
  EXPECT_DOUBLE_EQ(oldest["team-a"], 50);
  EXPECT_DOUBLE_EQ(oldest["team-b"], 100);
}

}  // namespace
}  // namespace slurmop::reconcile
