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

// The reason of the status condition of type `type` ("" without one).
std::string ReasonOf(const nlohmann::json& status, const std::string& type) {
  for (const nlohmann::json& c : status.value("conditions", nlohmann::json::array())) {
    if (c.value("type", "") == type) return c.value("reason", "");
  }
  return "";
}

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
    v.cluster = absl::StrCat(meta.value("namespace", ""), "/",
                             spec.value("clusterRef", nlohmann::json::object()).value("name", ""));
    v.spec_run_id = spec.value("runId", "");
    const nlohmann::json status = o.value("status", nlohmann::json::object());
    v.job_id = status.value("jobId", int64_t{0});
    v.run = status.value("run", 1);
    v.status_run_id = status.value("runId", "");
    v.job_state = status.value("jobState", "");
    v.submitted_to =
        status.value("submittedTo", nlohmann::json::object()).value("clusterId", std::string());
    v.reconciling = ReasonOf(status, "Reconciling");
    out[v.uid] = v;
  }
  return out;
}

std::vector<const SimJob*> Invariants::JobsOf(const std::string& uid,
                                              const std::string& cluster) const {
  std::vector<const SimJob*> out;
  for (const SimFleet::Cluster& c : fleet_.all()) {
    if (!cluster.empty() && c.id != cluster) continue;
    for (const auto& [id, j] : c.slurm->jobs()) {
      if (Ours(j) && j.origin->uid == uid) out.push_back(&j);
    }
  }
  return out;
}

std::string Invariants::PointsAt(const std::string& key) const {
  const size_t slash = key.find('/');
  std::optional<nlohmann::json> c =
      kube_.Object(api::kSlurmClusterPlural.data(), key.substr(0, slash), key.substr(slash + 1));
  if (!c) return "";
  return (*c)["spec"].value("clusterId", "");
}

bool Invariants::CredentialsGone(const std::string& key) const {
  const size_t slash = key.find('/');
  const std::string ns = key.substr(0, slash);
  std::optional<nlohmann::json> c =
      kube_.Object(api::kSlurmClusterPlural.data(), ns, key.substr(slash + 1));
  if (!c || !(*c)["spec"].contains("credentialsSecretRef")) return false;
  const std::string secret = (*c)["spec"]["credentialsSecretRef"].value("name", "");
  return !secret.empty() && !kube_.Object("secrets", ns, secret);
}

void Invariants::CheckDuplicates(std::vector<std::string>& out) {
  std::map<std::pair<std::string, int32_t>, std::map<std::string, std::vector<int64_t>>> by_run;
  for (const SimFleet::Cluster& c : fleet_.all()) {
    for (const auto& [id, j] : c.slurm->jobs()) {
      if (Ours(j)) by_run[{j.origin->uid, j.origin->run}][c.id].push_back(id);
    }
  }
  for (const auto& [run, on] : by_run) {
    for (const auto& [cluster, ids] : on) {
      if (ids.size() < 2) continue;
      out.push_back(absl::StrCat("[1 at most one job per run] SlurmJob ", run.first, " run ",
                                 run.second, " has ", ids.size(), " Slurm jobs on cluster ",
                                 cluster, ": ", absl::StrJoin(ids, ", ")));
    }
    // A second job on another cluster: a repoint while a submit's outcome
    // was unknown, and a submit where the SlurmCluster points now before the
    // search where that submit went (status.submitTarget) said it is not there.
    if (on.size() > 1 && reported_runs_.insert(run).second) {
      std::vector<std::string> where;
      for (const auto& [cluster, ids] : on) {
        where.push_back(absl::StrCat(cluster, ": ", absl::StrJoin(ids, ", ")));
      }
      out.push_back(absl::StrCat("[1 at most one job per run] SlurmJob ", run.first, " run ",
                                 run.second, " has Slurm jobs on ", on.size(), " clusters (",
                                 absl::StrJoin(where, "; "), ")"));
    }
  }
}

void Invariants::CheckActions(const std::map<std::string, JobView>& jobs,
                              std::vector<std::string>& out) {
  actions_checked_.resize(fleet_.all().size());
  for (size_t i = 0; i < fleet_.all().size(); ++i) {
    CheckActionsOn(fleet_.all()[i], actions_checked_[i], jobs, out);
  }
}

void Invariants::CheckActionsOn(const SimFleet::Cluster& c, size_t& checked,
                                const std::map<std::string, JobView>& jobs,
                                std::vector<std::string>& out) {
  const std::vector<SlurmAction>& actions = c.slurm->actions();
  for (; checked < actions.size(); ++checked) {
    const SlurmAction& a = actions[checked];
    const SimJob* j = c.slurm->Find(a.job_id);
    if (j == nullptr) {
      out.push_back(absl::StrCat("[2 only our jobs] ", a.kind, " of job ", a.job_id, " on cluster ",
                                 c.id, ", whose Slurm never had it"));
      continue;
    }
    if (!Ours(*j)) {
      out.push_back(absl::StrCat("[2 only our jobs] ", a.kind, " of job ", j->id, " on cluster ",
                                 c.id, " that this installation did not submit: [", j->comment,
                                 "]"));
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
                               std::vector<std::string>& out) {
  for (const auto& [uid, before] : last_) {
    if (jobs.count(uid) || before.policy == "Orphan") continue;
    const std::string points = PointsAt(before.cluster);
    for (const SimFleet::Cluster& c : fleet_.all()) {
      for (const SimJob* j : JobsOf(uid, c.id)) {
        if (j->Visible(now) && j->EndedAt(now)) continue;
        out.push_back(absl::StrCat("[3 finalizer] SlurmJob ", before.key, " (", uid,
                                   ", deletionPolicy ", before.policy, ") released while its ",
                                   Describe(*j, now), " on cluster ", c.id));
      }
    }
  }
}

void Invariants::CheckStatusJobs(const std::map<std::string, JobView>& jobs,
                                 std::vector<std::string>& out) const {
  for (const auto& [uid, v] : jobs) {
    if (v.job_id == 0) continue;
    const SimSlurm* slurm = fleet_.At(v.submitted_to);
    const SimJob* j = slurm ? slurm->Find(v.job_id) : nullptr;
    if (j == nullptr || !Ours(*j) || j->origin->uid != uid || j->origin->run != v.run) {
      out.push_back(absl::StrCat("[4 status names our job] ", v.key, " run ", v.run,
                                 " records job ", v.job_id, " on cluster ", v.submitted_to, ": ",
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

std::string Invariants::MoveReported(const JobView& v, Time now) const {
  // A job that ended (and the status says so) needs nothing from anyone.
  const SimSlurm* slurm = fleet_.At(v.submitted_to);
  const SimJob* j = slurm ? slurm->Find(v.job_id) : nullptr;
  if (j != nullptr && j->EndedAt(now) && j->State(now) == v.job_state && !v.deleting) return "";
  const std::string where =
      absl::StrCat(v.key, "'s job ", v.job_id, " was submitted to ", v.submitted_to,
                   ", its SlurmCluster points at ", PointsAt(v.cluster));
  if (v.deleting) {
    // Its condition says so (the Event may be lost with a write whose reply was lost, or refused
    // in a namespace being deleted), or an Event did.
    if (v.reconciling == "CancelBlocked" || reported_(v.key, "CancelBlocked")) return "";
    return absl::StrCat("[converge] ", where, ", and no CancelBlocked condition or Event says so");
  }
  if (v.reconciling == "ClusterChanged") return "";
  return absl::StrCat("[converge] ", where, ", and its status says ", v.reconciling);
}

bool Invariants::JobElsewhere(const std::string& uid, const std::string& points) const {
  for (const SimFleet::Cluster& c : fleet_.all()) {
    if (!points.empty() && c.id != points && !JobsOf(uid, c.id).empty()) return true;
  }
  return false;
}

std::vector<std::string> Invariants::Converged(Time now) {
  std::vector<std::string> out;
  for (const auto& [uid, v] : Jobs()) {
    // (A SlurmCluster that is gone is no move: the job must still be cancelled.)
    const std::string points = PointsAt(v.cluster);
    if (v.job_id != 0 && !points.empty() && v.submitted_to != points) {
      if (std::string d = MoveReported(v, now); !d.empty()) out.push_back(std::move(d));
      continue;
    }
    // A job known only from the memo (its status write failed) on a cluster
    // the SlurmCluster no longer points at: its cancel is blocked.
    if (v.deleting && v.job_id == 0 && JobElsewhere(uid, points) &&
        (v.reconciling == "CancelBlocked" || reported_(v.key, "CancelBlocked"))) {
      continue;
    }
    // The Secret its SlurmCluster names is gone (switched to one the namespace's deletion took
    // before the protector kept it): the cancel cannot authenticate, and the SlurmJob says so (its
    // condition; the Event may be lost with a write whose reply was lost).
    if (v.deleting && CredentialsGone(v.cluster) &&
        (v.reconciling == "CredentialsInvalid" || reported_(v.key, "CredentialsInvalid"))) {
      continue;
    }
    if (v.deleting) {
      out.push_back(absl::StrCat("[converge] ", v.key, " is still being deleted"));
      continue;
    }
    const SimJob* current = nullptr;
    for (const SimJob* j : JobsOf(uid, points)) {
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
