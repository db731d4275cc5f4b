// File: tests/reconcile/sim/schedule.cc

#include "tests/reconcile/sim/schedule.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/api/resources.h"
#include "controller/kube/resource_types.h"
#include "controller/reconcile/cluster_protection.h"
#include "controller/reconcile/job_descriptor.h"
#include "controller/reconcile/resource_types.h"
#include "tests/reconcile/fakes/fake_kube.h"
#include "tests/reconcile/fakes/test_objects.h"
#include "tests/reconcile/sim/faults.h"
#include "tests/reconcile/sim/invariants.h"
#include "tests/reconcile/sim/replica.h"
#include "tests/reconcile/sim/sim_fleet.h"

namespace slurmop::reconcile::sim {
namespace {

constexpr char kNs[] = "team-a";
constexpr char kSecret[] = "a3-credentials";
// The Secret a user may switch a3's credentialsSecretRef to (created at the first switch, so that
// the uids of the first objects stay those the foreign jobs copy).
constexpr char kOtherSecret[] = "a3-credentials-b";
const char* const kNames[] = {"j0", "j1", "j2"};
// The second SlurmCluster of the namespace, sharing a3's Secret (created when a SlurmJob first
// names it; cluster_protector.h: the Secret is kept while either needs it).
constexpr char kSharingCluster[] = "b7";
// The Agent Platform clusters SlurmCluster a3 may point at.
const char* const kClusterIds[] = {"c1", "c2"};

int64_t Millis(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

class World {
 public:
  World(uint64_t seed, const ScheduleOptions& o)
      : o_(o),
        faults_(seed),
        batched_(faults_.Chance(0.5)),
        notes_(seed % 2 == 1),
        inv_(kube_, fleet_, refused_, [this](const std::string& key, const std::string& reason) {
          return r_[0]->Reported(key, reason) || r_[1]->Reported(key, reason);
        }) {
    result_.seed = seed;
    result_.batched = batched_;
    result_.notes = notes_;
    kube_.record_calls = false;
    // Both clusters hand out the same job ids.
    const int64_t first_id = faults_.Between(1, 5000);
    const Duration min_job_age = std::chrono::seconds(faults_.Between(20, 300));
    for (const char* id : kClusterIds) fleet_.Add(id, first_id, min_job_age);
    ReplicaDeps deps{kube_, fleet_, faults_, clock_, refused_, batched_, notes_};
    for (int i = 0; i < 2; ++i) r_[i] = std::make_unique<Replica>(i, deps);
  }

  ScheduleResult Run() {
    Setup();
    for (int i = 0; i < o_.fault_steps && result_.violations.empty(); ++i) {
      FaultStep();
      AfterStep();
    }
    if (result_.violations.empty()) QuietPhase();
    result_.faults = faults_.counts;
    return std::move(result_);
  }

 private:
  void Trace(std::string line) {
    line = absl::StrCat("t+", Millis(clock_.Now() - start_), "ms ", line);
    if (o_.verbose) std::cerr << line << "\n";
    result_.trace.push_back(std::move(line));
  }

  // The namespace's SlurmCluster a3 (pointing at c1) and its credentials
  // Secret, as a user creates them.
  void CreateNamespace() {
    nlohmann::json cluster = testing::SlurmClusterObject(kNs, "a3", "v0.0.42");
    cluster["metadata"].erase("finalizers");  // the protector's to add
    cluster["spec"]["credentialsSecretRef"] = {{"name", kSecret}};
    (void)kube_.Create(SlurmClustersResource(), kNs, cluster);
    (void)kube_.Create(kube::Secrets(), kNs,
                       {{"apiVersion", "v1"},
                        {"kind", "Secret"},
                        {"metadata", {{"name", kSecret}, {"namespace", kNs}}},
                        {"data", {{"credentials.json", "e30="}}}});
    namespace_ = Namespace::kActive;
  }

  // Jobs that are not this installation's, on every cluster: another
  // installation's with the same namespace, names and even uids as our
  // first SlurmJobs (the SlurmCluster is uid-1, its Secret uid-2); a legacy
  // tag of a gone SlurmJob; a user's job without a tag. None of them may
  // ever be touched or adopted.
  void AddForeignJobs(SimSlurm& slurm) {
    for (int i = 0; i < 3; ++i) {
      slurm.AddForeignJob(
          kNames[i],
          SubmissionTag({kNs, kNames[i], absl::StrCat("uid-", i + 3), "inst-other"}, 1 + i % 2),
          clock_.Now(), std::chrono::seconds(5), std::chrono::minutes(30));
    }
    slurm.AddForeignJob("j1", LegacySubmissionTag({kNs, "j1", "uid-gone", ""}, 1), clock_.Now(),
                        std::chrono::seconds(1), std::chrono::minutes(30));
    slurm.AddForeignJob("j2", "", clock_.Now(), std::chrono::seconds(0), std::chrono::minutes(30));
  }

  void Setup() {
    start_ = clock_.Now();
    CreateNamespace();
    for (const SimFleet::Cluster& c : fleet_.all()) AddForeignJobs(*c.slurm);
    r_[0]->BecomeLeader();
    Trace(absl::StrCat("start: ", batched_ ? "batched (tracker)" : "unbatched",
                       notes_ ? ", note key" : "", ", r0 leads"));
    OpCreate();
    AfterStep();
  }

  // ---- the fault phase ----------------------------------------------------

  void FaultStep() {
    struct Op {
      int weight;
      void (World::*run)();
    };
    static const Op kOps[] = {
        {40, &World::OpReconcile},   {12, &World::OpAdvance},  {5, &World::OpTick},
        {8, &World::OpCreate},       {4, &World::OpBumpRunId}, {5, &World::OpDelete},
        {3, &World::OpCrash},        {4, &World::OpArmCrash},  {3, &World::OpStall},
        {6, &World::OpTakeover},     {3, &World::OpNotice},    {3, &World::OpWatchDrop},
        {4, &World::OpRelist},       {2, &World::OpRepoint},   {1, &World::OpDeleteNamespace},
        {2, &World::OpSwitchSecret},
    };
    int total = 0;
    for (const Op& op : kOps) total += op.weight;
    int roll = static_cast<int>(faults_.Between(0, total - 1));
    for (const Op& op : kOps) {
      if (roll < op.weight) return (this->*op.run)();
      roll -= op.weight;
    }
  }

  // Leaders and deposed leaders that have not noticed: those that reconcile.
  std::vector<Replica*> Active() {
    std::vector<Replica*> out;
    for (auto& r : r_) {
      if (r->role() != Replica::Role::kStandby) out.push_back(r.get());
    }
    return out;
  }

  int IndexOf(const Replica* r) const { return r == r_[0].get() ? 0 : 1; }

  void OpReconcile() {
    std::vector<Replica*> active = Active();
    if (active.empty()) return OpAdvance();
    Replica* r = active[faults_.Between(0, static_cast<int64_t>(active.size()) - 1)];
    std::vector<std::string> due = r->DueKeys();
    if (due.empty()) {
      std::optional<Time> next = r->NextDue();
      const Time to = next ? std::min(*next, clock_.Now() + std::chrono::seconds(30))
                           : clock_.Now() + std::chrono::seconds(5);
      clock_.Set(std::max(to, clock_.Now()));
      Trace(absl::StrCat("r", IndexOf(r), " idle: clock to the next due key"));
      r->TickTracker();
      return;
    }
    const std::string key = due[faults_.Between(0, static_cast<int64_t>(due.size()) - 1)];
    Trace(r->Reconcile(key));
    if (r->dead()) Died(*r);
  }

  void Died(Replica& r) {
    if (r.role() == Replica::Role::kLeader) lease_free_at_ = clock_.Now() + kLease;
    r.Restart();
    Trace(absl::StrCat("r", IndexOf(&r), " restarted as a standby"));
  }

  void OpAdvance() {
    const Duration d = faults_.Millis(200, 25000);
    clock_.Advance(d);
    Trace(absl::StrCat("clock +", Millis(d), "ms"));
    for (Replica* r : Active()) r->TickTracker();
  }

  void OpTick() {
    for (Replica* r : Active()) {
      r->TickTracker();
      if (r->dead()) Died(*r);
    }
    Trace("tracker tick");
  }

  std::optional<nlohmann::json> Object(const std::string& name) {
    return kube_.Object(api::kSlurmJobPlural.data(), kNs, name);
  }

  void OpCreate() {
    const std::string name = kNames[faults_.Between(0, 2)];
    if (Object(name)) return;
    if (namespace_ == Namespace::kTerminating) {
      return Trace(absl::StrCat("user creates ", name, ": forbidden, namespace ", kNs,
                                " is being terminated"));
    }
    if (namespace_ == Namespace::kGone) {
      CreateNamespace();
      Trace(absl::StrCat("user creates namespace ", kNs, " again, its SlurmCluster and Secret"));
    }
    const std::string cluster = faults_.Chance(0.3) ? kSharingCluster : "a3";
    if (cluster == kSharingCluster &&
        !kube_.Object(api::kSlurmClusterPlural.data(), kNs, cluster)) {
      nlohmann::json b7 = testing::SlurmClusterObject(kNs, kSharingCluster, "v0.0.42");
      b7["metadata"].erase("finalizers");  // the protector's to add
      b7["spec"]["credentialsSecretRef"] = {{"name", kSecret}};
      (void)kube_.Create(SlurmClustersResource(), kNs, b7);
      Trace(
          absl::StrCat("user creates SlurmCluster ", kSharingCluster, " sharing Secret ", kSecret));
    }
    const std::string policy = faults_.Chance(0.5) ? "Cancel" : "Orphan";
    nlohmann::json job = {{"apiVersion", std::string(api::kApiVersion)},
                          {"kind", "SlurmJob"},
                          {"metadata", {{"name", name}, {"namespace", kNs}}},
                          {"spec",
                           {{"clusterRef", {{"name", cluster}}},
                            {"script", "#!/bin/bash\necho hi\n"},
                            {"deletionPolicy", policy}}}};
    absl::StatusOr<nlohmann::json> r = kube_.Create(SlurmJobsResource(), kNs, job);
    Trace(absl::StrCat("user creates ", name, " (", policy, ", on ", cluster, ") uid ",
                       r.ok() ? testing::Meta(*r, "uid") : r.status().ToString()));
  }

  void OpBumpRunId() {
    const std::string name = kNames[faults_.Between(0, 2)];
    std::optional<nlohmann::json> o = Object(name);
    if (!o || (*o)["metadata"].contains("deletionTimestamp")) return;
    const std::string run_id = absl::StrCat("r", ++run_ids_);
    (*o)["spec"]["runId"] = run_id;
    absl::StatusOr<nlohmann::json> r = kube_.Update(SlurmJobsResource(), *o);
    Trace(absl::StrCat("user sets ", name, " spec.runId=", run_id, r.ok() ? "" : " (failed)"));
  }

  void OpDelete() {
    const std::string name = kNames[faults_.Between(0, 2)];
    if (!Object(name)) return;
    (void)kube_.Delete(SlurmJobsResource(), kNs, name);
    Trace(absl::StrCat("user deletes ", name));
  }

  // A SlurmCluster of the namespace (a3, or b7 once it exists), by the dice.
  std::string SomeCluster() {
    const bool b7 =
        faults_.Chance(0.3) && kube_.Object(api::kSlurmClusterPlural.data(), kNs, kSharingCluster);
    return b7 ? kSharingCluster : "a3";
  }

  // The user points a SlurmCluster at the other Agent Platform cluster
  // (whose job ids are the same numbers).
  void OpRepoint() {
    const std::string name = SomeCluster();
    std::optional<nlohmann::json> c = kube_.Object(api::kSlurmClusterPlural.data(), kNs, name);
    if (!c) return;
    const std::string to = (*c)["spec"].value("clusterId", "") == "c1" ? "c2" : "c1";
    (*c)["spec"]["clusterId"] = to;
    absl::StatusOr<nlohmann::json> r = kube_.Update(SlurmClustersResource(), *c);
    faults_.Count("cluster.repoint");
    Trace(absl::StrCat("user points SlurmCluster ", name, " at cluster ", to,
                       r.ok() ? "" : " (failed)"));
  }

  // The user switches SlurmCluster a3's credentialsSecretRef to the other Secret (the protector
  // moves its finalizer from one to the other; cluster_protection.h).
  void OpSwitchSecret() {
    const std::string name = SomeCluster();
    std::optional<nlohmann::json> c = kube_.Object(api::kSlurmClusterPlural.data(), kNs, name);
    if (!c || namespace_ != Namespace::kActive) return;
    if (!kube_.Object("secrets", kNs, kOtherSecret)) {
      (void)kube_.Create(kube::Secrets(), kNs,
                         {{"apiVersion", "v1"},
                          {"kind", "Secret"},
                          {"metadata", {{"name", kOtherSecret}, {"namespace", kNs}}},
                          {"data", {{"credentials.json", "e30="}}}});
    }
    const std::string to =
        (*c)["spec"]["credentialsSecretRef"].value("name", "") == kSecret ? kOtherSecret : kSecret;
    (*c)["spec"]["credentialsSecretRef"] = {{"name", to}};
    absl::StatusOr<nlohmann::json> r = kube_.Update(SlurmClustersResource(), *c);
    faults_.Count("cluster.secret-switch");
    Trace(absl::StrCat("user switches SlurmCluster ", name, " to Secret ", to,
                       r.ok() ? "" : " (failed)"));
  }

  // The user deletes the namespace: Kubernetes deletes everything in it
  // (NamespaceController, after every step) and the namespace is gone once
  // nothing is left.
  void OpDeleteNamespace() {
    if (namespace_ != Namespace::kActive) return;
    namespace_ = Namespace::kTerminating;
    faults_.Count("namespace.delete");
    Trace(absl::StrCat("user deletes namespace ", kNs));
    NamespaceController();
  }

  void NamespaceController() {
    if (namespace_ != Namespace::kTerminating) return;
    bool left = false;
    for (const kube::ResourceType& rt :
         {SlurmJobsResource(), SlurmClustersResource(), kube::Secrets()}) {
      absl::StatusOr<nlohmann::json> list = kube_.List(rt, kNs, kube::ListOptions());
      for (const nlohmann::json& o : list.ok() ? (*list)["items"] : nlohmann::json::array()) {
        left = true;
        if (o["metadata"].contains("deletionTimestamp")) continue;
        (void)kube_.Delete(rt, kNs, testing::Meta(o, "name"));
      }
    }
    if (left) return;
    namespace_ = Namespace::kGone;
    Trace(absl::StrCat("namespace ", kNs, " is gone"));
  }

  void OpCrash() {
    Replica& r = *r_[faults_.Between(0, 1)];
    faults_.Count("crash.between-steps");
    Trace(absl::StrCat("r", IndexOf(&r), " crashes"));
    Died(r);
  }

  void OpArmCrash() {
    std::vector<Replica*> active = Active();
    if (active.empty()) return;
    Replica* r = active[faults_.Between(0, static_cast<int64_t>(active.size()) - 1)];
    const int n = static_cast<int>(faults_.Between(1, 6));
    r->ArmCrash(n);
    Trace(absl::StrCat("r", IndexOf(r), " will crash at its call ", n, " from now"));
  }

  void OpStall() {
    for (auto& r : r_) {
      if (r->role() != Replica::Role::kLeader) continue;
      r->Stall();
      lease_free_at_ = clock_.Now() + kLease;
      faults_.Count("leader.stall");
      Trace(absl::StrCat("r", IndexOf(r.get()), " stalls: its Lease runs out in 15 s"));
      return;
    }
  }

  void OpTakeover() {
    for (auto& r : r_) {
      if (r->role() == Replica::Role::kLeader) return;
    }
    if (clock_.Now() < lease_free_at_) return;
    std::vector<Replica*> standby;
    for (auto& r : r_) {
      if (r->role() == Replica::Role::kStandby) standby.push_back(r.get());
    }
    if (standby.empty()) return;
    Replica* r = standby[faults_.Between(0, static_cast<int64_t>(standby.size()) - 1)];
    r->BecomeLeader();
    faults_.Count("leader.change");
    Trace(absl::StrCat("r", IndexOf(r), " takes the Lease over"));
  }

  void OpNotice() {
    for (auto& r : r_) {
      if (r->role() != Replica::Role::kDeposed) continue;
      Trace(absl::StrCat("r", IndexOf(r.get()), " notices it lost the Lease and exits"));
      r->Restart();
    }
  }

  void OpWatchDrop() {
    Replica& r = *r_[faults_.Between(0, 1)];
    if (r.frozen()) return;
    r.FreezeCaches(true);
    faults_.Count("watch.drop");
    Trace(absl::StrCat("r", IndexOf(&r), " watch drops: its cache lags"));
  }

  void OpRelist() {
    for (auto& r : r_) {
      if (!r->frozen()) continue;
      r->FreezeCaches(false);
      faults_.Count("watch.410-relist");
      Trace(absl::StrCat("r", IndexOf(r.get()), " relists (410 Gone)"));
      return;
    }
  }

  // ---- after every step -----------------------------------------------------

  void AfterStep() {
    ++result_.steps;
    NamespaceController();
    // A standby's manager has not started: it has no informers yet.
    for (auto& r : r_) {
      if (r->role() != Replica::Role::kStandby) r->RefreshCaches();
    }
    for (std::string& v : inv_.Check(clock_.Now())) {
      Trace(absl::StrCat("VIOLATION ", v));
      result_.violations.push_back(std::move(v));
    }
  }

  // ---- the quiet phase ------------------------------------------------------

  void QuietPhase() {
    faults_.enabled = false;
    Trace("quiet phase: no more faults");
    for (auto& r : r_) {
      r->FreezeCaches(false);
      r->Disarm();
      if (r->role() == Replica::Role::kDeposed) r->Restart();
    }
    const Time quiet_start = clock_.Now();
    for (int i = 0; i < o_.max_quiet_steps && result_.violations.empty(); ++i) {
      Replica* leader = nullptr;
      for (auto& r : r_) {
        if (r->role() == Replica::Role::kLeader) leader = r.get();
      }
      if (leader == nullptr) {
        clock_.Set(std::max(clock_.Now(), lease_free_at_));
        OpTakeover();
      } else {
        QuietStep(*leader);
      }
      AfterStep();
      std::vector<std::string> diff = inv_.Converged(clock_.Now());
      if (diff.empty()) diff = NamespaceConverged();
      if (diff.empty()) diff = ProtectionConverged();
      if (diff.empty()) return;
      if (clock_.Now() - quiet_start > o_.quiet_max || i + 1 == o_.max_quiet_steps) {
        for (std::string& d : diff) {
          Trace(absl::StrCat("VIOLATION ", d));
          result_.violations.push_back(std::move(d));
        }
      }
    }
  }

  // A namespace being deleted is gone once no SlurmJob is left (those that
  // are left are accounted for by Converged: blocked by a repoint).
  std::vector<std::string> NamespaceConverged() {
    if (namespace_ != Namespace::kTerminating) return {};
    absl::StatusOr<nlohmann::json> jobs = kube_.List(SlurmJobsResource(), kNs, kube::ListOptions());
    if (jobs.ok() && !(*jobs)["items"].empty()) return {};
    return {absl::StrCat("[converge] namespace ", kNs,
                         " is still Terminating with no SlurmJob left in it")};
  }

  // In a live namespace, exactly the Secrets that SlurmClusters in use name carry the credentials
  // finalizer (a Secret kept for good blocks its namespace's deletion; one not kept may be deleted
  // before a cancel that needs it).
  std::vector<std::string> ProtectionConverged() {
    if (namespace_ != Namespace::kActive) return {};
    absl::StatusOr<nlohmann::json> jobs = kube_.List(SlurmJobsResource(), kNs, kube::ListOptions());
    std::set<std::string> needed;
    for (const nlohmann::json& j : jobs.ok() ? (*jobs)["items"] : nlohmann::json::array()) {
      const std::string name = j["spec"]["clusterRef"].value("name", "");
      std::optional<nlohmann::json> c = kube_.Object(api::kSlurmClusterPlural.data(), kNs, name);
      if (c) needed.insert((*c)["spec"]["credentialsSecretRef"].value("name", ""));
    }
    std::vector<std::string> diff;
    absl::StatusOr<nlohmann::json> secrets = kube_.List(kube::Secrets(), kNs, kube::ListOptions());
    for (const nlohmann::json& s : secrets.ok() ? (*secrets)["items"] : nlohmann::json::array()) {
      const std::string name = testing::Meta(s, "name");
      const nlohmann::json fins = s["metadata"].value("finalizers", nlohmann::json::array());
      const bool kept =
          std::find(fins.begin(), fins.end(), kCredentialsInUseFinalizer) != fins.end();
      if (kept != needed.contains(name)) {
        diff.push_back(absl::StrCat("[converge] Secret ", name, kept ? " is" : " is not",
                                    " kept while the SlurmClusters in use need {",
                                    absl::StrJoin(needed, ","), "}"));
      }
    }
    return diff;
  }

  void QuietStep(Replica& leader) {
    std::vector<std::string> due = leader.DueKeys();
    if (!due.empty()) {
      Trace(leader.Reconcile(due.front()));
      if (leader.dead()) Died(leader);
      return;
    }
    std::optional<Time> next = leader.NextDue();
    const Time cap = clock_.Now() + std::chrono::seconds(30);
    clock_.Set(next ? std::max(clock_.Now(), std::min(*next, cap)) : cap);
    leader.TickTracker();
    Trace("quiet: clock to the next due key, tracker tick");
  }

  const ScheduleOptions o_;
  FakeClock clock_;
  Faults faults_;
  testing::InMemoryKube kube_;
  SimFleet fleet_;
  std::set<std::string> refused_;
  const bool batched_;
  const bool notes_;  // odd seeds: the replicas have a note key
  Invariants inv_;
  std::unique_ptr<Replica> r_[2];
  Time start_{};
  Time lease_free_at_{};
  int run_ids_ = 0;
  enum class Namespace { kActive, kTerminating, kGone } namespace_ = Namespace::kActive;
  ScheduleResult result_;
};

}  // namespace

ScheduleResult RunSchedule(uint64_t seed, const ScheduleOptions& options) {
  World world(seed, options);
  return world.Run();
}

}  // namespace slurmop::reconcile::sim
