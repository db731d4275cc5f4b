// File: tests/cron/children_test.cc
//
// The SlurmJob objects a SlurmCronJob creates, and what the decisions read from its children.

#include "controller/cron/children.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/common/time_format.h"

namespace slurmop::cron {
namespace {

const nlohmann::json kCron = R"({
  "apiVersion": "hpc.slurmoperator.dev/v1alpha1", "kind": "SlurmCronJob",
  "metadata": {"name": "nightly", "namespace": "team", "uid": "cron-uid"}
})"_json;

TEST(NewChildObjectTest, NamedOwnedLabelledAndFromTheTemplate) {
  v1alpha1::SlurmJobTemplateSpec tmpl;
  (*tmpl.mutable_metadata()->mutable_labels())["team"] = "ml";
  (*tmpl.mutable_metadata()->mutable_annotations())["note"] = "x";
  tmpl.mutable_spec()->set_script("#!/bin/bash\ntrue\n");
  tmpl.mutable_spec()->mutable_cluster_ref()->set_name("local");
  const Time t = *ParseRfc3339("2026-12-01T10:00:00Z");
  const nlohmann::json child = NewChildObject(kCron, tmpl, {ChildName("nightly", t), t});
  EXPECT_EQ(child["kind"], "SlurmJob");
  EXPECT_EQ(child["metadata"]["name"], "nightly-29935320");
  EXPECT_EQ(child["metadata"]["namespace"], "team");
  EXPECT_EQ(child["metadata"]["labels"], R"({"team": "ml",
      "hpc.slurmoperator.dev/slurmcronjob": "nightly"})"_json);
  EXPECT_EQ(child["metadata"]["annotations"]["hpc.slurmoperator.dev/scheduled-time"],
            "2026-12-01T10:00:00Z");
  EXPECT_EQ(child["metadata"]["annotations"]["note"], "x");
  EXPECT_EQ(child["metadata"]["ownerReferences"], R"([{"apiVersion":
      "hpc.slurmoperator.dev/v1alpha1", "kind": "SlurmCronJob", "name": "nightly",
      "uid": "cron-uid", "controller": true, "blockOwnerDeletion": true}])"_json);
  EXPECT_EQ(child["spec"]["script"], "#!/bin/bash\ntrue\n");
  EXPECT_EQ(child["spec"]["clusterRef"]["name"], "local");
  // What the decisions read back from it.
  EXPECT_TRUE(OwnedBy(child, "cron-uid"));
  EXPECT_FALSE(OwnedBy(child, "another-uid"));
  const Child c = ChildFromObject(child, "nightly");
  EXPECT_EQ(c.name, "nightly-29935320");
  EXPECT_EQ(c.scheduled_time, t);
  EXPECT_FALSE(c.being_deleted);
}

TEST(ChildFromObjectTest, StatusDeletionAndTheNameSuffixWithoutTheAnnotation) {
  const nlohmann::json job = R"({
    "metadata": {"name": "nightly-29935320", "uid": "u1",
                 "deletionTimestamp": "2026-12-01T12:00:00Z",
                 "ownerReferences": [{"kind": "SlurmCronJob", "uid": "cron-uid"}]},
    "status": {"phase": "Succeeded", "endTime": "2026-12-01T10:07:00Z"}
  })"_json;
  const Child c = ChildFromObject(job, "nightly");
  EXPECT_EQ(c.uid, "u1");
  EXPECT_EQ(c.phase, "Succeeded");
  EXPECT_EQ(c.end_time, ParseRfc3339("2026-12-01T10:07:00Z"));
  EXPECT_EQ(c.scheduled_time, ParseRfc3339("2026-12-01T10:00:00Z"));
  EXPECT_TRUE(c.being_deleted);
  // Not a controller reference: not a child.
  EXPECT_FALSE(OwnedBy(job, "cron-uid"));
  EXPECT_EQ(ChildFromObject(job, "other").scheduled_time, std::nullopt);
}

// A name's suffix past year 2160 in unix minutes overflowed a Time's nanoseconds (and its
// wrapped time could become status.lastScheduleTime): it is no scheduled time.
TEST(ChildFromObjectTest, ANameSuffixPastWhatATimeHoldsIsNoScheduledTime) {
  nlohmann::json job = R"({"metadata": {"name": "nightly-999999999", "uid": "u1"}})"_json;
  EXPECT_EQ(ChildFromObject(job, "nightly").scheduled_time, std::nullopt);
  job["metadata"]["name"] = "nightly-100000000";
  EXPECT_TRUE(ChildFromObject(job, "nightly").scheduled_time.has_value());
}

}  // namespace
}  // namespace slurmop::cron
