// File: controller/reconcile/slurmjob_packer.cc
//
// See slurmjob_packer.h.

#include "controller/reconcile/slurmjob_packer.h"

namespace slurmop::reconcile {
namespace {

// A running SlurmJob as the operator leaves it, managedFields dropped (the
// informer strips them), with the submit-target note of an operator that has
// a note key (submit_target_note.h). Keys, condition types, reasons and the message
// patterns are what repeats from one SlurmJob to the next.
constexpr const char* kTypicalSlurmJob = R"json({
  "apiVersion": "hpc.slurmoperator.dev/v1alpha1",
  "kind": "SlurmJob",
  "metadata": {
    "name": "train-00000",
    "namespace": "team-a",
    "uid": "00000000-0000-4000-8000-000000000000",
    "creationTimestamp": "2026-01-01T00:00:00Z",
    "generation": 1,
    "resourceVersion": "100000",
    "labels": {"app.kubernetes.io/name": "training", "hpc.slurmoperator.dev/shard": "0"},
    "annotations": {"hpc.slurmoperator.dev/submit-target": "{\"clusterId\":\"cluster\",\"hmac\":\"0000000000000000000000000000000000000000000000000000000000000000\",\"projectId\":\"project\",\"region\":\"us-central1\",\"run\":1,\"uid\":\"00000000-0000-4000-8000-000000000000\"}"},
    "finalizers": ["hpc.slurmoperator.dev/slurm-job"]
  },
  "spec": {
    "clusterRef": {"name": "default", "kind": "SlurmCluster"},
    "script": "#!/bin/bash\nsrun python train.py\n",
    "partition": "a3-gpu",
    "nodes": 1,
    "tasksPerNode": 1,
    "cpusPerTask": 8,
    "gpusPerNode": 8,
    "memoryPerNodeMB": 65536,
    "timeLimitMinutes": 60,
    "environment": [{"name": "", "value": ""}],
    "deletionPolicy": "Cancel",
    "backoffLimit": 3
  },
  "status": {
    "cluster": "default",
    "conditions": [
      {"lastTransitionTime": "2026-01-01T00:00:00Z",
       "message": "Submitted to cluster default as Slurm job 100000.",
       "observedGeneration": 1, "reason": "Submitted", "status": "True", "type": "Submitted"},
      {"lastTransitionTime": "2026-01-01T00:00:00Z",
       "message": "Slurm job 100000 is running.",
       "observedGeneration": 1, "reason": "JobRunning", "status": "True", "type": "Reconciling"},
      {"lastTransitionTime": "2026-01-01T00:00:00Z",
       "message": "Slurm job 100000 is pending (Priority).",
       "observedGeneration": 1, "reason": "JobPending", "status": "False", "type": "Ready"},
      {"lastTransitionTime": "2026-01-01T00:00:00Z",
       "message": "",
       "observedGeneration": 1, "reason": "Progressing", "status": "False", "type": "Stalled"},
      {"lastTransitionTime": "2026-01-01T00:00:00Z",
       "message": "Slurm job 100000 is running.",
       "observedGeneration": 1, "reason": "JobRunning", "status": "True", "type": "Running"}
    ],
    "firstSubmitTime": "2026-01-01T00:00:00Z",
    "jobId": 100000,
    "jobState": "RUNNING",
    "jobTag": "slurmjob-operator:team-a/00000000-0000-4000-8000-000000000000/1@00000000-0000-4000-8000-000000000000",
    "message": "Slurm job 100000 is running.",
    "observedGeneration": 1,
    "phase": "Running",
    "run": 1,
    "standardError": "/home/slurm-100000.out",
    "standardOutput": "/home/slurm-100000.out",
    "startTime": "2026-01-01T00:00:00Z",
    "submitTarget": {"clusterId": "cluster", "projectId": "project", "region": "us-central1"},
    "submitTime": "2026-01-01T00:00:00Z",
    "submittedTo": {"clusterId": "cluster", "projectId": "project", "region": "us-central1"}
  }
})json";

}  // namespace

const nlohmann::json& TypicalSlurmJob() {
  static const nlohmann::json* const sample =
      new nlohmann::json(nlohmann::json::parse(kTypicalSlurmJob));
  return *sample;
}

std::shared_ptr<const kube::ObjectPacker> SlurmJobPacker() {
  static const std::shared_ptr<const kube::ObjectPacker> packer =
      std::make_shared<const kube::ObjectPacker>(TypicalSlurmJob());
  return packer;
}

}  // namespace slurmop::reconcile
