// File: tests/e2e/tenant_identity_test.cc
//
// Issue 11, whose identity: the operator binary against the stand-ins, driven with the real
// kubectl, started as deploy/ starts it (no --allow-operator-identity-for-namespaced-clusters).
//  * A namespaced SlurmCluster without credentialsSecretRef gets no call at all, and the
//    operator's token (the metadata server's, its ADC) never reaches that cluster; one with a
//    tenant Secret is called with the tenant's identity only.
//  * A ClusterSlurmCluster serves the namespaces its namespaceSelector matches and refuses the
//    others with a condition; relabelling a namespace lets its SlurmJob through.
//  * spec.environment[].valueFrom.secretKeyRef reaches the Slurm job's environment but not the
//    SlurmJob's status, its Events or the operator's log.
//  * A ClusterSlurmCluster's Secret (the installer's, in the operator's namespace) is trusted like
//    the operator's own credentials; the same file in a tenant's Secret is restricted.
//  * RBAC that matches the code: every request the operator makes is recorded by the stand-in
//    API server (--access-log) and tests/e2e/rbac_check.py compares them with deploy/rbac*.yaml.
//
// Each test starts its own servers (ctest runs each test in its own process).
// SLURMOP_OPERATOR_BINARY in the environment runs another operator build (e.g. main's before
// this change, to see these tests fail there; flags it does not know are then ignored).

#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
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

using json = nlohmann::json;
using std::chrono::seconds;
using testing::CommandResult;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFile;
using testing::ReadPort;
using testing::RunCommand;
using testing::Subprocess;
using testing::WaitUntil;

constexpr char kPython[] = "/usr/bin/python3";
constexpr char kOperatorNs[] = "slurmjob-operator-system";
constexpr char kTenantCluster[] = "demo-project/us-central1/tenant-cluster";
constexpr char kDemoCluster[] = "demo-project/us-central1/demo-cluster";
constexpr char kApiKey[] = "wandb-key-4f1d9c0e7b2a-never-logged";

class TenantIdentity : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("slurmop-tenant-");
    src_ = SLURMOP_SOURCE_DIR;
    StartServers();
    ASSERT_FALSE(HasFatalFailure());
    SetUpObjects();
    ASSERT_FALSE(HasFatalFailure());
    StartOperator();
  }

  void TearDown() override {
    if (operator_) operator_->Stop(SIGTERM, seconds(10));
    if (HasFailure()) {
      std::cerr << "---- operator log (tail) ----\n"
                << testing::LogTail(dir_ + "/operator.log", 8000) << "\n"
                << "logs kept in " << dir_ << "\n";
    } else {
      operator_.reset();
      stand_ins_.reset();
      std::filesystem::remove_all(dir_);
    }
  }

  void StartServers() {
    stand_ins_ = std::make_unique<testing::StandIns>(
        dir_,
        testing::StandInOptions{
            .kube_apiserver_flags = {"--access-log", dir_ + "/access.log"},
            .agent_platform_flags = {
                "--cluster", kDemoCluster, "--cluster", kTenantCluster, "--sa-public-key",
                src_ + "/tests/agentplatform/testdata/test_service_account.json", "--verbose"}});
    ASSERT_TRUE(stand_ins_->WaitUntilServing());
    kube_port_ = stand_ins_->kube_port();
    ap_port_ = stand_ins_->agent_platform_port();
  }

  // A Google service-account key file whose token endpoint is the stand-in's.
  std::string ServiceAccountJson() {
    json sa =
        json::parse(ReadFile(src_ + "/tests/agentplatform/testdata/test_service_account.json"));
    sa["token_uri"] = "http://127.0.0.1:" + std::to_string(ap_port_) + "/token";
    return sa.dump();
  }

  std::string Endpoint() { return "http://127.0.0.1:" + std::to_string(ap_port_); }

  void Apply(const std::string& yaml) {
    CommandResult r = Kubectl({"apply", "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << yaml << r.out << r.err;
  }

  void CreateSecret(const std::string& ns, const std::string& name, const std::string& key,
                    const std::string& value) {
    std::ofstream(dir_ + "/secret-value") << value;
    CommandResult r = Kubectl({"create", "secret", "generic", "-n", ns, name,
                               "--from-file=" + key + "=" + dir_ + "/secret-value"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  std::string ClusterSpec(const std::string& cluster_id) {
    return "  projectId: demo-project\n  region: us-central1\n  clusterId: " + cluster_id +
           "\n  slurmApiVersion: v0.0.42\n  defaultPartition: debug\n  endpoint: " + Endpoint() +
           "\n";
  }

  void SetUpObjects() {
    ASSERT_TRUE(stand_ins_->kubectl().InstallCrds());
    for (const char* ns : {kOperatorNs, "team-a", "team-b"}) {
      ASSERT_TRUE(stand_ins_->kubectl().CreateNamespace(ns));
    }
    ASSERT_EQ(Kubectl({"label", "namespace", "team-a", "team=a"}).exit_code, 0);
    ASSERT_EQ(Kubectl({"label", "namespace", "team-b", "team=b"}).exit_code, 0);
    CreateSecret("team-a", "tenant-creds", "credentials.json", ServiceAccountJson());
    CreateSecret(kOperatorNs, "installer-creds", "credentials.json", ServiceAccountJson());
    CreateSecret("team-a", "wandb", "api-key", kApiKey);
    // A namespaced SlurmCluster without credentials, one with the tenant's, and two
    // ClusterSlurmClusters: one for team=a with the operator's identity, one for every namespace
    // with the installer's Secret.
    Apply(
        "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmCluster\n"
        "metadata: {name: no-creds, namespace: team-a}\nspec:\n" +
        ClusterSpec("tenant-cluster"));
    Apply(
        "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmCluster\n"
        "metadata: {name: with-creds, namespace: team-a}\nspec:\n" +
        ClusterSpec("demo-cluster") + "  credentialsSecretRef: {name: tenant-creds}\n");
    Apply(
        "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: ClusterSlurmCluster\n"
        "metadata: {name: shared}\nspec:\n" +
        ClusterSpec("demo-cluster") + "  namespaceSelector:\n    matchLabels: {team: a}\n");
    Apply(
        "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: ClusterSlurmCluster\n"
        "metadata: {name: shared-sa}\nspec:\n" +
        ClusterSpec("demo-cluster") +
        "  namespaceSelector: {}\n  credentialsSecretRef: {name: installer-creds}\n");
  }

  void StartOperator(const std::vector<std::string>& extra = {}) {
    std::filesystem::remove(dir_ + "/health.port");
    const char* other = std::getenv("SLURMOP_OPERATOR_BINARY");
    std::vector<std::string> argv = {
        other != nullptr && *other != '\0' ? other : SLURMOP_OPERATOR_BINARY,
        "--kubeconfig=" + dir_ + "/kubeconfig",
        "--health-port=0",
        "--health-port-file=" + dir_ + "/health.port",
        "--min-poll-seconds=0.5",
        "--submit-settle-seconds=5",
        "--leader-elect",
        "--leader-elect-retry-period-seconds=1",
        "--operator-namespace=" + std::string(kOperatorNs),
        testing::AllowStandInFlag(ap_port_)};
    if (other != nullptr && *other != '\0') {
      argv.push_back(
          "--undefok=operator_namespace,allow_operator_identity_for_namespaced_clusters");
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    operator_ = std::make_unique<Subprocess>(argv, dir_ + "/operator.log",
                                             testing::OperatorEnv(ap_port_, dir_));
    ASSERT_GT(ReadPort(dir_ + "/health.port"), 0) << ReadFile(dir_ + "/operator.log");
  }

  CommandResult Kubectl(std::vector<std::string> args, const std::string& stdin_data = "",
                        std::chrono::milliseconds timeout = seconds(90)) {
    return stand_ins_->kubectl().Run(std::move(args), stdin_data, timeout);
  }

  std::string Get(const std::string& ns, const std::string& what, const std::string& jsonpath) {
    CommandResult r = Kubectl({"get", "-n", ns, what, "-o", "jsonpath=" + jsonpath});
    return r.exit_code == 0 ? r.out : "";
  }

  // Waits for condition `type` of `what` (e.g. "sj/x") to have `reason`.
  bool WaitReason(const std::string& ns, const std::string& what, const std::string& type,
                  const std::string& reason, int timeout_seconds = 60) {
    std::vector<std::string> args = {
        "wait", what,
        "--for=jsonpath={.status.conditions[?(@.type==\"" + type + "\")].reason}=" + reason,
        "--timeout=" + std::to_string(timeout_seconds) + "s"};
    std::vector<std::string> get = {"get", what, "-o", "yaml"};
    if (!ns.empty()) {  // "": a cluster-scoped object
      args.insert(args.end(), {"-n", ns});
      get.insert(get.end(), {"-n", ns});
    }
    CommandResult r = Kubectl(args);
    if (r.exit_code != 0) ADD_FAILURE() << what << ": " << r.err << "\n" << Kubectl(get).out;
    return r.exit_code == 0;
  }

  // Waits up to 60 s for SlurmJob `what` ("sj/name") of `ns` to show status.jobState `state`.
  CommandResult WaitJobState(const std::string& ns, const std::string& what,
                             const std::string& state) {
    return Kubectl(
        {"wait", "-n", ns, what, "--for=jsonpath={.status.jobState}=" + state, "--timeout=60s"});
  }

  void ApplyJob(const std::string& ns, const std::string& name, const std::string& cluster_ref,
                const std::string& extra_spec = "", const std::string& script = "echo hi") {
    Apply("apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\nmetadata: {name: " + name +
          ", namespace: " + ns + "}\nspec:\n  clusterRef: " + cluster_ref +
          "\n  timeLimitMinutes: 5\n" + extra_spec +
          (extra_spec.find("scriptFrom") == std::string::npos
               ? "  script: |\n    #!/bin/bash\n    " + script + "\n"
               : ""));
  }

  http::Response Send(bool kube, const std::string& method, const std::string& path,
                      const std::string& body = "") {
    static http::Transport* ap = http::CpprestTransport::Create({})->release();
    http::Transport* transport = ap;
    if (kube) {
      if (!kube_http_) {
        http::CpprestTransportOptions tls;
        tls.tls.ca_file = dir_ + "/tls/apiserver.crt";
        kube_http_ = std::move(*http::CpprestTransport::Create(tls));
      }
      transport = kube_http_.get();
    }
    http::Request req;
    req.method = method;
    req.url = (kube ? "https://127.0.0.1:" + std::to_string(kube_port_)
                    : "http://127.0.0.1:" + std::to_string(ap_port_)) +
              path;
    if (!body.empty()) {
      req.headers["Content-Type"] = "application/json";
      req.body = body;
    }
    absl::StatusOr<http::Response> r = transport->Send(req);
    return r.ok() ? *r : http::Response{};
  }

  // Until the faults are cleared, the stand-in API server answers every PATCH whose path matches
  // `path_regex` as an admission webhook refusing it with `why` (403, nothing done).
  void RefusePatches(const std::string& path_regex, const std::string& why) {
    const json refuse = {
        {"method", "PATCH"},
        {"path", path_regex},
        {"status", 403},
        {"reason", "Forbidden"},
        {"message", "admission webhook \"policy.example.com\" denied the request: " + why},
        {"count", -1}};
    ASSERT_EQ(Send(true, "POST", "/__admin/faults", refuse.dump()).status, 200);
  }

  // Clears RefusePatches' faults: SlurmJob `name` of team-a then completes, submitted once.
  void LiftRefusalsAndExpectOneRun(const std::string& name) {
    ASSERT_EQ(Send(true, "POST", "/__admin/faults/clear").status, 200);
    CommandResult done = WaitJobState("team-a", "sj/" + name, "COMPLETED");
    ASSERT_EQ(done.exit_code, 0) << done.err;
    EXPECT_EQ(SlurmJobsOf("team-a", name).size(), 1u);
  }

  json AgentAdmin(const std::string& path) {
    return json::parse(Send(false, "GET", path).body, nullptr, false);
  }

  // Every "cluster kind principal" key of the bearer tokens that reached the stand-in.
  std::vector<std::string> TokensThatReached(const std::string& cluster) {
    std::vector<std::string> out;
    const json calls = AgentAdmin("/__admin/calls");
    const json by_token = calls.value("by_cluster_token", json::object());
    for (const auto& [key, n] : by_token.items()) {
      if (key.rfind(cluster + " ", 0) == 0) out.push_back(key);
    }
    return out;
  }

  // The simulator's jobs whose comment is the tag of SlurmJob ns/name's run 1.
  std::vector<json> SlurmJobsOf(const std::string& ns, const std::string& name) {
    const std::string uid = Get(ns, "sj/" + name, "{.metadata.uid}");
    std::vector<json> out;
    json jobs = AgentAdmin("/__admin/jobs");
    const json& list = jobs.is_object() && jobs.contains("jobs") ? jobs["jobs"] : jobs;
    if (!list.is_array() || uid.empty()) return out;
    for (const auto& j : list) {
      if (testing::IsRunTag(j.value("comment", ""), ns, uid, 1)) out.push_back(j);
    }
    return out;
  }

  std::string EventsOf(const std::string& ns, const std::string& name) {
    return Kubectl({"get", "events", "-n", ns, "--field-selector", "involvedObject.name=" + name,
                    "-o", "json"})
        .out;
  }

  std::string dir_, src_;
  int kube_port_ = 0, ap_port_ = 0;
  std::unique_ptr<testing::StandIns> stand_ins_;
  std::unique_ptr<Subprocess> operator_;
  std::unique_ptr<http::Transport> kube_http_;
};

TEST_F(TenantIdentity, NamespacedClusterWithoutCredentialsNeverGetsTheOperatorsToken) {
  // The probe runs as soon as the SlurmCluster exists; a SlurmJob would call it too.
  ApplyJob("team-a", "borrow", "{name: no-creds}");
  EXPECT_TRUE(WaitReason("team-a", "scl/no-creds", "Ready", "CredentialsRequired"));
  EXPECT_TRUE(WaitReason("team-a", "sj/borrow", "Stalled", "CredentialsRequired"));
  std::this_thread::sleep_for(seconds(2));  // anything still in flight lands
  EXPECT_THAT(TokensThatReached(kTenantCluster), ::testing::IsEmpty())
      << "nothing at all, least of all the operator's token, may reach the SlurmCluster without "
         "credentials";
  EXPECT_THAT(Get("team-a", "scl/no-creds", "{.status.conditions[?(@.type==\"Ready\")].message}"),
              HasSubstr("credentialsSecretRef"));
  EXPECT_THAT(EventsOf("team-a", "borrow"), HasSubstr("CredentialsRequired"));
  EXPECT_THAT(EventsOf("team-a", "no-creds"), HasSubstr("CredentialsRequired"));

  // The tenant's own credentials work, and carry the tenant's identity, not the operator's.
  ASSERT_TRUE(WaitReason("team-a", "scl/with-creds", "Ready", "Reachable"));
  ApplyJob("team-a", "own-creds", "{name: with-creds}");
  CommandResult done = WaitJobState("team-a", "sj/own-creds", "COMPLETED");
  ASSERT_EQ(done.exit_code, 0) << done.err;
  std::vector<json> jobs = SlurmJobsOf("team-a", "own-creds");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].value("principal", ""),
            json::parse(ServiceAccountJson()).value("client_email", ""));
  for (const std::string& key : TokensThatReached(kDemoCluster)) {
    // The operator's ADC is the metadata server's token; only the ClusterSlurmClusters may carry
    // it to demo-cluster (their probes).
    if (key.find(" metadata ") != std::string::npos) continue;
    EXPECT_THAT(key, HasSubstr(":jwt-bearer operator-test@")) << key;  // the tenant's key
  }
}

TEST_F(TenantIdentity, ClusterSlurmClusterServesMatchingNamespacesOnly) {
  CommandResult ready = Kubectl({"wait", "cscl/shared", "--for=condition=Ready", "--timeout=60s"});
  ASSERT_EQ(ready.exit_code, 0) << ready.err;
  CommandResult table = Kubectl({"get", "clusterslurmclusters"});
  EXPECT_THAT(table.out, HasSubstr("READY"));
  EXPECT_THAT(table.out, HasSubstr("shared-sa"));
  CommandResult explain = Kubectl({"explain", "clusterslurmcluster.spec.namespaceSelector"});
  EXPECT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_THAT(explain.out, HasSubstr("namespaces"));

  const std::string ref = "{kind: ClusterSlurmCluster, name: shared}";
  ApplyJob("team-a", "allowed", ref);
  ApplyJob("team-b", "refused", ref);
  CommandResult done = WaitJobState("team-a", "sj/allowed", "COMPLETED");
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(SlurmJobsOf("team-a", "allowed").size(), 1u);
  ASSERT_TRUE(WaitReason("team-b", "sj/refused", "Stalled", "NamespaceNotAllowed"));
  EXPECT_THAT(Get("team-b", "sj/refused", "{.status.conditions[?(@.type==\"Stalled\")].message}"),
              HasSubstr("ClusterSlurmCluster \"shared\" does not allow SlurmJobs of namespace "
                        "\"team-b\""));
  EXPECT_THAT(EventsOf("team-b", "refused"), HasSubstr("NamespaceNotAllowed"));
  EXPECT_TRUE(SlurmJobsOf("team-b", "refused").empty());

  // The installer allows team-b by its label: the refused SlurmJob goes through.
  ASSERT_EQ(Kubectl({"label", "namespace", "team-b", "team=a", "--overwrite"}).exit_code, 0);
  CommandResult later = WaitJobState("team-b", "sj/refused", "COMPLETED");
  EXPECT_EQ(later.exit_code, 0) << later.err;
}

TEST_F(TenantIdentity, SecretKeyRefReachesTheJobButNotStatusEventsOrLog) {
  const std::string env =
      "  environment:\n    - {name: MODE, value: offline}\n"
      "    - name: API_KEY\n      valueFrom: {secretKeyRef: {name: wandb, key: api-key}}\n";
  ApplyJob("team-a", "with-secret", "{name: with-creds}", env);
  CommandResult done = WaitJobState("team-a", "sj/with-secret", "COMPLETED");
  ASSERT_EQ(done.exit_code, 0) << done.err;
  std::vector<json> jobs = SlurmJobsOf("team-a", "with-secret");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_THAT(jobs[0]["environment"].dump(), HasSubstr(kApiKey));
  EXPECT_THAT(jobs[0]["environment"].dump(), HasSubstr("offline"));

  // Exactly one of value and valueFrom (CEL in the CRD).
  CommandResult both =
      Kubectl({"apply", "-f", "-"},
              "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\n"
              "metadata: {name: both, namespace: team-a}\nspec:\n  clusterRef: {name: with-creds}\n"
              "  environment:\n    - name: API_KEY\n      value: x\n"
              "      valueFrom: {secretKeyRef: {name: wandb, key: api-key}}\n"
              "  script: \"#!/bin/bash\\n\"\n");
  EXPECT_NE(both.exit_code, 0);
  EXPECT_THAT(both.err, HasSubstr("exactly one of value and valueFrom"));

  // A missing key: a condition naming the Secret and the key, and nothing submitted.
  ApplyJob("team-a", "missing-key", "{name: with-creds}",
           "  environment:\n    - name: TOKEN\n"
           "      valueFrom: {secretKeyRef: {name: wandb, key: no-such-key}}\n");
  ASSERT_TRUE(WaitReason("team-a", "sj/missing-key", "Stalled", "SecretNotFound"));
  const std::string message =
      Get("team-a", "sj/missing-key", "{.status.conditions[?(@.type==\"Stalled\")].message}");
  EXPECT_THAT(message, HasSubstr("Secret \"wandb\""));
  EXPECT_THAT(message, HasSubstr("no-such-key"));
  EXPECT_TRUE(SlurmJobsOf("team-a", "missing-key").empty());

  const std::string everything = Kubectl({"get", "sj", "-A", "-o", "json"}).out +
                                 Kubectl({"get", "events", "-A", "-o", "json"}).out;
  EXPECT_THAT(everything, HasSubstr("with-secret"));
  EXPECT_THAT(everything, Not(HasSubstr(kApiKey)));
  operator_->Stop(SIGTERM, seconds(10));  // the log is complete
  EXPECT_THAT(ReadFile(dir_ + "/operator.log"), Not(HasSubstr(kApiKey)));
}

// A ClusterSlurmCluster's Secret lives in the operator's namespace, which only the installer
// writes: its credentials file is trusted like the operator's own ADC. The same file in a
// tenant's Secret is restricted (CredentialsTrust::kTenant): here its token_uri names a host the
// installer did not list ("localhost", not "127.0.0.1:<port>").
TEST_F(TenantIdentity, InstallerSecretIsTrustedLikeTheOperatorsOwnCredentialsTenantSecretIsNot) {
  json sa = json::parse(ServiceAccountJson());
  sa["token_uri"] = "http://localhost:" + std::to_string(ap_port_) + "/token";
  CreateSecret(kOperatorNs, "installer-unlisted", "credentials.json", sa.dump());
  CreateSecret("team-a", "tenant-unlisted", "credentials.json", sa.dump());
  Apply(
      "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: ClusterSlurmCluster\n"
      "metadata: {name: installer-unlisted}\nspec:\n" +
      ClusterSpec("demo-cluster") +
      "  namespaceSelector: {}\n  credentialsSecretRef: {name: installer-unlisted}\n");
  Apply(
      "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmCluster\n"
      "metadata: {name: tenant-unlisted, namespace: team-a}\nspec:\n" +
      ClusterSpec("demo-cluster") + "  credentialsSecretRef: {name: tenant-unlisted}\n");

  EXPECT_TRUE(WaitReason("", "cscl/installer-unlisted", "Ready", "Reachable"));
  EXPECT_TRUE(WaitReason("team-a", "scl/tenant-unlisted", "Ready", "CredentialsInvalid"));
  EXPECT_THAT(
      Get("team-a", "scl/tenant-unlisted", "{.status.conditions[?(@.type==\"Ready\")].message}"),
      HasSubstr("token_uri is refused"));
  ApplyJob("team-b", "via-installer", "{kind: ClusterSlurmCluster, name: installer-unlisted}");
  CommandResult done = WaitJobState("team-b", "sj/via-installer", "COMPLETED");
  EXPECT_EQ(done.exit_code, 0) << done.err;
}

// Review L3 (issue 13 item 8): deleting a namespace deletes everything in it at once. Without
// protection the SlurmCluster and the Secret of its credentials went first, the SlurmJob's cancel
// was blocked for good, the namespace stayed Terminating and the Slurm job ran on. Now both stay
// (the operator's finalizers) until no SlurmJob names the cluster.
TEST_F(TenantIdentity, DeletingANamespaceCancelsItsSlurmJobsAndCompletes) {
  ApplyJob("team-a", "long", "{name: with-creds}", "", "sleep 600");
  CommandResult running = WaitJobState("team-a", "sj/long", "RUNNING");
  ASSERT_EQ(running.exit_code, 0) << running.err;
  std::vector<json> jobs = SlurmJobsOf("team-a", "long");
  ASSERT_EQ(jobs.size(), 1u);
  const int64_t job_id = jobs[0].value("job_id", int64_t{0});
  EXPECT_TRUE(WaitUntil(
      [&] {
        return Get("team-a", "scl/with-creds", "{.metadata.finalizers}").find("cluster-in-use") !=
                   std::string::npos &&
               Get("team-a", "secret/tenant-creds", "{.metadata.finalizers}")
                       .find("credentials-in-use") != std::string::npos;
      },
      seconds(30)))
      << "the SlurmCluster and its Secret carry the operator's finalizers while a SlurmJob names "
         "the cluster";

  // Deleting the SlurmCluster alone: it stays (Terminating) while the SlurmJob names it, and takes
  // no new job.
  ASSERT_EQ(Kubectl({"delete", "scl/with-creds", "-n", "team-a", "--wait=false"}).exit_code, 0);
  ApplyJob("team-a", "late", "{name: with-creds}");
  EXPECT_TRUE(WaitReason("team-a", "sj/late", "Stalled", "ClusterBeingDeleted"));
  EXPECT_FALSE(Get("team-a", "scl/with-creds", "{.metadata.deletionTimestamp}").empty());
  EXPECT_EQ(SlurmJobsOf("team-a", "late").size(), 0u);

  ASSERT_EQ(Kubectl({"delete", "namespace", "team-a", "--wait=false"}).exit_code, 0);
  CommandResult gone = Kubectl({"wait", "--for=delete", "namespace/team-a", "--timeout=90s"});
  EXPECT_EQ(gone.exit_code, 0)
      << gone.err << "\n"
      << Kubectl({"get", "sj,scl,secret", "-n", "team-a", "-o", "yaml"}).out;
  std::string state;
  json all = AgentAdmin("/__admin/jobs");
  const json& list = all.is_object() && all.contains("jobs") ? all["jobs"] : all;
  for (const auto& j : list) {
    if (j.value("job_id", int64_t{0}) == job_id) state = j.value("state", j.value("job_state", ""));
  }
  EXPECT_EQ(state, "CANCELLED") << all.dump();
}

// An admission policy that refuses finalizers on Secrets: the operator cannot keep the
// SlurmCluster's credentials Secret, so its SlurmJob is not submitted. The SlurmJob itself says
// why (before, only the SlurmCluster's Event did), and is submitted once the policy is lifted.
TEST_F(TenantIdentity, ARefusedProtectionIsToldOnTheSlurmJobAndLiftingItSubmits) {
  RefusePatches("/namespaces/team-a/secrets/tenant-creds", "finalizers on Secrets are not allowed");
  ApplyJob("team-a", "guarded", "{name: with-creds}");
  ASSERT_TRUE(WaitReason("team-a", "sj/guarded", "Reconciling", "ClusterProtectionFailed"));
  EXPECT_THAT(
      Get("team-a", "sj/guarded", "{.status.conditions[?(@.type==\"Reconciling\")].message}"),
      HasSubstr("finalizers on Secrets are not allowed"));
  EXPECT_EQ(Get("team-a", "sj/guarded", "{.status.phase}"), "Pending");
  EXPECT_THAT(EventsOf("team-a", "guarded"), HasSubstr("ClusterProtectionFailed"));
  EXPECT_TRUE(SlurmJobsOf("team-a", "guarded").empty());

  LiftRefusalsAndExpectOneRun("guarded");
  EXPECT_THAT(Get("team-a", "secret/tenant-creds", "{.metadata.finalizers}"),
              HasSubstr("credentials-in-use"));
}

// An admission policy refusing the SlurmJob's finalizer: nothing is submitted (a job without the
// finalizer could be left running by a deletion), and a Warning Event quotes the refusal. Before,
// only the operator's log said why the SlurmJob never moved. Lifting the policy submits it.
TEST_F(TenantIdentity, AFinalizerRefusedByAPolicyIsAWarningEventAndNothingIsSubmitted) {
  RefusePatches("/namespaces/team-a/slurmjobs/refused$", "finalizers are not allowed on SlurmJobs");
  ApplyJob("team-a", "refused", "{kind: ClusterSlurmCluster, name: shared}");
  ASSERT_TRUE(WaitUntil(
      [&] { return EventsOf("team-a", "refused").find("WriteRefused") != std::string::npos; },
      seconds(30)))
      << EventsOf("team-a", "refused");
  EXPECT_THAT(EventsOf("team-a", "refused"), HasSubstr("finalizers are not allowed on SlurmJobs"));
  EXPECT_TRUE(SlurmJobsOf("team-a", "refused").empty());

  LiftRefusalsAndExpectOneRun("refused");
}

// Every path that talks to the Kubernetes API, then the recorded requests against deploy/.
TEST_F(TenantIdentity, RbacMatchesTheCode) {
  const std::string cm =
      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: scripts, namespace: "
      "team-a}\ndata:\n  run.sh: |\n    #!/bin/bash\n    sleep 120\n";
  Apply(cm);
  // scriptFrom (configmaps get), secretKeyRef and credentialsSecretRef (secrets get), a tenant
  // cluster, a cluster-scoped one (namespaces), status writes, finalizer patches.
  ApplyJob("team-a", "long", "{name: with-creds}",
           "  scriptFrom: {configMapKeyRef: {name: scripts, key: run.sh}}\n"
           "  environment:\n    - name: API_KEY\n"
           "      valueFrom: {secretKeyRef: {name: wandb, key: api-key}}\n");
  // A status write that conflicts once: the SlurmJob is read again (slurmjobs get). Set before
  // the SlurmJob exists: set after, it raced the job's end (a fresh-clone CI run on 2026-12-07
  // saw shared-job COMPLETED before the fault was in place, and no get).
  const json conflict = {
      {"method", "PUT"}, {"path", "/slurmjobs/shared-job/status"}, {"status", 409}, {"count", 1}};
  ASSERT_EQ(Send(true, "POST", "/__admin/faults", conflict.dump()).status, 200);
  ApplyJob("team-a", "shared-job", "{kind: ClusterSlurmCluster, name: shared}");
  // spec.ttlSecondsAfterFinished: the finished SlurmJob is deleted (slurmjobs delete).
  ApplyJob("team-a", "short-lived", "{kind: ClusterSlurmCluster, name: shared}",
           "  ttlSecondsAfterFinished: 0\n");
  // A SlurmCronJob (slurmcronjobs list/watch): its child SlurmJob (slurmjobs create) and its
  // status (slurmcronjobs/status update), within a minute.
  Apply(
      "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmCronJob\n"
      "metadata: {name: every-minute, namespace: team-a}\n"
      "spec:\n  schedule: \"* * * * *\"\n  jobTemplate:\n    spec:\n"
      "      clusterRef: {kind: ClusterSlurmCluster, name: shared}\n"
      "      script: \"#!/bin/bash\\ntrue\\n\"\n");
  CommandResult running = WaitJobState("team-a", "sj/long", "RUNNING");
  ASSERT_EQ(running.exit_code, 0) << running.err;
  CommandResult done = WaitJobState("team-a", "sj/shared-job", "COMPLETED");
  ASSERT_EQ(done.exit_code, 0) << done.err;
  ASSERT_TRUE(WaitReason("", "cscl/shared-sa", "Ready", "Reachable"));
  CommandResult expired =
      Kubectl({"wait", "--for=delete", "-n", "team-a", "sj/short-lived", "--timeout=60s"});
  ASSERT_EQ(expired.exit_code, 0) << expired.err;

  // The same Event twice (events.k8s.io create, then patch): a stalled job edited.
  auto stall_twice = [&](const std::string& name) {
    ApplyJob("team-a", name, "{name: nowhere}");
    ASSERT_TRUE(WaitReason("team-a", "sj/" + name, "Stalled", "ClusterNotFound"));
    ASSERT_EQ(Kubectl({"patch", "-n", "team-a", "sj", name, "--type=merge", "-p",
                       R"({"spec":{"partition":"other"}})"})
                  .exit_code,
              0);
    ASSERT_TRUE(WaitUntil(
        [&] {
          return Get("team-a", "sj/" + name,
                     "{.status.conditions[?(@.type==\"Stalled\")].observedGeneration}") == "2";
        },
        seconds(30)));
  };
  stall_twice("stalled-v1");
  // A server without events.k8s.io: the core v1 Events API (create, then patch).
  const json no_v1 = {{"path", "/apis/events.k8s.io/"}, {"status", 404}, {"count", -1}};
  ASSERT_EQ(Send(true, "POST", "/__admin/faults", no_v1.dump()).status, 200);
  stall_twice("stalled-core");
  std::this_thread::sleep_for(seconds(2));  // the Event writer is asynchronous

  ASSERT_TRUE(WaitUntil(
      [&] {
        return !Get("team-a", "slurmcronjob/every-minute", "{.status.lastScheduleTime}").empty();
      },
      seconds(75)));
  // Deletion: the cancel, then the finalizer's removal.
  CommandResult del = Kubectl({"delete", "-n", "team-a", "sj", "long", "--timeout=60s"});
  ASSERT_EQ(del.exit_code, 0) << del.err;
  operator_->Stop(SIGTERM, seconds(10));  // also releases the Lease (update)

  const std::vector<std::string> check = {kPython,
                                          src_ + "/tests/e2e/rbac_check.py",
                                          "--access-log",
                                          dir_ + "/access.log",
                                          "--user-agent",
                                          "slurmjob-operator",
                                          "--service-account",
                                          std::string(kOperatorNs) + "/slurmjob-operator",
                                          src_ + "/deploy/rbac.yaml",
                                          src_ + "/deploy/rbac-read-all-namespaces.yaml"};
  CommandResult verdict = RunCommand(check);
  EXPECT_EQ(verdict.exit_code, 0) << verdict.out << verdict.err;
  std::cout << verdict.out;

  // The submit-note key is on by default: its Secret was created in the operator's namespace
  // (immutable, 64 hex digits: 88 base64 characters), and first submits rode with the finalizer.
  const std::string key_secret = "secret/slurmjob-operator-submit-note-key";
  EXPECT_EQ(Get(kOperatorNs, key_secret, "{.immutable}"), "true");
  EXPECT_EQ(Get(kOperatorNs, key_secret, "{.data.key}").size(), 88u);
  EXPECT_THAT(Get("team-a", "sj/shared-job",
                  "{.metadata.annotations.hpc\\.slurmoperator\\.dev/submit-target}"),
              HasSubstr("\"hmac\""));
  // Without its Role, the create is not granted.
  std::ifstream rbac_in(src_ + "/deploy/rbac.yaml");
  std::string rbac((std::istreambuf_iterator<char>(rbac_in)), std::istreambuf_iterator<char>());
  const size_t role = rbac.find("# The submit-note key");
  ASSERT_NE(role, std::string::npos);
  std::ofstream(dir_ + "/rbac-without-note-key.yaml") << rbac.substr(0, role);
  std::vector<std::string> no_key_role = check;
  no_key_role[no_key_role.size() - 2] = dir_ + "/rbac-without-note-key.yaml";
  CommandResult no_create = RunCommand(no_key_role);
  EXPECT_NE(no_create.exit_code, 0);
  EXPECT_THAT(
      no_create.out,
      HasSubstr("missing grant: create core/secrets in namespace slurmjob-operator-system"));

  // The check can fail: without the Secrets grant, or with the grants of 4cb555d.
  std::vector<std::string> narrow = check;
  narrow.pop_back();  // no rbac-read-all-namespaces.yaml
  CommandResult missing = RunCommand(narrow);
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.out, HasSubstr("missing grant: get core/secrets in namespace team-a"));
  CommandResult old = RunCommand({"git", "-C", src_, "show", "4cb555d:deploy/rbac.yaml"});
  if (old.exit_code == 0) {
    std::ofstream(dir_ + "/old-rbac.yaml") << old.out;
    std::vector<std::string> at_start = narrow;
    at_start.back() = dir_ + "/old-rbac.yaml";
    CommandResult was = RunCommand(at_start);
    EXPECT_NE(was.exit_code, 0);
    EXPECT_THAT(was.out, HasSubstr("unused grant: list core/configmaps"));
    EXPECT_THAT(was.out,
                HasSubstr("unused grant: update hpc.slurmoperator.dev/slurmjobs/finalizers"));
    EXPECT_THAT(was.out,
                HasSubstr("missing grant: list hpc.slurmoperator.dev/clusterslurmclusters"));
  }
}

}  // namespace
}  // namespace slurmop
