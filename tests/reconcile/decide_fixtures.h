// File: tests/reconcile/decide_fixtures.h
//
// Plain-value fixtures shared by the decision tests (decide_test.cc,
// lifecycle_test.cc): one SlurmJob "team-a/train" on SlurmCluster "a3", and
// the injected time kT0. No I/O.

#ifndef SLURMOP_TESTS_RECONCILE_DECIDE_FIXTURES_H_
#define SLURMOP_TESTS_RECONCILE_DECIDE_FIXTURES_H_

#include <chrono>

#include "controller/reconcile/decide.h"

namespace slurmop::reconcile::fixtures {

inline const Time kT0 = Time(std::chrono::seconds(1'700'000'000));

// A new SlurmJob (generation 1, no status, no finalizer, backoffLimit 0: no
// retries, so every final state is final).
inline JobFacts NewJob() {
  JobFacts f;
  f.id = {"team-a", "train", "uid-1", /*installation=*/""};
  f.generation = 1;
  f.spec.mutable_cluster_ref()->set_name("a3");
  f.spec.set_script("#!/bin/bash\necho hi\n");
  return f;
}

// The SlurmCluster "a3" it names, REST v0.0.42, default partition "gpu".
inline ClusterFacts Cluster() {
  ClusterFacts c;
  c.kind = ClusterFacts::Kind::kFound;
  c.name = "a3";
  c.spec.set_project_id("proj");
  c.spec.set_region("us-central1");
  c.spec.set_cluster_id("c1");
  c.spec.set_slurm_api_version("v0.0.42");
  c.spec.set_default_partition("gpu");
  return c;
}

// The tag of run `run` of NewJob(): what Slurm's record of its job carries.
inline std::string TagOfRun(int32_t run = 1) { return SubmissionTag(NewJob().id, run); }

// `status` as the operator records a job submitted to Cluster() (#13 L1).
inline void SubmittedToCluster(v1alpha1::SlurmJobStatus* status, int32_t run = 1) {
  v1alpha1::SlurmJobLocation* where = status->mutable_submitted_to();
  where->set_project_id("proj");
  where->set_region("us-central1");
  where->set_cluster_id("c1");
  status->set_job_tag(TagOfRun(run));
}

// `status` after the write of stage kRecordingTarget: the next submit goes
// to Cluster(), and the status says so before it is sent.
inline void TargetRecorded(v1alpha1::SlurmJobStatus* status) {
  v1alpha1::SlurmJobLocation* where = status->mutable_submit_target();
  where->set_project_id("proj");
  where->set_region("us-central1");
  where->set_cluster_id("c1");
}

}  // namespace slurmop::reconcile::fixtures

#endif  // SLURMOP_TESTS_RECONCILE_DECIDE_FIXTURES_H_
