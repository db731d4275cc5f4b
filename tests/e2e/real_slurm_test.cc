// File: tests/e2e/real_slurm_test.cc
//
// The whole path against a REAL Slurm: the operator binary, the real kubectl
// against the stand-in Kubernetes API server, and the Agent Platform stand-in
// forwarding callSlurmRestApi to Debian's slurmrestd 22.05.8 (v0.0.38) of a
// single-node cluster started by scripts/slurm-local.sh. Every scenario checks
// the outcome with Slurm's own tools (sacct, squeue, scontrol), not only with
// the operator's status.
//
// The suite is one ctest entry (label real-slurm): the scenarios share one
// cluster, and the time-limit job (60-90 s in Slurm) is applied in
// SetUpTestSuite and checked by the last test, so it runs while the others do.
// It is skipped only when apt cannot install the Slurm packages; every other
// problem fails.
//
// The cluster gets a private state directory and free ports, so that two runs
// at once (two build trees, CI and a developer) never share or stop each
// other's cluster; SLURM_LOCAL_DIR (and SLURM_LOCAL_*_PORT) in the environment
// use that cluster instead. SLURM_LOCAL_KEEP=1 leaves the cluster running
// afterwards; SLURMOP_OPERATOR_BINARY=path runs another operator build.

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_split.h"
#include "controller/http/cpprest_transport.h"
#include "controller/slurm/dialects.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/manifests.h"
#include "tests/testing/stand_ins.h"
#include "tests/testing/subprocess.h"

namespace slurmop {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::CommandResult;
using ::testing::HasSubstr;
using testing::ReadFile;
using testing::ReadPort;
using testing::RunCommand;
using ::testing::StartsWith;
using testing::Subprocess;
using testing::WaitUntil;

constexpr char kNs[] = "realslurm";
constexpr int kInstallSkipExit = 100;  // scripts/slurm-local.sh install: apt failed

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string Tail(const std::string& text, size_t n) {
  return text.size() > n ? "..." + text.substr(text.size() - n) : text;
}

// `n` distinct TCP ports that can be bound on all addresses now (slurmctld,
// slurmd and slurmdbd bind 0.0.0.0), below the ephemeral range so that no
// outgoing connection takes one meanwhile.
std::vector<int> FreePorts(size_t n) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(20000, 32000);
  std::vector<int> out;
  for (int tries = 0; out.size() < n && tries < 1000; ++tries) {
    int port = pick(rng);
    if (std::find(out.begin(), out.end(), port) != out.end()) continue;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) continue;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    bool free = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    close(fd);
    if (free) out.push_back(port);
  }
  return out;
}

// One row of `sacct -X -n -P -o JobID,State,ExitCode,Comment`.
struct AcctRow {
  std::string job_id, state, exit_code, comment;
};

class RealSlurm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    suite_start_ = new std::chrono::steady_clock::time_point(std::chrono::steady_clock::now());
    dir_ = new std::string(testing::MakeTempDir("slurmop-realslurm-"));
    slurm_env_ = new std::map<std::string, std::string>();
    skip_reason_ = new std::string();
    script_env_ = new std::map<std::string, std::string>();
    std::cerr << "[real-slurm] logs in " << *dir_ << "\n";
    const char* chosen = std::getenv("SLURM_LOCAL_DIR");
    if (chosen == nullptr || *chosen == '\0') {
      // munged, mysql and slurmrest must traverse the path: 0755, not mkdtemp's 0700.
      slurm_dir_ = new std::string(testing::MakeTempDir("slurmop-realslurm-cluster-"));
      std::filesystem::permissions(*slurm_dir_, std::filesystem::perms(0755));
      std::vector<int> ports = FreePorts(5);
      ASSERT_EQ(ports.size(), 5u) << "no free ports";
      *script_env_ = {{"SLURM_LOCAL_DIR", *slurm_dir_ + "/cluster"},
                      {"SLURM_LOCAL_REST_PORT", std::to_string(ports[0])},
                      {"SLURM_LOCAL_DB_PORT", std::to_string(ports[1])},
                      {"SLURM_LOCAL_DBD_PORT", std::to_string(ports[2])},
                      {"SLURM_LOCAL_CTLD_PORT", std::to_string(ports[3])},
                      {"SLURM_LOCAL_SLURMD_PORT", std::to_string(ports[4])}};
    }

    // 1. Packages. Only an apt failure skips the suite.
    auto t0 = std::chrono::steady_clock::now();
    CommandResult install = Script("install", std::chrono::minutes(15));
    if (install.exit_code == kInstallSkipExit) {
      *skip_reason_ = "real-slurm: the Slurm packages are unavailable (apt-get failed): " +
                      Tail(install.err, 1500);
      std::cerr << *skip_reason_ << "\n";
      return;
    }
    ASSERT_EQ(install.exit_code, 0) << install.out << install.err;
    install_seconds_ = Since(t0);

    // 2. The cluster (`env` needs no running cluster: read it first, so that a
    // failed start still finds Slurm's logs).
    CommandResult env = Script("env", seconds(30));
    ASSERT_EQ(env.exit_code, 0) << env.err;
    std::stringstream lines(env.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("export ", 0) != 0) continue;
      size_t eq = line.find('=');
      if (eq == std::string::npos) continue;
      (*slurm_env_)[line.substr(7, eq - 7)] = line.substr(eq + 1);
    }
    for (const char* key : {"SLURM_CONF", "SLURMRESTD_URL", "SLURM_JWT_FILE", "SLURM_USER",
                            "SLURM_JOBS_DIR", "SLURM_LOCAL_DIR"}) {
      ASSERT_FALSE(SlurmEnv(key).empty()) << key << " missing from `slurm-local.sh env`:\n"
                                          << env.out;
    }

    t0 = std::chrono::steady_clock::now();
    cluster_started_ = true;  // stopped in TearDownTestSuite even if `start` fails halfway
    CommandResult start = Script("start", std::chrono::minutes(5));
    ASSERT_EQ(start.exit_code, 0) << start.out << start.err;
    start_seconds_ = Since(t0);
    std::cerr << start.out;

    // 3. The stand-ins: Kubernetes API server, Agent Platform in front of slurmrestd.
    stand_ins_ = new testing::StandIns(
        *dir_,
        {.agent_platform_flags = {"--verbose", "--forward-to", SlurmEnv("SLURMRESTD_URL"),
                                  "--slurm-user", SlurmEnv("SLURM_USER"), "--slurm-token-file",
                                  SlurmEnv("SLURM_JWT_FILE"), "--slurm-api-version", "v0.0.38"},
         .kubectl_timeout = seconds(120)});
    ASSERT_TRUE(stand_ins_->WaitUntilServing());
    ap_port_ = stand_ins_->agent_platform_port();

    ASSERT_TRUE(stand_ins_->kubectl().InstallCrds());
    ASSERT_TRUE(stand_ins_->kubectl().CreateNamespace(kNs));
    ASSERT_TRUE(
        stand_ins_->kubectl().Apply(testing::LocalSlurmClusterManifest(kNs, ap_port_, "v0.0.38")));

    // 4. The operator; Google credentials from the stand-in metadata server.
    // SLURMOP_OPERATOR_BINARY in the environment runs another build (e.g. a sanitizer one).
    operator_ = new Subprocess(
        {testing::OperatorBinary(SLURMOP_OPERATOR_BINARY), "--kubeconfig=" + *dir_ + "/kubeconfig",
         "--health-port=0", "--health-port-file=" + *dir_ + "/health.port",
         "--min-poll-seconds=0.5", "--submit-settle-seconds=10", "--max-poll-seconds=5",
         "--allow-operator-identity-for-namespaced-clusters", testing::AllowStandInFlag(ap_port_)},
        *dir_ + "/operator.log", testing::OperatorEnv(ap_port_, *dir_));
    ASSERT_GT(ReadPort(*dir_ + "/health.port"), 0) << ReadFile(*dir_ + "/operator.log");

    // 5. The time-limit job runs for 60-90 s in Slurm: start it now, check it last.
    timeout_applied_ = new std::chrono::steady_clock::time_point(std::chrono::steady_clock::now());
    CommandResult slow =
        ApplyJob("overtime", "#!/bin/bash\necho started\nsleep 600\n", "  timeLimitMinutes: 1\n");
    ASSERT_EQ(slow.exit_code, 0) << slow.out << slow.err;
    setup_seconds_ = Since(*suite_start_);
    setup_complete_ = true;
  }

  static void TearDownTestSuite() {
    bool operator_clean = true;
    if (operator_) {
      int status = operator_->Stop(SIGTERM, seconds(10));
      operator_clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      EXPECT_TRUE(operator_clean) << "operator did not exit cleanly on SIGTERM (status " << status
                                  << "); log: " << Tail(ReadFile(*dir_ + "/operator.log"), 4000);
    }
    const bool failed = ::testing::UnitTest::GetInstance()->failed_test_count() > 0 ||
                        !operator_clean ||
                        (!setup_complete_ && skip_reason_ != nullptr && skip_reason_->empty());
    delete operator_;
    delete stand_ins_;
    operator_ = nullptr;
    stand_ins_ = nullptr;
    if (failed && slurm_dir_ == nullptr && !SlurmEnv("SLURM_LOCAL_DIR").empty()) {
      // The next `start` wipes the state directory: keep Slurm's logs with ours.
      std::error_code ec;
      std::filesystem::copy(SlurmEnv("SLURM_LOCAL_DIR") + "/log", *dir_ + "/slurm-log",
                            std::filesystem::copy_options::recursive, ec);
    }
    const char* keep = std::getenv("SLURM_LOCAL_KEEP");
    const bool keep_cluster = keep != nullptr && std::string(keep) == "1";
    if (cluster_started_) {
      if (keep_cluster) {
        std::cerr << "[real-slurm] SLURM_LOCAL_KEEP=1: the cluster keeps running; use it with: "
                  << "eval \"$(" << ScriptEnvPrefix() << " scripts/slurm-local.sh env)\"\n";
      } else {
        auto t0 = std::chrono::steady_clock::now();
        CommandResult stop = Script("stop", std::chrono::minutes(2));
        EXPECT_EQ(stop.exit_code, 0) << stop.out << stop.err;
        std::cerr << "[real-slurm] " << stop.out << "[real-slurm] stop took " << Since(t0)
                  << " s\n";
      }
    }
    if (suite_start_) {
      std::cerr << "[real-slurm] timings: install " << install_seconds_ << " s, cluster start "
                << start_seconds_ << " s, suite set-up " << setup_seconds_ << " s, suite total "
                << Since(*suite_start_) << " s\n";
    }
    if (!failed) {
      std::filesystem::remove_all(*dir_);
      if (slurm_dir_ != nullptr && !keep_cluster) std::filesystem::remove_all(*slurm_dir_);
    } else {
      std::cerr << "[real-slurm] logs kept in " << *dir_
                << " (operator.log, agent_platform.log, kube_apiserver.log, slurm-local.*.log)"
                << " and in " << SlurmEnv("SLURM_LOCAL_DIR") << "/log (Slurm's own)\n";
    }
    delete dir_;
    delete slurm_dir_;
    delete script_env_;
    slurm_dir_ = nullptr;
    script_env_ = nullptr;
    delete suite_start_;
    delete timeout_applied_;
    delete slurm_env_;
    delete skip_reason_;
    dir_ = nullptr;
    suite_start_ = timeout_applied_ = nullptr;
    slurm_env_ = nullptr;
    skip_reason_ = nullptr;
  }

  void SetUp() override {
    if (skip_reason_ != nullptr && !skip_reason_->empty()) GTEST_SKIP() << *skip_reason_;
    test_start_ = std::chrono::steady_clock::now();
    // Slurm 22.05.8's slurmrestd can stop accepting connections (fixed in 22.05.9):
    // ping it, restart it when it does not answer.
    CommandResult check = Script("check", seconds(60));
    ASSERT_EQ(check.exit_code, 0) << check.out << check.err;
    if (check.err.find("restarting") != std::string::npos) {
      std::cerr << "[real-slurm] slurmrestd was restarted before this test: " << check.err;
    }
  }

  void TearDown() override {
    if (IsSkipped()) return;
    std::cerr << "[real-slurm] " << ::testing::UnitTest::GetInstance()->current_test_info()->name()
              << " took " << Since(test_start_) << " s\n";
    if (HasFailure()) {
      std::cerr << "---- operator log (tail) ----\n"
                << Tail(ReadFile(*dir_ + "/operator.log"), 6000) << "\n"
                << "---- agent platform log (tail) ----\n"
                << Tail(ReadFile(*dir_ + "/agent_platform.log"), 4000) << "\n"
                << "---- slurmctld log (tail) ----\n"
                << Tail(ReadFile(SlurmEnv("SLURM_LOCAL_DIR") + "/log/slurmctld.log"), 3000) << "\n";
    }
  }

  static std::string SlurmEnv(const std::string& key) {
    if (slurm_env_ == nullptr) return "";
    auto it = slurm_env_->find(key);
    return it == slurm_env_->end() ? "" : it->second;
  }

  // The settings given to scripts/slurm-local.sh, as shell assignments.
  static std::string ScriptEnvPrefix() {
    std::string out;
    if (script_env_ == nullptr) return out;
    for (const auto& [k, v] : *script_env_) out += (out.empty() ? "" : " ") + k + "=" + v;
    return out;
  }

  static CommandResult Script(const std::string& command, milliseconds timeout) {
    CommandResult r = RunCommand(
        {"bash", std::string(SLURMOP_SOURCE_DIR) + "/scripts/slurm-local.sh", command},
        script_env_ != nullptr ? *script_env_ : std::map<std::string, std::string>{}, timeout);
    std::ofstream(*dir_ + "/slurm-local." + command + ".log", std::ios::app)
        << "== exit " << r.exit_code << "\n"
        << r.out << r.err;
    return r;
  }

  // A Slurm client command (sacct, squeue, scontrol) against this cluster. A
  // caller's SLURM_JWT would switch the client to auth/jwt, so it is dropped.
  static CommandResult SlurmTool(std::vector<std::string> args) {
    std::vector<std::string> argv = {"env", "-u", "SLURM_JWT",
                                     "SLURM_CONF=" + SlurmEnv("SLURM_CONF")};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, {}, seconds(30));
  }

  static std::vector<AcctRow> Sacct(const std::vector<std::string>& selection,
                                    std::string* raw = nullptr) {
    std::vector<std::string> args = {"sacct", "-X", "-n",
                                     "-P",    "-o", "JobID,State,ExitCode,Comment"};
    args.insert(args.end(), selection.begin(), selection.end());
    CommandResult r = SlurmTool(args);
    if (raw != nullptr) *raw = "exit " + std::to_string(r.exit_code) + "\n" + r.out + r.err;
    std::vector<AcctRow> rows;
    if (r.exit_code != 0) return rows;
    std::stringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      AcctRow row;
      std::stringstream fields(line);
      std::getline(fields, row.job_id, '|');
      std::getline(fields, row.state, '|');
      std::getline(fields, row.exit_code, '|');
      std::getline(fields, row.comment);
      rows.push_back(row);
    }
    return rows;
  }

  // sacct's record of one job, once accounting shows `state` (a prefix: "CANCELLED by 0").
  static AcctRow SacctJobOnceIn(const std::string& job_id, const std::string& state) {
    AcctRow found;
    WaitUntil(
        [&] {
          for (const AcctRow& row : Sacct({"-j", job_id})) {
            if (row.job_id == job_id) found = row;
          }
          return found.state.rfind(state, 0) == 0;
        },
        seconds(30), milliseconds(300));
    return found;
  }

  // Every job the accounting database lists (all users, the last week). The
  // listing lags behind `sacct -j` by a few seconds: with `until_job_id`, poll
  // until that job is in it.
  static std::vector<AcctRow> SacctAll(const std::string& until_job_id = "",
                                       std::string* raw = nullptr) {
    std::vector<AcctRow> rows;
    std::string text;
    WaitUntil(
        [&] {
          rows = Sacct({"-a", "-S", "now-7days", "-E", "now+1days"}, &text);
          if (until_job_id.empty()) return true;
          for (const AcctRow& row : rows) {
            if (row.job_id == until_job_id) return true;
          }
          return false;
        },
        seconds(30), milliseconds(500));
    if (raw != nullptr) *raw = text;
    return rows;
  }

  // The Slurm jobs carrying `tag` in their comment.
  static std::vector<AcctRow> SacctWithComment(const std::string& tag,
                                               const std::string& until_job_id = "") {
    std::vector<AcctRow> out;
    std::string raw;
    for (const AcctRow& row : SacctAll(until_job_id, &raw)) {
      if (row.comment == tag) out.push_back(row);
    }
    if (out.size() > 1 || (out.empty() && !until_job_id.empty())) {
      std::cerr << "[real-slurm] sacct -a for " << tag << ": " << raw << "\n";
    }
    return out;
  }

  static CommandResult Kubectl(std::vector<std::string> args, const std::string& stdin_data = "",
                               milliseconds timeout = seconds(120)) {
    return stand_ins_->kubectl().Run(std::move(args), stdin_data, timeout);
  }

  static std::string Get(const std::string& name, const std::string& jsonpath) {
    CommandResult r = Kubectl({"get", "-n", kNs, "sj", name, "-o", "jsonpath=" + jsonpath});
    return r.exit_code == 0 ? r.out : "";
  }

  static std::string Tag(const std::string& name) {
    std::string uid = Get(name, "{.metadata.uid}");
    // Run 1's tag: slurmjob-operator:<namespace>/<uid>/<run>@<installation>, the
    // installation being the operator's default, kube-system's UID.
    CommandResult installation =
        Kubectl({"get", "namespace", "kube-system", "-o", "jsonpath={.metadata.uid}"});
    return uid.empty() || installation.exit_code != 0
               ? ""
               : std::string("slurmjob-operator:") + kNs + "/" + uid + "/1@" + installation.out;
  }

  static CommandResult WaitFor(const std::string& name, const std::string& condition,
                               int timeout_seconds) {
    return Kubectl({"wait", "-n", kNs, "sj/" + name, "--for=" + condition,
                    "--timeout=" + std::to_string(timeout_seconds) + "s"},
                   "", seconds(timeout_seconds + 30));
  }

  // GET on the Agent Platform stand-in's admin API.
  static nlohmann::json Admin(const std::string& path) {
    static auto transport = http::CpprestTransport::Create({});
    http::Request req;
    req.url = "http://127.0.0.1:" + std::to_string(ap_port_) + path;
    absl::StatusOr<http::Response> r = (*transport)->Send(req);
    if (!r.ok() || r->status != 200) return nullptr;
    return nlohmann::json::parse(r->body, nullptr, false);
  }

  // Calls the operator made through callSlurmRestApi to exactly this Slurm path.
  static std::vector<nlohmann::json> CallsTo(const std::string& slurm_path) {
    std::vector<nlohmann::json> out;
    nlohmann::json calls = Admin("/__admin/calls");
    if (!calls.is_object() || !calls.contains("recent")) return out;
    for (const auto& c : calls["recent"]) {
      if (c.value("path", "") == slurm_path) out.push_back(c);
    }
    return out;
  }

  // Calls the operator made through callSlurmRestApi to a Slurm path starting with `prefix`.
  static std::vector<nlohmann::json> CallsStartingWith(const std::string& prefix) {
    std::vector<nlohmann::json> out;
    nlohmann::json calls = Admin("/__admin/calls");
    if (!calls.is_object() || !calls.contains("recent")) return out;
    for (const auto& c : calls["recent"]) {
      if (c.value("path", "").rfind(prefix, 0) == 0) out.push_back(c);
    }
    return out;
  }

  // The operator's /slurmdb reads of job `id`: its own GET, or a batched
  // lookup naming it (JobTracker: `jobs?step=A%2CB` in dbv0.0.38's form).
  static std::vector<nlohmann::json> SlurmdbReadsOf(const std::string& id) {
    std::vector<nlohmann::json> out = CallsTo("/slurmdb/v0.0.38/job/" + id);
    const std::string batched = "/slurmdb/v0.0.38/jobs?step=";
    for (const nlohmann::json& c : CallsStartingWith(batched)) {
      const std::string ids = c.value("path", "").substr(batched.size());
      for (absl::string_view one : absl::StrSplit(ids, "%2C")) {
        if (one == id) out.push_back(c);
      }
    }
    return out;
  }

  // A GET straight to slurmrestd (no Agent Platform), as the stand-in forwards one.
  static http::Response SlurmRestGet(const std::string& path_and_query) {
    static auto transport = http::CpprestTransport::Create({});
    std::string token = ReadFile(SlurmEnv("SLURM_JWT_FILE"));
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back())))
      token.pop_back();
    if (token.rfind("SLURM_JWT=", 0) == 0) token = token.substr(10);
    http::Request req;
    req.url = SlurmEnv("SLURMRESTD_URL") + path_and_query;
    req.headers = {{"Accept", "application/json"},
                   {"X-SLURM-USER-NAME", SlurmEnv("SLURM_USER")},
                   {"X-SLURM-USER-TOKEN", token}};
    absl::StatusOr<http::Response> r = (*transport)->Send(req);
    if (!r.ok()) return http::Response{0, {}, std::string(r.status().message())};
    return *r;
  }

  static CommandResult ApplyJob(const std::string& name, const std::string& script_body,
                                const std::string& extra_spec = "") {
    std::string yaml =
        "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\n"
        "metadata: {name: " +
        name + ", namespace: " + kNs +
        "}\n"
        "spec:\n  clusterRef: {name: local}\n"
        "  currentWorkingDirectory: " +
        SlurmEnv("SLURM_JOBS_DIR") + "\n" +
        (extra_spec.find("timeLimitMinutes") == std::string::npos ? "  timeLimitMinutes: 5\n"
                                                                  : "") +
        extra_spec + "  script: |\n";
    std::stringstream in(script_body);
    for (std::string line; std::getline(in, line);) yaml += "    " + line + "\n";
    return Kubectl({"apply", "-f", "-"}, yaml);
  }

  static std::string* dir_;
  static std::map<std::string, std::string>* slurm_env_;
  static std::string* skip_reason_;
  static std::string* slurm_dir_;  // parent of the suite's private cluster, if any
  static std::map<std::string, std::string>* script_env_;
  static testing::StandIns* stand_ins_;
  static Subprocess* operator_;
  static int ap_port_;
  static bool cluster_started_;
  static bool setup_complete_;
  static std::chrono::steady_clock::time_point* suite_start_;
  static std::chrono::steady_clock::time_point* timeout_applied_;
  static double install_seconds_, start_seconds_, setup_seconds_;
  std::chrono::steady_clock::time_point test_start_;
};

std::string* RealSlurm::dir_ = nullptr;
std::map<std::string, std::string>* RealSlurm::slurm_env_ = nullptr;
std::string* RealSlurm::skip_reason_ = nullptr;
std::string* RealSlurm::slurm_dir_ = nullptr;
std::map<std::string, std::string>* RealSlurm::script_env_ = nullptr;
testing::StandIns* RealSlurm::stand_ins_ = nullptr;
Subprocess* RealSlurm::operator_ = nullptr;
int RealSlurm::ap_port_ = 0;
bool RealSlurm::cluster_started_ = false;
bool RealSlurm::setup_complete_ = false;
std::chrono::steady_clock::time_point* RealSlurm::suite_start_ = nullptr;
std::chrono::steady_clock::time_point* RealSlurm::timeout_applied_ = nullptr;
double RealSlurm::install_seconds_ = 0;
double RealSlurm::start_seconds_ = 0;
double RealSlurm::setup_seconds_ = 0;

TEST_F(RealSlurm, ExitZeroIsCompletedAndSacctAgrees) {
  ASSERT_EQ(ApplyJob("ok", "#!/bin/bash\necho hello from slurm\nexit 0\n").exit_code, 0);
  CommandResult wait = WaitFor("ok", "jsonpath={.status.jobState}=COMPLETED", 60);
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  const std::string job_id = Get("ok", "{.status.jobId}");
  ASSERT_GT(std::atoll(job_id.c_str()), 0);
  EXPECT_EQ(Get("ok", "{.status.exitCode}"), "0");
  CommandResult ready = WaitFor("ok", "condition=Ready", 10);
  EXPECT_EQ(ready.exit_code, 0) << ready.err;
  EXPECT_EQ(Get("ok", "{.status.conditions[?(@.type==\"Ready\")].status}"), "True");

  // Slurm's own account of it.
  AcctRow row = SacctJobOnceIn(job_id, "COMPLETED");
  EXPECT_EQ(row.state, "COMPLETED");
  EXPECT_EQ(row.exit_code, "0:0");
  const std::string tag = Tag("ok");
  EXPECT_EQ(row.comment, tag);
  std::vector<AcctRow> tagged = SacctWithComment(tag, job_id);
  ASSERT_EQ(tagged.size(), 1u) << "Slurm jobs carrying " << tag;
  EXPECT_EQ(tagged[0].job_id, job_id);
  // The script really ran, in the working directory the SlurmJob names, and wrote to Slurm's
  // default file there, which the status names.
  const std::string out = SlurmEnv("SLURM_JOBS_DIR") + "/slurm-" + job_id + ".out";
  EXPECT_THAT(ReadFile(out), HasSubstr("hello from slurm"));
  EXPECT_EQ(Get("ok", "{.status.standardOutput}"), out);
  EXPECT_EQ(Get("ok", "{.status.standardError}"), out);
}

TEST_F(RealSlurm, ExitThreeIsFailedWithExitCodeThree) {
  ASSERT_EQ(ApplyJob("three", "#!/bin/bash\necho failing on purpose\nexit 3\n").exit_code, 0);
  CommandResult wait = WaitFor("three", "jsonpath={.status.jobState}=FAILED", 60);
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_EQ(Get("three", "{.status.exitCode}"), "3");
  const std::string job_id = Get("three", "{.status.jobId}");
  AcctRow row = SacctJobOnceIn(job_id, "FAILED");
  EXPECT_EQ(row.state, "FAILED");
  EXPECT_EQ(row.exit_code, "3:0");
  EXPECT_EQ(SacctWithComment(Tag("three"), job_id).size(), 1u);
}

// #14 item 2 on Slurm 22.05: the submit carries Slurm's own deadline ("uts<seconds>": 22.05's
// parse_time() refused the bare number the operator sent before), scontrol shows it, and Slurm
// keeps it its own way: a job without a time limit of its own runs with the limit slurmctld cut
// to the whole minutes left (62 s: one minute). slurmctld ends jobs over their limit on a
// periodic sweep, so either Slurm's TIMEOUT or the operator's cancel at the deadline comes first
// (both were seen); the SlurmJob is Failed with reason DeadlineExceeded, not retried, its message
// saying which.
TEST_F(RealSlurm, ActiveDeadlineIsKeptBySlurmAndFailsTheSlurmJob) {
  const std::string yaml =
      "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\n"
      "metadata: {name: deadline, namespace: " +
      std::string(kNs) + "}\nspec:\n  clusterRef: {name: local}\n  currentWorkingDirectory: " +
      SlurmEnv("SLURM_JOBS_DIR") +
      "\n  activeDeadlineSeconds: 62\n  script: |\n    #!/bin/bash\n    sleep 600\n";
  ASSERT_EQ(Kubectl({"apply", "-f", "-"}, yaml).exit_code, 0);
  CommandResult running = WaitFor("deadline", "jsonpath={.status.jobState}=RUNNING", 60);
  ASSERT_EQ(running.exit_code, 0) << running.out << running.err << Get("deadline", "{.status}");
  const std::string id = Get("deadline", "{.status.jobId}");
  CommandResult show = SlurmTool({"scontrol", "show", "job", id});
  EXPECT_THAT(show.out, ::testing::ContainsRegex("Deadline=[0-9]{4}-")) << show.out;
  EXPECT_THAT(show.out, HasSubstr("TimeLimit=00:01:00")) << "the limit Slurm cut: " << show.out;
  CommandResult failed = WaitFor("deadline", "jsonpath={.status.reason}=DeadlineExceeded", 120);
  ASSERT_EQ(failed.exit_code, 0) << failed.out << failed.err << Get("deadline", "{.status}");
  EXPECT_EQ(Get("deadline", "{.status.phase}"), "Failed");
  EXPECT_EQ(Get("deadline", "{.status.run}"), "1") << "not retried";
  const std::string state = Get("deadline", "{.status.jobState}");
  ASSERT_TRUE(state == "TIMEOUT" || state == "CANCELLED") << state;
  EXPECT_THAT(
      Get("deadline", "{.status.message}"),
      HasSubstr(state == "TIMEOUT" ? "reached the time limit Slurm cut to end by the deadline"
                                   : "passed. Not retried."));
  EXPECT_EQ(SacctJobOnceIn(id, state).state.substr(0, state.size()), state);
  std::cerr << "[real-slurm] deadline: job " << id << " ended " << state << ": "
            << Get("deadline", "{.status.message}") << "\n";
}

// #14 item 1 on Slurm 22.05: a finished SlurmJob is deleted ttlSecondsAfterFinished after its
// end, and its Slurm job is left as it ended (one job, COMPLETED, in accounting).
TEST_F(RealSlurm, TtlDeletesTheFinishedSlurmJob) {
  ASSERT_EQ(ApplyJob("ttl", "#!/bin/bash\necho done\n", "  ttlSecondsAfterFinished: 5\n").exit_code,
            0);
  CommandResult done = WaitFor("ttl", "jsonpath={.status.jobState}=COMPLETED", 60);
  ASSERT_EQ(done.exit_code, 0) << done.out << done.err;
  const std::string id = Get("ttl", "{.status.jobId}");
  const std::string tag = Tag("ttl");
  CommandResult gone = Kubectl({"wait", "-n", kNs, "sj/ttl", "--for=delete", "--timeout=60s"});
  ASSERT_EQ(gone.exit_code, 0) << gone.out << gone.err;
  EXPECT_EQ(SacctJobOnceIn(id, "COMPLETED").state, "COMPLETED");
  EXPECT_EQ(SacctWithComment(tag, id).size(), 1u) << tag;
}

// #14 item 4 on Slurm 22.05: status.usage is what Slurm's own accounting says (sacct's
// AllocTRES and ElapsedRaw), with CPU-seconds = cpu x elapsed. slurmdbd learns the end
// asynchronously; the operator looks again until it does (stage AwaitingUsage).
TEST_F(RealSlurm, UsageIsWhatSacctSaysTheRunWasAllocated) {
  ASSERT_EQ(ApplyJob("usage", "#!/bin/bash\nsleep 3\n", "  tasks: 2\n").exit_code, 0);
  CommandResult done = WaitFor("usage", "jsonpath={.status.jobState}=COMPLETED", 60);
  ASSERT_EQ(done.exit_code, 0) << done.out << done.err;
  CommandResult recorded = WaitFor("usage", "jsonpath={.status.usage.run}=1", 60);
  ASSERT_EQ(recorded.exit_code, 0) << recorded.out << recorded.err << Get("usage", "{.status}");
  const nlohmann::json usage = nlohmann::json::parse(Get("usage", "{.status.usage}"));
  const std::string id = Get("usage", "{.status.jobId}");
  SacctJobOnceIn(id, "COMPLETED");
  CommandResult acct =
      SlurmTool({"sacct", "-X", "-n", "-P", "-o", "AllocTRES,ElapsedRaw", "-j", id});
  ASSERT_EQ(acct.exit_code, 0) << acct.err;
  std::stringstream line(acct.out);
  std::string alloc, elapsed;
  std::getline(line, alloc, '|');
  std::getline(line, elapsed);
  std::map<std::string, int64_t> want;  // "cpu=2,mem=...M,node=1,billing=2"
  std::stringstream items(alloc);
  for (std::string item; std::getline(items, item, ',');) {
    const size_t eq = item.find('=');
    ASSERT_NE(eq, std::string::npos) << alloc;
    std::string value = item.substr(eq + 1);
    int64_t scale = 1;
    if (!value.empty() && value.back() == 'M') value.pop_back();
    if (!value.empty() && value.back() == 'G') value.pop_back(), scale = 1024;
    want[item.substr(0, eq)] = std::stoll(value) * scale;
  }
  ASSERT_FALSE(want.empty()) << acct.out;
  std::map<std::string, int64_t> got;
  for (const auto& [name, count] : usage["allocatedTres"].items()) got[name] = count.get<int64_t>();
  EXPECT_EQ(got, want) << "sacct AllocTRES " << alloc << ", status.usage " << usage.dump();
  EXPECT_EQ(usage.value("elapsedSeconds", int64_t{-1}), std::stoll(elapsed)) << usage.dump();
  EXPECT_EQ(usage.value("cpuSeconds", int64_t{-1}), want["cpu"] * std::stoll(elapsed));
  EXPECT_EQ(usage.value("partition", ""), "debug");
  std::cerr << "[real-slurm] usage of job " << id << ": " << usage.dump()
            << "; sacct: " << acct.out;
}

// #16 item 3 on Slurm 22.05: the accounting of several ended jobs in one call (the tracker's
// batched lookup, GET /slurmdb/v0.0.38/jobs?step=A%2CB): dbv0.0.38 reads `step` as one
// comma-separated value, and slurmrestd refuses a raw ',' in a query. The operator's own
// path and parser against the real slurmrestd, and the operator's own calls.
TEST_F(RealSlurm, SeveralJobsAccountingComesInOneCall) {
  ASSERT_EQ(ApplyJob("acct-a", "#!/bin/bash\nexit 0\n").exit_code, 0);
  ASSERT_EQ(ApplyJob("acct-b", "#!/bin/bash\nexit 3\n").exit_code, 0);
  ASSERT_EQ(WaitFor("acct-a", "jsonpath={.status.jobState}=COMPLETED", 60).exit_code, 0);
  ASSERT_EQ(WaitFor("acct-b", "jsonpath={.status.jobState}=FAILED", 60).exit_code, 0);
  const std::string a = Get("acct-a", "{.status.jobId}"), b = Get("acct-b", "{.status.jobId}");
  SacctJobOnceIn(a, "COMPLETED");
  SacctJobOnceIn(b, "FAILED");

  const slurm::Dialect& d = **slurm::DialectFor("v0.0.38");
  const std::vector<int64_t> ids = {std::stoll(a), std::stoll(b)};
  const std::string path = d.DbJobsByIdPath(ids);
  ASSERT_EQ(path, "/slurmdb/v0.0.38/jobs?step=" + a + "%2C" + b);
  http::Response r = SlurmRestGet(path);
  ASSERT_EQ(r.status, 200) << r.body;
  absl::StatusOr<slurm::DbRecordsById> got =
      d.ParseDbJobsById(r.status, nlohmann::json::parse(r.body, nullptr, false), ids);
  ASSERT_TRUE(got.ok()) << got.status() << r.body;
  ASSERT_EQ(got->jobs.size(), 2u) << r.body;
  EXPECT_EQ(got->jobs.at(ids[0]).state, slurm::BaseState::kCompleted);
  EXPECT_EQ(got->jobs.at(ids[1]).state, slurm::BaseState::kFailed);
  for (int64_t id : ids) {
    EXPECT_TRUE(got->jobs.at(id).IsFinal()) << id;
    EXPECT_TRUE(got->jobs.at(id).allocation.has_value()) << id;
  }
  // The same ids with a raw ',': the whole query is refused.
  http::Response raw = SlurmRestGet("/slurmdb/v0.0.38/jobs?step=" + a + "," + b);
  EXPECT_EQ(raw.status, 400) << raw.body;
  EXPECT_THAT(raw.body, HasSubstr("Unable to parse query")) << "not a transport failure";

  // The operator looked the ended jobs up this way, and Slurm answered.
  bool asked = false;
  for (const nlohmann::json& c : CallsStartingWith("/slurmdb/v0.0.38/jobs?step=")) {
    asked |=
        c.value("result", "") == "slurm_200" && (c.value("path", "").find(a) != std::string::npos ||
                                                 c.value("path", "").find(b) != std::string::npos);
  }
  EXPECT_TRUE(asked) << "no batched accounting call for job " << a << " or " << b;
}

// #14 item 5 on Slurm 22.05: the files named in status.standardOutput / standardError are the
// ones slurmstepd wrote, for examples/output-slurmjob.yaml as a user applies it and for a
// pattern with every letter slurmstepd fills in for a batch job (%N aside: slurmstepd uses the
// host's name there, the records the node's, and this cluster's node is "localhost").
TEST_F(RealSlurm, OutputFilesAreWhereTheStatusSays) {
  CommandResult example =
      Kubectl({"apply", "-n", kNs, "-f",
               std::string(SLURMOP_SOURCE_DIR) + "/examples/output-slurmjob.yaml"});
  ASSERT_EQ(example.exit_code, 0) << example.out << example.err;
  ASSERT_EQ(ApplyJob("patterns",
                     "#!/bin/bash\necho to standard output\necho to standard error >&2\nexit 3\n",
                     "  standardOutput: \"out-%x-%j-%J-%A-%a-%s-%n-%t-%8j-%q.txt\"\n"
                     "  standardError: \"err-%u-%%-%j.txt\"\n")
                .exit_code,
            0);
  for (const char* name : {"output-demo", "patterns"}) {
    CommandResult failed = WaitFor(name, "jsonpath={.status.jobState}=FAILED", 60);
    ASSERT_EQ(failed.exit_code, 0) << name << ": " << failed.out << failed.err;
  }
  const std::string demo = Get("output-demo", "{.status.jobId}");
  EXPECT_EQ(Get("output-demo", "{.status.standardOutput}"), "/tmp/output-demo-" + demo + ".out");
  EXPECT_EQ(Get("output-demo", "{.status.standardError}"), "/tmp/output-demo-" + demo + ".err");
  EXPECT_THAT(ReadFile("/tmp/output-demo-" + demo + ".out"), HasSubstr("preparing the data set"));
  EXPECT_THAT(ReadFile("/tmp/output-demo-" + demo + ".err"), HasSubstr("data set not found"));
  CommandResult describe = Kubectl({"describe", "-n", kNs, "sj", "output-demo"});
  EXPECT_THAT(describe.out, HasSubstr("Its standard output is in /tmp/output-demo-" + demo));

  const std::string id = Get("patterns", "{.status.jobId}");
  const std::string out = Get("patterns", "{.status.standardOutput}");
  const std::string err = Get("patterns", "{.status.standardError}");
  char padded[16];
  std::snprintf(padded, sizeof padded, "%08d", std::atoi(id.c_str()));
  const std::string dir = SlurmEnv("SLURM_JOBS_DIR");
  EXPECT_EQ(out, dir + "/out-patterns-" + id + "-" + id + "-" + id + "-4294967294-batch-0-0-" +
                     padded + "-%q.txt");
  EXPECT_EQ(err, dir + "/err-root-%-" + id + ".txt");
  EXPECT_THAT(ReadFile(out), HasSubstr("to standard output")) << "no file at " << out;
  EXPECT_THAT(ReadFile(err), HasSubstr("to standard error")) << "no file at " << err;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().string();
    // The file's name only: the directory is a mkdtemp name, which may hold "-<id>" itself
    // (cluster-9VJXXB failed this check for job 9 on every file of the directory).
    if (entry.path().filename().string().find("-" + id) != std::string::npos) {
      EXPECT_TRUE(file == out || file == err)
          << "Slurm wrote " << file << ", the status says " << out << " and " << err;
    }
  }
}

TEST_F(RealSlurm, DeleteWhileRunningCancelsTheSlurmJob) {
  ASSERT_EQ(ApplyJob("long", "#!/bin/bash\nsleep 300\n").exit_code, 0);
  CommandResult wait = WaitFor("long", "jsonpath={.status.jobState}=RUNNING", 60);
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  const std::string job_id = Get("long", "{.status.jobId}");
  ASSERT_GT(std::atoll(job_id.c_str()), 0);
  const std::string tag = Tag("long");
  // squeue: running, with the operator's tag (accounting stores the comment
  // only when the job ends).
  CommandResult sq = SlurmTool({"squeue", "-h", "-j", job_id, "-o", "%T|%k"});
  EXPECT_EQ(sq.out, "RUNNING|" + tag + "\n") << sq.err;

  CommandResult del = Kubectl({"delete", "-n", kNs, "sj", "long", "--timeout=60s"});
  ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
  CommandResult gone = Kubectl({"get", "-n", kNs, "sj", "long"});
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_THAT(gone.err, HasSubstr("NotFound"));

  AcctRow row = SacctJobOnceIn(job_id, "CANCELLED");
  EXPECT_THAT(row.state, StartsWith("CANCELLED"));
  EXPECT_EQ(row.comment, tag);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return SlurmTool({"squeue", "-h", "-j", job_id, "-o", "%T"}).out.empty();
      },
      seconds(20), milliseconds(300)))
      << "the job is still in Slurm's live queue";
}

// The operator must read a job that slurmctld has already forgotten (MinJobAge)
// from /slurmdb. The operator is paused while two jobs end and are purged: one
// exits 0, one exits 3 (dbv0.0.38 reports every normal exit as SUCCESS/0, so
// the exit code of the failed one cannot be known from there).
TEST_F(RealSlurm, JobsPurgedFromSlurmctldAreReadFromSlurmdb) {
  ASSERT_EQ(ApplyJob("late", "#!/bin/bash\nsleep 4\necho done late\n").exit_code, 0);
  ASSERT_EQ(ApplyJob("latefail", "#!/bin/bash\nsleep 4\nexit 3\n").exit_code, 0);
  for (const char* name : {"late", "latefail"}) {
    CommandResult wait = WaitFor(name, "jsonpath={.status.jobState}=RUNNING", 60);
    ASSERT_EQ(wait.exit_code, 0) << name << ": " << wait.out << wait.err;
  }
  const std::string ok_id = Get("late", "{.status.jobId}");
  const std::string fail_id = Get("latefail", "{.status.jobId}");
  ASSERT_GT(std::atoll(ok_id.c_str()), 0);
  ASSERT_GT(std::atoll(fail_id.c_str()), 0);

  ASSERT_EQ(kill(operator_->pid(), SIGSTOP), 0);
  auto paused = std::chrono::steady_clock::now();
  // slurmctld forgets a job MinJobAge after its end (the purge runs every few seconds).
  auto purged = [&](const std::string& id) {
    CommandResult r = SlurmTool({"scontrol", "-o", "show", "job", id});
    return r.exit_code != 0 && r.err.find("Invalid job id") != std::string::npos;
  };
  bool gone =
      WaitUntil([&] { return purged(ok_id) && purged(fail_id); }, seconds(90), milliseconds(500));
  const double paused_for = Since(paused);
  ASSERT_EQ(kill(operator_->pid(), SIGCONT), 0);
  ASSERT_TRUE(gone) << "slurmctld still knows job " << ok_id << " or " << fail_id << " after 90 s";
  std::cerr << "[real-slurm] jobs " << ok_id << " and " << fail_id
            << " purged from slurmctld; operator paused for " << paused_for << " s\n";
  EXPECT_TRUE(SlurmdbReadsOf(ok_id).empty())
      << "slurmdb was already asked before the job left slurmctld";

  CommandResult done = WaitFor("late", "jsonpath={.status.jobState}=COMPLETED", 60);
  ASSERT_EQ(done.exit_code, 0) << done.out << done.err;
  EXPECT_EQ(Get("late", "{.status.exitCode}"), "0");
  EXPECT_EQ(Get("late", "{.status.conditions[?(@.type==\"Ready\")].status}"), "True");
  CommandResult failed = WaitFor("latefail", "jsonpath={.status.jobState}=FAILED", 60);
  ASSERT_EQ(failed.exit_code, 0) << failed.out << failed.err;
  EXPECT_NE(Get("latefail", "{.status.exitCode}"), "0")
      << "slurmdb v0.0.38's SUCCESS/0 for a FAILED job must not be reported as exit code 0";

  for (const std::string& id : {ok_id, fail_id}) {
    // Read once both had left the queue: in the list's batched lookup (the
    // operator's own GET only when that failed).
    std::vector<nlohmann::json> slurmdb = SlurmdbReadsOf(id);
    ASSERT_FALSE(slurmdb.empty()) << "no slurmdb call for job " << id << ": "
                                  << Admin("/__admin/calls").dump(1);
    EXPECT_EQ(slurmdb.back().value("result", ""), "slurm_200");
    EXPECT_TRUE(CallsTo("/slurmdb/v0.0.38/job/" + id).empty())
        << "job " << id << " was read on its own, not in the batched lookup";
    // ...once the cluster's job list (one GET for all jobs) no longer had it:
    // the operator follows jobs through that list, not one GET per job.
    EXPECT_TRUE(CallsTo("/slurm/v0.0.38/job/" + id).empty())
        << "a per-job GET was sent for job " << id;
  }
  EXPECT_FALSE(CallsTo("/slurm/v0.0.38/jobs/").empty()) << "the batched list was never asked";
  AcctRow ok_row = SacctJobOnceIn(ok_id, "COMPLETED");
  EXPECT_EQ(ok_row.exit_code, "0:0");
  AcctRow fail_row = SacctJobOnceIn(fail_id, "FAILED");
  EXPECT_EQ(fail_row.exit_code, "3:0");
}

TEST_F(RealSlurm, UnknownPartitionIsRejectedOnceWithSlurmsMessage) {
  ASSERT_EQ(ApplyJob("badpart", "#!/bin/bash\ntrue\n", "  partition: nosuch\n").exit_code, 0);
  CommandResult wait = WaitFor("badpart", "condition=Stalled", 30);
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_EQ(Get("badpart", "{.status.conditions[?(@.type==\"Stalled\")].reason}"),
            "SubmitRejected");
  EXPECT_THAT(Get("badpart", "{.status.message}"), HasSubstr("Invalid partition"));
  const std::string tag = Tag("badpart");
  ASSERT_FALSE(tag.empty());

  // No retry storm: still one submit attempt 5 s later.
  std::this_thread::sleep_for(seconds(5));
  nlohmann::json jobs = Admin("/__admin/jobs?comment=" + tag);
  ASSERT_TRUE(jobs.is_object()) << "no /__admin/jobs view";
  ASSERT_EQ(jobs["submits"].size(), 1u) << jobs.dump(1);
  EXPECT_EQ(jobs["submits"][0].value("http_status", 0), 500);
  EXPECT_FALSE(jobs["submits"][0].value("accepted", true));
  EXPECT_EQ(Get("badpart", "{.status.conditions[?(@.type==\"Stalled\")].reason}"),
            "SubmitRejected");
  // And Slurm never saw a job with that tag.
  EXPECT_TRUE(SacctWithComment(tag).empty());
}

// Applied in SetUpTestSuite; Slurm checks time limits about every 30 s, so a
// 1-minute limit ends the job 60-90 s after it started.
TEST_F(RealSlurm, TimeLimitEndsInTimeout) {
  const int left = std::max(30, 240 - static_cast<int>(Since(*timeout_applied_)));
  CommandResult wait = WaitFor("overtime", "jsonpath={.status.jobState}=TIMEOUT", left);
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err << " state "
                               << Get("overtime", "{.status.jobState}");
  std::cerr << "[real-slurm] TIMEOUT seen " << Since(*timeout_applied_) << " s after the apply\n";
  const std::string job_id = Get("overtime", "{.status.jobId}");
  AcctRow row = SacctJobOnceIn(job_id, "TIMEOUT");
  EXPECT_EQ(row.state, "TIMEOUT");
  EXPECT_EQ(row.comment, Tag("overtime"));
  EXPECT_EQ(SacctWithComment(Tag("overtime"), job_id).size(), 1u);
}

// Last: every SlurmJob of the suite became exactly one Slurm job (by the tag
// in Slurm's accounting, and by the stand-in's submit log).
TEST_F(RealSlurm, DependsOnRunsInOrderEnforcedBySlurm) {
  ASSERT_EQ(ApplyJob("step2", "#!/bin/bash\necho two\n",
                     "  dependsOn: [{name: step1, condition: afterok}]\n")
                .exit_code,
            0);
  CommandResult waiting = WaitFor("step2", "jsonpath={.status.reason}=WaitingForDependencies", 30);
  ASSERT_EQ(waiting.exit_code, 0) << waiting.out << waiting.err;
  ASSERT_EQ(ApplyJob("step1", "#!/bin/bash\nsleep 8\n").exit_code, 0);
  CommandResult first = WaitFor("step1", "jsonpath={.status.jobState}=RUNNING", 60);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  CommandResult submitted = WaitFor("step2", "condition=Submitted", 30);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const std::string id1 = Get("step1", "{.status.jobId}");
  const std::string id2 = Get("step2", "{.status.jobId}");
  // Slurm holds the second job for its dependency while the first runs.
  CommandResult sq = SlurmTool({"squeue", "-h", "-j", id2, "-o", "%T|%r|%E"});
  EXPECT_THAT(sq.out, HasSubstr("PENDING|Dependency|afterok:" + id1)) << sq.out << sq.err;
  CommandResult done = WaitFor("step2", "jsonpath={.status.jobState}=COMPLETED", 120);
  ASSERT_EQ(done.exit_code, 0) << done.out << done.err;
  EXPECT_GE(Get("step2", "{.status.startTime}"), Get("step1", "{.status.endTime}"));
  SacctJobOnceIn(id1, "COMPLETED");
  SacctJobOnceIn(id2, "COMPLETED");
}

TEST_F(RealSlurm, SuspendHoldsAPendingJobInSlurmAndReleasesIt) {
  // A job kept pending by a dependency on a running job, then suspended.
  ASSERT_EQ(ApplyJob("blocker", "#!/bin/bash\nsleep 20\n").exit_code, 0);
  ASSERT_EQ(WaitFor("blocker", "jsonpath={.status.jobState}=RUNNING", 60).exit_code, 0);
  ASSERT_EQ(ApplyJob("held", "#!/bin/bash\necho released\n",
                     "  dependsOn: [{name: blocker, condition: afterany}]\n")
                .exit_code,
            0);
  ASSERT_EQ(WaitFor("held", "condition=Submitted", 30).exit_code, 0);
  const std::string id = Get("held", "{.status.jobId}");
  CommandResult patch = Kubectl(
      {"patch", "-n", kNs, "sj/held", "--type=merge", "-p", R"({"spec":{"suspend":true}})"});
  ASSERT_EQ(patch.exit_code, 0) << patch.err;
  CommandResult held = WaitFor("held", "jsonpath={.status.held}=true", 30);
  ASSERT_EQ(held.exit_code, 0) << held.out << held.err;
  // Slurm's own view: priority 0, held by the user.
  CommandResult sq = SlurmTool({"squeue", "-h", "-j", id, "-o", "%T|%Q"});
  EXPECT_THAT(sq.out, HasSubstr("PENDING|0")) << sq.out << sq.err;
  // The blocker ends; the held job must stay pending.
  ASSERT_EQ(WaitFor("blocker", "jsonpath={.status.jobState}=COMPLETED", 60).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  sq = SlurmTool({"squeue", "-h", "-j", id, "-o", "%T"});
  EXPECT_THAT(sq.out, HasSubstr("PENDING")) << "a held job started: " << sq.out;
  patch = Kubectl(
      {"patch", "-n", kNs, "sj/held", "--type=merge", "-p", R"({"spec":{"suspend":false}})"});
  ASSERT_EQ(patch.exit_code, 0) << patch.err;
  CommandResult done = WaitFor("held", "jsonpath={.status.jobState}=COMPLETED", 90);
  ASSERT_EQ(done.exit_code, 0) << done.out << done.err << Get("held", "{.status.message}");
  SacctJobOnceIn(id, "COMPLETED");
}

TEST_F(RealSlurm, EverySlurmJobBecameExactlyOneSlurmJob) {
  // An array job is one Slurm job whose tasks sacct lists as rows <array id>_<index>.
  std::map<std::string, std::set<std::string>> jobs_by_tag;
  std::map<std::string, int> by_tag;
  std::string raw;
  long long newest = 0;
  for (const char* name : {"ok", "three", "late", "latefail", "overtime"}) {
    newest = std::max(newest, std::atoll(Get(name, "{.status.jobId}").c_str()));
  }
  for (const AcctRow& row : SacctAll(std::to_string(newest), &raw)) {
    if (row.comment.rfind("slurmjob-operator:", 0) == 0) {
      if (jobs_by_tag[row.comment].insert(row.job_id.substr(0, row.job_id.find('_'))).second) {
        ++by_tag[row.comment];
      }
    }
  }
  for (const char* name : {"ok", "three", "late", "latefail", "overtime"}) {
    const std::string tag = Tag(name);
    ASSERT_FALSE(tag.empty()) << name;
    EXPECT_EQ(by_tag[tag], 1) << name << " (" << tag << ") in sacct:\n" << raw;
  }
  for (const auto& [tag, n] : by_tag) EXPECT_EQ(n, 1) << tag << " in sacct:\n" << raw;
  nlohmann::json jobs = Admin("/__admin/jobs");
  ASSERT_TRUE(jobs.is_object());
  EXPECT_TRUE(jobs["submit_counts"]["duplicates_by_comment"].empty())
      << jobs["submit_counts"].dump(1);
}

// #14 item 3 on Slurm 22.05: spec.array "0-3%2" is one Slurm array job (REST v0.0.38's
// sbatch-style `array`), tracked from slurmctld's task records and pending-remainder record.
// Index 2 fails on its first try (a marker file), so run 2 submits index 2 alone ("2%2") under
// its own tag; sacct shows tasks A_0..A_3 of run 1 (A_2 FAILED 1:0) and B_2 of run 2, and the
// status agrees. Placed last: sacct lists an array's tasks as several rows with one comment.
TEST_F(RealSlurm, ArrayRetriesOnlyTheFailedIndexAndSacctAgrees) {
  const std::string marker =
      SlurmEnv("SLURM_JOBS_DIR") + "/array-failed-once-" +
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  const std::string script =
      "#!/bin/bash\nsleep 2\nif [ \"$SLURM_ARRAY_TASK_ID\" = 2 ] && [ ! -e " + marker +
      " ]; then touch " + marker +
      "; echo failing once >&2; exit 1; fi\necho \"index $SLURM_ARRAY_TASK_ID of "
      "$SLURM_ARRAY_JOB_ID\"\nexit 0\n";
  ASSERT_EQ(ApplyJob("arr", script,
                     "  standardOutput: \"arr-%A_%a.out\"\n"
                     "  array: {indexes: \"0-3%2\", backoffLimitPerIndex: 1}\n")
                .exit_code,
            0);
  const auto started = std::chrono::steady_clock::now();
  CommandResult ready = WaitFor("arr", "condition=Ready", 240);
  ASSERT_EQ(ready.exit_code, 0) << ready.out << ready.err << Get("arr", "{.status}");
  std::cerr << "[real-slurm] array 0-3%2 with one retry: Ready after "
            << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started)
                   .count()
            << " ms; status.array " << Get("arr", "{.status.array}") << "\n";
  EXPECT_EQ(Get("arr", "{.status.phase}"), "Succeeded");
  EXPECT_EQ(Get("arr", "{.status.run}"), "2");
  EXPECT_EQ(Get("arr", "{.status.array.completedIndexes}"), "0-3");
  EXPECT_EQ(Get("arr", "{.status.array.succeeded}"), "4");
  EXPECT_EQ(Get("arr", "{.status.array.failedIndexes}"), "");
  EXPECT_EQ(Get("arr", "{.status.array.indexFailures}"), "2:1");
  EXPECT_EQ(Get("arr", "{.status.array.runIndexes}"), "2");
  const std::string first = Get("arr", "{.status.runs[0].jobId}");
  const std::string second = Get("arr", "{.status.jobId}");
  ASSERT_GT(std::atoll(first.c_str()), 0);
  ASSERT_GT(std::atoll(second.c_str()), 0);
  const std::string tag1 = Tag("arr");
  const std::string tag2 = tag1.substr(0, tag1.rfind("/1@")) + "/2" + tag1.substr(tag1.rfind('@'));

  // Slurm's own account: every task of the first array job, index 2 alone in the second.
  std::map<std::string, AcctRow> rows;
  std::string raw;
  WaitUntil(
      [&] {
        rows.clear();
        for (const std::string& id : {first, second}) {
          for (const AcctRow& row : Sacct({"-j", id}, &raw)) rows[row.job_id] = row;
        }
        return rows.size() == 5 && rows.count(second + "_2") &&
               rows[second + "_2"].state == "COMPLETED";
      },
      seconds(30), milliseconds(500));
  std::cerr << "[real-slurm] sacct of arrays " << first << " and " << second << ":\n";
  for (const auto& [id, row] : rows) {
    std::cerr << "  " << id << " " << row.state << " " << row.exit_code << " " << row.comment
              << "\n";
  }
  ASSERT_EQ(rows.size(), 5u) << raw;
  for (int i = 0; i < 4; ++i) {
    const std::string id = first + "_" + std::to_string(i);
    ASSERT_EQ(rows.count(id), 1u) << id << "\n" << raw;
    EXPECT_EQ(rows[id].state, i == 2 ? "FAILED" : "COMPLETED") << id;
    EXPECT_EQ(rows[id].exit_code, i == 2 ? "1:0" : "0:0") << id;
    EXPECT_EQ(rows[id].comment, tag1) << id;
  }
  EXPECT_EQ(rows[second + "_2"].state, "COMPLETED");
  EXPECT_EQ(rows[second + "_2"].comment, tag2);
  // Each task wrote where %A_%a says.
  EXPECT_THAT(ReadFile(SlurmEnv("SLURM_JOBS_DIR") + "/arr-" + first + "_1.out"),
              HasSubstr("index 1 of " + first));
  EXPECT_THAT(ReadFile(SlurmEnv("SLURM_JOBS_DIR") + "/arr-" + second + "_2.out"),
              HasSubstr("index 2 of " + second));
}

}  // namespace
}  // namespace slurmop
