// File: tests/e2e/ownership_test.cc
//
// Exactly once, and only ever our own jobs (#13 L2, E3, L1), end to end: the
// operator binary against stand-in Kubernetes API servers (one per
// installation: each has its own kube-system UID, so its own default
// installation id) sharing ONE Agent Platform stand-in, as staging and prod,
// blue/green or a DR cluster share a Slurm cluster.
//
// SLURMOP_OPERATOR_BINARY in the environment runs another operator build (an
// older one, to see these tests fail on it). OWNERSHIP_SWEEP_WAIT_SECONDS
// stretches how long a test watches for a wrong cancel (an older build that
// has no --orphan-sweep-interval-seconds sweeps every 60 s).

#include <signal.h>

#include <filesystem>
#include <memory>
#include <thread>

#include "controller/http/cpprest_transport.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/manifests.h"
#include "tests/testing/stand_ins.h"
#include "tests/testing/subprocess.h"

namespace slurmop {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using testing::CommandResult;
using testing::ReadFile;
using testing::ReadPort;
using testing::Subprocess;
using testing::WaitUntil;

constexpr char kNs[] = "team";
// A second Agent Platform cluster of the stand-in (project demo-project, region us-central1).
constexpr char kOtherCluster[] = "other-cluster";
constexpr char kDemoPath[] = "demo-project/us-central1/demo-cluster";
constexpr char kOtherPath[] = "demo-project/us-central1/other-cluster";

// How long to watch for a cancel that must not happen.
seconds SweepWatch() {
  const char* s = std::getenv("OWNERSHIP_SWEEP_WAIT_SECONDS");
  return seconds(s != nullptr && *s != '\0' ? std::atoi(s) : 8);
}

// One Kubernetes cluster with its operator installation.
class Installation {
 public:
  Installation(const std::string& dir, int ap_port)
      : dir_(dir), ap_port_(ap_port), kubectl_(dir + "/kubeconfig") {
    std::filesystem::create_directories(dir_);
    apiserver_ = testing::StartKubeApiserver(dir_);
  }

  // CRDs, the namespace and SlurmCluster `local` (the shared Slurm cluster).
  ::testing::AssertionResult Prepare() {
    ::testing::AssertionResult serving = testing::WaitForKubeApiserver(dir_);
    if (!serving) return serving;
    for (const ::testing::AssertionResult& r :
         {kubectl_.InstallCrds(), kubectl_.CreateNamespace(kNs),
          kubectl_.Apply(testing::LocalSlurmClusterManifest(kNs, ap_port_, "v0.0.42"))}) {
      if (!r) return r;
    }
    return ::testing::AssertionSuccess();
  }

  void StartOperator(std::vector<std::string> flags) {
    std::vector<std::string> argv = {testing::OperatorBinary(SLURMOP_OPERATOR_BINARY),
                                     "--kubeconfig=" + dir_ + "/kubeconfig", "--health-port=0",
                                     "--min-poll-seconds=0.5", "--orphan-sweep-interval-seconds=1",
                                     // Its SlurmClusters have no credentialsSecretRef.
                                     "--allow-operator-identity-for-namespaced-clusters",
                                     "--undefok=orphan_sweep_interval_seconds,"
                                     "allow_operator_identity_for_namespaced_clusters",
                                     testing::AllowStandInFlag(ap_port_)};
    argv.insert(argv.end(), flags.begin(), flags.end());
    flags_ = flags;
    operator_ = std::make_unique<Subprocess>(argv, dir_ + "/operator.log",
                                             testing::OperatorEnv(ap_port_, dir_));
  }
  void StopOperator() {
    if (operator_) operator_->Stop(SIGTERM, seconds(10));
    operator_.reset();
  }
  void RestartOperator() {
    StopOperator();
    StartOperator(flags_);
  }

  CommandResult Kubectl(std::vector<std::string> args, const std::string& stdin_data = "") const {
    return kubectl_.Run(std::move(args), stdin_data);
  }
  std::string Get(const std::string& name, const std::string& jsonpath) const {
    CommandResult r = Kubectl({"get", "-n", kNs, "sj", name, "-o", "jsonpath=" + jsonpath});
    return r.exit_code == 0 ? r.out : "";
  }
  bool Exists(const std::string& name) const {
    return Kubectl({"get", "-n", kNs, "sj", name}).exit_code == 0;
  }
  CommandResult ApplyJob(const std::string& name, const std::string& script,
                         const std::string& cluster = "local") const {
    std::string yaml =
        "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\n"
        "metadata: {name: " +
        name + ", namespace: " + kNs + "}\nspec:\n  clusterRef: {name: " + cluster +
        "}\n  timeLimitMinutes: 30\n  script: |\n";
    std::stringstream in(script);
    for (std::string line; std::getline(in, line);) yaml += "    " + line + "\n";
    return Kubectl({"apply", "-f", "-"}, yaml);
  }
  CommandResult WaitFor(const std::string& name, const std::string& jsonpath_eq,
                        const std::string& timeout = "60s") const {
    return Kubectl(
        {"wait", "-n", kNs, "sj/" + name, "--for=jsonpath=" + jsonpath_eq, "--timeout=" + timeout});
  }
  // Removes the finalizer and deletes: the SlurmJob goes without a cancel.
  ::testing::AssertionResult DeleteWithoutCancel(const std::string& name) const {
    CommandResult p = Kubectl({"patch", "-n", kNs, "sj", name, "--type=merge", "-p",
                               R"({"metadata":{"finalizers":null}})"});
    CommandResult d = Kubectl({"delete", "-n", kNs, "sj", name, "--timeout=30s"});
    if (p.exit_code != 0 || d.exit_code != 0) {
      return ::testing::AssertionFailure() << p.err << d.err;
    }
    return ::testing::AssertionSuccess();
  }
  std::string OperatorLogPath() const { return dir_ + "/operator.log"; }

 private:
  std::string dir_;
  int ap_port_;
  testing::KubectlClient kubectl_;
  std::vector<std::string> flags_;
  std::unique_ptr<Subprocess> apiserver_;
  std::unique_ptr<Subprocess> operator_;
};

class Ownership : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("slurmop-ownership-");
    agent_ = testing::StartAgentPlatform(
        dir_, {"--verbose", "--cluster", "demo-cluster", "--cluster", kOtherCluster});
    ap_port_ = ReadPort(dir_ + "/ap.port");
    ASSERT_GT(ap_port_, 0) << ReadFile(dir_ + "/agent_platform.log");
  }
  void TearDown() override {
    for (auto& [name, inst] : installations_) {
      inst->StopOperator();
      if (HasFailure()) {
        std::cerr << "---- operator " << name << " log (tail) ----\n"
                  << testing::LogTail(inst->OperatorLogPath(), 5000) << "\n";
      }
    }
    installations_.clear();
    agent_.reset();
    testing::RemoveDirUnlessKept(dir_,
                                 HasFailure() || std::getenv("OWNERSHIP_KEEP_LOGS") != nullptr);
  }

  Installation& Install(const std::string& name, std::vector<std::string> flags = {}) {
    auto inst = std::make_unique<Installation>(dir_ + "/" + name, ap_port_);
    EXPECT_TRUE(inst->Prepare());
    inst->StartOperator(std::move(flags));
    Installation& ref = *inst;
    installations_[name] = std::move(inst);
    return ref;
  }

  json Admin(const std::string& method, const std::string& path, const json& body = nullptr) {
    static auto transport = http::CpprestTransport::Create({});
    http::Request req;
    req.method = method;
    req.url = "http://127.0.0.1:" + std::to_string(ap_port_) + path;
    if (!body.is_null()) {
      req.headers["Content-Type"] = "application/json";
      req.body = body.dump();
    }
    absl::StatusOr<http::Response> r = (*transport)->Send(req);
    if (!r.ok() || r->status != 200) return nullptr;
    return json::parse(r->body, nullptr, false);
  }

  // The simulator's jobs whose tag names SlurmJob `uid`.
  std::vector<json> SlurmJobsOf(const std::string& uid) {
    std::vector<json> out;
    json all = Admin("GET", "/__admin/jobs");
    if (!all.is_object() || uid.empty()) return out;
    for (const json& j : all.value("jobs", json::array())) {
      if (testing::TagUid(j.value("comment", "")) == uid) out.push_back(j);
    }
    return out;
  }
  std::string SimState(int64_t job_id, const std::string& cluster = kDemoPath) {
    json all = Admin("GET", "/__admin/jobs?cluster=" + cluster);
    if (!all.is_object()) return "";
    for (const json& j : all.value("jobs", json::array())) {
      if (j.value("job_id", int64_t{0}) == job_id)
        return j.value("state", j.value("job_state", ""));
    }
    return "";
  }

  std::string dir_;
  int ap_port_ = 0;
  std::unique_ptr<Subprocess> agent_;
  std::map<std::string, std::unique_ptr<Installation>> installations_;
};

// #13 L2 (item 5): a submit whose answer is lost while Agent Platform still
// works on it; the SlurmJob is deleted at once. A search that finds nothing
// then proves nothing: the finalizer stays for the settle window, the late
// job is found and cancelled, and only then is the SlurmJob released. (Before:
// the finalizer went after one empty search and the late job ran on with no
// SlurmJob; with --orphan-sweep=false nothing ever cancels it.)
TEST_F(Ownership, DeletingDuringAnUnknownSubmitOutcomeCancelsTheJobThatLandsLate) {
  Installation& a = Install("a", {"--orphan-sweep=false", "--submit-settle-seconds=15"});
  ASSERT_FALSE(Admin("POST", "/__admin/faults",
                     {{"action", "drop_then_perform_later"},
                      {"later", 6},
                      {"method", "POST"},
                      {"path", "/job/submit$"},
                      {"count", 1}})
                   .is_null());
  ASSERT_EQ(a.ApplyJob("late", "#!/bin/bash\nsleep 600\n").exit_code, 0);
  CommandResult unknown = a.WaitFor(
      "late", R"({.status.conditions[?(@.type=="Reconciling")].reason}=SubmitOutcomeUnknown)",
      "30s");
  ASSERT_EQ(unknown.exit_code, 0) << unknown.out << unknown.err;
  const std::string uid = a.Get("late", "{.metadata.uid}");
  ASSERT_FALSE(uid.empty());
  ASSERT_TRUE(SlurmJobsOf(uid).empty()) << "landed too early for the test";
  ASSERT_EQ(a.Kubectl({"delete", "-n", kNs, "sj", "late", "--wait=false"}).exit_code, 0);

  // The submit lands after the delete.
  ASSERT_TRUE(WaitUntil([&] { return !SlurmJobsOf(uid).empty(); }, seconds(30)));
  const int64_t job_id = SlurmJobsOf(uid).at(0).value("job_id", int64_t{0});
  EXPECT_TRUE(a.Exists("late")) << "the finalizer went while the submit could still land";
  // Found by its tag once the window closed, cancelled, then released.
  EXPECT_TRUE(WaitUntil([&] { return !a.Exists("late"); }, seconds(60)));
  EXPECT_TRUE(WaitUntil([&] { return SimState(job_id) == "CANCELLED"; }, seconds(10)))
      << "the late job runs on: " << SimState(job_id);
  EXPECT_EQ(SlurmJobsOf(uid).size(), 1u);
}

// #13 E3 (item 6): two installations share the Slurm cluster. Each one's
// sweep cancels its own orphans (the control: an orphan of A is cancelled)
// and never the other's running jobs. (Before: A's sweep cancelled B's job,
// whose uid A's cache does not know, two sweeps after seeing it.)
TEST_F(Ownership, TheSweepCancelsItsOwnOrphansAndNeverAnotherInstallationsJobs) {
  Installation& a = Install("a");
  Installation& b = Install("b");
  ASSERT_EQ(b.ApplyJob("theirs", "#!/bin/bash\nsleep 600\n").exit_code, 0);
  ASSERT_EQ(a.ApplyJob("mine", "#!/bin/bash\nsleep 600\n").exit_code, 0);
  for (auto [inst, name] : {std::pair{&b, "theirs"}, std::pair{&a, "mine"}}) {
    CommandResult running = inst->WaitFor(name, "{.status.jobState}=RUNNING");
    ASSERT_EQ(running.exit_code, 0) << name << ": " << running.out << running.err;
  }
  const int64_t theirs = std::stoll(b.Get("theirs", "{.status.jobId}"));
  const int64_t mine = std::stoll(a.Get("mine", "{.status.jobId}"));
  // A's SlurmJob goes without a cancel: its job is now A's orphan.
  ASSERT_TRUE(a.DeleteWithoutCancel("mine"));
  EXPECT_TRUE(WaitUntil([&] { return SimState(mine) == "CANCELLED"; }, SweepWatch() * 2))
      << "A's sweep does not run: the test proves nothing";
  std::this_thread::sleep_for(SweepWatch());
  EXPECT_EQ(SimState(theirs), "RUNNING") << "a sweep cancelled another installation's job";
  EXPECT_EQ(b.Get("theirs", "{.status.jobState}"), "RUNNING");
}

// #13 E3 (item 6): a SlurmJob restored from a backup (Velero: same spec,
// finalizer and status, new uid) still tracks its running job; the tag of
// that job names the old uid, which no SlurmJob has. The sweep leaves it
// alone because a live status names it. (Before: cancelled as an orphan.)
TEST_F(Ownership, TheSweepLeavesAJobThatARestoredSlurmJobTracks) {
  Installation& a = Install("a");
  ASSERT_EQ(a.ApplyJob("precious", "#!/bin/bash\nsleep 600\n").exit_code, 0);
  CommandResult running = a.WaitFor("precious", "{.status.jobState}=RUNNING");
  ASSERT_EQ(running.exit_code, 0) << running.out << running.err;
  CommandResult backup = a.Kubectl({"get", "-n", kNs, "sj", "precious", "-o", "json"});
  ASSERT_EQ(backup.exit_code, 0) << backup.err;
  json saved = json::parse(backup.out);
  const int64_t job_id = saved["status"].value("jobId", int64_t{0});
  const std::string old_uid = saved["metadata"].value("uid", "");

  // The restore, while the operator is down (as a DR cluster comes up).
  a.StopOperator();
  ASSERT_TRUE(a.DeleteWithoutCancel("precious"));
  json restored = {
      {"apiVersion", saved["apiVersion"]},
      {"kind", saved["kind"]},
      {"metadata",
       {{"name", "precious"}, {"namespace", kNs}, {"finalizers", saved["metadata"]["finalizers"]}}},
      {"spec", saved["spec"]}};
  CommandResult created = a.Kubectl({"create", "-f", "-"}, restored.dump());
  ASSERT_EQ(created.exit_code, 0) << created.err;
  CommandResult status =
      a.Kubectl({"patch", "-n", kNs, "sj", "precious", "--subresource=status", "--type=merge", "-p",
                 json{{"status", saved["status"]}}.dump()});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  ASSERT_NE(a.Get("precious", "{.metadata.uid}"), old_uid);
  a.RestartOperator();

  std::this_thread::sleep_for(SweepWatch());
  EXPECT_EQ(SimState(job_id), "RUNNING") << "the sweep cancelled a job a SlurmJob tracks";
  EXPECT_EQ(a.Get("precious", "{.status.jobId}"), std::to_string(job_id));
  EXPECT_EQ(a.Get("precious", "{.status.jobState}"), "RUNNING");
}

// #13 L1 (item 7): the SlurmCluster is repointed at another Agent Platform
// cluster, whose job ids happen to include the one the SlurmJob recorded (a
// stranger's job there). The SlurmJob neither shows nor cancels the
// stranger's job: it reports ClusterChanged, its deletion waits (finalizer
// kept) and, once the SlurmCluster points back, cancels its own job.
// (Before: status followed the stranger's job, and deleting the SlurmJob
// cancelled it.)
TEST_F(Ownership, ARepointedClusterNeverShowsNorCancelsAStrangersJobWithTheSameId) {
  Installation& a = Install("a");
  std::string other = testing::LocalSlurmClusterManifest(kNs, ap_port_, "v0.0.42");
  other.replace(other.find("name: local"), 11, "name: other");
  other.replace(other.find("clusterId: demo-cluster"), 23,
                std::string("clusterId: ") + kOtherCluster);
  ASSERT_EQ(a.Kubectl({"apply", "-f", "-"}, other).exit_code, 0);
  ASSERT_EQ(a.ApplyJob("mine", "#!/bin/bash\nsleep 600\n").exit_code, 0);
  ASSERT_EQ(a.WaitFor("mine", "{.status.jobState}=RUNNING").exit_code, 0);
  const int64_t id = std::stoll(a.Get("mine", "{.status.jobId}"));
  // The other cluster numbers its jobs from the same id (recreated, say).
  ASSERT_FALSE(
      Admin("POST", "/__admin/sim", {{"next_job_id", id}, {"cluster", kOtherPath}}).is_null());
  ASSERT_EQ(a.ApplyJob("stranger", "#!/bin/bash\nsleep 600\n", "other").exit_code, 0);
  ASSERT_EQ(a.WaitFor("stranger", "{.status.jobState}=RUNNING").exit_code, 0);
  ASSERT_EQ(a.Get("stranger", "{.status.jobId}"), std::to_string(id)) << "the ids must collide";

  auto point_at = [&](const std::string& cluster_id) {
    return a.Kubectl({"patch", "-n", kNs, "scl", "local", "--type=merge", "-p",
                      json{{"spec", {{"clusterId", cluster_id}}}}.dump()});
  };
  ASSERT_EQ(point_at(kOtherCluster).exit_code, 0);
  CommandResult moved = a.WaitFor(
      "mine", R"({.status.conditions[?(@.type=="Reconciling")].reason}=ClusterChanged)", "30s");
  EXPECT_EQ(moved.exit_code, 0) << moved.out << moved.err;
  ASSERT_EQ(a.Kubectl({"delete", "-n", kNs, "sj", "mine", "--wait=false"}).exit_code, 0);
  std::this_thread::sleep_for(seconds(5));
  EXPECT_EQ(SimState(id, kOtherPath), "RUNNING") << "the stranger's job was cancelled";
  EXPECT_TRUE(a.Exists("mine")) << "released while its own job runs on";
  EXPECT_EQ(SimState(id, kDemoPath), "RUNNING");

  ASSERT_EQ(point_at("demo-cluster").exit_code, 0);
  EXPECT_TRUE(WaitUntil([&] { return !a.Exists("mine"); }, seconds(60)));
  EXPECT_EQ(SimState(id, kDemoPath), "CANCELLED") << "its own job was not cancelled";
  EXPECT_EQ(SimState(id, kOtherPath), "RUNNING");
}

// #13 L1, the upgrade rule: a status written by the previous version (no
// submittedTo, no jobTag) is neither dropped nor refused; the operator finds
// its job carrying the tag, records where it runs, and deletion cancels it.
TEST_F(Ownership, AStatusWithoutSubmittedToKeepsItsJobAndLearnsWhereItRuns) {
  Installation& a = Install("a");
  ASSERT_EQ(a.ApplyJob("old", "#!/bin/bash\nsleep 600\n").exit_code, 0);
  ASSERT_EQ(a.WaitFor("old", "{.status.jobState}=RUNNING").exit_code, 0);
  const int64_t id = std::stoll(a.Get("old", "{.status.jobId}"));
  a.StopOperator();
  CommandResult downgrade =
      a.Kubectl({"patch", "-n", kNs, "sj", "old", "--subresource=status", "--type=merge", "-p",
                 R"({"status":{"submittedTo":null,"jobTag":null}})"});
  ASSERT_EQ(downgrade.exit_code, 0) << downgrade.err;
  ASSERT_EQ(a.Get("old", "{.status.submittedTo}"), "");
  a.RestartOperator();
  CommandResult learned = a.WaitFor("old", "{.status.submittedTo.clusterId}=demo-cluster", "30s");
  EXPECT_EQ(learned.exit_code, 0) << learned.out << learned.err;
  EXPECT_EQ(testing::TagUid(a.Get("old", "{.status.jobTag}")), a.Get("old", "{.metadata.uid}"));
  EXPECT_EQ(a.Get("old", "{.status.jobState}"), "RUNNING");
  CommandResult del = a.Kubectl({"delete", "-n", kNs, "sj", "old", "--timeout=60s"});
  EXPECT_EQ(del.exit_code, 0) << del.err;
  EXPECT_EQ(SimState(id), "CANCELLED");
}

}  // namespace
}  // namespace slurmop
