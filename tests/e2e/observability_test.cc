// File: tests/e2e/observability_test.cc
//
// What a platform team's tools see of the operator, end to end, with the real tools:
//  * a real Prometheus (Debian's package, started here on a loopback port) scrapes the operator's
//    --metrics-port every second and evaluates deploy/monitoring's alerts (the rules extracted from
//    the PrometheusRule, `for:` shortened to seconds); PromQL over its HTTP API must count the
//    submissions, see the leader, and fire SlurmClusterNotReady for an unreachable cluster; every
//    dashboard query must run;
//  * --log-format=json: every line is one JSON object; a SlurmJob's reconcile lines carry its
//    namespace, name, uid, cluster, reconcileID and, once submitted, its jobId;
//  * no secret in either log format: SlurmJobs run on a SlurmCluster whose credentials are a
//    service-account key in a Secret; neither the JSON nor the text log of those lives holds the
//    key, its id, an access token the stand-in minted, or the Kubernetes bearer token.

#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
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

using std::chrono::seconds;
using testing::CommandResult;
using ::testing::HasSubstr;
using testing::ReadFile;
using testing::RunCommand;
using testing::Subprocess;
using testing::WaitUntil;

constexpr char kPython[] = "/usr/bin/python3";
constexpr char kNs[] = "obs";

std::string Base64(const std::string& in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += t[(v >> s) & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += std::string{t[(v >> 18) & 63], t[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += std::string{t[(v >> 18) & 63], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
  }
  return out;
}

class Observability : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir("slurmop-obs-"));
    const std::string src = SLURMOP_SOURCE_DIR;
    stand_ins_ = new testing::StandIns(*dir_);
    ASSERT_TRUE(stand_ins_->WaitUntilServing());
    ap_port_ = stand_ins_->agent_platform_port();
    ASSERT_TRUE(stand_ins_->kubectl().InstallCrds());
    ASSERT_TRUE(stand_ins_->kubectl().CreateNamespace(kNs));

    // The service-account key, with its token endpoint on the stand-in.
    nlohmann::json key = nlohmann::json::parse(
        ReadFile(src + "/tests/agentplatform/testdata/test_service_account.json"));
    key["token_uri"] = "http://127.0.0.1:" + std::to_string(ap_port_) + "/token";
    *key_ = key;
    CommandResult secret =
        Kubectl({"apply", "-f", "-"},
                "apiVersion: v1\nkind: Secret\nmetadata: {name: sa-key, namespace: obs}\n"
                "data:\n  credentials.json: " +
                    Base64(key.dump()) + "\n");
    ASSERT_EQ(secret.exit_code, 0) << secret.err;
    std::string keyed = testing::LocalSlurmClusterManifest(kNs, ap_port_, "v0.0.42");
    keyed.replace(keyed.find("name: local"), 11, "name: keyed");
    keyed += "  credentialsSecretRef: {name: sa-key}\n";
    ASSERT_EQ(Kubectl({"apply", "-f", "-"}, keyed).exit_code, 0);
    // A cluster whose endpoint nothing listens on: Ready=False (Unreachable).
    down_port_ = testing::FreeLoopbackPort();
    std::string down = testing::LocalSlurmClusterManifest(kNs, down_port_, "v0.0.42");
    down.replace(down.find("name: local"), 11, "name: down");
    ASSERT_EQ(Kubectl({"apply", "-f", "-"}, down).exit_code, 0);
  }

  static void TearDownTestSuite() {
    delete prometheus_;
    delete operator_;
    delete stand_ins_;
    testing::RemoveDirUnlessKept(*dir_,
                                 ::testing::UnitTest::GetInstance()->failed_test_count() > 0);
    delete dir_;
  }

  static CommandResult Kubectl(std::vector<std::string> args, const std::string& stdin_data = "") {
    return stand_ins_->kubectl().Run(std::move(args), stdin_data);
  }

  static void StartOperator(const std::string& log_format, const std::string& log,
                            int verbosity = 0) {
    metrics_port_ = testing::FreeLoopbackPort();
    operator_ = new Subprocess(
        {SLURMOP_OPERATOR_BINARY, "--kubeconfig=" + *dir_ + "/kubeconfig", "--health-port=0",
         "--min-poll-seconds=0.5", "--submit-settle-seconds=10",
         "--metrics-port=" + std::to_string(metrics_port_), "--log-format=" + log_format,
         "--verbosity=" + std::to_string(verbosity), "--leader-elect",
         "--leader-elect-namespace=obs", "--leader-elect-identity=obs-1",
         "--leader-elect-lease-duration-seconds=3", "--leader-elect-renew-deadline-seconds=2",
         "--leader-elect-retry-period-seconds=0.5",
         // The stand-in, and the down cluster's port: allowed, so it is unreachable, not refused.
         "--allow-operator-identity-for-namespaced-clusters",
         testing::AllowStandInFlag(ap_port_) + ",127.0.0.1:" + std::to_string(down_port_)},
        *dir_ + "/" + log, testing::OperatorEnv(ap_port_, *dir_));
  }

  static void StopOperator() {
    if (!operator_) return;
    int status = operator_->Stop(SIGTERM, seconds(10));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "operator exit " << status;
    delete operator_;
    operator_ = nullptr;
  }

  // Applies SlurmJob `name` on `cluster` and, unless `wait` is false, waits for COMPLETED.
  static void RunJob(const std::string& name, const std::string& cluster, bool wait = true) {
    CommandResult r = Kubectl(
        {"apply", "-f", "-"},
        "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\nmetadata: {name: " + name +
            ", namespace: obs}\nspec:\n  clusterRef: {name: " + cluster +
            "}\n  timeLimitMinutes: 5\n  script: |\n    #!/bin/bash\n    echo " + name + "\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    if (!wait) return;
    CommandResult w = Kubectl({"wait", "-n", kNs, "sj/" + name,
                               "--for=jsonpath={.status.jobState}=COMPLETED", "--timeout=60s"});
    ASSERT_EQ(w.exit_code, 0) << w.out << w.err << ReadFile(operator_->log_path());
  }

  static nlohmann::json HttpJson(const std::string& url) {
    static auto transport = http::CpprestTransport::Create({});
    http::Request req;
    req.url = url;
    absl::StatusOr<http::Response> r = (*transport)->Send(req);
    if (!r.ok()) return nlohmann::json::object();
    nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
    return j.is_object() ? j : nlohmann::json::object();  // never null: callers use value()
  }

  // Every secret value the run used: the key, its id, the minted access tokens, the Kubernetes
  // bearer token.
  static std::vector<std::string> Secrets() {
    std::vector<std::string> out = {key_->value("private_key_id", "")};
    std::stringstream pem(key_->value("private_key", ""));
    for (std::string line; std::getline(pem, line);) {
      if (line.size() >= 40 && line.find("-----") == std::string::npos) out.push_back(line);
    }
    nlohmann::json issued =
        HttpJson("http://127.0.0.1:" + std::to_string(ap_port_) + "/__admin/issued_tokens");
    EXPECT_TRUE(issued.is_object()) << "the stand-in lists its tokens";
    int tokens = 0;
    for (const auto& t : issued.value("tokens", nlohmann::json::array())) {
      out.push_back(t.value("token", ""));
      ++tokens;
    }
    EXPECT_GE(tokens, 2) << "a service-account token and a metadata-server token were minted";
    CommandResult kube =
        RunCommand({"kubectl", "config", "view", "--raw", "-o", "jsonpath={.users[0].user.token}"},
                   {{"KUBECONFIG", *dir_ + "/kubeconfig"}});
    EXPECT_FALSE(kube.out.empty());
    out.push_back(kube.out);
    return out;
  }

  static void ExpectNoSecretIn(const std::string& log_path) {
    const std::string log = ReadFile(log_path);
    ASSERT_FALSE(log.empty());
    for (const std::string& secret : Secrets()) {
      ASSERT_GE(secret.size(), 16u);
      EXPECT_EQ(log.find(secret), std::string::npos)
          << log_path << " holds a secret starting " << secret.substr(0, 6);
    }
  }

  static std::string* dir_;
  static nlohmann::json* key_;
  static testing::StandIns* stand_ins_;
  static Subprocess* operator_;
  static Subprocess* prometheus_;
  static int ap_port_;
  static int metrics_port_;
  static int down_port_;
};

std::string* Observability::dir_ = nullptr;
nlohmann::json* Observability::key_ = new nlohmann::json();
testing::StandIns* Observability::stand_ins_ = nullptr;
Subprocess* Observability::operator_ = nullptr;
Subprocess* Observability::prometheus_ = nullptr;
int Observability::ap_port_ = 0;
int Observability::metrics_port_ = 0;
int Observability::down_port_ = 0;

// Starts Prometheus scraping the operator every second with the shipped alerts.
int StartPrometheus(const std::string& dir, int metrics_port, Subprocess** out) {
  const std::string src = SLURMOP_SOURCE_DIR;
  CommandResult rules = RunCommand(
      {kPython, src + "/tests/monitoring/extract_rules.py",
       src + "/deploy/monitoring/prometheusrule.yaml", dir + "/rules.yaml", "--for-override=2s"},
      {});
  EXPECT_EQ(rules.exit_code, 0) << rules.err;
  std::ofstream(dir + "/prometheus.yml")
      << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
      << "rule_files: [" << dir << "/rules.yaml]\n"
      << "scrape_configs:\n  - job_name: slurmjob-operator\n    static_configs:\n"
      << "      - targets: ['127.0.0.1:" << metrics_port << "']\n";
  const int port = testing::FreeLoopbackPort();
  *out = new Subprocess({"prometheus", "--config.file=" + dir + "/prometheus.yml",
                         "--storage.tsdb.path=" + dir + "/tsdb",
                         "--web.listen-address=127.0.0.1:" + std::to_string(port)},
                        dir + "/prometheus.log");
  return port;
}

TEST_F(Observability, PrometheusJsonLogsAndNoSecretInThem) {
  StartOperator("json", "operator-json.log", /*verbosity=*/1);  // each reconcile's decisions too
  int prom_port = StartPrometheus(*dir_, metrics_port_, &prometheus_);
  const std::string api = "http://127.0.0.1:" + std::to_string(prom_port) + "/api/v1/";
  ASSERT_TRUE(
      WaitUntil([&] { return HttpJson(api + "query?query=up").value("status", "") == "success"; },
                seconds(30)))
      << ReadFile(*dir_ + "/prometheus.log");

  for (const char* name : {"j1", "j2", "j3"}) RunJob(name, "keyed");
  RunJob("stuck", "down", /*wait=*/false);

  // PromQL over the HTTP API: (query, what the answer must be), each printed with its answer.
  auto query = [&](const std::string& q) {
    std::string encoded;
    for (unsigned char c : q) {
      if (isalnum(c)) {
        encoded += c;
      } else {
        char buf[4];
        std::snprintf(buf, sizeof(buf), "%%%02X", c);
        encoded += buf;
      }
    }
    return HttpJson(api + "query?query=" + encoded);
  };
  auto scalar = [&](const std::string& q) -> double {
    nlohmann::json r = query(q);
    const nlohmann::json result =
        r.value("data", nlohmann::json::object()).value("result", nlohmann::json::array());
    if (!result.is_array() || result.empty()) return -1;
    return std::stod(result[0]["value"][1].get<std::string>());
  };
  auto expect_value = [&](const std::string& q, double want) {
    double got = -1;
    EXPECT_TRUE(WaitUntil([&] { return (got = scalar(q)) == want; }, seconds(30)))
        << q << " = " << got << ", want " << want;
    std::cout << "PROMQL " << q << " => " << got << "\n";
  };
  expect_value(
      "sum(slurmjob_operator_slurm_api_requests_total{path=~\".*/job/submit\",code=\"200\"})", 3);
  expect_value("slurmjob_operator_slurmjobs{phase=\"Succeeded\"}", 3);
  expect_value("max(leader_election_master_status{name=\"slurmjob-operator\"})", 1);
  expect_value("slurmjob_operator_slurmcluster_ready{name=\"down\"}", 0);
  expect_value("slurmjob_operator_slurmcluster_ready{name=\"keyed\"}", 1);
  expect_value("sum(workqueue_adds_total{name=\"slurmjob\"}) > bool 0", 1);
  expect_value(
      "count(ALERTS{alertname=\"SlurmClusterNotReady\",alertstate=\"firing\",name=\"down\"})", 1);
  std::string firing;
  for (const auto& a : query("ALERTS{alertstate=\"firing\"}")
                           .value("data", nlohmann::json::object())
                           .value("result", nlohmann::json::array())) {
    firing += a["metric"].value("alertname", "") + "/" + a["metric"].value("name", "") + " ";
  }
  std::cout << "PROMQL ALERTS{alertstate=\"firing\"} => " << firing << "\n";
  EXPECT_THAT(firing, HasSubstr("SlurmClusterNotReady/down "));
  EXPECT_THAT(firing, ::testing::Not(HasSubstr("SlurmClusterNotReady/keyed")));
  EXPECT_THAT(firing, ::testing::Not(HasSubstr("NoLeader")));
  EXPECT_THAT(firing, ::testing::Not(HasSubstr("TokenRefreshFailing")));

  // Every dashboard query is valid PromQL over what the operator serves.
  nlohmann::json dash = nlohmann::json::parse(ReadFile(std::string(SLURMOP_SOURCE_DIR) +
                                                       "/deploy/monitoring/dashboards/"
                                                       "slurmjob-operator.json"));
  int queries = 0;
  for (const auto& panel : dash["panels"]) {
    for (const auto& target : panel.value("targets", nlohmann::json::array())) {
      std::string expr = target["expr"];
      for (size_t at; (at = expr.find("$job")) != std::string::npos;) expr.replace(at, 4, ".*");
      nlohmann::json r = query(expr);
      EXPECT_EQ(r.value("status", ""), "success") << expr << ": " << r.dump();
      ++queries;
    }
  }
  EXPECT_GT(queries, 20);

  // JSON logs: one object per line; j1's reconcile lines carry its identity and, after the
  // submit, its jobId.
  StopOperator();
  std::ifstream log(*dir_ + "/operator-json.log");
  int lines = 0, j1_lines = 0, with_job_id = 0;
  std::set<std::string> reconcile_ids;
  for (std::string line; std::getline(log, line);) {
    ++lines;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << "not one JSON object: " << line;
    ASSERT_TRUE(j.contains("time") && j.contains("severity") && j.contains("message")) << line;
    if (j.value("name", "") != "j1" || j.value("namespace", "") != "obs") continue;
    ++j1_lines;
    EXPECT_EQ(j.value("cluster", ""), "keyed") << line;
    EXPECT_FALSE(j.value("uid", "").empty()) << line;
    EXPECT_EQ(j.value("controller", ""), "slurmjob") << line;
    reconcile_ids.insert(j.value("reconcileID", ""));
    if (!j.value("jobId", "").empty()) ++with_job_id;
    if (j1_lines <= 8) std::cout << "JSONLOG " << line << "\n";
  }
  EXPECT_GT(lines, 10);
  EXPECT_GE(j1_lines, 2);
  EXPECT_GE(with_job_id, 1) << "the submit line names the jobId";
  EXPECT_EQ(reconcile_ids.count(""), 0u);
  ExpectNoSecretIn(*dir_ + "/operator-json.log");

  // The default text format: glog lines, and no secret either (a new process: new exchanges).
  StartOperator("text", "operator-text.log");
  RunJob("j4", "keyed");
  StopOperator();
  const std::string text = ReadFile(*dir_ + "/operator-text.log");
  EXPECT_THAT(text, HasSubstr("submitted as Slurm job"));
  EXPECT_EQ(text.find("{\"time\""), std::string::npos) << "text is not JSON";
  ExpectNoSecretIn(*dir_ + "/operator-text.log");
}

}  // namespace
}  // namespace slurmop
