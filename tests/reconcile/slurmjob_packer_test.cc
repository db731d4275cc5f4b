// Tests of the SlurmJob informers' packer (controller/reconcile/slurmjob_packer.h).

#include "controller/reconcile/slurmjob_packer.h"

#include <gtest/gtest.h>

#include <iostream>

#include "controller/reconcile/submit_target_note.h"

namespace slurmop::reconcile {
namespace {

// A SlurmJob as the load bench's operator left it (bench/load), managedFields dropped:
// another namespace, cluster, tag and ids than the sample's.
constexpr const char* kBenchSlurmJob = R"json(
{
 "apiVersion": "hpc.slurmoperator.dev/v1alpha1",
 "kind": "SlurmJob",
 "metadata": {
  "name": "job-00003",
  "namespace": "bench",
  "uid": "82191d48-300a-4922-850d-1c4445c40ff6",
  "creationTimestamp": "2026-12-03T09:58:52Z",
  "generation": 1,
  "resourceVersion": "10947",
  "finalizers": [
   "hpc.slurmoperator.dev/slurm-job"
  ]
 },
 "spec": {
  "clusterRef": {
   "name": "local",
   "kind": "SlurmCluster"
  },
  "timeLimitMinutes": 60,
  "script": "#!/bin/bash\nsleep 420\n",
  "deletionPolicy": "Cancel",
  "backoffLimit": 3
 },
 "status": {
  "cluster": "local",
  "conditions": [
   {
    "lastTransitionTime": "2026-12-03T09:58:52Z",
    "message": "Submitted to cluster local as Slurm job 1532.",
    "observedGeneration": 1,
    "reason": "Submitted",
    "status": "True",
    "type": "Submitted"
   },
   {
    "lastTransitionTime": "2026-12-03T09:58:52Z",
    "message": "Slurm job 1532 is running.",
    "observedGeneration": 1,
    "reason": "JobRunning",
    "status": "True",
    "type": "Reconciling"
   },
   {
    "lastTransitionTime": "2026-12-03T09:58:52Z",
    "message": "Slurm job 1532 is running.",
    "observedGeneration": 1,
    "reason": "JobRunning",
    "status": "False",
    "type": "Ready"
   },
   {
    "lastTransitionTime": "2026-12-03T09:58:52Z",
    "message": "",
    "observedGeneration": 1,
    "reason": "Progressing",
    "status": "False",
    "type": "Stalled"
   },
   {
    "lastTransitionTime": "2026-12-03T09:59:13Z",
    "message": "Slurm job 1532 is running.",
    "observedGeneration": 1,
    "reason": "JobRunning",
    "status": "True",
    "type": "Running"
   }
  ],
  "firstSubmitTime": "2026-12-03T09:58:52Z",
  "jobId": 1532,
  "jobState": "RUNNING",
  "jobTag": "slurmjob-operator:bench/82191d48-300a-4922-850d-1c4445c40ff6/1@516f0081-0515-48b1-a8ea-49125c5a7c70",
  "message": "Slurm job 1532 is running.",
  "observedGeneration": 1,
  "phase": "Running",
  "run": 1,
  "standardError": "/tmp/slurm-1532.out",
  "standardOutput": "/tmp/slurm-1532.out",
  "startTime": "2026-12-03T09:58:52Z",
  "submitTarget": {
   "clusterId": "demo-cluster",
   "projectId": "demo-project",
   "region": "us-central1"
  },
  "submitTime": "2026-12-03T09:58:52Z",
  "submittedTo": {
   "clusterId": "demo-cluster",
   "projectId": "demo-project",
   "region": "us-central1"
  }
 }
}
)json";

TEST(SlurmJobPackerTest, ASlurmJobOfTheBenchPacksToAFifthOfItsCborAndBack) {
  const nlohmann::json job = nlohmann::json::parse(kBenchSlurmJob);
  const std::vector<std::uint8_t> packed = SlurmJobPacker()->Pack(job);
  const size_t cbor = nlohmann::json::to_cbor(job).size();
  EXPECT_LT(packed.size() * 5, cbor) << "packed " << packed.size() << " of " << cbor;
  absl::StatusOr<nlohmann::json> back = SlurmJobPacker()->Unpack(packed);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, job);
}

// A submit-target note (submit_target_note.h) in metadata.annotations: what
// it adds to a packed SlurmJob (its HMAC is 32 random bytes in hex).
TEST(SlurmJobPackerTest, ASubmitTargetNoteAddsLittleToAPackedSlurmJob) {
  nlohmann::json job = nlohmann::json::parse(kBenchSlurmJob);
  const size_t without = SlurmJobPacker()->Pack(job).size();
  v1alpha1::SlurmJobLocation where;
  where.set_project_id("demo-project");
  where.set_region("us-central1");
  where.set_cluster_id("demo-cluster");
  job["metadata"]["annotations"][std::string(kSubmitTargetAnnotation)] = EncodeSubmitTargetNote(
      "0123456789abcdef0123456789abcdef", job["metadata"]["uid"].get<std::string>(), 1, where);
  const size_t with = SlurmJobPacker()->Pack(job).size();
  std::cout << "[ PACKED   ] bench SlurmJob " << without << " bytes, with a note " << with << " (+"
            << (with - without) << ")\n";
  EXPECT_LT(with - without, 80u) << "the note's key and layout are in the dictionary sample";
}

TEST(SlurmJobPackerTest, TheSampleIsASlurmJobWithTheOperatorsFinalizer) {
  const nlohmann::json& sample = TypicalSlurmJob();
  EXPECT_EQ(sample.value("kind", ""), "SlurmJob");
  EXPECT_EQ(sample["metadata"]["finalizers"][0], "hpc.slurmoperator.dev/slurm-job");
  EXPECT_EQ(sample["status"]["conditions"].size(), 5u);
}

}  // namespace
}  // namespace slurmop::reconcile
