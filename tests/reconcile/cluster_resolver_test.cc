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

nlohmann::json SlurmCluster(nlohmann::json spec) {
  return {{"apiVersion", "hpc.slurmoperator.dev/v1alpha1"},
          {"kind", "SlurmCluster"},
          {"metadata", {{"name", "a3"}, {"namespace", "team"}, {"generation", 4}}},
          {"spec", std::move(spec)}};
}

// Read as an empty spec, an unreadable SlurmCluster was refused for its missing
// credentialsSecretRef (or seen repointed), whatever was actually wrong with it.
TEST(ResolveJobCluster, AnUnreadableSlurmClusterIsRefusedSayingWhatIsWrong) {
  Clusters clusters;
  clusters.Put("a3",
               SlurmCluster({{"projectId", 5},
                             {"region", "us-central1"},
                             {"clusterId", "a3"},
                             {"credentialsSecretRef", {{"name", "sa"}, {"key", "key.json"}}}}));
  v1alpha1::ClusterReference ref;
  ref.set_name("a3");
  const ClusterFacts c = ResolveJobCluster({&clusters}, "team", ref, "", {});
  ASSERT_EQ(c.kind, ClusterFacts::Kind::kRefused);
  EXPECT_EQ(c.access.reason, "InvalidCluster");
  EXPECT_THAT(c.access.message, HasSubstr("SlurmCluster \"a3\" cannot be read"));
  EXPECT_THAT(c.access.message, HasSubstr("projectId"));
  EXPECT_FALSE(c.access.transient);
  EXPECT_EQ(c.generation, 4) << "a fix (a new generation) is seen as one";
}

TEST(ResolveJobCluster, AReadableSlurmClusterIsFound) {
  Clusters clusters;
  clusters.Put("a3",
               SlurmCluster({{"projectId", "proj"},
                             {"region", "us-central1"},
                             {"clusterId", "a3"},
                             {"credentialsSecretRef", {{"name", "sa"}, {"key", "key.json"}}}}));
  v1alpha1::ClusterReference ref;
  ref.set_name("a3");
  const ClusterFacts c = ResolveJobCluster({&clusters}, "team", ref, "", {});
  EXPECT_EQ(c.kind, ClusterFacts::Kind::kFound) << c.access.message;
  EXPECT_EQ(c.spec.project_id(), "proj");
}

}  // namespace
}  // namespace slurmop::reconcile
