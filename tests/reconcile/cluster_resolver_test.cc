// File: tests/reconcile/cluster_resolver_test.cc
//
// ResolveJobCluster over plain caches: a SlurmCluster that the codec cannot read is refused with
// what is wrong with it, not read as an empty spec.

#include "controller/reconcile/cluster_resolver.h"

#include <map>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

using ::testing::HasSubstr;

// The cache of one namespace's SlurmClusters.
class Clusters : public ObjectCache {
 public:
  void Put(const std::string& name, nlohmann::json obj) {
    objects_[name] = std::make_shared<const nlohmann::json>(std::move(obj));
  }
  std::shared_ptr<const nlohmann::json> Get(std::string_view,
                                            std::string_view name) const override {
    auto it = objects_.find(std::string(name));
    return it == objects_.end() ? nullptr : it->second;
  }

 private:
  std::map<std::string, std::shared_ptr<const nlohmann::json>> objects_;
};

// SlurmCluster team/a3 with `project_id` as spec.projectId (a string, or a value of another type).
nlohmann::json SlurmCluster(nlohmann::json project_id) {
  return {{"apiVersion", "hpc.slurmoperator.dev/v1alpha1"},
          {"kind", "SlurmCluster"},
          {"metadata", {{"name", "a3"}, {"namespace", "team"}, {"generation", 4}}},
          {"spec",
           {{"projectId", std::move(project_id)},
            {"region", "us-central1"},
            {"clusterId", "a3"},
            {"credentialsSecretRef", {{"name", "sa"}, {"key", "key.json"}}}}}};
}

// The cluster a SlurmJob of namespace team naming a3 gets.
ClusterFacts Resolve(const Clusters& clusters) {
  v1alpha1::ClusterReference ref;
  ref.set_name("a3");
  return ResolveJobCluster({&clusters}, "team", ref, "", {});
}

// Read as an empty spec, an unreadable SlurmCluster was refused for its missing
// credentialsSecretRef (or seen repointed), whatever was actually wrong with it.
TEST(ResolveJobCluster, AnUnreadableSlurmClusterIsRefusedSayingWhatIsWrong) {
  Clusters clusters;
  clusters.Put("a3", SlurmCluster(5));
  const ClusterFacts c = Resolve(clusters);
  ASSERT_EQ(c.kind, ClusterFacts::Kind::kRefused);
  EXPECT_EQ(c.access.reason, "InvalidCluster");
  EXPECT_THAT(c.access.message, HasSubstr("SlurmCluster \"a3\" cannot be read"));
  EXPECT_THAT(c.access.message, HasSubstr("projectId"));
  EXPECT_FALSE(c.access.transient);
  EXPECT_EQ(c.generation, 4) << "a fix (a new generation) is seen as one";
}

TEST(ResolveJobCluster, AReadableSlurmClusterIsFound) {
  Clusters clusters;
  clusters.Put("a3", SlurmCluster("proj"));
  const ClusterFacts c = Resolve(clusters);
  EXPECT_EQ(c.kind, ClusterFacts::Kind::kFound) << c.access.message;
  EXPECT_EQ(c.spec.project_id(), "proj");
}

}  // namespace
}  // namespace slurmop::reconcile
