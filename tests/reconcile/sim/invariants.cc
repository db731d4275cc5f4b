// File: tests/reconcile/sim/invariants.cc

#include "tests/reconcile/sim/invariants.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/api/resources.h"
#include "controller/reconcile/job_descriptor.h"
#include "controller/reconcile/resource_types.h"
#include "tests/reconcile/sim/replica.h"

namespace slurmop::reconcile::sim {
namespace {

bool Ours(const SimJob& j) { return j.origin && j.origin->installation == kInstallation; }

std::string Describe(const SimJob& j, Time now) {
  return absl::StrCat("job ", j.id, " [", j.comment, "] ",
                      j.Visible(now) ? j.State(now) : "not landed yet");
}

}  // namespace

std::map<std::string, JobView> JobsByUid(testing::InMemoryKube& kube) {
  std::map<std::string, JobView> out;
  absl::StatusOr<nlohmann::json> list = kube.List(SlurmJobsResource(), "", kube::ListOptions());
  if (!list.ok()) return out;
  for (const nlohmann::json& o : (*list)["items"]) {
    JobView v;
    const nlohmann::json& meta = o["metadata"];
    v.key = absl::StrCat(meta.value("namespace", ""), "/", meta.value("name", ""));
    v.uid = meta.value("uid", "");
    v.deleting = meta.contains("deletionTimestamp");
    const nlohmann::json spec = o.value("spec", nlohmann::json::object());
    v.policy = spec.value("deletionPolicy", "Cancel");
    v.spec_run_id = spec.value("runId", "");
    const nlohmann::json status = o.value("status", nlohmann::json::object());
    v.job_id = status.value("jobId", int64_t{0});
    v.run = status.value("run", 1);
    v.status_run_id = status.value("runId", "");
    v.job_state = status.value("jobState", "");
    out[v.uid] = v;
  }
  return out;
}

std::vector<const SimJob*> Invariants::JobsOf(const std::string& uid) const {
  std::vector<const SimJob*> out;
  for (const auto& [id, j] : slurm_.jobs()) {
    if (Ours(j) && j.origin->uid == uid) out.push_back(&j);
  }
  return out;
}

void Invariants::CheckDuplicates(std::vector<std::string>& out) const {
  std::map<std::pair<std::string, int32_t>, std::vector<int64_t>> by_run;
  for (const auto& [id, j] : slurm_.jobs()) {
    if (Ours(j)) by_run[{j.origin->uid, j.origin->run}].push_back(id);
  }
  for (const auto& [run, ids] : by_run) {
    if (ids.size() > 1) {
      out.push_back(absl::StrCat("[1 at most one job per run] SlurmJob ", run.first, " run ",
                                 run.second, " has ", ids.size(),
                                 " Slurm jobs: ", absl::StrJoin(ids, ", ")));
    }
  }
}

void Invariants::CheckActions(const std::map<std::string, JobView>& jobs,
                              std::vector<std::string>& out) {
  const std::vector<SlurmAction>& actions = slurm_.actions();
  for (; actions_checked_ < actions.size(); ++actions_checked_) {
    const SlurmAction& a = actions[actions_checked_];
    const SimJob* j = slurm_.Find(a.job_id);
    if (j == nullptr) {
      out.push_back(absl::StrCat("[2 only our jobs] ", a.kind, " of job ", a.job_id,
                                 ", which Slurm never had"));
      continue;
    }
    if (!Ours(*j)) {
      out.push_back(absl::StrCat("[2 only our jobs] ", a.kind, " of job ", j->id,
                                 " that this installation did not submit: [", j->comment, "]"));
      continue;
    }
    if (a.kind != "cancel") continue;
    auto owner = jobs.find(j->origin->uid);
    if (owner == jobs.end()) continue;  // its SlurmJob is gone: the sweep may cancel it
    const JobView& v = owner->second;
    // The current run's job, and no re-run asked for (spec.runId changed):
    // only deleting the SlurmJob with deletionPolicy Cancel may cancel it.
    const bool current = v.run == j->origin->run && v.spec_run_id == v.status_run_id;
    if (current && (!v.deleting || v.policy == "Orphan")) {
      out.push_back(absl::StrCat("[2 only our jobs] cancel of job ", j->id,
                                 ", the current run's job of SlurmJob ", v.key,
                                 v.deleting ? " (deleted with deletionPolicy Orphan)" : ""));
    }
  }
}

void Invariants::CheckReleases(const std::map<std::string, JobView>& jobs, Time now,
                               std::vector<std::string>& out) const {
  for (const auto& [uid, before] : last_) {
    if (jobs.count(uid) || before.policy == "Orphan") continue;
    for (const SimJob* j : JobsOf(uid)) {
      if (j->Visible(now) && j->EndedAt(now)) continue;
      out.push_back(absl::StrCat("[3 finalizer] SlurmJob ", before.key, " (", uid,
                                 ", deletionPolicy ", before.policy, ") released while its ",
                                 Describe(*j, now)));
    }
  }
}

void Invariants::CheckStatusJobs(const std::map<std::string, JobView>& jobs,
                                 std::vector<std::string>& out) const {
  for (const auto& [uid, v] : jobs) {
    if (v.job_id == 0) continue;
    const SimJob* j = slurm_.Find(v.job_id);
    if (j == nullptr || !Ours(*j) || j->origin->uid != uid || j->origin->run != v.run) {
      out.push_back(absl::StrCat("[4 status names our job] ", v.key, " run ", v.run,
                                 " records job ", v.job_id, ": ",
                                 j ? absl::StrCat("[", j->comment, "]") : "unknown to Slurm"));
    }
  }
}

const std::map<std::string, JobView>& Invariants::Jobs() {
  if (kube_.Revision() != revision_) {
    revision_ = kube_.Revision();
    jobs_ = JobsByUid(kube_);
  }
  return jobs_;
}

std::vector<std::string> Invariants::Check(Time now) {
  std::vector<std::string> out;
  const std::map<std::string, JobView>& jobs = Jobs();
  CheckDuplicates(out);
  CheckActions(jobs, out);
  CheckReleases(jobs, now, out);
  CheckStatusJobs(jobs, out);
  last_ = jobs;
  return out;
}

std::vector<std::string> Invariants::Converged(Time now) {
  std::vector<std::string> out;
  for (const auto& [uid, v] : Jobs()) {
    if (v.deleting) {
      out.push_back(absl::StrCat("[converge] ", v.key, " is still being deleted"));
      continue;
    }
    const SimJob* current = nullptr;
    for (const SimJob* j : JobsOf(uid)) {
      if (j->origin->run == v.run) current = j;
    }
    if (current == nullptr) {
      JobIdentity id{v.key.substr(0, v.key.find('/')), v.key.substr(v.key.find('/') + 1), uid,
                     kInstallation};
      if (!refused_tags_.count(SubmissionTag(id, v.run))) {
        out.push_back(absl::StrCat("[converge] ", v.key, " run ", v.run,
                                   " has no Slurm job (status jobId ", v.job_id, ")"));
      }
      continue;
    }
    const std::string state = current->State(now);
    if (!current->Visible(now) || !current->EndedAt(now)) {
      out.push_back(
          absl::StrCat("[converge] ", v.key, "'s ", Describe(*current, now), " has not ended yet"));
      continue;
    }
    if (v.job_id != current->id || v.job_state != state) {
      out.push_back(absl::StrCat("[converge] ", v.key, " status says job ", v.job_id, " ",
                                 v.job_state, "; Slurm has ", Describe(*current, now)));
    }
  }
  return out;
}

}  // namespace slurmop::reconcile::sim
