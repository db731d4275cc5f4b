// File: tests/e2e/tenant_safety_test.cc
//
// What a namespace tenant can make the operator do, end to end: the real
// kubectl against the stand-in Kubernetes API server, the operator binary,
// the Agent Platform stand-in (the operator's own ADC comes from its
// metadata server), and in-process listeners that record every connection.
//  (a) A SlurmCluster whose endpoint is a loopback listener the installer did
//      NOT list: the listener sees no connection at all (no probe, no token),
//      the SlurmCluster and a SlurmJob on it say why and how to allow it.
//  (b) Secrets holding external_account credentials whose credential_source
//      is a canary file or a recording URL (and whose token_url is a listed,
//      recording listener): no listener receives anything, and the canary
//      never appears in status, Events, or the operator's log.
//  (c) A listed hostile endpoint answering a huge body (a 1 TiB
//      Content-Length, and an endless chunked body) and a deeply nested body:
//      the operator stays alive (health answers, another cluster keeps
//      running jobs) and each SlurmCluster's condition names the failure.
//  (d) Four SlurmClusters of another namespace whose listed endpoint accepts
//      connections and never answers, each with SlurmJobs: once they are
//      known to be silent they hold no shared worker for long, so another
//      tenant's SlurmJob is submitted, followed to its end and deleted
//      about as fast as with no silent cluster at all.
//
// Checking these fail on an older operator: SLURMOP_OPERATOR_BINARY=<path>
// runs another build, and SLURMOP_OLD_OPERATOR=1 leaves out the flags it
// does not know (--allowed-endpoint-hosts).

#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/http/test_http_server.h"
#include "tests/testing/manifests.h"
#include "tests/testing/stand_ins.h"
#include "tests/testing/subprocess.h"

namespace slurmop {
namespace {

using std::chrono::seconds;
using testing::CommandResult;
using testing::Connection;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFile;
using testing::ReadPort;
using testing::ReceivedRequest;
using testing::Subprocess;
using testing::TestHttpServer;

constexpr char kNs[] = "tenant";
constexpr char kCanary[] = "CANARY-c0ffee-4f1d-never-leaves";
constexpr char kUrlCanary[] = "QSCANARY-9b2e";

// Answers every request with an empty envelope; counts connections.
void AnswerOk(const ReceivedRequest&, Connection& c) {
  c.WriteResponse(200, {{"Content-Type", "application/json"}}, R"({"status":200,"body":"{}"})");
}

// The silent endpoint: reads the request, never answers.
void AnswerNever(const ReceivedRequest&, Connection& c) { c.WaitForPeerClose(); }

// The hostile endpoint: the cluster id in the path chooses the attack.
void AnswerHostile(const ReceivedRequest& r, Connection& c) {
  if (r.target.find("/modelDevelopmentClusters/huge-claim:") != std::string::npos) {
    c.Write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
            std::to_string(uint64_t{1} << 40) + "\r\n\r\n{\"status\":200,\"body\":\"");
    c.WaitForPeerClose();
    return;
  }
  if (r.target.find("/modelDevelopmentClusters/huge-stream:") != std::string::npos) {
    c.StartChunked(200, {{"Content-Type", "application/json"}});
    c.WriteChunk("{\"status\":200,\"body\":\"");
    const std::string mib(1 << 20, 'x');
    for (int i = 0; i < 200; ++i) {  // 200 MiB unless the client stops reading
      if (!c.WriteChunk(mib)) return;
    }
    c.EndChunked();
    c.CloseAfterResponse();
    return;
  }
  // A failed ping whose body is JSON nested a million levels deep.
  const int depth = 1000 * 1000;
  std::string body = "{\"status\":500,\"body\":\"";
  body.append(depth, '[');
  body.append(depth, ']');
  body += "\"}";
  c.WriteResponse(200, {{"Content-Type", "application/json"}}, body);
}

class TenantSafety : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir("slurmop-tenant-"));
    stand_ins_ = new testing::StandIns(*dir_, {.agent_platform_flags = {"--verbose"}});
    unlisted_ = new TestHttpServer(AnswerOk);
    token_ = new TestHttpServer(AnswerOk);
    subject_url_ = new TestHttpServer(AnswerOk);
    hostile_ = new TestHttpServer(AnswerHostile);
    silent_ = new TestHttpServer(AnswerNever);
    ASSERT_TRUE(stand_ins_->WaitUntilServing());
    ap_port_ = stand_ins_->agent_platform_port();
    std::ofstream(*dir_ + "/canary") << kCanary;

    ASSERT_TRUE(stand_ins_->kubectl().InstallCrds());
    ASSERT_TRUE(stand_ins_->kubectl().CreateNamespace(kNs));
    ASSERT_TRUE(
        stand_ins_->kubectl().Apply(testing::LocalSlurmClusterManifest(kNs, ap_port_, "v0.0.42")));

    std::vector<std::string> argv = {testing::OperatorBinary(SLURMOP_OPERATOR_BINARY),
                                     "--kubeconfig=" + *dir_ + "/kubeconfig", "--health-port=0",
                                     "--health-port-file=" + *dir_ + "/health.port",
                                     "--min-poll-seconds=0.5"};
    if (std::getenv("SLURMOP_OLD_OPERATOR") == nullptr) {
      // The stand-ins are listed; the `unlisted_` listener is not.
      argv.push_back(testing::AllowStandInFlag(ap_port_) + "," + Hostport(*token_) + "," +
                     Hostport(*subject_url_) + "," + Hostport(*hostile_) + "," +
                     Hostport(*silent_));
      // Some SlurmClusters here have no credentialsSecretRef: the endpoint policy is tested on
      // its own, with the operator's identity lent (tenant_identity_test covers the default).
      argv.push_back("--allow-operator-identity-for-namespaced-clusters");
    }
    operator_ =
        new Subprocess(argv, *dir_ + "/operator.log", testing::OperatorEnv(ap_port_, *dir_));
    health_port_ = ReadPort(*dir_ + "/health.port");
    ASSERT_GT(health_port_, 0) << ReadFile(*dir_ + "/operator.log");
  }

  static void TearDownTestSuite() {
    if (operator_ != nullptr) operator_->Stop(SIGTERM, seconds(10));
    delete operator_;
    delete silent_;
    delete hostile_;
    delete subject_url_;
    delete token_;
    delete unlisted_;
    delete stand_ins_;
    testing::RemoveDirUnlessKept(*dir_,
                                 ::testing::UnitTest::GetInstance()->failed_test_count() > 0);
    delete dir_;
  }

  void TearDown() override {
    if (HasFailure()) {
      std::cerr << "---- operator log (tail) ----\n"
                << testing::LogTail(*dir_ + "/operator.log") << "\n";
    }
  }

  static std::string Hostport(const TestHttpServer& s) {
    return "127.0.0.1:" + std::to_string(s.port());
  }

  static CommandResult Kubectl(std::vector<std::string> args, const std::string& stdin_data = "") {
    return stand_ins_->kubectl().Run(std::move(args), stdin_data);
  }

  static void ApplyCluster(const std::string& name, const std::string& endpoint,
                           const std::string& secret = "", const std::string& cluster_id = "") {
    std::string yaml =
        "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmCluster\n"
        "metadata: {name: " +
        name + ", namespace: " + kNs +
        "}\n"
        "spec:\n  projectId: demo-project\n  region: us-central1\n"
        "  clusterId: " +
        (cluster_id.empty() ? std::string("demo-cluster") : cluster_id) +
        "\n  endpoint: " + endpoint + "\n";
    if (!secret.empty()) yaml += "  credentialsSecretRef: {name: " + secret + "}\n";
    CommandResult r = Kubectl({"apply", "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  static void ApplySecret(const std::string& name, const nlohmann::json& credentials) {
    const std::string yaml = "apiVersion: v1\nkind: Secret\nmetadata: {name: " + name +
                             ", namespace: " + kNs + "}\nstringData:\n  credentials.json: '" +
                             credentials.dump() + "'\n";
    CommandResult r = Kubectl({"apply", "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  static void ApplyJob(const std::string& name, const std::string& cluster) {
    CommandResult r = Kubectl(
        {"apply", "-f", "-"},
        "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\nmetadata: {name: " + name +
            ", namespace: " + kNs + "}\nspec:\n  clusterRef: {name: " + cluster +
            "}\n  timeLimitMinutes: 5\n  script: |\n    #!/bin/bash\n    echo ok\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // Waits until the SlurmCluster's Ready condition has `reason`; returns its message.
  static std::string WaitForReason(const std::string& name, const std::string& reason) {
    CommandResult wait =
        Kubectl({"wait", "-n", kNs, "scl/" + name,
                 "--for=jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}=" + reason,
                 "--timeout=60s"});
    EXPECT_EQ(wait.exit_code, 0) << name << ": " << wait.err << "\n"
                                 << Kubectl({"get", "-n", kNs, "scl", name, "-o", "yaml"}).out;
    return Kubectl({"get", "-n", kNs, "scl", name, "-o",
                    "jsonpath={.status.conditions[?(@.type==\"Ready\")].message}"})
        .out;
  }

  // Everything the operator wrote where a tenant can read it, and its log.
  static std::string Visible() {
    return Kubectl({"get", "-n", kNs, "scl,sj", "-o", "json"}).out +
           Kubectl({"get", "-n", kNs, "events", "-o", "json"}).out +
           Kubectl({"get", "-n", kNs, "events.events.k8s.io", "-o", "json"}).out +
           ReadFile(*dir_ + "/operator.log");
  }

  static bool HealthServing() {
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(health_port_),
                                       grpc::InsecureChannelCredentials());
    auto stub = grpc::health::v1::Health::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(5));
    grpc::health::v1::HealthCheckRequest req;
    req.set_service("liveness");
    grpc::health::v1::HealthCheckResponse resp;
    return stub->Check(&ctx, req, &resp).ok() &&
           resp.status() == grpc::health::v1::HealthCheckResponse::SERVING;
  }

  static std::string* dir_;
  static testing::StandIns* stand_ins_;
  static Subprocess* operator_;
  static TestHttpServer* unlisted_;
  static TestHttpServer* token_;
  static TestHttpServer* subject_url_;
  static TestHttpServer* hostile_;
  static TestHttpServer* silent_;
  static int ap_port_;
  static int health_port_;
};

std::string* TenantSafety::dir_ = nullptr;
testing::StandIns* TenantSafety::stand_ins_ = nullptr;
Subprocess* TenantSafety::operator_ = nullptr;
TestHttpServer* TenantSafety::unlisted_ = nullptr;
TestHttpServer* TenantSafety::token_ = nullptr;
TestHttpServer* TenantSafety::subject_url_ = nullptr;
TestHttpServer* TenantSafety::hostile_ = nullptr;
TestHttpServer* TenantSafety::silent_ = nullptr;
int TenantSafety::ap_port_ = 0;
int TenantSafety::health_port_ = 0;

// (a) An endpoint the installer did not list receives nothing at all.
TEST_F(TenantSafety, UnlistedEndpointReceivesNoConnection) {
  ApplyCluster("unlisted", unlisted_->url());
  const std::string message = WaitForReason("unlisted", "EndpointNotAllowed");
  EXPECT_THAT(message, HasSubstr(Hostport(*unlisted_)));
  EXPECT_THAT(message, HasSubstr("--allowed-endpoint-hosts=" + Hostport(*unlisted_)));

  // A SlurmJob on it says so too, and is not sent either.
  ApplyJob("steered", "unlisted");
  CommandResult stalled = Kubectl({"wait", "-n", kNs, "sj/steered",
                                   "--for=jsonpath={.status.conditions[?(@.type==\"Stalled\")]."
                                   "reason}=EndpointNotAllowed",
                                   "--timeout=60s"});
  EXPECT_EQ(stalled.exit_code, 0) << stalled.err
                                  << Kubectl({"get", "-n", kNs, "sj", "steered", "-o", "yaml"}).out;

  const std::string events = Kubectl({"get", "-n", kNs, "events", "-o", "json"}).out +
                             Kubectl({"get", "-n", kNs, "events.events.k8s.io", "-o", "json"}).out;
  EXPECT_THAT(events, HasSubstr("EndpointNotAllowed"));
  std::this_thread::sleep_for(seconds(3));  // anything in flight would have arrived
  EXPECT_EQ(unlisted_->connections_accepted(), 0);
}

// (b) external_account credentials in a tenant's Secret: neither the file
// nor the URL is read, and nothing reaches the (listed) token listener.
TEST_F(TenantSafety, ExternalAccountSecretsReadNoFileAndReachNoUrl) {
  const nlohmann::json base = {
      {"type", "external_account"},
      {"audience",
       "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/"
       "providers/x"},
      {"subject_token_type", "urn:ietf:params:oauth:token-type:jwt"},
      {"token_url", token_->url() + "/v1/token"}};
  nlohmann::json from_file = base;
  from_file["credential_source"] = {{"file", *dir_ + "/canary"}};
  nlohmann::json from_url = base;
  from_url["credential_source"] = {
      {"url", subject_url_->url() + "/token?key=" + kUrlCanary},
      {"headers", {{"Metadata-Flavor", "Google"}}},
      {"format", {{"type", "json"}, {"subject_token_field_name", "access_token"}}}};
  ApplySecret("fed-file", from_file);
  ApplySecret("fed-url", from_url);
  ApplyCluster("fed-file", "http://127.0.0.1:" + std::to_string(ap_port_), "fed-file");
  ApplyCluster("fed-url", "http://127.0.0.1:" + std::to_string(ap_port_), "fed-url");

  EXPECT_THAT(WaitForReason("fed-file", "CredentialsInvalid"), HasSubstr("credential_source.file"));
  EXPECT_THAT(WaitForReason("fed-url", "CredentialsInvalid"), HasSubstr("credential_source.url"));
  std::this_thread::sleep_for(seconds(3));
  EXPECT_EQ(token_->connections_accepted(), 0);
  EXPECT_EQ(subject_url_->connections_accepted(), 0);
  for (const TestHttpServer* s : {unlisted_, token_, subject_url_, hostile_}) {
    for (const ReceivedRequest& r : s->requests()) {
      EXPECT_THAT(r.body + r.target, Not(HasSubstr(kCanary)));
    }
  }
  const std::string visible = Visible() + ReadFile(*dir_ + "/agent_platform.log");
  EXPECT_THAT(visible, Not(HasSubstr(kCanary)));
  EXPECT_THAT(visible, Not(HasSubstr(kUrlCanary)));
}

// (c) A listed but hostile endpoint cannot crash or starve the operator.
TEST_F(TenantSafety, HostileAnswersAreBoundedAndNamed) {
  const std::string hostile = hostile_->url();
  ApplyCluster("huge-claim", hostile, "", "huge-claim");
  ApplyCluster("huge-stream", hostile, "", "huge-stream");
  ApplyCluster("deep", hostile, "", "deep");
  EXPECT_THAT(WaitForReason("huge-claim", "Unreachable"), HasSubstr("-byte limit"));
  EXPECT_THAT(WaitForReason("huge-stream", "Unreachable"), HasSubstr("67108864-byte limit"));
  EXPECT_THAT(WaitForReason("deep", "Unreachable"), HasSubstr("nested deeper than 100 levels"));

  EXPECT_TRUE(operator_->Running()) << "the operator died";
  EXPECT_TRUE(HealthServing());
  // Another tenant's cluster keeps working: still Ready, and a job on it is
  // submitted. (Its tracking is slowed while the hostile clusters are
  // polled: the tracker fetches clusters one after another, review finding
  // A2, which this test does not cover.)
  ApplyJob("bystander", "local");
  CommandResult submitted = Kubectl(
      {"wait", "-n", kNs, "sj/bystander", "--for=jsonpath={.status.jobId}=1000", "--timeout=90s"});
  EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
  EXPECT_EQ(Kubectl({"get", "-n", kNs, "scl", "local", "-o",
                     "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"})
                .out,
            "True");
  EXPECT_TRUE(HealthServing());
  EXPECT_TRUE(operator_->Running()) << "the operator died";
}

// Seconds until `jsonpath` of `object` in namespace `ns` reads `want` ("" = anything but
// empty), or -1 after `limit`.
double SecondsUntil(const std::function<CommandResult(std::vector<std::string>)>& kubectl,
                    const std::string& ns, const std::string& object, const std::string& jsonpath,
                    const std::string& want, seconds limit) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < limit) {
    CommandResult r = kubectl({"get", "-n", ns, object, "-o", "jsonpath=" + jsonpath});
    if (r.exit_code == 0 && (want.empty() ? !r.out.empty() : r.out == want)) {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return -1;
}

// (d) Silent clusters of one tenant do not stall another tenant's SlurmJobs.
TEST_F(TenantSafety, SilentClustersDoNotStallAnotherTenantsSlurmJobs) {
  constexpr char kQuiet[] = "quiet";
  ASSERT_TRUE(stand_ins_->kubectl().CreateNamespace(kQuiet));
  std::string yaml;
  for (int i = 1; i <= 4; ++i) {
    const std::string name = "silent-" + std::to_string(i);
    yaml +=
        "---\napiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmCluster\nmetadata: {name: " +
        name + ", namespace: " + kQuiet +
        "}\nspec:\n  projectId: demo-project\n  region: us-central1\n  clusterId: " + name +
        "\n  endpoint: " + silent_->url() + "\n";
    for (int j = 1; j <= 3; ++j) {
      yaml += "---\napiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\nmetadata: {name: " +
              name + "-job-" + std::to_string(j) + ", namespace: " + kQuiet +
              "}\nspec:\n  clusterRef: {name: " + name +
              "}\n  script: |\n    #!/bin/bash\n    echo never\n";
    }
  }
  CommandResult applied = Kubectl({"apply", "-f", "-"}, yaml);
  ASSERT_EQ(applied.exit_code, 0) << applied.err;

  // Its probe's timeout (30 s) is in its Ready condition; a second silence holds it back (held
  // probes leave that condition as it is).
  const auto kubectl = [](std::vector<std::string> args) { return Kubectl(std::move(args)); };
  const auto start = std::chrono::steady_clock::now();
  std::string ready_message;
  // Until each cluster's first silences are known, its calls hold workers for 30 s each, and
  // the probe waits its turn behind the SlurmJobs' submits: 115-131 s seen on 2 cores.
  while (std::chrono::steady_clock::now() - start < seconds(240) &&
         ready_message.find("timed out") == std::string::npos) {
    std::this_thread::sleep_for(seconds(1));
    ready_message = Kubectl({"get", "-n", kQuiet, "scl", "silent-1", "-o",
                             "jsonpath={.status.conditions[?(@.type==\"Ready\")].message}"})
                        .out;
  }
  std::cout << "silent-1 after "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
            << " s: " << ready_message << std::endl;
  EXPECT_THAT(ready_message, HasSubstr("timed out"));
  // The SlurmJobs there that were not sent wait, saying why.
  std::string reasons;
  for (int tries = 0; tries < 90 && reasons.find("ClusterNotAnswering") == std::string::npos;
       ++tries) {
    if (tries > 0) std::this_thread::sleep_for(seconds(1));
    reasons = Kubectl({"get", "-n", kQuiet, "sj", "-o",
                       "jsonpath={.items[*].status.conditions[?(@.type==\"Reconciling\")].reason}"})
                  .out;
  }
  EXPECT_THAT(reasons, HasSubstr("ClusterNotAnswering"));

  // Another tenant's SlurmJobs, one after another: submitted, followed to the end, deleted.
  std::vector<double> submit, end, gone;
  for (int k = 0; k < 3; ++k) {
    const std::string name = "after-silence-" + std::to_string(k);
    ApplyJob(name, "local");
    submit.push_back(SecondsUntil(kubectl, kNs, "sj/" + name, "{.status.jobId}", "", seconds(90)));
    end.push_back(
        SecondsUntil(kubectl, kNs, "sj/" + name, "{.status.jobState}", "COMPLETED", seconds(90)));
    ASSERT_EQ(Kubectl({"delete", "-n", kNs, "sj", name, "--wait=false"}).exit_code, 0);
    const auto start = std::chrono::steady_clock::now();
    double gone_after = -1;
    while (std::chrono::steady_clock::now() - start < seconds(90)) {
      if (Kubectl({"get", "-n", kNs, "sj", name}).exit_code != 0) {
        gone_after =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    gone.push_back(gone_after);
    std::cout << name << ": create -> jobId " << submit.back() << " s, -> COMPLETED " << end.back()
              << " s; delete -> gone " << gone.back() << " s" << std::endl;
  }
  for (int k = 0; k < 3; ++k) {
    EXPECT_GE(submit[k], 0);
    EXPECT_LT(submit[k], 10) << "create -> jobId of SlurmJob " << k;
    EXPECT_GE(end[k], 0);
    EXPECT_LT(end[k], 20) << "create -> COMPLETED of SlurmJob " << k;
    EXPECT_GE(gone[k], 0);
    EXPECT_LT(gone[k], 10) << "delete -> gone of SlurmJob " << k;
  }
  EXPECT_TRUE(HealthServing());
  EXPECT_TRUE(operator_->Running()) << "the operator died";
}

}  // namespace
}  // namespace slurmop
