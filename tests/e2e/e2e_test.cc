// File: tests/e2e/e2e_test.cc
//
// The whole path, as a user drives it: the real kubectl against the stand-in
// Kubernetes API server, the operator binary as a separate process, and the
// Agent Platform stand-in with its Slurm simulator behind callSlurmRestApi.
// The operator authenticates with Application Default Credentials from the
// stand-in metadata server (GCE_METADATA_HOST), as on GKE.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "controller/http/cpprest_transport.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
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
using ::testing::Not;
using testing::ReadFile;
using testing::ReadPort;
using testing::RunCommand;
using testing::Subprocess;
using testing::WaitUntil;

constexpr char kNs[] = "e2e";

// An RFC 3339 time ("2026-12-02T13:10:00Z") as unix seconds; 0 if it is not one.
int64_t ParseTime(const std::string& rfc3339) {
  std::tm tm{};
  if (strptime(rfc3339.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) == nullptr) return 0;
  return timegm(&tm);
}

// One environment for the whole suite: starting the servers once keeps the
// suite short; each test uses its own SlurmJob names.
class E2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir("slurmop-e2e-"));
    stand_ins_ = new testing::StandIns(*dir_, {.agent_platform_flags = {"--verbose"}});
    ASSERT_TRUE(stand_ins_->WaitUntilServing());
    ap_port_ = stand_ins_->agent_platform_port();

    ASSERT_TRUE(stand_ins_->kubectl().InstallCrds());
    ASSERT_TRUE(stand_ins_->kubectl().CreateNamespace(kNs));
    ASSERT_TRUE(
        stand_ins_->kubectl().Apply(testing::LocalSlurmClusterManifest(kNs, ap_port_, "v0.0.42")));

    StartOperator();
    ASSERT_GT(health_port_, 0) << ReadFile(*dir_ + "/operator.log");
  }

  static void TearDownTestSuite() {
    if (operator_) {
      int status = operator_->Stop(SIGTERM, seconds(10));
      // A clean shutdown on SIGTERM exits 0.
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "operator did not exit cleanly on SIGTERM; log: " << ReadFile(*dir_ + "/operator.log");
    }
    delete operator_;
    delete stand_ins_;
    testing::RemoveDirUnlessKept(*dir_,
                                 ::testing::UnitTest::GetInstance()->failed_test_count() > 0);
    delete dir_;
  }

  void TearDown() override {
    if (HasFailure()) {
      std::cerr << "---- operator log (tail) ----\n";
      std::cerr << testing::LogTail(*dir_ + "/operator.log") << "\n";
    }
  }

  static CommandResult Kubectl(std::vector<std::string> args, const std::string& stdin_data = "",
                               std::chrono::milliseconds timeout = seconds(90)) {
    return stand_ins_->kubectl().Run(std::move(args), stdin_data, timeout);
  }

  static std::string Get(const std::string& name, const std::string& jsonpath) {
    CommandResult r = Kubectl({"get", "-n", kNs, "sj", name, "-o", "jsonpath=" + jsonpath});
    return r.exit_code == 0 ? r.out : "";
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

  // POST on the Agent Platform stand-in's admin API.
  static bool AdminPost(const std::string& path, const nlohmann::json& body) {
    static auto transport = http::CpprestTransport::Create({});
    http::Request req;
    req.method = "POST";
    req.url = "http://127.0.0.1:" + std::to_string(ap_port_) + path;
    req.headers["Content-Type"] = "application/json";
    req.body = body.dump();
    absl::StatusOr<http::Response> r = (*transport)->Send(req);
    return r.ok() && r->status == 200;
  }

  // Starts the operator and waits until it serves health (and so has its
  // signal handling in place).
  static void StartOperator() {
    std::filesystem::remove(*dir_ + "/health.port");
    metrics_port_ = testing::FreeLoopbackPort();
    operator_ = new Subprocess(
        {SLURMOP_OPERATOR_BINARY, "--kubeconfig=" + *dir_ + "/kubeconfig", "--health-port=0",
         "--health-port-file=" + *dir_ + "/health.port", "--min-poll-seconds=0.5",
         "--submit-settle-seconds=10", "--metrics-port=" + std::to_string(metrics_port_),
         "--allow-operator-identity-for-namespaced-clusters", testing::AllowStandInFlag(ap_port_)},
        *dir_ + "/operator.log", testing::OperatorEnv(ap_port_, *dir_));
    health_port_ = ReadPort(*dir_ + "/health.port");
  }

  // The tag of run `run` of SlurmJob `uid`: the operator's installation id is
  // its default, the UID of Namespace kube-system.
  static std::string Tag(const std::string& uid, int run) {
    static const std::string installation =
        Kubectl({"get", "namespace", "kube-system", "-o", "jsonpath={.metadata.uid}"}).out;
    return std::string("slurmjob-operator:") + kNs + "/" + uid + "/" + std::to_string(run) + "@" +
           installation;
  }

  // The Slurm jobs carrying a SlurmJob's tag (the operator writes the UID into `comment`).
  static std::vector<nlohmann::json> SlurmJobsFor(const std::string& name) {
    std::string uid = Get(name, "{.metadata.uid}");
    std::vector<nlohmann::json> out;
    nlohmann::json jobs = Admin("/__admin/jobs");
    const nlohmann::json* list = nullptr;
    if (jobs.is_object() && jobs.contains("jobs")) list = &jobs["jobs"];
    if (jobs.is_array()) list = &jobs;
    if (list == nullptr || uid.empty()) return out;
    for (const auto& j : *list) {
      if (j.value("comment", "") == Tag(uid, 1)) out.push_back(j);
    }
    return out;
  }

  static CommandResult ApplyJob(const std::string& name, const std::string& script_body,
                                const std::string& extra_spec = "") {
    std::string yaml =
        "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\n"
        "metadata: {name: " +
        name +
        ", namespace: e2e}\n"
        "spec:\n  clusterRef: {name: local}\n  timeLimitMinutes: 5\n" +
        extra_spec + "  script: |\n";
    std::stringstream in(script_body);
    for (std::string line; std::getline(in, line);) yaml += "    " + line + "\n";
    return Kubectl({"apply", "-f", "-"}, yaml);
  }

  // Applies examples/`file` with kubectl in the suite's namespace, then waits until SlurmJob
  // `name` shows jobState `state`.
  static void ApplyExampleUntil(const std::string& file, const std::string& name,
                                const std::string& state) {
    CommandResult r =
        Kubectl({"apply", "-n", kNs, "-f", std::string(SLURMOP_SOURCE_DIR) + "/examples/" + file});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    CommandResult wait = Kubectl({"wait", "-n", kNs, "sj/" + name,
                                  "--for=jsonpath={.status.jobState}=" + state, "--timeout=60s"});
    ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  }

  static std::string* dir_;
  static testing::StandIns* stand_ins_;
  static Subprocess* operator_;
  static int ap_port_;
  static int health_port_;
  static int metrics_port_;
};

std::string* E2E::dir_ = nullptr;
testing::StandIns* E2E::stand_ins_ = nullptr;
Subprocess* E2E::operator_ = nullptr;
int E2E::ap_port_ = 0;
int E2E::health_port_ = 0;
int E2E::metrics_port_ = 0;

TEST_F(E2E, HealthServesLivenessAndReadinessOnceSynced) {
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(health_port_),
                                     grpc::InsecureChannelCredentials());
  auto stub = grpc::health::v1::Health::NewStub(channel);
  auto check = [&](const std::string& service, grpc::StatusCode* code) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(5));
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    grpc::Status s = stub->Check(&ctx, req, &resp);
    *code = s.error_code();
    return resp.status();
  };
  grpc::StatusCode code;
  EXPECT_EQ(check("", &code), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(check("liveness", &code), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_TRUE(WaitUntil(
      [&] { return check("readiness", &code) == grpc::health::v1::HealthCheckResponse::SERVING; },
      seconds(20)));
  check("no-such-service", &code);
  EXPECT_EQ(code, grpc::StatusCode::NOT_FOUND);
}

TEST_F(E2E, ClusterIsProbedAndReady) {
  CommandResult wait =
      Kubectl({"wait", "-n", kNs, "scl/local", "--for=condition=Ready", "--timeout=30s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  CommandResult bad = Kubectl({"apply", "-f", "-"},
                              "apiVersion: hpc.slurmoperator.dev/v1alpha1\n"
                              "kind: SlurmCluster\n"
                              "metadata: {name: wrong, namespace: e2e}\n"
                              "spec:\n"
                              "  projectId: demo-project\n"
                              "  region: us-central1\n"
                              "  clusterId: no-such-cluster\n"
                              "  endpoint: http://127.0.0.1:" +
                                  std::to_string(ap_port_) + "\n");
  ASSERT_EQ(bad.exit_code, 0) << bad.err;
  CommandResult reason =
      Kubectl({"wait", "-n", kNs, "scl/wrong",
               "--for=jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}="
               "ClusterNotFound",
               "--timeout=30s"});
  EXPECT_EQ(reason.exit_code, 0) << reason.out << reason.err;
  CommandResult table = Kubectl({"get", "-n", kNs, "scl"});
  EXPECT_THAT(table.out, HasSubstr("READY"));
}

TEST_F(E2E, ApplyRunsToCompletedWithJobIdInTheTable) {
  CommandResult r = ApplyJob("hello", "#!/bin/bash\necho hello\nsleep 1\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;

  CommandResult wait = Kubectl({"wait", "-n", kNs, "sj/hello",
                                "--for=jsonpath={.status.jobState}=COMPLETED", "--timeout=60s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_GT(std::atoll(Get("hello", "{.status.jobId}").c_str()), 0);
  EXPECT_EQ(Get("hello", "{.status.exitCode}"), "0");
  EXPECT_EQ(Get("hello", "{.status.phase}"), "Succeeded");

  CommandResult ready =
      Kubectl({"wait", "-n", kNs, "sj/hello", "--for=condition=Ready", "--timeout=10s"});
  EXPECT_EQ(ready.exit_code, 0) << ready.err;

  // The table a user sees.
  CommandResult table = Kubectl({"get", "-n", kNs, "sj", "hello"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("JOBID"));
  EXPECT_THAT(table.out, HasSubstr("STATE"));
  EXPECT_THAT(table.out, HasSubstr("CLUSTER"));
  EXPECT_THAT(table.out, HasSubstr("COMPLETED"));
  EXPECT_THAT(table.out, HasSubstr(Get("hello", "{.status.jobId}")));

  // Exactly one Slurm job was submitted for it.
  EXPECT_EQ(SlurmJobsFor("hello").size(), 1u);

  // Prometheus metrics count what happened.
  {
    http::Request req;
    req.url = "http://127.0.0.1:" + std::to_string(metrics_port_) + "/metrics";
    auto transport = http::CpprestTransport::Create({});
    absl::StatusOr<http::Response> m = (*transport)->Send(req);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->status, 200);
    EXPECT_THAT(m->body, HasSubstr("controller_runtime_reconcile_total{controller=\"slurmjob\""));
    EXPECT_THAT(m->body, HasSubstr("slurmjob_operator_slurm_api_requests_total{code=\"200\",method="
                                   "\"POST\",path=\"/slurm/v0.0.42/job/submit\"} 1"));
    EXPECT_THAT(m->body, HasSubstr("slurmjob_operator_slurmjobs{phase=\"Succeeded\"} 1"));
    EXPECT_THAT(m->body,
                HasSubstr("slurmjob_operator_job_run_seconds_count{state=\"COMPLETED\"} 1"));
    EXPECT_THAT(m->body, HasSubstr("workqueue_depth{controller=\"slurmjob\",name=\"slurmjob\"}"));
    // The standard controller families, with controller-runtime's and client-go's types, so that
    // stock dashboards find them.
    for (const auto& [name, type] : std::vector<std::pair<std::string, std::string>>{
             {"controller_runtime_reconcile_total", "counter"},
             {"controller_runtime_reconcile_errors_total", "counter"},
             {"controller_runtime_reconcile_time_seconds", "histogram"},
             {"controller_runtime_active_workers", "gauge"},
             {"controller_runtime_max_concurrent_reconciles", "gauge"},
             {"workqueue_depth", "gauge"},
             {"workqueue_adds_total", "counter"},
             {"workqueue_queue_duration_seconds", "histogram"},
             {"workqueue_work_duration_seconds", "histogram"},
             {"workqueue_retries_total", "counter"},
             {"workqueue_unfinished_work_seconds", "gauge"},
             {"workqueue_longest_running_processor_seconds", "gauge"},
             {"rest_client_requests_total", "counter"},
             {"leader_election_master_status", "gauge"}}) {
      EXPECT_THAT(m->body, HasSubstr("# TYPE " + name + " " + type + "\n")) << name;
    }
    EXPECT_THAT(m->body, HasSubstr("controller_runtime_max_concurrent_reconciles{controller="
                                   "\"slurmjob\"} "));
    EXPECT_THAT(m->body,
                HasSubstr("workqueue_adds_total{controller=\"slurmjob\",name=\"slurmjob\"} "));
    EXPECT_THAT(m->body, HasSubstr("workqueue_work_duration_seconds_count{controller=\"slurmjob\","
                                   "name=\"slurmjob\"} "));
    EXPECT_THAT(m->body, HasSubstr("rest_client_requests_total{code=\"200\",host=\"127.0.0.1:"));
    EXPECT_THAT(m->body, HasSubstr("slurmjob_operator_slurmcluster_ready{name=\""));
  }

  // describe shows the Events.
  CommandResult describe = Kubectl({"describe", "-n", kNs, "sj", "hello"});
  EXPECT_THAT(describe.out, HasSubstr("Submitted"));
  EXPECT_THAT(describe.out, HasSubstr("Completed"));
}

// `kubectl slurmjob` (tools/kubectl-slurmjob, copied to build/bin by the build) found by the real
// kubectl on PATH: submit an sbatch script, wait, status, rerun (a new run), a dependency on
// another SlurmJob, and a clear refusal of an option it cannot map.
TEST_F(E2E, KubectlSlurmjobPluginSubmitsWaitsAndReruns) {
  const std::string path = std::string(SLURMOP_PLUGIN_DIR) + ":" + std::getenv("PATH");
  auto plugin = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"kubectl", "slurmjob"});
    return RunCommand(args, {{"KUBECONFIG", *dir_ + "/kubeconfig"}, {"PATH", path}}, seconds(90));
  };
  auto script = [&](const std::string& file, const std::string& body) {
    std::ofstream(*dir_ + "/" + file) << body;
    return *dir_ + "/" + file;
  };
  const std::string first = script("first.sh",
                                   "#!/bin/bash\n#SBATCH -J plug-first -p debug -N 1 -n 1 -c 1\n"
                                   "#SBATCH --mem=100M -t 0:05:00 -o first-%j.out\necho one\n");
  CommandResult submitted = plugin({"submit", first, "--cluster", "local", "-n", kNs});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  EXPECT_THAT(submitted.out, HasSubstr("slurmjob/plug-first submitted"));
  EXPECT_EQ(Get("plug-first", "{.spec.memoryPerNodeMB}"), "100");
  EXPECT_EQ(Get("plug-first", "{.spec.timeLimitMinutes}"), "5");

  const std::string second =
      script("second.sh", "#!/bin/bash\n#SBATCH --dependency=afterok:plug-first\necho two\n");
  CommandResult dependent =
      plugin({"submit", second, "--cluster", "local", "--name", "plug-second", "-n", kNs});
  ASSERT_EQ(dependent.exit_code, 0) << dependent.err;
  EXPECT_EQ(Get("plug-second", "{.spec.dependsOn[0].name}"), "plug-first");

  CommandResult waited = plugin({"wait", "plug-first", "-n", kNs, "--timeout", "60s"});
  ASSERT_EQ(waited.exit_code, 0) << waited.out << waited.err;
  EXPECT_THAT(waited.out, HasSubstr("Succeeded"));
  CommandResult status = plugin({"status", "plug-first", "-n", kNs});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("Job ID:    " + Get("plug-first", "{.status.jobId}")));
  EXPECT_THAT(status.out, HasSubstr("Output:    first-%j.out"));
  EXPECT_EQ(plugin({"wait", "plug-second", "-n", kNs, "--timeout", "60s"}).exit_code, 0);

  const std::string job_id = Get("plug-first", "{.status.jobId}");
  CommandResult rerun = plugin({"rerun", "plug-first", "-n", kNs});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_TRUE(WaitUntil([&] { return Get("plug-first", "{.status.run}") == "2"; }, seconds(30)));
  ASSERT_EQ(plugin({"wait", "plug-first", "-n", kNs, "--timeout", "60s"}).exit_code, 0);
  EXPECT_NE(Get("plug-first", "{.status.jobId}"), job_id) << "a new Slurm job for the new run";
  EXPECT_THAT(plugin({"status", "plug-first", "-n", kNs}).out, HasSubstr("Runs:"));

  const std::string bad = script("bad.sh", "#!/bin/bash\n#SBATCH --exclusive\necho x\n");
  CommandResult refused = plugin({"submit", bad, "-n", kNs});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr("#SBATCH --exclusive: no SlurmJob field"));
  EXPECT_EQ(Kubectl({"get", "-n", kNs, "sj", "bad"}).exit_code, 1) << "nothing was created";
}

TEST_F(E2E, NonZeroExitIsFailedWithItsExitCode) {
  ASSERT_EQ(ApplyJob("fails", "#!/bin/bash\necho oops\nexit 3\n").exit_code, 0);
  CommandResult wait =
      Kubectl({"wait", "-n", kNs, "sj/fails", "--for=condition=Failed", "--timeout=60s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_EQ(Get("fails", "{.status.jobState}"), "FAILED");
  EXPECT_EQ(Get("fails", "{.status.exitCode}"), "3");
  EXPECT_EQ(Get("fails", "{.status.conditions[?(@.type==\"Stalled\")].status}"), "True");
}

TEST_F(E2E, DeleteWhileRunningCancelsTheSlurmJobThenReleases) {
  ASSERT_EQ(ApplyJob("long", "#!/bin/bash\nsleep 120\n").exit_code, 0);
  CommandResult wait = Kubectl(
      {"wait", "-n", kNs, "sj/long", "--for=jsonpath={.status.jobState}=RUNNING", "--timeout=60s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  std::vector<nlohmann::json> jobs = SlurmJobsFor("long");
  ASSERT_EQ(jobs.size(), 1u);
  const auto job_id = jobs[0].value("job_id", int64_t{0});

  CommandResult del = Kubectl({"delete", "-n", kNs, "sj", "long", "--timeout=60s"});
  ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
  CommandResult gone = Kubectl({"get", "-n", kNs, "sj", "long"});
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_THAT(gone.err, HasSubstr("NotFound"));

  nlohmann::json all = Admin("/__admin/jobs");
  std::string state;
  const nlohmann::json& list = all.is_object() ? all["jobs"] : all;
  for (const auto& j : list) {
    if (j.value("job_id", int64_t{0}) == job_id) state = j.value("state", j.value("job_state", ""));
  }
  EXPECT_EQ(state, "CANCELLED") << all.dump();
}

// Deleting the SlurmJob of a running array cancels the array by its own id: the running tasks
// and the pending remainder all end CANCELLED, and the finalizer comes off only once Slurm's
// records (folded: the remainder's CANCELLED ends its indexes) say every task ended.
TEST_F(E2E, DeletingAnArrayCancelsEveryTask) {
  ASSERT_EQ(ApplyJob("longarray", "#!/bin/bash\nsleep 120\n", "  array: {indexes: \"0-5%2\"}\n")
                .exit_code,
            0);
  CommandResult wait = Kubectl({"wait", "-n", kNs, "sj/longarray",
                                "--for=jsonpath={.status.jobState}=RUNNING", "--timeout=60s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  const int64_t array_id = std::stoll(Get("longarray", "{.status.jobId}"));
  ASSERT_EQ(Get("longarray", "{.status.array.active}"), "2");
  CommandResult del = Kubectl({"delete", "-n", kNs, "sj", "longarray", "--timeout=60s"});
  ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
  int tasks = 0, cancelled = 0;
  const nlohmann::json all = Admin("/__admin/jobs");
  for (const auto& j : all["jobs"]) {
    if (j.value("array_job_id", int64_t{0}) != array_id) continue;
    ++tasks;
    cancelled += j.value("state", "") == "CANCELLED";
  }
  EXPECT_EQ(tasks, 6) << array_id;
  EXPECT_EQ(cancelled, 6);
}

// Slurm's state of the simulated job `job_id` ("" when unknown).
std::string SimState(const nlohmann::json& all, int64_t job_id) {
  const nlohmann::json& list = all.is_object() ? all["jobs"] : all;
  for (const auto& j : list) {
    if (j.value("job_id", int64_t{0}) == job_id) return j.value("state", j.value("job_state", ""));
  }
  return "";
}

TEST_F(E2E, NodeFailIsRetriedAsRunTwoWithItsOwnTag) {
  // The first job with this script ends NODE_FAIL; the retry runs normally.
  ASSERT_EQ(ApplyJob("flaky", "#!/bin/bash\n#SIM end=NODE_FAIL fail_first=1\nsleep 1\n").exit_code,
            0);
  CommandResult wait =
      Kubectl({"wait", "-n", kNs, "sj/flaky", "--for=condition=Ready", "--timeout=90s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_EQ(Get("flaky", "{.status.run}"), "2");
  EXPECT_EQ(Get("flaky", "{.status.retries}"), "1");
  EXPECT_EQ(Get("flaky", "{.status.runs[0].jobState}"), "NODE_FAIL");
  const std::string uid = Get("flaky", "{.metadata.uid}");
  for (const char* run : {"1", "2"}) {
    nlohmann::json view = Admin("/__admin/jobs?comment=" + Tag(uid, std::atoi(run)));
    ASSERT_TRUE(view.is_object()) << view.dump();
    EXPECT_EQ(view["submit_counts"]["total"], 1) << "run " << run << ": " << view.dump();
  }
}

TEST_F(E2E, SubmittedFieldsAreImmutableAndRunIdStartsANewRun) {
  ASSERT_EQ(ApplyJob("rerun", "#!/bin/bash\nsleep 1\n").exit_code, 0);
  CommandResult wait =
      Kubectl({"wait", "-n", kNs, "sj/rerun", "--for=condition=Ready", "--timeout=60s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  const std::string first_id = Get("rerun", "{.status.jobId}");
  // Changing what the job runs without a new runId: refused by the API server.
  CommandResult refused = ApplyJob("rerun", "#!/bin/bash\nsleep 2\n");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("spec.script"));
  EXPECT_THAT(refused.err, HasSubstr("cannot change once the job is submitted"));
  // With a new runId: accepted, and run 2 is submitted and completes.
  CommandResult again = ApplyJob("rerun", "#!/bin/bash\nsleep 2\n", "  runId: second\n");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  CommandResult run2 =
      Kubectl({"wait", "-n", kNs, "sj/rerun", "--for=jsonpath={.status.run}=2", "--timeout=60s"});
  ASSERT_EQ(run2.exit_code, 0) << run2.out << run2.err;
  wait = Kubectl({"wait", "-n", kNs, "sj/rerun", "--for=condition=Ready", "--timeout=60s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_NE(Get("rerun", "{.status.jobId}"), first_id);
  EXPECT_EQ(Get("rerun", "{.status.runId}"), "second");
  EXPECT_EQ(Get("rerun", "{.status.runs[0].jobId}"), first_id);
}

TEST_F(E2E, SuspendHoldsTheJobBackUntilCleared) {
  ASSERT_EQ(ApplyJob("later", "#!/bin/bash\nsleep 1\n", "  suspend: true\n").exit_code, 0);
  CommandResult held = Kubectl({"wait", "-n", kNs, "sj/later",
                                "--for=jsonpath={.status.reason}=Suspended", "--timeout=30s"});
  ASSERT_EQ(held.exit_code, 0) << held.out << held.err;
  std::this_thread::sleep_for(seconds(2));
  EXPECT_TRUE(SlurmJobsFor("later").empty()) << "a suspended SlurmJob was submitted";
  CommandResult patch = Kubectl(
      {"patch", "-n", kNs, "sj/later", "--type=merge", "-p", R"({"spec":{"suspend":false}})"});
  ASSERT_EQ(patch.exit_code, 0) << patch.err;
  CommandResult done =
      Kubectl({"wait", "-n", kNs, "sj/later", "--for=condition=Ready", "--timeout=60s"});
  ASSERT_EQ(done.exit_code, 0) << done.out << done.err;
  EXPECT_EQ(SlurmJobsFor("later").size(), 1u);
}

TEST_F(E2E, DependsOnBecomesSlurmsDependencyAndRunsInOrder) {
  ASSERT_EQ(ApplyJob("second", "#!/bin/bash\nsleep 1\n",
                     "  dependsOn: [{name: first, condition: afterok}]\n")
                .exit_code,
            0);
  CommandResult waiting =
      Kubectl({"wait", "-n", kNs, "sj/second",
               "--for=jsonpath={.status.reason}=WaitingForDependencies", "--timeout=30s"});
  ASSERT_EQ(waiting.exit_code, 0) << waiting.out << waiting.err;
  ASSERT_EQ(ApplyJob("first", "#!/bin/bash\nsleep 3\n").exit_code, 0);
  CommandResult done =
      Kubectl({"wait", "-n", kNs, "sj/second", "--for=condition=Ready", "--timeout=90s"});
  ASSERT_EQ(done.exit_code, 0) << done.out << done.err;
  std::vector<nlohmann::json> second = SlurmJobsFor("second");
  std::vector<nlohmann::json> first = SlurmJobsFor("first");
  ASSERT_EQ(second.size(), 1u);
  ASSERT_EQ(first.size(), 1u);
  const std::string first_id = Get("first", "{.status.jobId}");
  EXPECT_EQ(second[0].value("dependency", ""), "afterok:" + first_id) << second[0].dump();
  // Slurm (the simulator) started the second job only after the first ended.
  ASSERT_FALSE(Get("second", "{.status.startTime}").empty());
  EXPECT_GE(Get("second", "{.status.startTime}"), Get("first", "{.status.endTime}"));
}

TEST_F(E2E, OrphanPolicyLeavesTheJobRunningAndTheSweepAlone) {
  ASSERT_EQ(ApplyJob("keep", "#!/bin/bash\nsleep 120\n", "  deletionPolicy: Orphan\n").exit_code,
            0);
  CommandResult wait = Kubectl(
      {"wait", "-n", kNs, "sj/keep", "--for=jsonpath={.status.jobState}=RUNNING", "--timeout=60s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  const int64_t job_id = std::stoll(Get("keep", "{.status.jobId}"));
  CommandResult del = Kubectl({"delete", "-n", kNs, "sj", "keep", "--timeout=60s"});
  ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
  nlohmann::json all = Admin("/__admin/jobs");
  EXPECT_EQ(SimState(all, job_id), "RUNNING");
  const nlohmann::json& list = all.is_object() ? all["jobs"] : all;
  for (const auto& j : list) {
    if (j.value("job_id", int64_t{0}) == job_id) {
      EXPECT_EQ(j.value("comment", "").rfind("slurmjob-operator-orphaned:", 0), 0u) << j.dump();
    }
  }
}

// #13 item 12: v0.0.39's job update body. 23.02.0/1 read only {"job": {...}},
// 23.02.2+ only the bare fields: the Orphan re-tag must work on both.
TEST_F(E2E, OrphanRetagsOnV0039WhateverThe2302ReleaseServesIt) {
  std::string cluster = testing::LocalSlurmClusterManifest(kNs, ap_port_, "v0.0.39");
  cluster.replace(cluster.find("name: local,"), 12, "name: local39,");
  CommandResult applied = Kubectl({"apply", "-f", "-"}, cluster);
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  for (const std::string release : {"23.02.1", "23.02.7"}) {
    ASSERT_TRUE(AdminPost("/__admin/sim", {{"v0039_release", release}}));
    const std::string name = "keep39-" + release.substr(6);
    const std::string yaml =
        "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\n"
        "metadata: {name: " +
        name +
        ", namespace: e2e}\n"
        "spec:\n  clusterRef: {name: local39}\n  deletionPolicy: Orphan\n"
        "  script: |\n    #!/bin/bash\n    sleep 120\n";
    ASSERT_EQ(Kubectl({"apply", "-f", "-"}, yaml).exit_code, 0);
    CommandResult wait = Kubectl({"wait", "-n", kNs, "sj/" + name,
                                  "--for=jsonpath={.status.jobState}=RUNNING", "--timeout=60s"});
    ASSERT_EQ(wait.exit_code, 0) << release << ": " << wait.out << wait.err;
    const int64_t job_id = std::stoll(Get(name, "{.status.jobId}"));
    CommandResult del = Kubectl({"delete", "-n", kNs, "sj", name, "--timeout=60s"});
    ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
    nlohmann::json all = Admin("/__admin/jobs");
    const nlohmann::json& list = all.is_object() ? all["jobs"] : all;
    bool seen = false;
    for (const auto& j : list) {
      if (j.value("job_id", int64_t{0}) != job_id) continue;
      seen = true;
      EXPECT_EQ(j.value("comment", "").rfind("slurmjob-operator-orphaned:", 0), 0u)
          << release << ": " << j.dump();
    }
    EXPECT_TRUE(seen) << release;
  }
}

TEST_F(E2E, UnknownClusterIsAConditionAndNothingIsSubmitted) {
  std::string yaml =
      "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\n"
      "metadata: {name: lost, namespace: e2e}\n"
      "spec:\n  clusterRef: {name: nope}\n  script: |\n    #!/bin/bash\n    true\n";
  ASSERT_EQ(Kubectl({"apply", "-f", "-"}, yaml).exit_code, 0);
  CommandResult wait =
      Kubectl({"wait", "-n", kNs, "sj/lost", "--for=condition=Stalled", "--timeout=30s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_EQ(Get("lost", "{.status.conditions[?(@.type==\"Stalled\")].reason}"), "ClusterNotFound");
  EXPECT_THAT(Get("lost", "{.status.message}"), HasSubstr("SlurmCluster \"nope\" does not exist"));
  EXPECT_TRUE(SlurmJobsFor("lost").empty());
  CommandResult describe = Kubectl({"describe", "-n", kNs, "sj", "lost"});
  EXPECT_THAT(describe.out, HasSubstr("ClusterNotFound"));
}

TEST_F(E2E, EmptyScriptIsRefusedByTheApiServerWithAClearMessage) {
  std::string yaml =
      "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\n"
      "metadata: {name: empty, namespace: e2e}\n"
      "spec:\n  clusterRef: {name: local}\n  script: \"\"\n";
  CommandResult r = Kubectl({"apply", "-f", "-"}, yaml);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("spec.script"));
}

TEST_F(E2E, ScriptWithoutInterpreterLineIsAConditionAndNothingIsSubmitted) {
  ASSERT_EQ(ApplyJob("noshebang", "echo hi\n").exit_code, 0);
  CommandResult wait =
      Kubectl({"wait", "-n", kNs, "sj/noshebang", "--for=condition=Stalled", "--timeout=30s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_EQ(Get("noshebang", "{.status.conditions[?(@.type==\"Stalled\")].reason}"), "InvalidSpec");
  EXPECT_THAT(Get("noshebang", "{.status.message}"), HasSubstr("#! line"));
  EXPECT_TRUE(SlurmJobsFor("noshebang").empty());
  // Fixing the spec submits it.
  ASSERT_EQ(ApplyJob("noshebang", "#!/bin/bash\necho hi\n").exit_code, 0);
  CommandResult done = Kubectl({"wait", "-n", kNs, "sj/noshebang",
                                "--for=jsonpath={.status.jobState}=COMPLETED", "--timeout=60s"});
  EXPECT_EQ(done.exit_code, 0) << done.out << done.err;
  EXPECT_EQ(SlurmJobsFor("noshebang").size(), 1u);
}

TEST_F(E2E, ReservedKeysInExtraAreAConditionAndNothingIsSubmitted) {
  ASSERT_EQ(ApplyJob("reserved", "#!/bin/bash\ntrue\n",
                     "  extra: {comment: mine, name: other, partition: debug}\n")
                .exit_code,
            0);
  CommandResult wait =
      Kubectl({"wait", "-n", kNs, "sj/reserved", "--for=condition=Stalled", "--timeout=30s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_EQ(Get("reserved", "{.status.conditions[?(@.type==\"Stalled\")].reason}"), "InvalidSpec");
  EXPECT_THAT(Get("reserved", "{.status.message}"), HasSubstr("spec.extra sets comment, name"));
  for (const char* filter : {"name=reserved", "name=other", "comment=mine"}) {
    nlohmann::json view = Admin(std::string("/__admin/jobs?") + filter);
    ASSERT_TRUE(view.is_object()) << view.dump();
    EXPECT_EQ(view["submit_counts"]["total"], 0) << filter << ": " << view.dump();
  }
}

TEST_F(E2E, UnknownPartitionIsRejectedOnceWithSlurmsMessage) {
  ASSERT_EQ(ApplyJob("badpart", "#!/bin/bash\ntrue\n", "  partition: nosuch\n").exit_code, 0);
  CommandResult wait =
      Kubectl({"wait", "-n", kNs, "sj/badpart", "--for=condition=Stalled", "--timeout=30s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_EQ(Get("badpart", "{.status.conditions[?(@.type==\"Stalled\")].reason}"),
            "SubmitRejected");
  EXPECT_THAT(Get("badpart", "{.status.message}"), HasSubstr("Invalid partition"));
  // No retry storm: one submit attempt, also after our own status writes.
  std::this_thread::sleep_for(seconds(3));
  const std::string tag = Tag(Get("badpart", "{.metadata.uid}"), 1);
  nlohmann::json view = Admin("/__admin/jobs?comment=" + tag);
  ASSERT_TRUE(view.is_object()) << view.dump();
  EXPECT_EQ(view["submit_counts"]["total"], 1) << view["submit_counts"].dump();
  EXPECT_EQ(view["submit_counts"]["rejected"], 1);
}

// A remote's error message is untrusted input. A 40 KB one (past the 32 KiB a condition's
// message may hold) made every status write fail with 422 Invalid: the SlurmJob showed nothing
// and its Events were never sent. The remote's part is cut; the operator's advice after it stays.
TEST_F(E2E, AHugeErrorMessageFromAgentPlatformIsCutAndTheAdviceStays) {
  ASSERT_TRUE(AdminPost("/__admin/faults", {{"error", "PERMISSION_DENIED"},
                                            {"message", std::string(40000, 'x') + " (end)"},
                                            {"method", "POST"},
                                            {"path", "/job/submit$"},
                                            {"count", 1}}));
  ASSERT_EQ(ApplyJob("bigerror", "#!/bin/bash\ntrue\n").exit_code, 0);
  CommandResult wait = Kubectl(
      {"wait", "-n", kNs, "sj/bigerror",
       "--for=jsonpath={.status.conditions[?(@.type==\"Submitted\")].reason}=PermissionDenied",
       "--timeout=30s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  const std::string message =
      Get("bigerror", "{.status.conditions[?(@.type==\"Submitted\")].message}");
  EXPECT_LT(message.size(), 4096u);
  EXPECT_THAT(message, HasSubstr("xxxx"));
  EXPECT_THAT(message, Not(HasSubstr("(end)")));
  EXPECT_THAT(message, HasSubstr("roles/aiplatform.user"));
  CommandResult events = Kubectl({"get", "events", "-n", kNs, "--field-selector",
                                  "involvedObject.name=bigerror", "-o", "json"});
  EXPECT_THAT(events.out, HasSubstr("PermissionDenied"));
  EXPECT_THAT(events.out, HasSubstr("roles/aiplatform.user"));
}

TEST_F(E2E, ALostSubmitResponseIsFoundByItsTagNotSubmittedAgain) {
  // Agent Platform performs the next submit, then drops the connection: the
  // operator cannot know whether the job exists.
  ASSERT_TRUE(AdminPost("/__admin/faults", {{"action", "perform_then_drop"},
                                            {"method", "POST"},
                                            {"path", "/job/submit$"},
                                            {"count", 1}}));
  ASSERT_EQ(ApplyJob("lostreply", "#!/bin/bash\necho hi\nsleep 1\n").exit_code, 0);
  CommandResult wait = Kubectl({"wait", "-n", kNs, "sj/lostreply",
                                "--for=jsonpath={.status.jobState}=COMPLETED", "--timeout=60s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_EQ(SlurmJobsFor("lostreply").size(), 1u) << "submitted twice";
  EXPECT_EQ(Get("lostreply", "{.status.conditions[?(@.type==\"Submitted\")].reason}"), "Adopted");
}

// An array job's submit reply lost: the tag search finds the array (one record for its task
// and pending-remainder records) and adopts the array's id; nothing is submitted again.
TEST_F(E2E, ALostSubmitReplyOfAnArrayAdoptsTheArrayNeverSubmitsAgain) {
  ASSERT_TRUE(AdminPost("/__admin/faults", {{"action", "perform_then_drop"},
                                            {"method", "POST"},
                                            {"path", "/job/submit$"},
                                            {"count", 1}}));
  ASSERT_EQ(
      ApplyJob("lostarray", "#!/bin/bash\nsleep 1\n", "  array: {indexes: \"0-5%3\"}\n").exit_code,
      0);
  CommandResult ready =
      Kubectl({"wait", "-n", kNs, "sj/lostarray", "--for=condition=Ready", "--timeout=60s"});
  ASSERT_EQ(ready.exit_code, 0) << ready.out << ready.err << Get("lostarray", "{.status}");
  EXPECT_EQ(Get("lostarray", "{.status.conditions[?(@.type==\"Submitted\")].reason}"), "Adopted");
  EXPECT_EQ(Get("lostarray", "{.status.array.completedIndexes}"), "0-5");
  EXPECT_EQ(Get("lostarray", "{.status.run}"), "1");
  const std::vector<nlohmann::json> tasks = SlurmJobsFor("lostarray");
  ASSERT_EQ(tasks.size(), 6u) << "one array of six tasks, submitted once";
  for (const auto& t : tasks) {
    EXPECT_EQ(t.value("array_job_id", int64_t{0}), std::stoll(Get("lostarray", "{.status.jobId}")));
    EXPECT_EQ(t.value("submits_with_same_comment", 0), 1) << t.dump();
  }
}

// More indexes failed than spec.array.maxFailedIndexes while others wait: the operator cancels
// the array (its own id), the waiting tasks never run, and the SlurmJob fails with reason
// MaxFailedIndexesExceeded without a retry.
TEST_F(E2E, TooManyFailedIndexesCancelTheRestOfTheArray) {
  ASSERT_EQ(ApplyJob("toomany", "#!/bin/bash\n#SIM array_fail=0\nsleep 2\n",
                     "  array: {indexes: \"0-7%1\", maxFailedIndexes: 0}\n")
                .exit_code,
            0);
  CommandResult failed =
      Kubectl({"wait", "-n", kNs, "sj/toomany",
               "--for=jsonpath={.status.reason}=MaxFailedIndexesExceeded", "--timeout=60s"});
  ASSERT_EQ(failed.exit_code, 0) << failed.out << failed.err << Get("toomany", "{.status}");
  EXPECT_EQ(Get("toomany", "{.status.phase}"), "Failed");
  EXPECT_EQ(Get("toomany", "{.status.run}"), "1") << "nothing retried";
  std::set<int> ran;
  int cancelled = 0;
  for (const auto& t : SlurmJobsFor("toomany")) {
    if (t.value("start_time", 0.0) > 0 && t.value("state", "") != "CANCELLED") {
      ran.insert(t.value("array_task_id", -1));
    }
    cancelled += t.value("state", "") == "CANCELLED";
  }
  EXPECT_EQ(ran.count(7), 0u) << "the last index never ran";
  EXPECT_GE(cancelled, 5);
  CommandResult describe = Kubectl({"describe", "-n", kNs, "sj", "toomany"});
  EXPECT_THAT(describe.out, HasSubstr("MaxFailedIndexesExceeded"));
}

TEST_F(E2E, AmbiguousSlurmAnswersToASubmitAreFoundByTagNeverSubmittedTwice) {
  // Slurm queues the job, then slurmrestd answers without a job id: 504
  // (slurmctld's reply timed out), error 1004 (communication), or a 200 that
  // lacks job_id. Each may have queued the job: exactly one Slurm job.
  const struct {
    const char* name;
    int status;
    std::vector<int> errors;
  } cases[] = {{"amb-504", 504, {5004}}, {"amb-1004", 500, {1004}}, {"amb-nojobid", 200, {}}};
  for (const auto& c : cases) {
    ASSERT_TRUE(AdminPost("/__admin/faults", {{"action", "perform_then_slurm_error"},
                                              {"method", "POST"},
                                              {"path", "/job/submit$"},
                                              {"slurm_status", c.status},
                                              {"slurm_errors", c.errors},
                                              {"count", 1}}));
    ASSERT_EQ(ApplyJob(c.name, "#!/bin/bash\necho hi\nsleep 1\n").exit_code, 0);
    CommandResult wait = Kubectl({"wait", "-n", kNs, std::string("sj/") + c.name,
                                  "--for=jsonpath={.status.jobState}=COMPLETED", "--timeout=60s"});
    EXPECT_EQ(wait.exit_code, 0) << c.name << ": " << wait.out << wait.err;
    EXPECT_EQ(SlurmJobsFor(c.name).size(), 1u) << c.name << ": submitted twice";
    EXPECT_EQ(Get(c.name, "{.status.conditions[?(@.type==\"Submitted\")].reason}"), "Adopted")
        << c.name;
  }
}

TEST_F(E2E, SigkillAndRestartLosesNothingAndDuplicatesNothing) {
  constexpr int kJobs = 12;
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_EQ(ApplyJob("crash-" + std::to_string(i), "#!/bin/bash\nsleep 2\n").exit_code, 0);
  }
  // Kill the operator mid-flight, without a chance to clean up.
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  operator_->Stop(SIGKILL);
  delete operator_;
  operator_ = nullptr;
  std::this_thread::sleep_for(seconds(1));
  StartOperator();
  for (int i = 0; i < kJobs; ++i) {
    const std::string name = "crash-" + std::to_string(i);
    CommandResult wait = Kubectl({"wait", "-n", kNs, "sj/" + name,
                                  "--for=jsonpath={.status.jobState}=COMPLETED", "--timeout=90s"});
    EXPECT_EQ(wait.exit_code, 0) << name << ": " << wait.out << wait.err;
    EXPECT_EQ(SlurmJobsFor(name).size(), 1u) << name;
  }
}

grpc::health::v1::HealthCheckResponse::ServingStatus Readiness(int port) {
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + seconds(3));
  grpc::health::v1::HealthCheckRequest req;
  req.set_service("readiness");
  grpc::health::v1::HealthCheckResponse resp;
  if (!stub->Check(&ctx, req, &resp).ok()) return grpc::health::v1::HealthCheckResponse::UNKNOWN;
  return resp.status();
}

TEST_F(E2E, StandbyTakesOverAfterTheLeaderIsKilled) {
  // Replace the suite's operator by two replicas that elect a leader.
  operator_->Stop(SIGTERM, seconds(10));
  delete operator_;
  operator_ = nullptr;
  auto replica = [&](const std::string& id) {
    return std::make_unique<Subprocess>(
        std::vector<std::string>{
            SLURMOP_OPERATOR_BINARY, "--kubeconfig=" + *dir_ + "/kubeconfig", "--health-port=0",
            "--health-port-file=" + *dir_ + "/" + id + ".port", "--min-poll-seconds=0.5",
            "--submit-settle-seconds=10", "--leader-elect", "--leader-elect-namespace=e2e",
            "--leader-elect-identity=" + id, "--leader-elect-lease-duration-seconds=3",
            "--leader-elect-renew-deadline-seconds=2", "--leader-elect-retry-period-seconds=0.5",
            "--allow-operator-identity-for-namespaced-clusters",
            testing::AllowStandInFlag(ap_port_)},
        *dir_ + "/operator-" + id + ".log", testing::OperatorEnv(ap_port_, *dir_));
  };
  std::map<std::string, std::unique_ptr<Subprocess>> replicas;
  replicas["a"] = replica("a");
  replicas["b"] = replica("b");
  std::map<std::string, int> ports = {{"a", ReadPort(*dir_ + "/a.port")},
                                      {"b", ReadPort(*dir_ + "/b.port")}};
  auto holder = [&] {
    CommandResult r = Kubectl(
        {"get", "lease", "-n", kNs, "slurmjob-operator", "-o", "jsonpath={.spec.holderIdentity}"});
    return r.exit_code == 0 ? r.out : std::string();
  };
  std::string leader;
  ASSERT_TRUE(WaitUntil([&] { return !(leader = holder()).empty(); }, seconds(20)));
  const std::string standby = leader == "a" ? "b" : "a";
  ASSERT_TRUE(WaitUntil(
      [&] { return Readiness(ports[leader]) == grpc::health::v1::HealthCheckResponse::SERVING; },
      seconds(20)));
  EXPECT_EQ(Readiness(ports[standby]), grpc::health::v1::HealthCheckResponse::NOT_SERVING)
      << "only the leader is ready";

  ASSERT_EQ(ApplyJob("le-1", "#!/bin/bash\nsleep 1\n").exit_code, 0);
  CommandResult w1 = Kubectl({"wait", "-n", kNs, "sj/le-1",
                              "--for=jsonpath={.status.jobState}=COMPLETED", "--timeout=60s"});
  EXPECT_EQ(w1.exit_code, 0) << w1.err;

  // SIGKILL: no chance to release the Lease. The standby must wait out the
  // lease duration (3 s here) and then take over.
  ASSERT_EQ(ApplyJob("le-2", "#!/bin/bash\nsleep 3\n").exit_code, 0);
  auto killed_at = std::chrono::steady_clock::now();
  replicas[leader]->Stop(SIGKILL);
  ASSERT_TRUE(WaitUntil([&] { return holder() == standby; }, seconds(20)));
  double takeover =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  std::cerr << "takeover after SIGKILL: " << takeover << " s (lease duration 3 s)\n";
  EXPECT_LT(takeover, 3.0 + 2 * 0.5 * 1.2 + 2.0);

  CommandResult w2 = Kubectl({"wait", "-n", kNs, "sj/le-2",
                              "--for=jsonpath={.status.jobState}=COMPLETED", "--timeout=60s"});
  EXPECT_EQ(w2.exit_code, 0) << w2.err;
  EXPECT_EQ(SlurmJobsFor("le-1").size(), 1u);
  EXPECT_EQ(SlurmJobsFor("le-2").size(), 1u);

  // A clean stop releases the Lease at once.
  EXPECT_EQ(replicas[standby]->Stop(SIGTERM, seconds(10)), 0);
  replicas.clear();
  StartOperator();
}

// examples/ttl-slurmjob.yaml (spec.ttlSecondsAfterFinished) as a user applies it: the finished
// SlurmJob is kept until its TTL passed and then deleted; the one Argo CD's label marks is kept,
// with the condition TTLSkipped and one Event saying why.
TEST_F(E2E, TtlExampleDeletesAFinishedSlurmJobButKeepsAGitOpsManagedOne) {
  ASSERT_NO_FATAL_FAILURE(ApplyExampleUntil("ttl-slurmjob.yaml", "ttl-demo", "COMPLETED"));
  // The clock starts at status.endTime (whole seconds), not when the status said COMPLETED.
  const int64_t ended = ParseTime(Get("ttl-demo", "{.status.endTime}"));
  ASSERT_GT(ended, 0);
  std::this_thread::sleep_for(seconds(5));
  EXPECT_EQ(Get("ttl-demo", "{.status.phase}"), "Succeeded") << "deleted before its TTL of 10 s";
  CommandResult gone = Kubectl({"wait", "-n", kNs, "sj/ttl-demo", "--for=delete", "--timeout=30s"});
  ASSERT_EQ(gone.exit_code, 0) << gone.out << gone.err;
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GE(now, static_cast<double>(ended + 10)) << "deleted before endTime + 10 s";

  CommandResult skipped = Kubectl(
      {"wait", "-n", kNs, "sj/ttl-gitops-demo", "--for=condition=TTLSkipped", "--timeout=60s"});
  ASSERT_EQ(skipped.exit_code, 0) << skipped.out << skipped.err;
  EXPECT_THAT(Get("ttl-gitops-demo", "{.status.conditions[?(@.type==\"TTLSkipped\")].message}"),
              HasSubstr("app.kubernetes.io/instance=demo-app"));
  std::this_thread::sleep_for(seconds(3));  // later reconciles neither delete it nor say it again
  EXPECT_EQ(Get("ttl-gitops-demo", "{.status.phase}"), "Succeeded");
  CommandResult events =
      Kubectl({"get", "events", "-n", kNs, "--field-selector",
               "involvedObject.name=ttl-gitops-demo,reason=TTLSkippedGitOpsManaged", "-o",
               "jsonpath={range .items[*]}{.reason} {.count}{\"\\n\"}{end}"});
  ASSERT_EQ(events.exit_code, 0) << events.err;
  EXPECT_THAT(events.out, HasSubstr("TTLSkippedGitOpsManaged"));
  EXPECT_EQ(std::count(events.out.begin(), events.out.end(), '\n'), 1) << events.out;
  CommandResult describe = Kubectl({"describe", "-n", kNs, "sj", "ttl-gitops-demo"});
  EXPECT_THAT(describe.out, HasSubstr("TTLSkippedGitOpsManaged"));
}

// examples/deadline-slurmjob.yaml (spec.activeDeadlineSeconds 8) as a user applies it: the
// submit carries Slurm's deadline; once it passed, the operator cancels the job and the SlurmJob is
// Failed with reason DeadlineExceeded, with an Event.
TEST_F(E2E, DeadlineExampleIsCancelledAndFailedOnceItPassed) {
  ASSERT_NO_FATAL_FAILURE(ApplyExampleUntil("deadline-slurmjob.yaml", "deadline-demo", "RUNNING"));
  const int64_t first = ParseTime(Get("deadline-demo", "{.status.firstSubmitTime}"));
  ASSERT_GT(first, 0);
  std::vector<nlohmann::json> jobs = SlurmJobsFor("deadline-demo");
  ASSERT_EQ(jobs.size(), 1u);
  // Slurm's own deadline, planned just before the submit was sent (firstSubmitTime).
  EXPECT_NEAR(jobs[0]["job"].value("deadline", int64_t{0}), first + 8, 1) << jobs[0].dump();
  CommandResult failed =
      Kubectl({"wait", "-n", kNs, "sj/deadline-demo",
               "--for=jsonpath={.status.reason}=DeadlineExceeded", "--timeout=60s"});
  ASSERT_EQ(failed.exit_code, 0) << failed.out << failed.err;
  EXPECT_EQ(Get("deadline-demo", "{.status.phase}"), "Failed");
  EXPECT_EQ(Get("deadline-demo", "{.status.conditions[?(@.type==\"Failed\")].reason}"),
            "DeadlineExceeded");
  EXPECT_EQ(Get("deadline-demo", "{.status.run}"), "1") << "not retried";
  const std::string state = Get("deadline-demo", "{.status.jobState}");
  EXPECT_TRUE(state == "CANCELLED" || state == "DEADLINE") << state;
  EXPECT_GE(ParseTime(Get("deadline-demo", "{.status.endTime}")), first + 8);
  CommandResult describe = Kubectl({"describe", "-n", kNs, "sj", "deadline-demo"});
  EXPECT_THAT(describe.out, HasSubstr("DeadlineExceeded"));
}

// examples/output-slurmjob.yaml (#14 item 5) as a user applies it: the run fails, the status
// names the files Slurm wrote its output and error to, and `kubectl describe` says where to look.
TEST_F(E2E, OutputExampleNamesTheFilesOfTheFailedRun) {
  ASSERT_NO_FATAL_FAILURE(ApplyExampleUntil("output-slurmjob.yaml", "output-demo", "FAILED"));
  const std::string id = Get("output-demo", "{.status.jobId}");
  const std::string out = "/tmp/output-demo-" + id + ".out";
  const std::string err = "/tmp/output-demo-" + id + ".err";
  EXPECT_EQ(Get("output-demo", "{.status.standardOutput}"), out);
  EXPECT_EQ(Get("output-demo", "{.status.standardError}"), err);
  const std::string hint =
      "Its standard output is in " + out + " and its standard error in " + err + " on the cluster.";
  EXPECT_THAT(Get("output-demo", "{.status.conditions[?(@.type==\"Failed\")].message}"),
              HasSubstr(hint));
  CommandResult describe = Kubectl({"describe", "-n", kNs, "sj", "output-demo"});
  EXPECT_THAT(describe.out, HasSubstr(hint));
}

// examples/usage-slurmjob.yaml (#14 item 4) as a user applies it: once the run ended,
// status.usage holds what the stand-in's accounting says it was allocated (cpu per task, gres/gpu
// per node, mem), its CPU- and GPU-seconds, and the counters count it.
TEST_F(E2E, UsageExampleRecordsWhatTheRunWasAllocated) {
  ASSERT_NO_FATAL_FAILURE(ApplyExampleUntil("usage-slurmjob.yaml", "usage-demo", "COMPLETED"));
  CommandResult recorded = Kubectl({"wait", "-n", kNs, "sj/usage-demo",
                                    "--for=jsonpath={.status.usage.run}=1", "--timeout=60s"});
  ASSERT_EQ(recorded.exit_code, 0)
      << recorded.out << recorded.err << Get("usage-demo", "{.status}");
  const nlohmann::json usage = nlohmann::json::parse(Get("usage-demo", "{.status.usage}"));
  const nlohmann::json& tres = usage["allocatedTres"];
  EXPECT_EQ(tres.value("cpu", 0), 4) << usage.dump();
  EXPECT_EQ(tres.value("gres/gpu", 0), 2) << usage.dump();
  EXPECT_EQ(tres.value("mem", 0), 2048) << usage.dump();
  EXPECT_EQ(tres.value("node", 0), 1) << usage.dump();
  const int64_t elapsed = usage.value("elapsedSeconds", int64_t{0});
  EXPECT_GE(elapsed, 5) << usage.dump();
  EXPECT_LE(elapsed, 7) << usage.dump();
  EXPECT_EQ(usage.value("cpuSeconds", int64_t{0}), 4 * elapsed);
  EXPECT_EQ(usage.value("gpuSeconds", int64_t{0}), 2 * elapsed);
  EXPECT_EQ(usage.value("partition", ""), "debug");

  http::Request req;
  req.url = "http://127.0.0.1:" + std::to_string(metrics_port_) + "/metrics";
  absl::StatusOr<http::Response> m = (*http::CpprestTransport::Create({}))->Send(req);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::regex gpu_line(
      R"(slurmjob_operator_allocated_gpu_seconds_total\{[^}]*namespace="e2e"[^}]*\} ([0-9.e+]+))");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(m->body, match, gpu_line)) << m->body;
  EXPECT_GE(std::stod(match[1].str()), static_cast<double>(2 * elapsed));
}

// Every Slurm REST version shows the output paths its own way (v0.0.38 the pattern as asked,
// v0.0.39-0.0.42 partly filled in, v0.0.43+ the pattern and Slurm's expansion, as the stand-in
// renders them from each release's code): the status says the same files for all of them.
TEST_F(E2E, EveryRestVersionResolvesTheSameOutputFiles) {
  for (const std::string version :
       {"v0.0.38", "v0.0.39", "v0.0.40", "v0.0.41", "v0.0.42", "v0.0.43", "v0.0.44"}) {
    const std::string n = version.substr(5, 2);
    std::string cluster = testing::LocalSlurmClusterManifest(kNs, ap_port_, version);
    cluster.replace(cluster.find("name: local,"), 12, "name: out" + n + ",");
    ASSERT_EQ(Kubectl({"apply", "-f", "-"}, cluster).exit_code, 0) << version;
    const std::string name = "out-" + n;
    const std::string yaml =
        "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\n"
        "metadata: {name: " +
        name +
        ", namespace: e2e}\n"
        "spec:\n  clusterRef: {name: out" +
        n +
        "}\n  currentWorkingDirectory: /home/e2e/runs/\n"
        "  standardOutput: \"logs/%x-%8j.out\"\n"
        "  standardError: \"/var/log/jobs/%A_%a-%%.err\"\n"
        "  script: |\n    #!/bin/bash\n    exit 3\n";
    ASSERT_EQ(Kubectl({"apply", "-f", "-"}, yaml).exit_code, 0) << version;
    CommandResult failed =
        Kubectl({"wait", "-n", kNs, "sj/" + name, "--for=condition=Failed", "--timeout=60s"});
    ASSERT_EQ(failed.exit_code, 0) << version << ": " << failed.out << failed.err;
    const std::string id = Get(name, "{.status.jobId}");
    char padded[16];
    std::snprintf(padded, sizeof padded, "%08d", std::stoi(id));
    EXPECT_EQ(Get(name, "{.status.standardOutput}"),
              "/home/e2e/runs/logs/" + name + "-" + padded + ".out")
        << version;
    EXPECT_EQ(Get(name, "{.status.standardError}"), "/var/log/jobs/" + id + "_4294967294-%.err")
        << version;
    EXPECT_THAT(Get(name, "{.status.message}"), HasSubstr("/home/e2e/runs/logs/")) << version;
  }
}

// examples/array-slurmjob.yaml (#14 item 3) applied with the real kubectl once per REST version
// (all seven at once, each on its own SlurmCluster): one Slurm array job "0-3%2"; index 2 fails
// on its first try, so run 2 submits index 2 alone ("2%2") under its own tag; the SlurmJob
// succeeds with completedIndexes 0-3. The stand-in shows each version's records: the pending
// remainder record, a record per started task, the last task keeping the array's id.
TEST_F(E2E, ArrayExampleRetriesOnlyTheFailedIndexOnEveryRestVersion) {
  const std::string example =
      ReadFile(std::string(SLURMOP_SOURCE_DIR) + "/examples/array-slurmjob.yaml");
  ASSERT_NE(example.find("name: array-demo"), std::string::npos);
  const std::vector<std::string> versions = {"v0.0.38", "v0.0.39", "v0.0.40", "v0.0.41",
                                             "v0.0.42", "v0.0.43", "v0.0.44"};
  auto replace = [](std::string text, const std::string& from, const std::string& to) {
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
  };
  for (const std::string& version : versions) {
    const std::string n = version.substr(5, 2);
    std::string cluster = testing::LocalSlurmClusterManifest(kNs, ap_port_, version);
    cluster.replace(cluster.find("name: local,"), 12, "name: arr" + n + ",");
    ASSERT_EQ(Kubectl({"apply", "-f", "-"}, cluster).exit_code, 0) << version;
    std::string yaml = replace(example, "name: array-demo", "name: array-" + n);
    yaml = replace(yaml, "    name: local", "    name: arr" + n);
    // The stand-in fails index 2 in the first array job submitted with a script text: one
    // text per version.
    yaml = replace(yaml, "    sleep 1\n", "    sleep 1  # " + version + "\n");
    CommandResult applied = Kubectl({"apply", "-n", kNs, "-f", "-"}, yaml);
    ASSERT_EQ(applied.exit_code, 0) << version << ": " << applied.out << applied.err;
  }
  for (const std::string& version : versions) {
    const std::string name = "array-" + version.substr(5, 2);
    CommandResult ready =
        Kubectl({"wait", "-n", kNs, "sj/" + name, "--for=condition=Ready", "--timeout=90s"});
    ASSERT_EQ(ready.exit_code, 0) << version << ": " << ready.out << ready.err
                                  << Get(name, "{.status}");
    EXPECT_EQ(Get(name, "{.status.phase}"), "Succeeded") << version;
    EXPECT_EQ(Get(name, "{.status.run}"), "2") << version;
    EXPECT_EQ(Get(name, "{.status.array.completedIndexes}"), "0-3") << version;
    EXPECT_EQ(Get(name, "{.status.array.succeeded}"), "4") << version;
    EXPECT_EQ(Get(name, "{.status.array.total}"), "4") << version;
    EXPECT_EQ(Get(name, "{.status.array.failedIndexes}"), "") << version;
    EXPECT_EQ(Get(name, "{.status.array.runIndexes}"), "2") << version;
    EXPECT_EQ(Get(name, "{.status.array.indexFailures}"), "2:1") << version;
    EXPECT_THAT(Get(name, "{.status.runs[0].message}"), HasSubstr("Retried indexes 2")) << version;
    // Slurm saw one array job per run: four tasks of run 1, index 2 alone in run 2.
    const std::string uid = Get(name, "{.metadata.uid}");
    const nlohmann::json jobs = Admin("/__admin/jobs")["jobs"];
    std::map<int, std::vector<int>> tasks_by_run;
    std::set<int64_t> arrays;
    for (const auto& j : jobs) {
      for (int run : {1, 2}) {
        if (j.value("comment", "") == Tag(uid, run)) {
          tasks_by_run[run].push_back(j.value("array_task_id", -1));
          arrays.insert(j.value("array_job_id", int64_t{0}));
        }
      }
    }
    std::sort(tasks_by_run[1].begin(), tasks_by_run[1].end());
    EXPECT_THAT(tasks_by_run[1], ::testing::ElementsAre(0, 1, 2, 3)) << version;
    EXPECT_THAT(tasks_by_run[2], ::testing::ElementsAre(2)) << version;
    EXPECT_EQ(arrays.size(), 2u) << version;
    EXPECT_EQ(arrays.count(std::stoll(Get(name, "{.status.jobId}"))), 1u) << version;
  }
}

// The deadline holds while the operator is down, as Slurm keeps it: without a time limit of its
// own, the job runs with the limit slurmctld cut to the whole minutes left before the deadline
// (62 s: one minute), ends TIMEOUT there with nobody watching, and the operator, back, records it
// as DeadlineExceeded.
TEST_F(E2E, TheDeadlineHoldsWhileTheOperatorIsDown) {
  const std::string yaml =
      "apiVersion: hpc.slurmoperator.dev/v1alpha1\nkind: SlurmJob\n"
      "metadata: {name: deadline-down, namespace: e2e}\n"
      "spec:\n  clusterRef: {name: local}\n  activeDeadlineSeconds: 62\n"
      "  script: |\n    #!/bin/bash\n    sleep 600\n";
  ASSERT_EQ(Kubectl({"apply", "-f", "-"}, yaml).exit_code, 0);
  CommandResult running = Kubectl({"wait", "-n", kNs, "sj/deadline-down",
                                   "--for=jsonpath={.status.jobState}=RUNNING", "--timeout=60s"});
  ASSERT_EQ(running.exit_code, 0) << running.out << running.err;
  operator_->Stop(SIGTERM, seconds(10));
  delete operator_;
  operator_ = nullptr;
  std::vector<nlohmann::json> jobs;
  EXPECT_TRUE(WaitUntil(
      [&] {
        jobs = SlurmJobsFor("deadline-down");
        return jobs.size() == 1 && jobs[0].value("state", "") == "TIMEOUT";
      },
      seconds(90)))
      << "Slurm ended the job at the limit it cut: " << (jobs.empty() ? "" : jobs[0].dump());
  StartOperator();
  ASSERT_GT(health_port_, 0);
  CommandResult failed =
      Kubectl({"wait", "-n", kNs, "sj/deadline-down",
               "--for=jsonpath={.status.reason}=DeadlineExceeded", "--timeout=60s"});
  ASSERT_EQ(failed.exit_code, 0) << failed.out << failed.err;
  EXPECT_EQ(Get("deadline-down", "{.status.jobState}"), "TIMEOUT");
  EXPECT_EQ(Get("deadline-down", "{.status.phase}"), "Failed");
  EXPECT_THAT(Get("deadline-down", "{.status.message}"),
              HasSubstr("reached the time limit Slurm cut to end by the deadline"));
}

// A time limit longer than the deadline could never start (Slurm's deadline_ok): the API server
// refuses it at admission by the CRD's rule, with its message. (The operator refuses such a spec
// too, with InvalidSpec, where an API server did not apply the rule:
// DecideBadInput/TimeLimitLongerThanTheDeadline.)
TEST_F(E2E, ATimeLimitLongerThanTheDeadlineIsRefused) {
  CommandResult applied =
      ApplyJob("deadline-short", "#!/bin/bash\nsleep 1\n", "  activeDeadlineSeconds: 120\n");
  EXPECT_NE(applied.exit_code, 0) << applied.out;
  EXPECT_THAT(applied.err, HasSubstr("timeLimitMinutes must end within activeDeadlineSeconds"));
  EXPECT_NE(Kubectl({"get", "-n", kNs, "sj", "deadline-short"}).exit_code, 0) << "not created";
  CommandResult fits = ApplyJob("deadline-fits", "#!/bin/bash\nsleep 1\n",
                                "  activeDeadlineSeconds: 300\n");  // 5 min within 300 s
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
}

}  // namespace
}  // namespace slurmop
