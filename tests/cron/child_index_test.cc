// File: tests/cron/child_index_test.cc
//
// ChildIndex: the labelled SlurmJobs per SlurmCronJob, kept from informer events.

#include "controller/cron/child_index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace slurmop::cron {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::shared_ptr<const nlohmann::json> Job(const std::string& name, const std::string& cron) {
  nlohmann::json j = {{"metadata", {{"name", name}, {"namespace", "team"}}}};
  if (!cron.empty()) j["metadata"]["labels"] = {{"hpc.slurmoperator.dev/slurmcronjob", cron}};
  return std::make_shared<const nlohmann::json>(j);
}

std::vector<std::string> Names(const std::vector<std::shared_ptr<const nlohmann::json>>& jobs) {
  std::vector<std::string> names;
  for (const auto& j : jobs) names.push_back((*j)["metadata"]["name"]);
  return names;
}

TEST(ChildIndexTest, KeepsLabelledSlurmJobsPerSlurmCronJob) {
  ChildIndex index;
  EXPECT_THAT(index.Apply("ADDED", Job("a-1", "a")), ElementsAre("team/a"));
  EXPECT_THAT(index.Apply("ADDED", Job("a-2", "a")), ElementsAre("team/a"));
  EXPECT_THAT(index.Apply("ADDED", Job("plain", "")), IsEmpty());
  EXPECT_THAT(Names(index.Of("team", "a")), ElementsAre("a-1", "a-2"));
  EXPECT_THAT(index.Of("other", "a"), IsEmpty());
  // Relabelled: it moves, and both SlurmCronJobs are told.
  EXPECT_THAT(index.Apply("MODIFIED", Job("a-2", "b")), ElementsAre("team/a", "team/b"));
  EXPECT_THAT(Names(index.Of("team", "a")), ElementsAre("a-1"));
  EXPECT_THAT(Names(index.Of("team", "b")), ElementsAre("a-2"));
  // Label removed: gone from the index.
  EXPECT_THAT(index.Apply("MODIFIED", Job("a-2", "")), ElementsAre("team/b"));
  EXPECT_THAT(index.Of("team", "b"), IsEmpty());
  EXPECT_THAT(index.Apply("DELETED", Job("a-1", "a")), ElementsAre("team/a"));
  EXPECT_THAT(index.Of("team", "a"), IsEmpty());
}

}  // namespace
}  // namespace slurmop::cron
