// File: tests/e2e/kube_faults_test.cc
//
// The operator binary against the stand-in Kubernetes API server with each
// of its fault switches thrown while the operator is working: dropped
// watches, split and coalesced watch chunks, a compacted history (410),
// 429 with Retry-After, 500s, 409 storms, a rotated token (401), slow
// responses and a Lease race. Every test checks the same outcome: every
// SlurmJob reaches COMPLETED, each has exactly ONE Slurm job carrying its tag
// (and exactly one accepted submit), its status names that job, the fault
// really fired, and nothing is left behind after the SlurmJobs are deleted.
//
// Each test starts a fresh operator (so one test's watch backoff or memo
// cannot leak into the next) with a kubeconfig whose user reads `tokenFile`,
// the server's --token-file, so that a rotated token is picked up after a 401.
//
// The file also prints the figures the lead needs, one `METRIC name value
// unit` line each on stderr: Kubernetes API requests per SlurmJob over a
// plain life, and the time to recover from a dropped watch and from a 410.

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "controller/http/cpprest_transport.h"
#include "gmock/gmock.h"
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

constexpr char kNs[] = "e2e";
constexpr char kGroupPath[] = "/apis/hpc.slurmoperator.dev/v1alpha1";
constexpr char kOperatorUserAgent[] = "slurmjob-operator";
constexpr char kTagPrefix[] = "slurmjob-operator:";
// The operator watches all namespaces; kubectl always names one. This path
// (cluster-wide list/watch of slurmjobs) is therefore the operator's alone.
constexpr char kOperatorListWatchPath[] = "^/apis/hpc\\.slurmoperator\\.dev/v1alpha1/slurmjobs\\?";
// Status writes to any SlurmJob (kubectl never writes status here).
constexpr char kStatusPath[] = "/slurmjobs/[^/?]+/status$";

double MsSince(steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(steady_clock::now() - t).count();
}

void Metric(const std::string& name, double value, const std::string& unit) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f", value);
  std::cerr << "METRIC " << name << " " << buf << " " << unit << std::endl;
}

// Seconds since midnight of a glog line ("I20261130 14:51:25.944360 ..."), or
// -1 if the line does not start like that.
double GlogSeconds(const std::string& line) {
  static const std::regex re(R"(^[IWEF]\d{4,8} (\d\d):(\d\d):(\d\d)\.(\d{6}))");
  std::smatch m;
  if (!std::regex_search(line, m, re)) return -1;
  return std::stoi(m[1]) * 3600.0 + std::stoi(m[2]) * 60.0 + std::stoi(m[3]) +
         std::stoi(m[4]) / 1e6;
}

// Time of the first log line containing `text`, or -1.
double FirstLogTime(const std::string& log, const std::string& text) {
  std::stringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find(text) != std::string::npos) return GlogSeconds(line);
  }
  return -1;
}

class KubeFaults : public ::testing::Test {
 protected:
  // ------------------------------------------------------------------ suite
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir("slurmop-kube-faults-"));
    known_uids_ = new std::set<std::string>();
    stand_ins_ =
        new testing::StandIns(*dir_, {.kube_apiserver_flags = {"--token-file", *dir_ + "/token"},
                                      .kubectl_env = {{"HOME", *dir_}}});
    ASSERT_TRUE(stand_ins_->WaitUntilServing());
    kube_port_ = stand_ins_->kube_port();
    ap_port_ = stand_ins_->agent_platform_port();
    ASSERT_TRUE(WaitUntil([] { return !ReadFile(*dir_ + "/token").empty(); }, seconds(10)));

    http::CpprestTransportOptions tls;
    tls.tls.ca_file = *dir_ + "/tls/apiserver.crt";
    auto kube_transport = http::CpprestTransport::Create(tls);
    ASSERT_TRUE(kube_transport.ok()) << kube_transport.status();
    kube_http_ = kube_transport->release();
    auto ap_transport = http::CpprestTransport::Create({});
    ASSERT_TRUE(ap_transport.ok()) << ap_transport.status();
    ap_http_ = ap_transport->release();

    // The operator's kubeconfig: a user that reads the server's token file
    // (re-read after a 401), as an in-cluster client does.
    std::ofstream(*dir_ + "/operator-kubeconfig")
        << "apiVersion: v1\nkind: Config\n"
           "clusters:\n- name: fake\n  cluster:\n    server: https://127.0.0.1:"
        << kube_port_ << "\n    certificate-authority: " << *dir_
        << "/tls/apiserver.crt\n"
           "users:\n- name: operator\n  user:\n    tokenFile: "
        << *dir_
        << "/token\n"
           "contexts:\n- name: fake\n  context: {cluster: fake, user: operator, namespace: "
           "default}\n"
           "current-context: fake\n";

    ASSERT_TRUE(stand_ins_->kubectl().InstallCrds());
    ASSERT_TRUE(stand_ins_->kubectl().CreateNamespace(kNs));
    ASSERT_TRUE(
        stand_ins_->kubectl().Apply(testing::LocalSlurmClusterManifest(kNs, ap_port_, "v0.0.42")));
  }

  static void TearDownTestSuite() {
    delete stand_ins_;
    delete kube_http_;
    delete ap_http_;
    // KUBE_FAULTS_KEEP_LOGS=1 keeps the servers' and operators' logs.
    testing::RemoveDirUnlessKept(*dir_,
                                 ::testing::UnitTest::GetInstance()->failed_test_count() > 0 ||
                                     std::getenv("KUBE_FAULTS_KEEP_LOGS") != nullptr);
    delete known_uids_;
    delete dir_;
  }

  // ------------------------------------------------------------------ test
  void SetUp() override {
    ResetSwitches();
    StartOperator();
  }

  void TearDown() override {
    ResetSwitches();
    if (operator_ != nullptr) {
      EXPECT_TRUE(operator_->Running()) << "the operator died during the test";
      int status = operator_->Stop(SIGTERM, seconds(10));
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "operator did not exit cleanly on SIGTERM (status " << status << ")";
    }
    if (HasFailure() && operator_ != nullptr) {
      std::cerr << "---- operator log (tail) ----\n"
                << testing::LogTail(operator_->log_path(), 8000) << "\n";
    }
    operator_.reset();
  }

  static void ResetSwitches() {
    KubeAdmin("POST", "/__admin/faults/clear");
    KubeAdmin("POST", "/__admin/latency/clear");
    KubeAdmin("POST", "/__admin/chunking", {{"split", false}, {"coalesce", false}});
  }

  static std::map<std::string, std::string> OperatorEnv() {
    return testing::OperatorEnv(ap_port_, *dir_);
  }

  static std::vector<std::string> OperatorArgs(const std::string& id) {
    return {SLURMOP_OPERATOR_BINARY,
            "--kubeconfig=" + *dir_ + "/operator-kubeconfig",
            "--health-port=0",
            "--health-port-file=" + *dir_ + "/" + id + ".port",
            "--min-poll-seconds=0.5",
            "--agent-platform-qps=50",
            "--submit-settle-seconds=10",
            "--allow-operator-identity-for-namespaced-clusters",
            testing::AllowStandInFlag(ap_port_)};
  }

  // A fresh operator per test; returns once its informers list and watch.
  void StartOperator() {
    const std::string id = "operator-" + std::to_string(++operator_runs_);
    std::filesystem::remove(*dir_ + "/" + id + ".port");
    const auto started = steady_clock::now();
    operator_ =
        std::make_unique<Subprocess>(OperatorArgs(id), *dir_ + "/" + id + ".log", OperatorEnv());
    ASSERT_GT(ReadPort(*dir_ + "/" + id + ".port"), 0) << ReadFile(operator_->log_path());
    ASSERT_TRUE(WaitUntil([&] { return OperatorWatching("slurmjobs", MsSince(started) / 1000); },
                          seconds(20)))
        << ReadFile(operator_->log_path());
    ASSERT_TRUE(WaitUntil(
        [&] { return OperatorWatching("slurmclusters", MsSince(started) / 1000); }, seconds(20)));
  }

  // True if the operator (cluster-wide, no field selector) has a watch on
  // `resource` younger than `max_age_s` seconds.
  static bool OperatorWatching(const std::string& resource, double max_age_s = 1e9) {
    json w = KubeAdmin("GET", "/__admin/watches");
    for (const auto& x : w.value("watches", json::array())) {
      const bool cluster_wide =
          !x.contains("namespace") || x["namespace"].is_null() || x["namespace"] == "";
      if (x.value("resource", "") == resource && cluster_wide && !x.value("fieldSelector", false) &&
          x.value("ageSeconds", 1e9) <= max_age_s) {
        return true;
      }
    }
    return false;
  }

  // ------------------------------------------------------------------ HTTP
  static http::Response Send(http::Transport* t, const std::string& method, const std::string& url,
                             const std::string& body, http::Headers headers = {}) {
    http::Request req;
    req.method = method;
    req.url = url;
    req.headers = std::move(headers);
    req.headers["User-Agent"] = "kube-faults-test";
    if (!body.empty()) {
      if (!req.headers.count("Content-Type")) req.headers["Content-Type"] = "application/json";
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

  // The stand-in API server's admin API (JSON); null on failure.
  static json KubeAdmin(const std::string& method, const std::string& path,
                        const json& body = nullptr) {
    http::Response r =
        Send(kube_http_, method, "https://127.0.0.1:" + std::to_string(kube_port_) + path,
             body.is_null() ? (method == "POST" ? "{}" : "") : body.dump());
    if (r.status != 200) {
      ADD_FAILURE() << "admin " << method << " " << path << ": " << r.status << " " << r.body;
      return nullptr;
    }
    return json::parse(r.body, nullptr, false);
  }

  // A Kubernetes API call with the current token (the test is its own client).
  static http::Response KubeApi(const std::string& method, const std::string& path,
                                const std::string& body = "") {
    std::string token = ReadFile(*dir_ + "/token");
    while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
    return Send(kube_http_, method, "https://127.0.0.1:" + std::to_string(kube_port_) + path, body,
                {{"Authorization", "Bearer " + token}, {"Accept", "application/json"}});
  }

  static bool AgentAdminPost(const std::string& path, const json& body) {
    http::Response r =
        Send(ap_http_, "POST", "http://127.0.0.1:" + std::to_string(ap_port_) + path, body.dump());
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    return r.status == 200;
  }

  // Lines of this test's operator log that contain `text`.
  size_t LogCount(const std::string& text) const {
    std::stringstream in(ReadFile(operator_->log_path()));
    size_t n = 0;
    for (std::string line; std::getline(in, line);) n += line.find(text) != std::string::npos;
    return n;
  }

  static json AgentAdmin(const std::string& path) {
    http::Response r =
        Send(ap_http_, "GET", "http://127.0.0.1:" + std::to_string(ap_port_) + path, "");
    if (r.status != 200) return nullptr;
    return json::parse(r.body, nullptr, false);
  }

  static CommandResult Kubectl(std::vector<std::string> args, const std::string& stdin_data = "",
                               milliseconds timeout = seconds(90)) {
    return stand_ins_->kubectl().Run(std::move(args), stdin_data, timeout);
  }

  // ------------------------------------------------------------------ jobs
  static std::string JobYaml(const std::string& name, const std::string& script) {
    std::string yaml =
        "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\nmetadata: {name: " + name +
        ", namespace: e2e}\nspec:\n  clusterRef: {name: local}\n"
        "  timeLimitMinutes: 5\n  script: |\n";
    std::stringstream in(script);
    for (std::string line; std::getline(in, line);) yaml += "    " + line + "\n";
    return yaml;
  }

  // Applies `prefix-<first>` .. `prefix-<first+n-1>` with one kubectl call.
  static std::vector<std::string> ApplyJobs(const std::string& prefix, int n, int first = 0,
                                            const std::string& script = "#!/bin/bash\nsleep 1\n") {
    std::vector<std::string> names;
    std::string yaml;
    for (int i = first; i < first + n; ++i) {
      names.push_back(prefix + "-" + std::to_string(i));
      yaml += "---\n" + JobYaml(names.back(), script);
    }
    CommandResult r = Kubectl({"apply", "-f", "-"}, yaml);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    ListJobs();  // records their UIDs even if the test stops early
    return names;
  }

  // A SlurmJob created by a direct POST (for timing: no kubectl start-up).
  static void CreateJobFast(const std::string& name) {
    json obj = {{"apiVersion", "hpc.slurmoperator.dev/v1alpha1"},
                {"kind", "SlurmJob"},
                {"metadata", {{"name", name}, {"namespace", kNs}}},
                {"spec",
                 {{"clusterRef", {{"name", "local"}}},
                  {"timeLimitMinutes", 5},
                  {"script", "#!/bin/bash\nsleep 1\n"}}}};
    http::Response r =
        KubeApi("POST", std::string(kGroupPath) + "/namespaces/e2e/slurmjobs", obj.dump());
    ASSERT_EQ(r.status, 201) << r.body;
    json created = json::parse(r.body, nullptr, false);
    if (created.is_object()) known_uids_->insert(created["metadata"].value("uid", ""));
  }

  static json GetJob(const std::string& name) {
    http::Response r =
        KubeApi("GET", std::string(kGroupPath) + "/namespaces/e2e/slurmjobs/" + name);
    return r.status == 200 ? json::parse(r.body, nullptr, false) : json(nullptr);
  }

  static std::map<std::string, json> ListJobs() {
    std::map<std::string, json> out;
    http::Response r = KubeApi("GET", std::string(kGroupPath) + "/namespaces/e2e/slurmjobs");
    EXPECT_EQ(r.status, 200) << r.body;
    json list = json::parse(r.body, nullptr, false);
    if (!list.is_object()) return out;
    for (const auto& item : list.value("items", json::array())) {
      out[item["metadata"].value("name", "")] = item;
      known_uids_->insert(item["metadata"].value("uid", ""));  // every SlurmJob ever seen
    }
    return out;
  }

  static void WaitCompleted(const std::vector<std::string>& names,
                            const std::string& timeout = "60s") {
    std::vector<std::string> args = {
        "wait", "-n", kNs, "--for=jsonpath={.status.jobState}=COMPLETED", "--timeout=" + timeout};
    for (const auto& n : names) args.push_back("sj/" + n);
    CommandResult w = Kubectl(args);
    EXPECT_EQ(w.exit_code, 0) << w.out << w.err;
  }

  // Every named SlurmJob is COMPLETED, has exactly one Slurm job carrying its
  // tag and exactly one accepted submit, and its status names that job.
  static void ExpectExactlyOnce(const std::vector<std::string>& names) {
    std::map<std::string, json> jobs = ListJobs();
    json ap = AgentAdmin("/__admin/jobs");
    ASSERT_TRUE(ap.is_object());
    for (const auto& name : names) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(jobs.count(name)) << "SlurmJob missing";
      const json& obj = jobs[name];
      const std::string uid = obj["metadata"].value("uid", "");
      std::vector<json> tagged;  // run 1's tag
      for (const auto& j : ap["jobs"]) {
        if (testing::IsRunTag(j.value("comment", ""), kNs, uid, 1)) tagged.push_back(j);
      }
      int accepted = 0;
      for (const auto& s : ap["submits"]) {
        if (testing::IsRunTag(s.value("comment", ""), kNs, uid, 1) && s.value("accepted", false)) {
          ++accepted;
        }
      }
      EXPECT_EQ(tagged.size(), 1u) << "Slurm jobs carrying the tag";
      EXPECT_EQ(accepted, 1) << "accepted submits carrying the tag";
      const json status = obj.value("status", json::object());
      EXPECT_EQ(status.value("jobState", ""), "COMPLETED") << status.dump();
      if (tagged.size() == 1) {
        EXPECT_EQ(status.value("jobId", int64_t{-1}), tagged[0].value("job_id", int64_t{-2}))
            << "status names another job: " << status.dump() << " vs " << tagged[0].dump();
      }
      EXPECT_EQ(status.value("observedGeneration", int64_t{-1}),
                obj["metadata"].value("generation", int64_t{-2}));
    }
  }

  // Deletes the SlurmJobs (kubectl waits for the finalizers) and checks that
  // nothing is left: no SlurmJob, no Slurm job from this operator that
  // belongs to no SlurmJob of this suite, no second submit anywhere, no
  // Slurm job of ours still active.
  static void DeleteAndExpectNoStrayState(const std::vector<std::string>& names) {
    std::vector<std::string> args = {"delete", "-n", kNs, "--timeout=60s"};
    for (const auto& n : names) args.push_back("sj/" + n);
    CommandResult del = Kubectl(args);
    EXPECT_EQ(del.exit_code, 0) << del.out << del.err;
    std::map<std::string, json> left = ListJobs();
    for (const auto& n : names) EXPECT_EQ(left.count(n), 0u) << n << " still exists";

    json ap = AgentAdmin("/__admin/jobs");
    ASSERT_TRUE(ap.is_object());
    std::map<std::string, int> accepted;
    for (const auto& s : ap["submits"]) {
      const std::string c = s.value("comment", "");
      if (c.rfind(kTagPrefix, 0) == 0 && s.value("accepted", false)) ++accepted[c];
    }
    for (const auto& [tag, n] : accepted) {
      EXPECT_TRUE(known_uids_->count(testing::TagUid(tag)))
          << "a Slurm job with tag " << tag << " belongs to no SlurmJob of this suite";
      EXPECT_EQ(n, 1) << tag << " was submitted " << n << " times";
    }
    for (const auto& j : ap["jobs"]) {
      if (j.value("comment", "").rfind(kTagPrefix, 0) != 0) continue;
      const std::string state = j.value("state", j.value("job_state", ""));
      EXPECT_TRUE(state == "COMPLETED" || state == "CANCELLED" || state == "FAILED")
          << "Slurm job still active: " << j.dump();
    }
  }

  // The operator's own requests from the admin request log.
  static std::vector<json> OperatorRequests() {
    std::vector<json> out;
    json r = KubeAdmin("GET", "/__admin/requests");
    for (const auto& x : r.value("requests", json::array())) {
      if (x.value("userAgent", "").rfind(kOperatorUserAgent, 0) == 0) out.push_back(x);
    }
    return out;
  }

  static int Hits(const json& fault_item) {
    json all = KubeAdmin("GET", "/__admin/faults");
    for (const auto& f : all.value("faults", json::array())) {
      if (f.value("id", -1) == fault_item.value("id", -2)) return f.value("hits", 0);
    }
    return -1;
  }

  static json AddFault(json body) {
    json f = KubeAdmin("POST", "/__admin/faults", body);
    EXPECT_TRUE(f.is_object() && f.contains("id")) << f.dump();
    return f;
  }

  static int DropWatches(const std::string& resource = "slurmjobs") {
    json r = KubeAdmin("POST", "/__admin/drop_watches", {{"resource", resource}});
    return r.is_object() ? r.value("dropped", 0) : 0;
  }

  // Polls the SlurmJob until the operator wrote a status; returns the time.
  static std::optional<steady_clock::time_point> WaitForStatus(const std::string& name,
                                                               milliseconds timeout) {
    const auto deadline = steady_clock::now() + timeout;
    while (steady_clock::now() < deadline) {
      json j = GetJob(name);
      if (j.is_object() && j.contains("status") && !j["status"].empty()) return steady_clock::now();
      std::this_thread::sleep_for(milliseconds(10));
    }
    return std::nullopt;
  }

  static std::string* dir_;
  static testing::StandIns* stand_ins_;
  static http::Transport* kube_http_;
  static http::Transport* ap_http_;
  static int kube_port_;
  static int ap_port_;
  static int operator_runs_;
  static std::set<std::string>* known_uids_;
  std::unique_ptr<Subprocess> operator_;
};

std::string* KubeFaults::dir_ = nullptr;
testing::StandIns* KubeFaults::stand_ins_ = nullptr;
http::Transport* KubeFaults::kube_http_ = nullptr;
http::Transport* KubeFaults::ap_http_ = nullptr;
int KubeFaults::kube_port_ = 0;
int KubeFaults::ap_port_ = 0;
int KubeFaults::operator_runs_ = 0;
std::set<std::string>* KubeFaults::known_uids_ = nullptr;

// (1) Watches dropped mid-stream, three times, with SlurmJobs created while
// the operator has no watch: the informer re-watches from its last
// resourceVersion and the events in between are replayed, not lost.
TEST_F(KubeFaults, DroppedWatchesLoseNothing) {
  std::vector<std::string> names = ApplyJobs("drop", 3);
  int dropped = 0;
  for (int round = 1; round <= 3; ++round) {
    std::this_thread::sleep_for(milliseconds(200));
    dropped += DropWatches("");  // every watch, slurmclusters too
    // Created while the operator has no watch on slurmjobs.
    std::vector<std::string> more = ApplyJobs("drop", 1, 2 + round);
    names.insert(names.end(), more.begin(), more.end());
    ASSERT_TRUE(
        WaitUntil([] { return OperatorWatching("slurmjobs") && OperatorWatching("slurmclusters"); },
                  seconds(30)))
        << "no re-watch after drop " << round;
  }
  EXPECT_GE(dropped, 6) << "each drop should have cut the operator's two watches";
  WaitCompleted(names);
  ExpectExactlyOnce(names);
  DeleteAndExpectNoStrayState(names);
}

// (2) Watch events split at random byte offsets across chunks and several
// events coalesced into one chunk (seeded), for the whole test: the
// operator's line buffering must deliver every event exactly as sent, so
// its watch never fails and never restarts.
TEST_F(KubeFaults, SplitAndCoalescedChunksAreReassembled) {
  json cfg = KubeAdmin("POST", "/__admin/chunking",
                       {{"split", true},
                        {"coalesce", true},
                        {"seed", 20240611},
                        {"max_coalesce", 4},
                        {"split_delay_ms", 1}});
  ASSERT_TRUE(cfg.value("split", false) && cfg.value("coalesce", false)) << cfg.dump();
  KubeAdmin("POST", "/__admin/counters/reset");
  std::vector<std::string> names = ApplyJobs("chunk", 6);
  WaitCompleted(names);
  ExpectExactlyOnce(names);
  DeleteAndExpectNoStrayState(names);

  // The watch opened before the switch stayed up the whole time: a torn or
  // merged line would have ended it (parse error) and caused a re-watch.
  int watches = 0, lists = 0;
  for (const auto& r : OperatorRequests()) {
    if (r.value("resource", "") != "slurmjobs.hpc.slurmoperator.dev") continue;
    if (r.value("verb", "") == "watch") ++watches;
    if (r.value("verb", "") == "list") ++lists;
  }
  EXPECT_EQ(watches, 0) << "the operator re-watched: its watch failed on a split/coalesced chunk";
  EXPECT_EQ(lists, 0);
  EXPECT_THAT(ReadFile(operator_->log_path()),
              ::testing::Not(::testing::HasSubstr("watch failed")));
  EXPECT_TRUE(OperatorWatching("slurmjobs"));
}

// (3) Compacted history: the operator's re-watch from its old
// resourceVersion gets the 410 ERROR event; it must relist (quorum) and
// pick up the SlurmJobs created while it was not watching.
TEST_F(KubeFaults, CompactedHistoryForcesARelistThatLosesNothing) {
  std::vector<std::string> names = ApplyJobs("gone", 3);
  std::this_thread::sleep_for(milliseconds(300));
  KubeAdmin("POST", "/__admin/counters/reset");
  ASSERT_GE(DropWatches(), 1);
  std::vector<std::string> more = ApplyJobs("gone", 3, 3);  // while not watching
  names.insert(names.end(), more.begin(), more.end());
  json compacted = KubeAdmin("POST", "/__admin/compact");
  ASSERT_TRUE(compacted.is_object()) << compacted.dump();
  WaitCompleted(names);
  ExpectExactlyOnce(names);

  // Evidence of the 410 path: a relist after the re-watch, and the log line.
  int lists = 0;
  for (const auto& r : OperatorRequests()) {
    if (r.value("resource", "") == "slurmjobs.hpc.slurmoperator.dev" &&
        r.value("verb", "") == "list")
      ++lists;
  }
  EXPECT_GE(lists, 1) << "no relist after the compaction";
  EXPECT_THAT(ReadFile(operator_->log_path()), ::testing::HasSubstr("relisting"));
  DeleteAndExpectNoStrayState(names);
}

// (4) 429 Too Many Requests with Retry-After on status writes and on the
// operator's list and watch. While SlurmJobs run: the first 3 status writes
// of busy-0 and 6 more of any SlurmJob get a 429; the watch is dropped and
// the history compacted, so the re-watch meets a 429 (Retry-After 4 s),
// then the 410, and the quorum relist a 429 too. The operator must retry,
// lose nothing and never submit again. Also measures how long it waits after
// a 429 (the informer must honour Retry-After; the status-write figure is
// printed for the lead).
TEST_F(KubeFaults, TooManyRequestsOnStatusWritesAndListWatch) {
  json one_fault = AddFault({{"method", "PUT"},
                             {"path", "/slurmjobs/busy-0/status$"},
                             {"status", 429},
                             {"count", 3},
                             {"retry_after", 1}});
  json status_fault = AddFault({{"method", "PUT"},
                                {"path", kStatusPath},
                                {"status", 429},
                                {"count", 6},
                                {"retry_after", 1}});
  json watch_fault = AddFault({{"method", "GET"},
                               {"path", std::string(kOperatorListWatchPath) + ".*watch=true"},
                               {"status", 429},
                               {"count", 1},
                               {"retry_after", 4}});
  json list_fault = AddFault({{"method", "GET"},
                              {"path", std::string(kOperatorListWatchPath) + "(?!.*watch=)"},
                              {"status", 429},
                              {"count", 1},
                              {"retry_after", 1}});
  // Record when each fault fires.
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::map<int, std::vector<double>> hit_times;  // fault id -> ms since start
  const auto t0 = steady_clock::now();
  std::thread recorder([&] {
    std::map<int, int> last;
    while (!stop) {
      json all = KubeAdmin("GET", "/__admin/faults");
      for (const auto& f : all.value("faults", json::array())) {
        int id = f.value("id", 0), hits = f.value("hits", 0);
        std::lock_guard<std::mutex> lock(mu);
        for (int i = last[id]; i < hits; ++i) hit_times[id].push_back(MsSince(t0));
        last[id] = hits;
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
  });

  std::vector<std::string> names = ApplyJobs("busy", 4);
  ASSERT_GE(DropWatches(), 1);
  std::vector<std::string> more = ApplyJobs("busy", 1, 4);  // while not watching
  names.insert(names.end(), more.begin(), more.end());
  KubeAdmin("POST", "/__admin/compact");
  WaitCompleted(names);
  EXPECT_TRUE(WaitUntil([] { return OperatorWatching("slurmjobs"); }, seconds(30)))
      << "no watch after the 429s";
  stop = true;
  recorder.join();
  EXPECT_EQ(Hits(one_fault), 3);
  EXPECT_EQ(Hits(status_fault), 6);
  EXPECT_EQ(Hits(watch_fault), 1);
  EXPECT_EQ(Hits(list_fault), 1);
  ExpectExactlyOnce(names);
  DeleteAndExpectNoStrayState(names);

  std::lock_guard<std::mutex> lock(mu);
  auto first_hit = [&](const json& f) {
    const auto& t = hit_times[f.value("id", 0)];
    return t.empty() ? -1.0 : t.front();
  };
  // Sampled every ~5 ms: resolution about 10 ms.
  const auto& one = hit_times[one_fault.value("id", 0)];
  double gap = -1;
  for (size_t i = 1; i < one.size(); ++i)
    gap = gap < 0 ? one[i] - one[i - 1] : std::min(gap, one[i] - one[i - 1]);
  Metric("status_write_429_retry_gap_min_ms", gap, "ms");
  // After the watch's 429 the next request is the re-watch (410), then at
  // once the relist that meets the second 429: the gap is the informer's wait.
  const double watch_wait = first_hit(list_fault) - first_hit(watch_fault);
  Metric("watch_429_retry_after_4s_wait_ms", watch_wait, "ms");
  EXPECT_GE(watch_wait, 3900) << "the informer did not wait Retry-After (4 s) after a 429";
}

// (5) 500 Internal Server Error on status writes: first plainly (nothing
// written), then "after" the write (the write happened, the reply is lost:
// the operator's next write carries a stale resourceVersion and meets a 409).
TEST_F(KubeFaults, InternalErrorsOnStatusWrites) {
  json before = AddFault({{"method", "PUT"}, {"path", kStatusPath}, {"status", 500}, {"count", 4}});
  json after = AddFault(
      {{"method", "PUT"}, {"path", kStatusPath}, {"status", 500}, {"count", 4}, {"after", true}});
  std::vector<std::string> names = ApplyJobs("ise", 4);
  WaitCompleted(names);
  EXPECT_EQ(Hits(before), 4);
  EXPECT_EQ(Hits(after), 4);
  ExpectExactlyOnce(names);
  DeleteAndExpectNoStrayState(names);
}

// (6) A 409 Conflict storm: the first 5 status writes of EACH SlurmJob fail
// with the optimistic-lock conflict, which includes the write that records
// the just-submitted job id. The operator must re-read, re-decide and keep
// the submitted id; a second submit would show as a second tagged job.
TEST_F(KubeFaults, ConflictStormOnStatusWritesNeverSubmitsAgain) {
  constexpr int kJobs = 3, kConflicts = 5;
  std::vector<json> faults;
  for (int i = 0; i < kJobs; ++i) {
    faults.push_back(AddFault({{"method", "PUT"},
                               {"path", "/slurmjobs/storm-" + std::to_string(i) + "/status$"},
                               {"status", 409},
                               {"count", kConflicts}}));
  }
  KubeAdmin("POST", "/__admin/counters/reset");
  std::vector<std::string> names = ApplyJobs("storm", kJobs);
  WaitCompleted(names);
  for (const auto& f : faults) EXPECT_EQ(Hits(f), kConflicts);
  ExpectExactlyOnce(names);

  // "Re-read": every conflict is followed by a GET of that SlurmJob.
  std::map<std::string, int> gets, conflicts;
  for (const auto& r : OperatorRequests()) {
    if (r.value("resource", "").rfind("slurmjobs.", 0) != 0) continue;
    const std::string name = r.value("name", "");
    if (r.value("verb", "") == "get") ++gets[name];
    if (r.value("code", json()) == 409) ++conflicts[name];
  }
  for (const auto& n : names) {
    EXPECT_GE(conflicts[n], kConflicts) << n;
    EXPECT_GE(gets[n], kConflicts) << n << ": conflicts not followed by a re-read";
  }
  DeleteAndExpectNoStrayState(names);
}

// (7) 401 after the token is rotated: the operator's token file is rewritten
// and the old token refused. The operator must re-read the file after the 401
// and carry on (requests and re-watches), twice in a row.
TEST_F(KubeFaults, RotatedTokenIsReReadAfterUnauthorized) {
  KubeAdmin("POST", "/__admin/counters/reset");
  std::vector<std::string> names = ApplyJobs("rot", 4);
  json first = KubeAdmin("POST", "/__admin/rotate_token", json::object());
  ASSERT_TRUE(first.is_object() && first.contains("token"));
  ASSERT_GE(DropWatches(""), 1);  // the re-watches must authenticate again
  // The stand-in lists only watches that are open now (a dropped one leaves at once), so this
  // waits for the re-watches themselves; before, a dropped watch whose thread had not yet ended
  // passed for one, and the second drop below found nothing open.
  ASSERT_TRUE(
      WaitUntil([] { return OperatorWatching("slurmjobs") && OperatorWatching("slurmclusters"); },
                seconds(20)));
  std::vector<std::string> more = ApplyJobs("rot", 2, 4);
  names.insert(names.end(), more.begin(), more.end());
  json second = KubeAdmin("POST", "/__admin/rotate_token", json::object());
  ASSERT_TRUE(second.is_object() && second.contains("token"));
  ASSERT_GE(DropWatches(""), 1);
  WaitCompleted(names);
  ExpectExactlyOnce(names);

  // The 401s happened, and each was followed by success.
  std::vector<json> reqs = OperatorRequests();
  int unauthorized = 0;
  for (const auto& r : reqs) unauthorized += r.value("code", json()) == 401;
  EXPECT_GE(unauthorized, 2) << "the rotation was never noticed (no 401)";
  ASSERT_FALSE(reqs.empty());
  EXPECT_NE(reqs.back().value("code", json()), 401);
  std::cerr << "operator requests answered 401 after the rotations: " << unauthorized << "\n";
  EXPECT_TRUE(
      WaitUntil([] { return OperatorWatching("slurmjobs") && OperatorWatching("slurmclusters"); },
                seconds(30)))
      << "no re-watch with the new token";
  DeleteAndExpectNoStrayState(names);
}

// An API server that does not answer while the operator starts: the two reads it cannot start
// without (the installation id, the submit-note key) are waited out (startup_retry.h). Before,
// the first 503 made the process exit with status 2, into the kubelet's CrashLoopBackOff.
TEST_F(KubeFaults, StartupReadsWaitOutAnAPIServerThatDoesNotAnswer) {
  ASSERT_EQ(operator_->Stop(SIGTERM, seconds(10)), 0);  // SetUp's; this test starts its own
  json kube_system = AddFault({{"method", "GET"},
                               {"path", "^/api/v1/namespaces/kube-system$"},
                               {"status", 503},
                               {"count", 2}});
  json note_key = AddFault({{"method", "GET"},
                            {"path", "/secrets/slurmjob-operator-submit-note-key$"},
                            {"status", 500},
                            {"count", 2}});
  StartOperator();
  EXPECT_EQ(Hits(kube_system), 2);
  EXPECT_EQ(Hits(note_key), 2);
  EXPECT_TRUE(operator_->Running());
  const std::string log = ReadFile(operator_->log_path());
  EXPECT_THAT(log, ::testing::HasSubstr("installation id: UNAVAILABLE"));
  EXPECT_THAT(log, ::testing::HasSubstr("submit-note key: INTERNAL"));
  std::vector<std::string> names = ApplyJobs("startup", 2);
  WaitCompleted(names);
  ExpectExactlyOnce(names);
  DeleteAndExpectNoStrayState(names);
}

// (8) Slow responses: 400 ms on the operator's GETs, lists and watches of
// slurmjobs and 400 ms on every status write and finalizer patch. Slower, but
// the same result.
TEST_F(KubeFaults, SlowResponsesStillCompleteExactlyOnce) {
  std::vector<std::string> names = ApplyJobs("slow", 5);
  KubeAdmin(
      "POST", "/__admin/latency",
      {{"method", "GET"}, {"path", kOperatorListWatchPath}, {"delay_ms", 400}, {"count", -1}});
  KubeAdmin("POST", "/__admin/latency",
            {{"method", "PUT|PATCH"}, {"path", "/slurmjobs/"}, {"delay_ms", 400}, {"count", -1}});
  KubeAdmin("POST", "/__admin/latency",
            {{"method", "GET"},
             {"path", "/namespaces/e2e/slurmjobs/[^/?]+$"},
             {"delay_ms", 400},
             {"count", -1}});
  ASSERT_GE(DropWatches(), 1);  // and the re-watch is slow too
  WaitCompleted(names, "90s");
  ExpectExactlyOnce(names);
  KubeAdmin("POST", "/__admin/latency/clear");
  DeleteAndExpectNoStrayState(names);
}

// (9) Lease races under --leader-elect with two replicas. First the Lease is
// bumped behind the leader's back (its renewal meets a 409): it must re-read
// and keep leading, no transition. Then the Lease is stolen by an identity
// that is not a replica: the leader must stop acting (it exits) before the
// standby takes over after the lease duration. SlurmJobs in flight during
// both races complete exactly once.
TEST_F(KubeFaults, LeaseRaceNeverLeavesTwoLeadersActing) {
  ASSERT_EQ(operator_->Stop(SIGTERM, seconds(10)), 0);
  operator_.reset();
  auto replica = [&](const std::string& id) {
    std::vector<std::string> args = OperatorArgs("le-" + id);
    for (const char* flag :
         {"--leader-elect", "--leader-elect-namespace=e2e",
          "--leader-elect-lease-duration-seconds=3", "--leader-elect-renew-deadline-seconds=2",
          "--leader-elect-retry-period-seconds=0.5"}) {
      args.push_back(flag);
    }
    args.push_back("--leader-elect-identity=" + id);
    return std::make_unique<Subprocess>(args, *dir_ + "/operator-le-" + id + ".log", OperatorEnv());
  };
  const auto started = steady_clock::now();
  std::map<std::string, std::unique_ptr<Subprocess>> replicas;
  replicas["a"] = replica("a");
  replicas["b"] = replica("b");
  const std::string lease_path =
      "/apis/coordination.k8s.io/v1/namespaces/e2e/leases/slurmjob-operator";
  auto lease = [&] {
    http::Response r = KubeApi("GET", lease_path);
    return r.status == 200 ? json::parse(r.body, nullptr, false) : json::object();
  };
  auto holder = [&] { return lease().value("spec", json::object()).value("holderIdentity", ""); };
  std::string leader;
  ASSERT_TRUE(WaitUntil(
      [&] {
        leader = holder();
        return leader == "a" || leader == "b";
      },
      seconds(20)));
  const std::string standby = leader == "a" ? "b" : "a";
  ASSERT_TRUE(WaitUntil([&] { return OperatorWatching("slurmjobs", MsSince(started) / 1000); },
                        seconds(20)));
  const int64_t transitions = lease()["spec"].value("leaseTransitions", int64_t{-1});

  std::vector<std::string> names = ApplyJobs("lease", 4, 0, "#!/bin/bash\nsleep 2\n");

  // Bumps: the leader's next renewal is a 409; it re-reads and renews.
  for (int i = 0; i < 3; ++i) {
    json bumped = KubeAdmin("POST", "/__admin/lease_race",
                            {{"namespace", kNs}, {"name", "slurmjob-operator"}});
    ASSERT_TRUE(bumped.is_object());
    std::this_thread::sleep_for(milliseconds(700));
  }
  EXPECT_EQ(holder(), leader) << "a bump must not change the leader";
  EXPECT_EQ(lease()["spec"].value("leaseTransitions", int64_t{-2}), transitions);
  EXPECT_TRUE(replicas[leader]->Running());
  EXPECT_TRUE(replicas[standby]->Running());
  EXPECT_THAT(ReadFile(replicas[leader]->log_path()),
              ::testing::HasSubstr("optimistic renewal failed"))
      << "the bump did not reach the leader's renewal";

  // Steal: the leader must give up within its renew deadline.
  std::vector<std::string> more = ApplyJobs("lease", 2, 4, "#!/bin/bash\nsleep 2\n");
  names.insert(names.end(), more.begin(), more.end());
  const auto stolen_at = steady_clock::now();
  json stolen = KubeAdmin("POST", "/__admin/lease_race",
                          {{"namespace", kNs},
                           {"name", "slurmjob-operator"},
                           {"holderIdentity", "intruder"},
                           {"leaseDurationSeconds", 3}});
  ASSERT_TRUE(stolen.is_object());
  ASSERT_TRUE(WaitUntil([&] { return !replicas[leader]->Running(); }, seconds(10)))
      << "the deposed leader keeps running";
  const double gave_up_ms = MsSince(stolen_at);
  ASSERT_TRUE(WaitUntil([&] { return holder() == standby; }, seconds(15)));
  const double takeover_ms = MsSince(stolen_at);
  std::cerr << "lease stolen: old leader gone after " << gave_up_ms << " ms, standby leads after "
            << takeover_ms << " ms\n";
  int status = replicas[leader]->Stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << "status " << status;

  // The Lease shows the new holder a moment before its process logs it.
  double old_stopped = -1, new_started = -1;
  EXPECT_TRUE(WaitUntil(
      [&] {
        old_stopped =
            FirstLogTime(ReadFile(replicas[leader]->log_path()), "stopped after losing leadership");
        new_started = FirstLogTime(ReadFile(replicas[standby]->log_path()), "became the leader");
        return old_stopped > 0 && new_started > 0;
      },
      seconds(10)))
      << "old leader log: " << ReadFile(replicas[leader]->log_path())
      << "\nnew leader log: " << ReadFile(replicas[standby]->log_path());
  EXPECT_LT(old_stopped, new_started)
      << "two leaders acting: the standby started leading before the old leader had stopped";
  std::cerr << "old leader stopped " << (new_started - old_stopped) * 1000
            << " ms before the new one started\n";

  // Work goes on under the new leader.
  std::vector<std::string> after = ApplyJobs("lease", 2, 6);
  names.insert(names.end(), after.begin(), after.end());
  WaitCompleted(names);
  ExpectExactlyOnce(names);
  DeleteAndExpectNoStrayState(names);
  EXPECT_EQ(holder(), standby);
  EXPECT_EQ(replicas[standby]->Stop(SIGTERM, seconds(10)), 0);
}

// (a) Kubernetes API requests per SlurmJob over a plain life (create ->
// COMPLETED -> delete), the operator's share only (the request log records
// each request's User-Agent; kubectl's share is printed for reference).
TEST_F(KubeFaults, MetricApiRequestsPerSlurmJob) {
  constexpr int kJobs = 3;
  std::this_thread::sleep_for(milliseconds(500));  // let the cluster probe settle
  KubeAdmin("POST", "/__admin/counters/reset");
  std::vector<std::string> names = ApplyJobs("plain", kJobs);
  WaitCompleted(names);
  ExpectExactlyOnce(names);
  DeleteAndExpectNoStrayState(names);
  std::this_thread::sleep_for(milliseconds(1500));  // trailing Events and requeues

  json counters = KubeAdmin("GET", "/__admin/counters");
  json log = KubeAdmin("GET", "/__admin/requests");
  std::map<std::string, double> op;
  std::map<std::string, int> by_verb_resource;
  int kubectl_total = 0, operator_total = 0, others = 0;
  for (const auto& r : log.value("requests", json::array())) {
    const std::string ua = r.value("userAgent", "");
    if (ua.rfind("kubectl", 0) == 0) {
      ++kubectl_total;
      continue;
    }
    if (ua.rfind(kOperatorUserAgent, 0) != 0) {
      ++others;  // this test's own client
      continue;
    }
    ++operator_total;
    const std::string verb = r.value("verb", ""), res = r.value("resource", "");
    ++by_verb_resource[verb + " " + res];
    if (r.value("code", json()) != 200 && r.value("code", json()) != 201) {
      ++by_verb_resource[verb + " " + res + " -> " + r.value("code", json()).dump()];
    }
    const bool job_res = res == "slurmjobs.hpc.slurmoperator.dev";
    const bool job_status = res == "slurmjobs.hpc.slurmoperator.dev/status";
    const bool write = verb == "update" || verb == "patch";
    if (verb == "get")
      op["reads_get"]++;
    else if (verb == "list")
      op["reads_list"]++;
    else if (verb == "watch")
      op["watches"]++;
    else if (job_status && write)
      op["status_writes"]++;
    else if (job_res && write)
      op["finalizer_writes"]++;
    else if (res.rfind("events", 0) == 0)
      op["events"]++;
    else
      op["other"]++;
  }
  std::cerr << "operator requests by verb/resource during " << kJobs << " plain lives:";
  for (const auto& [k, v] : by_verb_resource) std::cerr << " [" << k << "]=" << v;
  std::cerr << "\n";
  EXPECT_EQ(counters.value("total", 0), kubectl_total + operator_total + others)
      << "counters and the request log disagree";
  auto per_job = [&](const std::string& k) { return op[k] / kJobs; };
  Metric("kube_requests_per_slurmjob_reads", per_job("reads_get") + per_job("reads_list"),
         "requests");
  Metric("kube_requests_per_slurmjob_reads_get", per_job("reads_get"), "requests");
  Metric("kube_requests_per_slurmjob_reads_list", per_job("reads_list"), "requests");
  Metric("kube_requests_per_slurmjob_watches", per_job("watches"), "requests");
  Metric("kube_requests_per_slurmjob_status_writes", per_job("status_writes"), "requests");
  Metric("kube_requests_per_slurmjob_finalizer_writes", per_job("finalizer_writes"), "requests");
  Metric("kube_requests_per_slurmjob_events", per_job("events"), "requests");
  Metric("kube_requests_per_slurmjob_other", per_job("other"), "requests");
  Metric("kube_requests_per_slurmjob_total", static_cast<double>(operator_total) / kJobs,
         "requests");
  Metric("kubectl_requests_per_slurmjob_total", static_cast<double>(kubectl_total) / kJobs,
         "requests");
}

// (b) Time from a dropped watch to the first status the operator writes for a
// SlurmJob created right after the drop; with the same measure without a
// drop as the baseline, and for a second drop in a row (backoff grows).
TEST_F(KubeFaults, MetricRecoveryFromADroppedWatch) {
  auto t = steady_clock::now();
  CreateJobFast("base-0");
  auto seen = WaitForStatus("base-0", seconds(30));
  ASSERT_TRUE(seen.has_value());
  Metric("create_to_first_status_baseline_ms",
         std::chrono::duration<double, std::milli>(*seen - t).count(), "ms");

  std::vector<std::string> names = {"base-0"};
  for (int round = 1; round <= 2; ++round) {
    ASSERT_TRUE(WaitUntil([] { return OperatorWatching("slurmjobs"); }, seconds(20)));
    const std::string name = "redrop-" + std::to_string(round);
    t = steady_clock::now();
    ASSERT_GE(DropWatches(), 1);
    CreateJobFast(name);
    seen = WaitForStatus(name, seconds(60));
    ASSERT_TRUE(seen.has_value()) << name << " never got a status after the drop";
    Metric(round == 1 ? "watch_drop_recovery_ms" : "watch_drop_recovery_second_drop_ms",
           std::chrono::duration<double, std::milli>(*seen - t).count(), "ms");
    names.push_back(name);
  }
  WaitCompleted(names);
  ExpectExactlyOnce(names);
  DeleteAndExpectNoStrayState(names);
}

// (c) The same measure for a 410: drop, create a SlurmJob, compact; the
// re-watch meets the 410 ERROR event and the operator relists.
TEST_F(KubeFaults, MetricRecoveryFromGone) {
  const auto t = steady_clock::now();
  ASSERT_GE(DropWatches(), 1);
  CreateJobFast("after-410");
  KubeAdmin("POST", "/__admin/compact");
  auto seen = WaitForStatus("after-410", seconds(60));
  ASSERT_TRUE(seen.has_value()) << "after-410 never got a status after the compaction";
  Metric("watch_410_recovery_ms", std::chrono::duration<double, std::milli>(*seen - t).count(),
         "ms");
  EXPECT_THAT(ReadFile(operator_->log_path()), ::testing::HasSubstr("relisting"));
  WaitCompleted({"after-410"});
  ExpectExactlyOnce({"after-410"});
  DeleteAndExpectNoStrayState({"after-410"});
}

// (d) #13 item 9: Slurm finishes a job while every status write fails and
// the watch comes back through a 410 relist. Once writes succeed again the
// status shows COMPLETED within a few seconds. (Before: the retry counted the
// failed write's look as recent, found the cached status unchanged, wrote
// nothing and waited the poll the tracker stretches to 2 min; a 503's
// Retry-After was stretched the same way; the relist brings no change of the
// object. Here only the job leaving the stand-in's live queue woke it: 4.4 s
// after writes worked again, against 0.9 s now.)
TEST_F(KubeFaults, StatusCatchesUpWithSlurmOnceWritesSucceedAgain) {
  const std::vector<std::string> names = ApplyJobs("catchup", 1, 0, "#!/bin/bash\nsleep 3\n");
  auto state = [] {
    return GetJob("catchup-0").value("status", json::object()).value("jobState", "");
  };
  ASSERT_TRUE(WaitUntil([&] { return state() == "RUNNING"; }, seconds(30)));
  json fault = AddFault({{"method", "PUT"}, {"path", kStatusPath}, {"status", 503}, {"count", -1}});
  ASSERT_GE(DropWatches(), 1);
  KubeAdmin("POST", "/__admin/compact");  // the re-watch meets a 410 and relists
  const std::string uid = GetJob("catchup-0")["metadata"].value("uid", "?");
  auto slurm_done = [&] {
    json ap = AgentAdmin("/__admin/jobs");
    for (const auto& j : ap.value("jobs", json::array())) {
      if (j.value("comment", "").find(uid) == std::string::npos) continue;
      const std::string st = j.value("state", j.value("job_state", ""));
      if (st == "COMPLETED") return true;
    }
    return false;
  };
  ASSERT_TRUE(WaitUntil(slurm_done, seconds(30)));
  const int hits_at_end = Hits(fault);
  // The operator saw it ended and failed to write that.
  ASSERT_TRUE(WaitUntil([&] { return Hits(fault) > hits_at_end; }, seconds(30)));
  std::this_thread::sleep_for(seconds(1));
  ASSERT_TRUE(WaitUntil([] { return OperatorWatching("slurmjobs"); }, seconds(20)));
  EXPECT_EQ(state(), "RUNNING") << "the fault did not hold the status write";
  KubeAdmin("POST", "/__admin/faults/clear");
  const auto reachable = steady_clock::now();
  ASSERT_TRUE(WaitUntil([&] { return state() == "COMPLETED"; }, seconds(30)))
      << "status still " << state() << " 30 s after writes succeed again";
  const double caught_up =
      std::chrono::duration<double, std::milli>(steady_clock::now() - reachable).count();
  Metric("status_catch_up_after_failed_writes_ms", caught_up, "ms");
  // ~0.9 s measured idle; before the fix ~4.4 s. 3.5 s leaves room for a loaded 2-core CI machine.
  EXPECT_LT(caught_up, 3500) << "status caught up with Slurm only after " << caught_up << " ms";
  ExpectExactlyOnce(names);
  DeleteAndExpectNoStrayState(names);
}

// (e) #13 item 9, the rest: the API server is unreachable (every request of
// the operator's is dropped with no answer) while Slurm finishes a job. Each
// failed status write doubles the key's backoff (5 ms * 2^n): after the 11th
// the next retry is 5.1 s away. The API server is back right then: status
// shows COMPLETED within about the probe interval (1 s), not 5 s later (it
// did, before the operator probed for the API server's return).
TEST_F(KubeFaults, StatusCatchesUpSoonAfterTheApiServerIsReachableAgain) {
  // The job stays in the live queue: its purge would wake the key.
  ASSERT_TRUE(AgentAdminPost("/__admin/sim", {{"min_job_age", 120}}));
  struct RestoreSim {
    ~RestoreSim() { AgentAdminPost("/__admin/sim", {{"min_job_age", 5}}); }
  } restore_sim;
  const std::vector<std::string> names = ApplyJobs("unreach", 1, 0, "#!/bin/bash\nsleep 2\n");
  auto state = [] {
    return GetJob("unreach-0").value("status", json::object()).value("jobState", "");
  };
  ASSERT_TRUE(WaitUntil([&] { return state() == "RUNNING"; }, seconds(30)));
  const std::string failed_write = "e2e/unreach-0: status write failed";
  const size_t failed_before = LogCount(failed_write);
  AddFault({{"user_agent", std::string("^") + kOperatorUserAgent}, {"drop", true}, {"count", -1}});
  DropWatches("");
  // Slurm ends the job; the operator's status writes get no answer, 11 of them.
  ASSERT_TRUE(WaitUntil([&] { return LogCount(failed_write) >= failed_before + 11; }, seconds(30),
                        milliseconds(20)))
      << LogCount(failed_write) - failed_before << " failed status writes";
  EXPECT_EQ(state(), "RUNNING") << "the fault did not hold the status write";
  KubeAdmin("POST", "/__admin/faults/clear");
  const auto reachable = steady_clock::now();
  ASSERT_TRUE(WaitUntil([&] { return state() == "COMPLETED"; }, seconds(30), milliseconds(20)))
      << "status still " << state() << " 30 s after the API server is reachable again";
  const double caught_up = MsSince(reachable);
  Metric("status_catch_up_after_unreachable_api_server_ms", caught_up, "ms");
  EXPECT_LT(caught_up, 3500) << "status caught up with Slurm only after " << caught_up << " ms";
  ExpectExactlyOnce(names);
  DeleteAndExpectNoStrayState(names);
}

}  // namespace
}  // namespace slurmop
