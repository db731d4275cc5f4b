// File: tests/e2e/chaos_test.cc
//
// A seeded, repeatable, time-bounded chaos run: the operator binary against
// the stand-in Kubernetes API server and the Agent Platform stand-in (with
// its Slurm simulator), while the harness
//  * creates CHAOS_JOBS SlurmJobs (a few with kubectl, the rest by direct
//    POSTs): short and long jobs, some exiting != 0, some deleted mid-way;
//  * SIGKILLs the operator at random points and restarts it after a random
//    downtime (sometimes longer than the simulator's MinJobAge, so finished
//    jobs leave the live queue while nobody watches);
//  * restarts the stand-in API server (SIGTERM; --state-file keeps its
//    objects, resourceVersions continue upward, older watches get 410) and
//    drops its watches in between;
//  * makes Agent Platform answer UNAVAILABLE and 500 for a fraction of all
//    calls, perform a submit and then lose the response (dropped connection,
//    or a 500/504 after performing), and hold some submits past the
//    operator's 30 s client timeout before performing them.
// The seed (CHAOS_SEED) fixes the job mix and the schedule of every action;
// thread timing still varies from run to run, so a failing seed is a lead,
// not a guaranteed replay. The plan is written to plan.txt in the log dir.
//
// Contract checked at the end, against the simulator's own job table
// (agent_platform /__admin/jobs), after the faults stop and the operator is
// given CHAOS_SETTLE_SECONDS to catch up:
//  * exactly ONE Slurm job per distinct tag (`comment`, which starts with
//    `slurmjob-operator:<uid>`; a run suffix may follow): duplicates == 0;
//  * every tag belongs to a SlurmJob this run created;
//  * every SlurmJob that was not deleted still exists and has at least one
//    Slurm job (lost == 0), its status.jobId names one of them, and its
//    status.jobState equals the simulator's final state of that job, which is
//    the state its script implies (COMPLETED, or FAILED with its exit code);
//  * every deleted SlurmJob is gone (no stuck finalizer) and each of its
//    Slurm jobs is cancelled or finished.
// The counts are printed as `METRIC name value unit` lines on stderr.
//
// Environment (defaults are the short run of the default suite):
//   CHAOS_SHARDS (0; N runs the operator with --shards=N, a new replica identity per restart),
//   CHAOS_SEED (20261130), CHAOS_JOBS (48), CHAOS_DURATION_SECONDS (60),
//   CHAOS_SETTLE_SECONDS (150), CHAOS_OPERATOR_KILLS_PER_MINUTE (8),
//   CHAOS_APISERVER_RESTARTS_PER_MINUTE (3), CHAOS_WATCH_DROPS_PER_MINUTE (6),
//   CHAOS_AP_UNAVAILABLE_RATE (0.05), CHAOS_AP_INTERNAL_RATE (0.05),
//   CHAOS_AP_LOST_SUBMIT_RATE (0.25, performed then dropped/500/504),
//   CHAOS_AP_TIMEOUT_RATE (0.04 of submits held CHAOS_AP_TIMEOUT_SECONDS=32),
//   CHAOS_DELETE_FRACTION (0.2), CHAOS_FAIL_FRACTION (0.2),
//   CHAOS_LONG_FRACTION (0.25), CHAOS_KEEP_LOGS (unset: logs kept on failure).
// scripts/chaos.sh runs the long version (>= 200 SlurmJobs).
//
// ChaosRepro.* are deterministic reproductions (one SlurmJob, a scripted
// fault sequence) of the two ways to a duplicate the chaos run found on the
// operator of commit 29c5fa4; they pass since the fix.

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "controller/http/cpprest_transport.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/manifests.h"
#include "tests/testing/stand_ins.h"
#include "tests/testing/subprocess.h"

namespace slurmop {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;
using testing::CommandResult;
using testing::ReadFile;
using testing::ReadPort;
using testing::Subprocess;
using testing::WaitUntil;

constexpr char kNs[] = "chaos";
constexpr char kGroupPath[] = "/apis/hpc.slurmoperator.dev/v1alpha1";
constexpr char kTagPrefix[] = "slurmjob-operator:";
constexpr char kToken[] = "chaos-harness-token";

void Metric(const std::string& name, double value, const std::string& unit) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f", value);
  std::cerr << "METRIC " << name << " " << buf << " " << unit << std::endl;
}

double EnvDouble(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  double d = std::strtod(v, &end);
  return end != v ? d : fallback;
}

bool IsTerminal(const std::string& state) {
  static const std::set<std::string> kFinal = {
      "COMPLETED", "FAILED",    "CANCELLED", "TIMEOUT",       "NODE_FAIL",
      "PREEMPTED", "BOOT_FAIL", "DEADLINE",  "OUT_OF_MEMORY", "SPECIAL_EXIT"};
  return kFinal.count(state) > 0;
}

struct Config {
  uint64_t seed = 20261130;
  int jobs = 48;
  double duration_s = 60;
  double settle_s = 150;
  double kills_per_min = 8;
  double apiserver_restarts_per_min = 3;
  double watch_drops_per_min = 6;
  double ap_unavailable_rate = 0.05;
  double ap_internal_rate = 0.05;
  double ap_lost_submit_rate = 0.25;
  double ap_timeout_rate = 0.04;
  double ap_timeout_s = 32;
  double delete_fraction = 0.2;
  double fail_fraction = 0.2;
  double long_fraction = 0.25;
  bool keep_logs = false;
  // --shards for the operator (0: not sharded). Each restart is a new replica identity: it takes
  // the shards once the killed one's Leases expired (4 s Leases), with the settle window.
  int shards = 0;

  static Config FromEnv() {
    Config c;
    c.seed = static_cast<uint64_t>(EnvDouble("CHAOS_SEED", static_cast<double>(c.seed)));
    c.jobs = static_cast<int>(EnvDouble("CHAOS_JOBS", c.jobs));
    c.duration_s = EnvDouble("CHAOS_DURATION_SECONDS", c.duration_s);
    c.settle_s = EnvDouble("CHAOS_SETTLE_SECONDS", c.settle_s);
    c.kills_per_min = EnvDouble("CHAOS_OPERATOR_KILLS_PER_MINUTE", c.kills_per_min);
    c.apiserver_restarts_per_min =
        EnvDouble("CHAOS_APISERVER_RESTARTS_PER_MINUTE", c.apiserver_restarts_per_min);
    c.watch_drops_per_min = EnvDouble("CHAOS_WATCH_DROPS_PER_MINUTE", c.watch_drops_per_min);
    c.ap_unavailable_rate = EnvDouble("CHAOS_AP_UNAVAILABLE_RATE", c.ap_unavailable_rate);
    c.ap_internal_rate = EnvDouble("CHAOS_AP_INTERNAL_RATE", c.ap_internal_rate);
    c.ap_lost_submit_rate = EnvDouble("CHAOS_AP_LOST_SUBMIT_RATE", c.ap_lost_submit_rate);
    c.ap_timeout_rate = EnvDouble("CHAOS_AP_TIMEOUT_RATE", c.ap_timeout_rate);
    c.ap_timeout_s = EnvDouble("CHAOS_AP_TIMEOUT_SECONDS", c.ap_timeout_s);
    c.delete_fraction = EnvDouble("CHAOS_DELETE_FRACTION", c.delete_fraction);
    c.fail_fraction = EnvDouble("CHAOS_FAIL_FRACTION", c.fail_fraction);
    c.long_fraction = EnvDouble("CHAOS_LONG_FRACTION", c.long_fraction);
    c.keep_logs = std::getenv("CHAOS_KEEP_LOGS") != nullptr;
    c.shards = static_cast<int>(EnvDouble("CHAOS_SHARDS", c.shards));
    return c;
  }
};

// A seeded generator whose outputs do not depend on the standard library's
// distribution implementations.
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  double Uniform(double lo, double hi) { return lo + (hi - lo) * ((gen_() >> 11) * 0x1.0p-53); }
  int Int(int lo, int hi) {  // inclusive
    return lo + static_cast<int>(gen_() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool Chance(double p) { return Uniform(0, 1) < p; }
  // Gap of a Poisson process with `per_minute` events per minute.
  double Gap(double per_minute) { return -std::log(1.0 - Uniform(0, 0.999)) * 60.0 / per_minute; }

 private:
  std::mt19937_64 gen_;
};

struct JobPlan {
  enum Kind { kShort, kLong, kFail };
  std::string name;
  Kind kind = kShort;
  int sleep_s = 0;
  int exit_code = 0;
  double create_at = 0;
  std::optional<double> delete_at;
  bool via_kubectl = false;
  // Filled while running.
  std::string uid;
  bool deleted = false;  // the API server accepted our delete

  std::string Script() const {
    std::string s = "#!/bin/bash\necho chaos " + name + "\nsleep " + std::to_string(sleep_s) + "\n";
    if (exit_code != 0) s += "exit " + std::to_string(exit_code) + "\n";
    return s;
  }
  std::string ExpectedState() const { return exit_code == 0 ? "COMPLETED" : "FAILED"; }
};

enum class EventType { kCreate, kDelete, kKillOperator, kStartOperator, kRestartApiserver, kDrop };

struct Event {
  double at = 0;
  EventType type = EventType::kCreate;
  int job = -1;
  double downtime = 0;  // kRestartApiserver
};

const char* EventName(EventType t) {
  switch (t) {
    case EventType::kCreate:
      return "create";
    case EventType::kDelete:
      return "delete";
    case EventType::kKillOperator:
      return "kill-operator";
    case EventType::kStartOperator:
      return "start-operator";
    case EventType::kRestartApiserver:
      return "restart-apiserver";
    case EventType::kDrop:
      return "drop-watches";
  }
  return "?";
}

// The whole run, derived from the seed before anything starts.
struct Plan {
  std::vector<JobPlan> jobs;
  std::vector<Event> events;

  static Plan Make(const Config& c) {
    Plan p;
    Rng rng(c.seed);
    const double create_window = c.duration_s * 0.6;
    const int max_long = std::max(10, static_cast<int>(std::min(40.0, c.duration_s / 2)));
    for (int i = 0; i < c.jobs; ++i) {
      JobPlan j;
      j.name = "chaos-" + std::to_string(i);
      double k = rng.Uniform(0, 1);
      if (k < c.fail_fraction) {
        j.kind = JobPlan::kFail;
        j.sleep_s = rng.Int(0, 3);
        j.exit_code = rng.Int(1, 7);
      } else if (k < c.fail_fraction + c.long_fraction) {
        j.kind = JobPlan::kLong;
        j.sleep_s = rng.Int(10, max_long);
      } else {
        j.kind = JobPlan::kShort;
        j.sleep_s = rng.Int(0, 3);
      }
      j.via_kubectl = i < 3;
      j.create_at = i < 3 ? 0.0 : rng.Uniform(0, create_window);
      if (rng.Chance(c.delete_fraction)) {
        // Before the submit, while pending or running, or after the end.
        j.delete_at = j.create_at + rng.Uniform(0, j.sleep_s + 8.0);
      }
      p.jobs.push_back(j);
    }
    for (size_t i = 0; i < p.jobs.size(); ++i) {
      p.events.push_back({p.jobs[i].create_at, EventType::kCreate, static_cast<int>(i)});
      if (p.jobs[i].delete_at) {
        p.events.push_back({*p.jobs[i].delete_at, EventType::kDelete, static_cast<int>(i)});
      }
    }
    if (c.kills_per_min > 0) {
      for (double t = rng.Gap(c.kills_per_min); t < c.duration_s; t += rng.Gap(c.kills_per_min)) {
        // Mostly quick restarts; one in four outlasts MinJobAge (5 s).
        double down = rng.Chance(0.25) ? rng.Uniform(6, 10) : rng.Uniform(0.2, 3);
        p.events.push_back({t, EventType::kKillOperator});
        p.events.push_back({t + down, EventType::kStartOperator});
        t += down;
      }
    }
    if (c.apiserver_restarts_per_min > 0) {
      for (double t = rng.Gap(c.apiserver_restarts_per_min); t < c.duration_s;
           t += rng.Gap(c.apiserver_restarts_per_min)) {
        p.events.push_back({t, EventType::kRestartApiserver, -1, rng.Uniform(0.2, 3)});
      }
    }
    if (c.watch_drops_per_min > 0) {
      for (double t = rng.Gap(c.watch_drops_per_min); t < c.duration_s;
           t += rng.Gap(c.watch_drops_per_min)) {
        p.events.push_back({t, EventType::kDrop});
      }
    }
    std::stable_sort(p.events.begin(), p.events.end(),
                     [](const Event& a, const Event& b) { return a.at < b.at; });
    return p;
  }

  std::string Describe() const {
    std::ostringstream out;
    for (const auto& j : jobs) {
      out << j.name << " kind="
          << (j.kind == JobPlan::kLong   ? "long"
              : j.kind == JobPlan::kFail ? "fail"
                                         : "short")
          << " sleep=" << j.sleep_s << " exit=" << j.exit_code << " create_at=" << j.create_at
          << " delete_at=" << (j.delete_at ? std::to_string(*j.delete_at) : "-")
          << (j.via_kubectl ? " kubectl" : "") << "\n";
    }
    for (const auto& e : events) {
      out << "t=" << e.at << " " << EventName(e.type);
      if (e.job >= 0) out << " " << jobs[e.job].name;
      if (e.type == EventType::kRestartApiserver) out << " downtime=" << e.downtime;
      out << "\n";
    }
    return out.str();
  }
};

class Chaos : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg_ = Config::FromEnv();
    dir_ = testing::MakeTempDir("slurmop-chaos-");
    kubectl_.emplace(dir_ + "/kubeconfig", std::map<std::string, std::string>{{"HOME", dir_}});
    std::cerr << "chaos: logs in " << dir_ << std::endl;
  }

  void TearDown() override {
    if (operator_) operator_->Stop(SIGTERM, seconds(10));
    operator_.reset();
    agent_.reset();
    apiserver_.reset();
    delete kube_http_;
    delete ap_http_;
    if (!HasFailure() && !cfg_.keep_logs) {
      std::filesystem::remove_all(dir_);
    } else {
      std::cerr << "chaos: logs kept in " << dir_ << " (seed " << cfg_.seed << ")\n";
    }
  }

  // ------------------------------------------------------------ processes
  // The API server (with --state-file), Agent Platform, the CRDs, the
  // namespace and the SlurmCluster `local`.
  void StartStandIns() {
    StartApiserver(0);
    ASSERT_GT(kube_port_, 0) << ReadFile(apiserver_->log_path());
    agent_ = testing::StartAgentPlatform(dir_, {"--verbose"});
    ap_port_ = ReadPort(dir_ + "/ap.port", seconds(60));
    ASSERT_GT(ap_port_, 0) << ReadFile(dir_ + "/agent_platform.log");
    ASSERT_TRUE(
        WaitUntil([&] { return std::filesystem::exists(dir_ + "/kubeconfig"); }, seconds(20)));
    http::CpprestTransportOptions tls;
    tls.tls.ca_file = dir_ + "/tls/apiserver.crt";
    auto kube_transport = http::CpprestTransport::Create(tls);
    ASSERT_TRUE(kube_transport.ok()) << kube_transport.status();
    kube_http_ = kube_transport->release();
    auto ap_transport = http::CpprestTransport::Create({});
    ASSERT_TRUE(ap_transport.ok()) << ap_transport.status();
    ap_http_ = ap_transport->release();

    ASSERT_TRUE(kubectl_->InstallCrds());
    ASSERT_TRUE(kubectl_->CreateNamespace(kNs));
    ASSERT_TRUE(kubectl_->Apply(testing::LocalSlurmClusterManifest(kNs, ap_port_, "v0.0.42")));
  }

  // On `port` (0: any), keeping its objects in kube-state.json across restarts.
  void StartApiserver(int port) {
    apiserver_ = testing::StartKubeApiserver(
        dir_, {"--token", kToken, "--state-file", dir_ + "/kube-state.json", "--verbose"}, port,
        "kube_apiserver-" + std::to_string(++apiserver_runs_) + ".log");
    kube_port_ = ReadPort(dir_ + "/kube.port", seconds(60));
  }

  void StartOperator() {
    const std::string id = std::to_string(++operator_runs_);
    std::vector<std::string> argv = {
        SLURMOP_OPERATOR_BINARY, "--kubeconfig=" + dir_ + "/kubeconfig", "--health-port=0",
        "--min-poll-seconds=0.5", "--max-poll-seconds=5", "--agent-platform-qps=50",
        // Held submits last 32 s: past the client's 30 s timeout.
        "--submit-settle-seconds=40", "--allow-operator-identity-for-namespaced-clusters",
        testing::AllowStandInFlag(ap_port_)};
    if (cfg_.shards > 0) {
      for (const std::string& f :
           {"--shards=" + std::to_string(cfg_.shards), "--leader-elect-identity=chaos-" + id,
            std::string("--leader-elect-namespace=default"),
            std::string("--leader-elect-lease-duration-seconds=4"),
            std::string("--leader-elect-renew-deadline-seconds=3"),
            std::string("--leader-elect-retry-period-seconds=1")}) {
        argv.push_back(f);
      }
    }
    // Every other process has the submit-note key (submit_target_note.h): first
    // submits whose target rides with the finalizer, and restarts that gain or
    // lose the key while such a submit is in flight.
    if (operator_runs_ % 2 == 1) {
      const std::string key_file = dir_ + "/submit-note.key";
      if (!std::filesystem::exists(key_file)) {
        std::ofstream(key_file) << "chaos-submit-note-key-0123456789abcdef\n";
      }
      argv.push_back("--submit-note-key-file=" + key_file);
    } else {
      argv.push_back("--submit-note-key-secret=");  // not the Secret's key either: none at all
    }
    operator_ = std::make_unique<Subprocess>(argv, dir_ + "/operator-" + id + ".log",
                                             testing::OperatorEnv(ap_port_, dir_));
  }

  // ------------------------------------------------------------ HTTP
  static http::Response Send(http::Transport* t, const std::string& method, const std::string& url,
                             const std::string& body, http::Headers headers = {}) {
    http::Request req;
    req.method = method;
    req.url = url;
    req.headers = std::move(headers);
    req.headers["User-Agent"] = "chaos-test";
    if (!body.empty()) {
      req.headers["Content-Type"] = "application/json";
      req.body = body;
    }
    req.timeout = milliseconds(20000);
    absl::StatusOr<http::Response> r = t->Send(req);
    if (!r.ok()) {
      http::Response failed;
      failed.status = -1;
      failed.body = r.status().ToString();
      return failed;
    }
    return *r;
  }

  http::Response KubeApi(const std::string& method, const std::string& path,
                         const std::string& body = "") {
    return Send(
        kube_http_, method, "https://127.0.0.1:" + std::to_string(kube_port_) + path, body,
        {{"Authorization", std::string("Bearer ") + kToken}, {"Accept", "application/json"}});
  }

  json KubeAdmin(const std::string& path, const json& body) {
    http::Response r = Send(kube_http_, "POST",
                            "https://127.0.0.1:" + std::to_string(kube_port_) + path, body.dump());
    return r.status == 200 ? json::parse(r.body, nullptr, false) : json(nullptr);
  }

  json AgentAdmin(const std::string& method, const std::string& path, const json& body = nullptr) {
    http::Response r = Send(ap_http_, method, "http://127.0.0.1:" + std::to_string(ap_port_) + path,
                            body.is_null() ? "" : body.dump());
    if (r.status != 200) {
      ADD_FAILURE() << "agent platform admin " << method << " " << path << ": " << r.status << " "
                    << r.body;
      return nullptr;
    }
    return json::parse(r.body, nullptr, false);
  }

  CommandResult Kubectl(std::vector<std::string> args, const std::string& stdin_data = "") {
    return kubectl_->Run(std::move(args), stdin_data);
  }

  // ------------------------------------------------------------ jobs
  std::string JobPath(const std::string& name = "") {
    return std::string(kGroupPath) + "/namespaces/" + kNs + "/slurmjobs" +
           (name.empty() ? "" : "/" + name);
  }

  json JobObject(const JobPlan& j) {
    return {
        {"apiVersion", "hpc.slurmoperator.dev/v1alpha1"},
        {"kind", "SlurmJob"},
        {"metadata", {{"name", j.name}, {"namespace", kNs}}},
        {"spec",
         {{"clusterRef", {{"name", "local"}}}, {"timeLimitMinutes", 5}, {"script", j.Script()}}}};
  }

  // Creates the SlurmJob, retrying through API server restarts. A create
  // whose reply was lost shows up as 409 on the retry: then it is ours.
  void Create(JobPlan& j) {
    const auto deadline = steady_clock::now() + seconds(90);
    while (steady_clock::now() < deadline) {
      if (j.via_kubectl) {
        std::string yaml =
            "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\n"
            "metadata: {name: " +
            j.name + ", namespace: " + kNs +
            "}\nspec:\n  clusterRef: {name: local}\n  timeLimitMinutes: 5\n"
            "  script: |\n";
        std::stringstream in(j.Script());
        for (std::string line; std::getline(in, line);) yaml += "    " + line + "\n";
        CommandResult r = Kubectl({"apply", "-f", "-"}, yaml);
        if (r.exit_code == 0) {
          http::Response g = KubeApi("GET", JobPath(j.name));
          json o = json::parse(g.body, nullptr, false);
          if (g.status == 200 && o.is_object()) {
            j.uid = o["metadata"].value("uid", "");
            return;
          }
        }
      } else {
        http::Response r = KubeApi("POST", JobPath(), JobObject(j).dump());
        json o = json::parse(r.body, nullptr, false);
        if (r.status == 201 && o.is_object()) {
          j.uid = o["metadata"].value("uid", "");
          return;
        }
        if (r.status == 409) {
          http::Response g = KubeApi("GET", JobPath(j.name));
          json got = json::parse(g.body, nullptr, false);
          if (g.status == 200 && got.is_object()) {
            j.uid = got["metadata"].value("uid", "");
            return;
          }
        }
      }
      std::this_thread::sleep_for(milliseconds(200));
    }
    ADD_FAILURE() << "could not create " << j.name;
  }

  void Delete(JobPlan& j) {
    if (j.uid.empty()) return;
    const auto deadline = steady_clock::now() + seconds(60);
    while (steady_clock::now() < deadline) {
      http::Response r = KubeApi("DELETE", JobPath(j.name));
      // 404 after a delete whose reply was lost: it was accepted.
      if (r.status == 200 || r.status == 202 || r.status == 404) {
        j.deleted = true;
        return;
      }
      std::this_thread::sleep_for(milliseconds(200));
    }
    ADD_FAILURE() << "could not delete " << j.name;
  }

  // ------------------------------------------------------------ faults
  void ArmAgentPlatformFaults() {
    json faults = json::array();
    uint64_t s = cfg_.seed * 16;
    auto add = [&](json f, double p) {
      if (p <= 0) return;
      f["probability"] = p;
      f["seed"] = ++s;
      faults.push_back(f);
    };
    // Submit faults first (the first matching fault wins).
    const double lost = cfg_.ap_lost_submit_rate;
    add({{"method", "POST"}, {"path", "/job/submit$"}, {"action", "perform_then_drop"}}, lost / 2);
    add({{"method", "POST"},
         {"path", "/job/submit$"},
         {"action", "perform_then_error"},
         {"error", "INTERNAL"}},
        lost / 4);
    add({{"method", "POST"},
         {"path", "/job/submit$"},
         {"action", "perform_then_error"},
         {"error", "DEADLINE_EXCEEDED"}},
        lost / 4);
    // Held past the operator's 30 s client timeout, then performed.
    add({{"method", "POST"},
         {"path", "/job/submit$"},
         {"action", "delay"},
         {"delay", cfg_.ap_timeout_s}},
        cfg_.ap_timeout_rate);
    add({{"method", "DELETE"}, {"path", "/job/"}, {"action", "perform_then_drop"}}, lost / 2);
    add({{"action", "error"}, {"error", "UNAVAILABLE"}}, cfg_.ap_unavailable_rate);
    add({{"action", "error"}, {"error", "INTERNAL"}}, cfg_.ap_internal_rate);
    if (faults.empty()) return;
    json r = AgentAdmin("POST", "/__admin/faults", {{"faults", faults}});
    ASSERT_TRUE(r.is_object() && r.contains("added")) << r.dump();
  }

  // Hits per fault, by a readable name.
  std::map<std::string, int> FaultHits() {
    std::map<std::string, int> out;
    json all = AgentAdmin("GET", "/__admin/faults");
    for (const auto& f : all.value("faults", json::array())) {
      std::string name = f.value("action", "?");
      if (f.contains("error") && f["error"].is_string() && name != "delay" &&
          name != "perform_then_drop") {
        name += ":" + f["error"].get<std::string>();
      }
      if (f.value("method", "") == "POST") name = "submit_" + name;
      if (f.value("method", "") == "DELETE") name = "cancel_" + name;
      out[name] += f.value("hits", 0);
    }
    return out;
  }

  // ------------------------------------------------------------ checks
  static double EpochNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  // "+12.3s": seconds since the chaos phase started.
  std::string Since(double epoch) const {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%+.1fs", epoch - t0_epoch_);
    return buf;
  }

  struct Verdict {
    int duplicates = 0;      // extra Slurm jobs over one per tag
    int lost = 0;            // SlurmJobs (not deleted) with no Slurm job, or gone
    int wrong_state = 0;     // status vs. the simulator, or the simulator vs. the script
    int stuck = 0;           // deleted SlurmJobs still present
    int active_orphans = 0;  // Slurm jobs of deleted SlurmJobs still active
    int strays = 0;          // tags of no SlurmJob of this run
    int unsettled = 0;       // SlurmJobs whose state is not final yet
    std::vector<std::string> problems;
    // Nothing left that the operator could still bring about. (A duplicate,
    // a stray or a wrong final state cannot heal.)
    bool Settled() const {
      return lost == 0 && stuck == 0 && active_orphans == 0 && unsettled == 0;
    }
  };

  Verdict Check() {
    Verdict v;
    std::map<std::string, json> objects;
    http::Response lr = KubeApi("GET", JobPath());
    json list = json::parse(lr.body, nullptr, false);
    if (lr.status != 200 || !list.is_object()) {
      v.problems.push_back("cannot list SlurmJobs: " + std::to_string(lr.status) + " " + lr.body);
      v.unsettled = 1;
      return v;
    }
    for (const auto& item : list.value("items", json::array())) {
      objects[item["metadata"].value("name", "")] = item;
    }
    json ap = AgentAdmin("GET", "/__admin/jobs");
    if (!ap.is_object()) {
      v.unsettled = 1;
      return v;
    }
    std::map<std::string, std::vector<json>> by_comment;  // full tag -> Slurm jobs
    std::map<std::string, std::vector<json>> by_uid;
    std::set<std::string> uids;
    for (const auto& j : jobs_) uids.insert(j.uid);
    for (const auto& sj : ap.value("jobs", json::array())) {
      const std::string c = sj.value("comment", "");
      if (c.rfind(kTagPrefix, 0) != 0) continue;
      by_comment[c].push_back(sj);
      const std::string uid = testing::TagUid(c);
      by_uid[uid].push_back(sj);
      if (!uids.count(uid)) {
        ++v.strays;
        v.problems.push_back("Slurm job " + sj.dump() +
                             " carries a tag of no SlurmJob of this run");
      }
    }
    for (const auto& [tag, list_for_tag] : by_comment) {
      if (list_for_tag.size() > 1) {
        v.duplicates += static_cast<int>(list_for_tag.size()) - 1;
        std::string ids;
        for (const auto& x : list_for_tag) {
          ids += " " + std::to_string(x.value("job_id", 0)) +
                 " (submitted at t=" + Since(x.value("submit_time", 0.0)) + ")";
        }
        v.problems.push_back("DUPLICATE: tag " + tag + " on " +
                             std::to_string(list_for_tag.size()) + " Slurm jobs:" + ids);
      }
    }
    for (const auto& j : jobs_) {
      if (j.uid.empty()) continue;  // never created (already reported)
      const std::vector<json>& slurm = by_uid[j.uid];
      const bool exists = objects.count(j.name) > 0;
      if (j.deleted) {
        if (exists) {
          ++v.stuck;
          v.problems.push_back("STUCK: deleted " + j.name + " still exists: " +
                               objects[j.name].value("metadata", json::object()).dump());
        }
        for (const auto& sj : slurm) {
          const std::string state = sj.value("state", "");
          if (!IsTerminal(state)) {
            ++v.active_orphans;
            v.problems.push_back("ACTIVE AFTER DELETE: " + j.name + " Slurm job " +
                                 std::to_string(sj.value("job_id", 0)) + " is " + state);
          }
        }
        continue;
      }
      if (!exists) {
        ++v.lost;
        v.problems.push_back("LOST: " + j.name + " (uid " + j.uid +
                             ") is gone from the API server");
        continue;
      }
      if (slurm.empty()) {
        ++v.lost;
        v.problems.push_back("LOST: " + j.name + " (uid " + j.uid + ") has no Slurm job");
        continue;
      }
      const json status = objects[j.name].value("status", json::object());
      const int64_t job_id = status.value("jobId", int64_t{-1});
      const json* named = nullptr;
      for (const auto& sj : slurm) {
        if (sj.value("job_id", int64_t{-2}) == job_id) named = &sj;
      }
      const std::string state = status.value("jobState", "");
      if (named == nullptr) {
        if (IsTerminal(state))
          ++v.wrong_state;
        else
          ++v.unsettled;
        v.problems.push_back(j.name + ": status.jobId " + std::to_string(job_id) +
                             " names none of its Slurm jobs; status " + status.dump());
        continue;
      }
      const std::string sim_state = named->value("state", "");
      if (!IsTerminal(sim_state) || !IsTerminal(state) ||
          (state != sim_state && !(sim_state == "COMPLETED" && state == "COMPLETING"))) {
        if (IsTerminal(state) && IsTerminal(sim_state)) {
          ++v.wrong_state;
          v.problems.push_back("WRONG STATE: " + j.name + " status.jobState " + state +
                               " but Slurm job " + std::to_string(job_id) + " is " + sim_state);
        } else {
          ++v.unsettled;
          v.problems.push_back(j.name + ": not final yet: status " + state + ", Slurm " +
                               sim_state);
        }
        continue;
      }
      // The simulator ran the script: its outcome is what the script says.
      if (sim_state != j.ExpectedState()) {
        ++v.wrong_state;
        v.problems.push_back("WRONG STATE: " + j.name + " (not deleted) ended " + sim_state +
                             " in Slurm, its script implies " + j.ExpectedState() + ": " +
                             named->value("state_reason", json()).dump());
        continue;
      }
      if (j.exit_code != 0 && status.value("exitCode", -1) != j.exit_code) {
        ++v.wrong_state;
        v.problems.push_back("WRONG EXIT CODE: " + j.name + " status " + status.dump() +
                             ", script exits " + std::to_string(j.exit_code));
      }
    }
    return v;
  }

  Config cfg_;
  std::string dir_;
  std::optional<testing::KubectlClient> kubectl_;  // HOME: dir_
  std::unique_ptr<Subprocess> apiserver_;
  std::unique_ptr<Subprocess> agent_;
  std::unique_ptr<Subprocess> operator_;
  http::Transport* kube_http_ = nullptr;
  http::Transport* ap_http_ = nullptr;
  int kube_port_ = 0;
  int ap_port_ = 0;
  int apiserver_runs_ = 0;
  int operator_runs_ = 0;
  double t0_epoch_ = 0;  // wall clock of the chaos phase's start (the simulator's clock)
  std::vector<JobPlan> jobs_;
};

TEST_F(Chaos, SlurmJobsSurviveKillsRestartsAndFaultsExactlyOnce) {
  const auto wall_start = steady_clock::now();
  std::cerr << "chaos: seed " << cfg_.seed << ", " << cfg_.jobs << " SlurmJobs, " << cfg_.duration_s
            << " s of faults" << std::endl;
  Plan plan = Plan::Make(cfg_);
  jobs_ = plan.jobs;
  std::ofstream(dir_ + "/plan.txt") << "seed " << cfg_.seed << "\n" << plan.Describe();

  StartStandIns();
  if (HasFatalFailure()) return;
  StartOperator();
  ArmAgentPlatformFaults();
  if (HasFatalFailure()) return;

  // ---- the chaos phase: every action at its planned time
  int kills = 0, apiserver_restarts = 0, drop_calls = 0, watches_dropped = 0;
  const auto t0 = steady_clock::now();
  t0_epoch_ = EpochNow();
  std::string kill_times;  // for the failure message
  for (const Event& e : plan.events) {
    std::this_thread::sleep_until(t0 + milliseconds(static_cast<int64_t>(e.at * 1000)));
    switch (e.type) {
      case EventType::kCreate:
        Create(jobs_[e.job]);
        break;
      case EventType::kDelete:
        Delete(jobs_[e.job]);
        break;
      case EventType::kKillOperator:
        if (operator_ && operator_->Running()) {
          operator_->Stop(SIGKILL);
          ++kills;
          kill_times += " " + Since(EpochNow());
        } else {
          ADD_FAILURE() << "the operator was not running at t=" << e.at << " (it died on its own)";
        }
        operator_.reset();
        break;
      case EventType::kStartOperator:
        StartOperator();
        break;
      case EventType::kRestartApiserver: {
        const int port = kube_port_;
        int status = apiserver_->Stop(SIGTERM, seconds(20));
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
            << "API server did not save and exit cleanly: " << status;
        std::this_thread::sleep_for(milliseconds(static_cast<int64_t>(e.downtime * 1000)));
        StartApiserver(port);
        ASSERT_EQ(kube_port_, port) << ReadFile(apiserver_->log_path());
        ++apiserver_restarts;
        break;
      }
      case EventType::kDrop: {
        json r = KubeAdmin("/__admin/drop_watches", json::object());
        if (r.is_object()) {
          ++drop_calls;
          watches_dropped += r.value("dropped", 0);
        }
        break;
      }
    }
  }
  std::this_thread::sleep_until(t0 + milliseconds(static_cast<int64_t>(cfg_.duration_s * 1000)));
  const double chaos_s = std::chrono::duration<double>(steady_clock::now() - t0).count();

  // ---- the faults stop; the operator (restarted if the plan left it down) catches up
  std::map<std::string, int> hits = FaultHits();
  AgentAdmin("POST", "/__admin/faults", {{"clear", true}});
  if (!operator_) StartOperator();
  for (const auto& j : jobs_) {
    EXPECT_FALSE(j.uid.empty()) << j.name << " was never created";
  }

  Verdict verdict;
  const auto settle_start = steady_clock::now();
  const auto settle_deadline =
      settle_start + milliseconds(static_cast<int64_t>(cfg_.settle_s * 1000));
  while (true) {
    verdict = Check();
    if (verdict.Settled() || steady_clock::now() >= settle_deadline) break;
    EXPECT_TRUE(operator_->Running()) << "the operator died during the settle phase";
    if (!operator_->Running()) break;
    std::this_thread::sleep_for(seconds(2));
  }
  const double settle_s = std::chrono::duration<double>(steady_clock::now() - settle_start).count();
  const double wall_s = std::chrono::duration<double>(steady_clock::now() - wall_start).count();

  int faults_total = 0;
  for (const auto& [name, n] : hits) faults_total += n;
  int deleted = 0, failing = 0, long_jobs = 0;
  for (const auto& j : jobs_) {
    deleted += j.deleted;
    failing += j.kind == JobPlan::kFail;
    long_jobs += j.kind == JobPlan::kLong;
  }
  json ap = AgentAdmin("GET", "/__admin/jobs");
  int slurm_jobs = 0;
  for (const auto& sj : ap.value("jobs", json::array())) {
    slurm_jobs += sj.value("comment", "").rfind(kTagPrefix, 0) == 0;
  }
  Metric("chaos_seed", static_cast<double>(cfg_.seed), "seed");
  Metric("chaos_jobs", jobs_.size(), "slurmjobs");
  Metric("chaos_jobs_failing", failing, "slurmjobs");
  Metric("chaos_jobs_long", long_jobs, "slurmjobs");
  Metric("chaos_jobs_deleted", deleted, "slurmjobs");
  Metric("chaos_slurm_jobs", slurm_jobs, "jobs");
  Metric("chaos_operator_kills", kills, "kills");
  Metric("chaos_apiserver_restarts", apiserver_restarts, "restarts");
  Metric("chaos_watch_drops", drop_calls, "drops");
  Metric("chaos_watches_dropped", watches_dropped, "watches");
  Metric("chaos_faults_injected", faults_total, "faults");
  for (const auto& [name, n] : hits) Metric("chaos_fault_" + name, n, "faults");
  Metric("chaos_duplicates", verdict.duplicates, "jobs");
  Metric("chaos_lost", verdict.lost, "slurmjobs");
  Metric("chaos_wrong_state", verdict.wrong_state, "slurmjobs");
  Metric("chaos_stuck_deletions", verdict.stuck, "slurmjobs");
  Metric("chaos_active_after_delete", verdict.active_orphans, "jobs");
  Metric("chaos_stray_tags", verdict.strays, "jobs");
  Metric("chaos_unsettled", verdict.unsettled, "slurmjobs");
  Metric("chaos_phase_seconds", chaos_s, "s");
  Metric("chaos_settle_seconds", settle_s, "s");
  Metric("chaos_wall_seconds", wall_s, "s");

  std::string problems;
  for (const auto& p : verdict.problems) problems += "  " + p + "\n";
  EXPECT_EQ(verdict.duplicates, 0) << problems << "operator SIGKILLs at t=" << kill_times;
  EXPECT_EQ(verdict.lost, 0) << problems;
  EXPECT_EQ(verdict.wrong_state, 0) << problems;
  EXPECT_EQ(verdict.stuck, 0) << problems;
  EXPECT_EQ(verdict.active_orphans, 0) << problems;
  EXPECT_EQ(verdict.strays, 0) << problems;
  EXPECT_EQ(verdict.unsettled, 0) << "not settled within " << cfg_.settle_s << " s:\n" << problems;
  // The run must really have been chaotic, or it proves nothing.
  if (cfg_.kills_per_min > 0 && cfg_.duration_s >= 30) {
    EXPECT_GT(kills, 0);
  }
  if (cfg_.apiserver_restarts_per_min > 0 && cfg_.duration_s >= 60) {
    EXPECT_GT(apiserver_restarts, 0);
  }
  if (cfg_.ap_lost_submit_rate > 0 && cfg_.jobs >= 20) {
    EXPECT_GT(faults_total, 0);
  }
  if (HasFailure())
    std::cerr << "chaos: seed " << cfg_.seed << " failed; plan in " << dir_ << "/plan.txt\n";
}

// ---------------------------------------------------------------- reproductions
// Deterministic reproductions of the duplicates the chaos run found. Both
// failed (two Slurm jobs every time) on the operator of commit 29c5fa4; the
// fixes: a search is never taken as proof while a submit may still be in
// flight (--submit-settle-seconds), and a search made before a submit is
// dropped when the submit is sent.

// One SlurmJob, one scripted sequence of Agent Platform faults.
class ChaosRepro : public Chaos {
 protected:
  // The Slurm jobs carrying the tag of `j`.
  std::vector<json> TaggedJobs(const JobPlan& j) {
    json view = AgentAdmin("GET", "/__admin/jobs");
    std::vector<json> out;
    if (view.is_object()) {
      for (const auto& x : view.value("jobs", json::array())) {
        if (testing::IsRunTag(x.value("comment", ""), kNs, j.uid, 1)) out.push_back(x);
      }
    }
    return out;
  }

  // Waits until every armed fault has fired (a fault with a count leaves
  // the list once it is used up).
  bool WaitForFaultsUsedUp(std::chrono::milliseconds timeout) {
    return WaitUntil(
        [&] {
          json f = AgentAdmin("GET", "/__admin/faults");
          return f.is_object() && f["faults"].is_array() && f["faults"].empty();
        },
        timeout);
  }

  JobPlan LongJob(const std::string& name) {
    JobPlan j;
    j.name = name;
    j.kind = JobPlan::kLong;
    j.sleep_s = 120;
    return j;
  }
};

// Bug A: a submit still in flight at Agent Platform when the operator is
// SIGKILLed (held 8 s here) is performed after the restarted operator's tag
// search found nothing; the restarted operator submits again: two Slurm jobs.
// The same happens without a kill when a submit outlives the 30 s client
// timeout (hold it 32 s): the search right after the timeout finds nothing.
TEST_F(ChaosRepro, SubmitInFlightDuringACrashIsNotSubmittedAgain) {
  StartStandIns();
  if (HasFatalFailure()) return;
  StartOperator();
  ASSERT_NE(AgentAdmin("POST", "/__admin/faults",
                       {{"method", "POST"},
                        {"path", "/job/submit$"},
                        {"action", "delay"},
                        {"delay", 8},
                        {"count", 1}}),
            nullptr);
  jobs_ = {LongJob("inflight")};
  Create(jobs_[0]);
  ASSERT_TRUE(WaitForFaultsUsedUp(seconds(30))) << "the submit never reached Agent Platform";
  std::this_thread::sleep_for(seconds(1));  // the submit is held at Agent Platform
  operator_->Stop(SIGKILL);
  StartOperator();
  std::this_thread::sleep_for(seconds(15));  // the held submit has landed by now
  std::vector<json> tagged = TaggedJobs(jobs_[0]);
  EXPECT_EQ(tagged.size(), 1u) << json(tagged).dump();
}

// Bug B: a tag search that happened BEFORE a submit in the same reconcile
// clears submit_outcome_unknown after that submit's reply is lost
// (UpdateMemo folds the stale tag_lookup in after the failed submit), so the
// next reconcile submits again without searching. Path: the 1st submit is
// answered INTERNAL (outcome unknown) and the search fails (every client
// attempt at GET /jobs/ is UNAVAILABLE); the next reconcile searches (nothing),
// submits, the submit is performed and its reply lost; 5-10 ms later the
// operator submits a third time.
TEST_F(ChaosRepro, ALostReplyAfterATagSearchIsSearchedForAgain) {
  StartStandIns();
  if (HasFatalFailure()) return;
  StartOperator();
  json faults = {{"faults",
                  {{{"method", "POST"},
                    {"path", "/job/submit$"},
                    {"action", "error"},
                    {"error", "INTERNAL"},
                    {"count", 1}},
                   {{"method", "GET"},
                    {"path", "/jobs"},
                    {"action", "error"},
                    {"error", "UNAVAILABLE"},
                    {"count", 5}},
                   {{"method", "POST"},
                    {"path", "/job/submit$"},
                    {"action", "perform_then_drop"},
                    {"count", 1}}}}};
  ASSERT_NE(AgentAdmin("POST", "/__admin/faults", faults), nullptr);
  jobs_ = {LongJob("stale")};
  Create(jobs_[0]);
  ASSERT_TRUE(WaitForFaultsUsedUp(seconds(60))) << "not every fault fired";
  std::this_thread::sleep_for(seconds(5));
  std::vector<json> tagged = TaggedJobs(jobs_[0]);
  EXPECT_EQ(tagged.size(), 1u) << json(tagged).dump();
}

}  // namespace
}  // namespace slurmop
