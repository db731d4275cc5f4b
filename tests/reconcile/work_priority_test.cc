// File: tests/reconcile/work_priority_test.cc
//
// WorkPriorityOf: SlurmJobs with no Slurm job yet are urgent, the others not.

#include "controller/reconcile/work_priority.h"

#include "controller/kube/watch_event.h"
#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

using Priority = kube::WorkQueue::Priority;

nlohmann::json Job(nlohmann::json status = nullptr, bool deleting = false) {
  nlohmann::json job = {{"metadata", {{"namespace", "ns"}, {"name", "a"}, {"uid", "u"}}},
                        {"spec", {{"script", "#!/bin/sh\n"}}}};
  if (!status.is_null()) job["status"] = std::move(status);
  if (deleting) job["metadata"]["deletionTimestamp"] = "2026-12-05T00:00:00Z";
  return job;
}

TEST(WorkPriorityTest, ANewSlurmJobIsUrgent) {
  EXPECT_EQ(WorkPriorityOf(kube::kAdded, Job()), Priority::kUrgent);
  EXPECT_EQ(WorkPriorityOf(kube::kModified, Job({{"phase", "Pending"}})), Priority::kUrgent);
  EXPECT_EQ(WorkPriorityOf(kube::kModified, Job({{"jobId", 0}})), Priority::kUrgent);
}

TEST(WorkPriorityTest, ASubmittedSlurmJobIsNormal) {
  EXPECT_EQ(WorkPriorityOf(kube::kModified, Job({{"jobId", 4242}, {"jobState", "RUNNING"}})),
            Priority::kNormal);
  EXPECT_EQ(WorkPriorityOf(kube::kAdded, Job({{"jobId", 7}})), Priority::kNormal);
}

TEST(WorkPriorityTest, DeletionsAreNormal) {
  EXPECT_EQ(WorkPriorityOf(kube::kModified, Job(nullptr, /*deleting=*/true)), Priority::kNormal);
  EXPECT_EQ(WorkPriorityOf(kube::kDeleted, Job()), Priority::kNormal);
}

TEST(WorkPriorityTest, MalformedObjectsAreReadWithoutThrowing) {
  EXPECT_EQ(WorkPriorityOf(kube::kAdded, nlohmann::json::array()), Priority::kNormal);
  EXPECT_EQ(WorkPriorityOf(kube::kAdded, Job("not an object")), Priority::kUrgent);
  EXPECT_EQ(WorkPriorityOf(kube::kAdded, Job({{"jobId", "12"}})), Priority::kUrgent);
  nlohmann::json odd = Job();
  odd["metadata"] = "x";
  EXPECT_EQ(WorkPriorityOf(kube::kAdded, odd), Priority::kUrgent);
}

}  // namespace
}  // namespace slurmop::reconcile
