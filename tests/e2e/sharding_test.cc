// File: tests/e2e/sharding_test.cc
//
// Sharding over replicas (#16 item 4), end to end: three operator binaries with --shards=4
// against the stand-in API server and one Agent Platform stand-in, 7 SlurmClusters and one
// ClusterSlurmCluster (all pointing at the same Slurm cluster, so every shard's orphan sweep sees
// the other shards' jobs and must leave them alone), SlurmJobs on all of them, driven with the
// real kubectl.
//
//  * every watch of SlurmJobs, SlurmClusters and ClusterSlurmClusters carries a label selector
//    (a shard's "hpc.slurmoperator.dev/shard=k", or the labeller's "notin"), and each shard is
//    watched by exactly the replica whose Lease holds it;
//  * SIGKILL of a replica holding shards: they move to the others within a measured bound;
//  * a fourth replica: shards rebalance to it within a measured bound;
//  * every SlurmJob was submitted exactly once (the stand-in's job table: no duplicate, none
//    lost) and its status names that job;
//  * the sharded run needs no grant beyond deploy/rbac*.yaml.
//
// Short Lease timings (4 s / 3 s / 1 s) keep it well under a minute; the figures it prints are
// for those timings (a move takes at most lease duration + two retry periods).

#include <signal.h>

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "controller/reconcile/shards.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/manifests.h"
#include "tests/testing/stand_in_admin.h"
#include "tests/testing/stand_ins.h"
#include "tests/testing/subprocess.h"

namespace slurmop {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::CommandResult;
using testing::RunCommand;
using testing::StandInAdmin;
using testing::Subprocess;
using testing::WaitUntil;

constexpr char kPython[] = "/usr/bin/python3";
constexpr char kNs[] = "team";
constexpr char kOperatorNs[] = "slurmjob-operator-system";
constexpr int kShards = 4;
constexpr int kClusters = 8;  // c0..c6 SlurmClusters, shared (a ClusterSlurmCluster)
const std::string kLabel = "hpc.slurmoperator.dev/shard";

// Lease timings (duration, renew deadline, retry period): 4/3/1 s, or SHARDING_LEASE="15,10,2"
// (the defaults) to measure a move with the production timings.
std::vector<std::string> LeaseTimings() {
  std::vector<std::string> t = {"4", "3", "1"};
  if (const char* e = std::getenv("SHARDING_LEASE"); e != nullptr && *e != '\0') {
    std::stringstream in(e);
    for (std::string& v : t) std::getline(in, v, ',');
  }
  return t;
}

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class Sharding : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = SLURMOP_SOURCE_DIR;
    dir_ = testing::MakeTempDir("slurmop-sharding-");
    stand_ins_ = std::make_unique<testing::StandIns>(
        dir_,
        testing::StandInOptions{.kube_apiserver_flags = {"--access-log", dir_ + "/access.log"},
                                .kubectl_timeout = seconds(60)});
    ASSERT_TRUE(stand_ins_->WaitUntilServing());
    kube_port_ = stand_ins_->kube_port();
    ap_port_ = stand_ins_->agent_platform_port();
    ASSERT_TRUE(stand_ins_->kubectl().InstallCrds());
    for (const char* ns : {kOperatorNs, kNs}) {
      ASSERT_TRUE(stand_ins_->kubectl().CreateNamespace(ns));
    }
    std::string yaml;
    for (int i = 0; i < kClusters - 1; ++i) {
      yaml +=
          "---\napiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmCluster\n"
          "metadata: {name: c" +
          std::to_string(i) + ", namespace: " + kNs + "}\nspec:\n" + ClusterSpec();
    }
    yaml +=
        "---\napiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: ClusterSlurmCluster\n"
        "metadata: {name: shared}\nspec:\n" +
        ClusterSpec() + "  namespaceSelector: {}\n";
    ASSERT_TRUE(stand_ins_->kubectl().Apply(yaml));
  }

  void TearDown() override {
    for (auto& [name, op] : operators_) {
      if (op) op->Stop(SIGTERM, seconds(10));
      if (HasFailure()) {
        std::cerr << "---- " << name << " log (tail) ----\n"
                  << testing::LogTail(dir_ + "/" + name + ".log", 4000) << "\n";
      }
    }
    operators_.clear();
    stand_ins_.reset();
    testing::RemoveDirUnlessKept(dir_,
                                 HasFailure() || std::getenv("SHARDING_KEEP_LOGS") != nullptr);
  }

  std::string ClusterSpec() const {
    return "  projectId: demo-project\n  region: us-central1\n  clusterId: demo-cluster\n"
           "  slurmApiVersion: v0.0.42\n  defaultPartition: debug\n  endpoint: http://127.0.0.1:" +
           std::to_string(ap_port_) + "\n";
  }

  void StartOperator(const std::string& name, int shards = kShards,
                     const std::string& settle = "5") {
    std::vector<std::string> argv = {SLURMOP_OPERATOR_BINARY,
                                     "--kubeconfig=" + dir_ + "/kubeconfig",
                                     "--health-port=0",
                                     "--min-poll-seconds=0.5",
                                     "--submit-settle-seconds=" + settle,
                                     "--orphan-sweep-interval-seconds=1",
                                     "--shards=" + std::to_string(shards),
                                     "--leader-elect",
                                     "--leader-elect-identity=" + name,
                                     "--leader-elect-lease-duration-seconds=" + LeaseTimings()[0],
                                     "--leader-elect-renew-deadline-seconds=" + LeaseTimings()[1],
                                     "--leader-elect-retry-period-seconds=" + LeaseTimings()[2],
                                     "--operator-namespace=" + std::string(kOperatorNs),
                                     "--allow-operator-identity-for-namespaced-clusters",
                                     testing::AllowStandInFlag(ap_port_)};
    operators_[name] = std::make_unique<Subprocess>(argv, dir_ + "/" + name + ".log",
                                                    testing::OperatorEnv(ap_port_, dir_));
  }

  CommandResult Kubectl(std::vector<std::string> args, const std::string& stdin_data = "") const {
    return stand_ins_->kubectl().Run(std::move(args), stdin_data);
  }

  // SlurmJobs j<from>..j<to-1>, spread over the clusters.
  void CreateJobs(int from, int to, const std::string& script) {
    std::string yaml;
    for (int i = from; i < to; ++i) {
      const int c = i % kClusters;
      const std::string ref = c == kClusters - 1 ? "{kind: ClusterSlurmCluster, name: shared}"
                                                 : "{name: c" + std::to_string(c) + "}";
      yaml +=
          "---\napiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\n"
          "metadata: {name: j" +
          std::to_string(i) + ", namespace: " + kNs + "}\nspec:\n  clusterRef: " + ref +
          "\n  script: |\n    #!/bin/bash\n    " + script + "\n";
    }
    CommandResult r = Kubectl({"apply", "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  // Shard -> holder of its Lease ("" when free or released).
  std::map<int, std::string> Holders() const {
    std::map<int, std::string> out;
    CommandResult r = Kubectl({"get", "leases", "-n", kOperatorNs, "-o", "json"});
    if (r.exit_code != 0) return out;
    json list = json::parse(r.out, nullptr, false);
    if (!list.is_object()) return out;
    for (const json& l : list.value("items", json::array())) {
      const std::string name = l["metadata"].value("name", "");
      const std::string prefix = "slurmjob-operator-shard-";
      if (name.rfind(prefix, 0) != 0) continue;
      out[std::stoi(name.substr(prefix.size()))] =
          l.value("spec", json::object()).value("holderIdentity", "");
    }
    return out;
  }

  // The stand-in's open watches of `resource`: (labelSelector, user agent).
  std::vector<std::pair<std::string, std::string>> Watches(const std::string& resource) const {
    std::vector<std::pair<std::string, std::string>> out;
    json w = KubeAdmin("/__admin/watches");
    if (!w.is_object()) return out;
    for (const json& x : w.value("watches", json::array())) {
      if (x.value("resource", "") != resource) continue;
      out.emplace_back(x.value("labelSelectorText", ""), x.value("userAgent", ""));
    }
    return out;
  }

  // Shard k -> identities watching SlurmJobs with its selector.
  std::map<int, std::multiset<std::string>> ShardWatchers() const {
    std::map<int, std::multiset<std::string>> out;
    for (const auto& [sel, ua] : Watches("slurmjobs")) {
      if (sel.rfind(kLabel + "=", 0) != 0) continue;
      const size_t open = ua.find('('), close = ua.rfind(')');
      out[std::stoi(sel.substr(kLabel.size() + 1))].insert(
          open == std::string::npos ? ua : ua.substr(open + 1, close - open - 1));
    }
    return out;
  }

  // Every shard held by a live replica and watched by exactly that replica.
  bool Settled(const std::set<std::string>& live, std::map<int, std::string>* holders) const {
    *holders = Holders();
    if (static_cast<int>(holders->size()) != kShards) return false;
    std::map<int, std::multiset<std::string>> watchers = ShardWatchers();
    for (const auto& [k, who] : *holders) {
      if (!live.contains(who)) return false;
      if (watchers[k] != std::multiset<std::string>{who}) return false;
    }
    return true;
  }

  // GET `path` of the stand-in API server's admin API (over its TLS).
  json KubeAdmin(const std::string& path) const {
    // This test's CA (each test has its own stand-in and TLS directory).
    if (!kube_http_) {
      http::CpprestTransportOptions tls;
      tls.tls.ca_file = dir_ + "/tls/apiserver.crt";
      auto transport = http::CpprestTransport::Create(tls);
      if (!transport.ok()) return nullptr;
      kube_http_ = std::move(*transport);
    }
    http::Request req;
    req.method = "GET";
    req.url = "https://127.0.0.1:" + std::to_string(kube_port_) + path;
    absl::StatusOr<http::Response> r = kube_http_->Send(req);
    if (!r.ok() || r->status != 200) return nullptr;
    return json::parse(r->body, nullptr, false);
  }

  // SlurmJob name -> (uid, status.jobId).
  std::map<std::string, std::pair<std::string, int64_t>> SlurmJobs() const {
    std::map<std::string, std::pair<std::string, int64_t>> out;
    CommandResult r = Kubectl({"get", "sj", "-n", kNs, "-o", "json"});
    json list = json::parse(r.out, nullptr, false);
    if (!list.is_object()) return out;
    for (const json& j : list.value("items", json::array())) {
      out[j["metadata"].value("name", "")] = {
          j["metadata"].value("uid", ""),
          j.value("status", json::object()).value("jobId", int64_t{0})};
    }
    return out;
  }

  std::string src_, dir_;
  int kube_port_ = 0, ap_port_ = 0;
  std::unique_ptr<testing::StandIns> stand_ins_;
  mutable std::unique_ptr<http::CpprestTransport> kube_http_;
  std::map<std::string, std::unique_ptr<Subprocess>> operators_;
};

TEST_F(Sharding, ShardsMoveWhenAReplicaDiesOrJoinsAndEverySlurmJobIsSubmittedOnce) {
  const auto t0 = std::chrono::steady_clock::now();
  for (const char* name : {"op-a", "op-b", "op-c"}) StartOperator(name);
  CreateJobs(0, 48, "sleep 6");

  // 1. Each shard held and watched by one replica; nothing watched without a selector.
  std::map<int, std::string> holders;
  // Settled, and as many replicas hold shards as can.
  auto balanced = [&](const std::set<std::string>& live) {
    if (!Settled(live, &holders)) return false;
    std::set<std::string> holding;
    for (const auto& [k, who] : holders) holding.insert(who);
    return holding.size() == std::min<size_t>(live.size(), kShards);
  };
  ASSERT_TRUE(WaitUntil(
      [&] {
        return balanced({"op-a", "op-b", "op-c"});
      },
      seconds(45)))
      << json(Holders()).dump() << json(Watches("slurmjobs")).dump();
  std::map<std::string, int> per_replica;
  for (const auto& [k, who] : holders) per_replica[who]++;
  EXPECT_EQ(per_replica.size(), 3u) << json(holders).dump();  // 2, 1, 1
  for (const char* resource : {"slurmjobs", "slurmclusters", "clusterslurmclusters"}) {
    for (const auto& [sel, ua] : Watches(resource)) {
      EXPECT_FALSE(sel.empty()) << resource << " watched without a label selector by " << ua;
    }
  }
  std::cout << "settled with shards " << json(holders).dump() << " after " << SecondsSince(t0)
            << " s\n";
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const auto& [name, st] : SlurmJobs()) {
          if (st.second == 0) return false;
        }
        return true;
      },
      seconds(30)))
      << "not every SlurmJob was submitted";

  // 2. SIGKILL the replica holding most shards, with submits on the way.
  std::string victim = holders.begin()->second;
  for (const auto& [who, n] : per_replica) {
    if (n > per_replica[victim]) victim = who;
  }
  CreateJobs(48, 64, "sleep 2");
  operators_[victim]->Stop(SIGKILL);
  operators_[victim].reset();
  const auto killed = std::chrono::steady_clock::now();
  std::set<std::string> live = {"op-a", "op-b", "op-c"};
  live.erase(victim);
  ASSERT_TRUE(WaitUntil([&] { return Settled(live, &holders); }, seconds(45)))
      << json(Holders()).dump() << json(Watches("slurmjobs")).dump();
  const double moved_after_kill = SecondsSince(killed);
  std::cout << "SIGKILL of " << victim << ": its shards held and watched elsewhere after "
            << moved_after_kill << " s: " << json(holders).dump() << "\n";
  // The Lease's duration, retry periods, the watches' start.
  EXPECT_LT(moved_after_kill, std::stod(LeaseTimings()[0]) + 4 * std::stod(LeaseTimings()[2]) + 4);

  // 3. A new replica: it gets its share.
  StartOperator("op-d");
  const auto added = std::chrono::steady_clock::now();
  live.insert("op-d");
  ASSERT_TRUE(WaitUntil([&] { return balanced(live); }, seconds(45))) << json(Holders()).dump();
  const double rebalanced_after_add = SecondsSince(added);
  std::cout << "op-d added: shards rebalanced after " << rebalanced_after_add
            << " s: " << json(holders).dump() << "\n";
  CreateJobs(64, 72, "sleep 1");

  // 4. Exactly once: every SlurmJob has one Slurm job with its tag, and its status names it.
  std::map<std::string, std::pair<std::string, int64_t>> jobs;
  ASSERT_TRUE(WaitUntil(
      [&] {
        jobs = SlurmJobs();
        if (jobs.size() != 72) return false;
        for (const auto& [name, st] : jobs) {
          if (st.second == 0) return false;
        }
        return true;
      },
      seconds(30)))
      << "not every SlurmJob was submitted";
  json table = StandInAdmin(ap_port_, "GET", "/__admin/jobs");
  ASSERT_TRUE(table.is_object());
  std::map<std::string, std::vector<int64_t>> by_uid;
  for (const json& j : table.value("jobs", json::array())) {
    by_uid[testing::TagUid(j.value("comment", ""))].push_back(j.value("job_id", int64_t{0}));
  }
  int duplicates = 0, lost = 0;
  for (const auto& [name, st] : jobs) {
    const std::vector<int64_t>& ids = by_uid[st.first];
    if (ids.empty()) ++lost;
    if (ids.size() > 1) ++duplicates;
    EXPECT_EQ(ids, std::vector<int64_t>{st.second}) << name;
  }
  EXPECT_EQ(duplicates, 0);
  EXPECT_EQ(lost, 0);
  std::cout << jobs.size() << " SlurmJobs: " << duplicates << " duplicates, " << lost
            << " lost; total " << SecondsSince(t0) << " s\n";

  // 5. SIGTERM: each replica stops its shards, releases their Leases and exits 0.
  for (auto& [name, op] : operators_) {
    if (!op) continue;
    const int status = op->Stop(SIGTERM, seconds(10));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << name << " did not exit cleanly on SIGTERM (status " << status << ")";
  }
  operators_.clear();
  for (const auto& [k, who] : Holders()) EXPECT_EQ(who, "") << "shard " << k << " not released";

  // 6. No request of the sharded run lacks a grant in deploy/rbac*.yaml.
  CommandResult verdict = RunCommand(
      {kPython, src_ + "/tests/e2e/rbac_check.py", "--allow-unused", "--access-log",
       dir_ + "/access.log", "--user-agent", "slurmjob-operator", "--service-account",
       std::string(kOperatorNs) + "/slurmjob-operator", src_ + "/deploy/rbac.yaml",
       src_ + "/deploy/rbac-read-all-namespaces.yaml", src_ + "/deploy/rbac-sharding.yaml"});
  EXPECT_EQ(verdict.exit_code, 0) << verdict.out << verdict.err;
}

// A SlurmJob created before its cluster is labelled with the cluster's shard at once; a SlurmJob
// whose clusterRef moves it to the other replica's shard while its submit's outcome is unknown
// (the answer lost, the job landing 4 s later) is submitted once: the new owner searches for its
// tag and waits out the settle period from the move before it would submit again, and adopts
// the job that landed.
TEST_F(Sharding, ASlurmJobMovingToAnotherShardDuringAnUnknownSubmitIsSubmittedOnce) {
  // Two clusters in different shards of 2.
  std::string from, to;
  for (int i = 0; i < kClusters - 1 && (from.empty() || to.empty()); ++i) {
    const std::string c = "c" + std::to_string(i);
    (reconcile::ShardOfCluster(kNs, c, 2) == 0 ? from : to) = c;
  }
  ASSERT_FALSE(from.empty() || to.empty());
  StartOperator("op-a", 2, "10");
  StartOperator("op-b", 2, "10");
  // Before its cluster exists.
  CommandResult early =
      Kubectl({"apply", "-f", "-"},
              "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\nmetadata: {name: early, "
              "namespace: team}\nspec:\n  clusterRef: {name: later}\n  script: |\n    #!/bin/bash\n"
              "    sleep 1\n");
  ASSERT_EQ(early.exit_code, 0) << early.err;
  const std::string want = std::to_string(reconcile::ShardOfCluster(kNs, "later", 2));
  EXPECT_TRUE(WaitUntil(
      [&] {
        return Kubectl({"get", "sj", "-n", kNs, "early", "-o",
                        "jsonpath={.metadata.labels.hpc\\.slurmoperator\\.dev/shard}"})
                   .out == want;
      },
      seconds(20)));
  std::map<int, std::string> holders;
  ASSERT_TRUE(WaitUntil(
      [&] {
        holders = Holders();
        return holders.size() == 2 && !holders[0].empty() && !holders[1].empty() &&
               holders[0] != holders[1];
      },
      seconds(20)))
      << json(holders).dump();

  // The submit's answer is lost; Slurm gets it 4 s later.
  ASSERT_FALSE(StandInAdmin(ap_port_, "POST", "/__admin/faults",
                            {{"action", "drop_then_perform_later"},
                             {"later", 4},
                             {"method", "POST"},
                             {"path", "/job/submit$"},
                             {"count", 1}})
                   .is_null());
  CommandResult mover = Kubectl({"apply", "-f", "-"},
                                "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\n"
                                "metadata: {name: mover, namespace: team}\nspec:\n  clusterRef: "
                                "{name: " +
                                    from + "}\n  script: |\n    #!/bin/bash\n    sleep 30\n");
  ASSERT_EQ(mover.exit_code, 0) << mover.err;
  CommandResult unknown = Kubectl(
      {"wait", "-n", kNs, "sj/mover",
       R"(--for=jsonpath={.status.conditions[?(@.type=="Reconciling")].reason}=SubmitOutcomeUnknown)",
       "--timeout=20s"});
  ASSERT_EQ(unknown.exit_code, 0) << unknown.out << unknown.err;
  CommandResult moved = Kubectl({"patch", "-n", kNs, "sj", "mover", "--type=merge", "-p",
                                 R"({"spec":{"clusterRef":{"name":")" + to + R"("}}})"});
  ASSERT_EQ(moved.exit_code, 0) << moved.err;
  EXPECT_TRUE(WaitUntil(
      [&] {
        return Kubectl({"get", "sj", "-n", kNs, "mover", "-o",
                        "jsonpath={.metadata.labels.hpc\\.slurmoperator\\.dev/shard}"})
                   .out == "1";
      },
      seconds(10)));
  // Its cluster appears; both are submitted, each once.
  CommandResult later = Kubectl({"apply", "-f", "-"},
                                "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmCluster\n"
                                "metadata: {name: later, namespace: team}\nspec:\n" +
                                    ClusterSpec());
  ASSERT_EQ(later.exit_code, 0) << later.err;
  std::map<std::string, std::pair<std::string, int64_t>> jobs;
  ASSERT_TRUE(WaitUntil(
      [&] {
        jobs = SlurmJobs();
        return jobs["early"].second != 0 && jobs["mover"].second != 0;
      },
      seconds(40)))
      << json(jobs).dump();
  json table = StandInAdmin(ap_port_, "GET", "/__admin/jobs");
  std::map<std::string, std::vector<int64_t>> by_uid;
  for (const json& j : table.value("jobs", json::array())) {
    by_uid[testing::TagUid(j.value("comment", ""))].push_back(j.value("job_id", int64_t{0}));
  }
  for (const char* name : {"early", "mover"}) {
    EXPECT_EQ(by_uid[jobs[name].first], std::vector<int64_t>{jobs[name].second}) << name;
  }
}

}  // namespace
}  // namespace slurmop
