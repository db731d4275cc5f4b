// File: tests/reconcile/executor_test.cc
//
// The REAL Executor, driven end to end through its seams: an in-memory
// Kubernetes API (tests/reconcile/fakes/fake_kube.h) with informer-cache
// views over it, and the REAL Agent Platform client (NewSlurmApiClient) over
// a transport that answers with the raw HTTP Agent Platform sends
// (tests/reconcile/fakes/fake_agent_platform.h). One test per row of the
// error table in /work/shared/reference/agent-platform-slurm-api.md: from the
// wire bytes to what the user sees (the SlurmJob's status, its Events) and to
// what happens next (requeue, backoff, nothing; how many submits were sent).
//
// Tests named Fixed* were written as failing tests for controller bugs (a
// refused submit sent again; Agent Platform refusals treated as maybe-delivered).

#include "controller/reconcile/executor.h"

#include <chrono>
#include <iostream>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "controller/agentplatform/client.h"
#include "controller/api/finalizers.h"
#include "controller/api/resources.h"
#include "controller/api/types.h"
#include "controller/common/clock.h"
#include "controller/reconcile/cluster_protector.h"
#include "controller/reconcile/cluster_reconciler.h"
#include "controller/reconcile/conditions.h"
#include "controller/reconcile/resource_types.h"
#include "controller/reconcile/submit_target_note.h"
#include "controller/server/metric_names.h"
#include "controller/server/metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/reconcile/fakes/fake_agent_platform.h"
#include "tests/reconcile/fakes/fake_kube.h"
#include "tests/reconcile/fakes/test_objects.h"

namespace slurmop::reconcile {
namespace {

using std::chrono::seconds;
using testing::CacheView;
using ::testing::Contains;
using ::testing::ElementsAre;
using testing::FakeCredentialsResolver;
using testing::FixedTokenSource;
using testing::GoogleErrorReply;
using ::testing::HasSubstr;
using testing::InMemoryKube;
using ::testing::IsEmpty;
using testing::KubeCall;
using testing::Meta;
using ::testing::Not;
using testing::RecordingEventSink;
using testing::ScriptedAgentPlatform;
using ::testing::StartsWith;
using testing::StringBody;
using testing::StructuredBody;
using testing::WireCall;

constexpr char kNs[] = "team-a";
constexpr char kName[] = "train";
constexpr char kKey[] = "team-a/train";
constexpr char kUid[] = "3f2a9c1e-0b7d-4e55-9a63-1c2d3e4f5a6b";
constexpr char kTag[] = "slurmjob-operator:team-a/3f2a9c1e-0b7d-4e55-9a63-1c2d3e4f5a6b/1";
constexpr char kToken[] = "ya29.fixed-test-token";
constexpr char kCallUrl[] =
    "https://us-central1-aiplatform.googleapis.com/v1beta1/projects/proj/locations/us-central1/"
    "modelDevelopmentClusters/c1:callSlurmRestApi?prettyPrint=false";

constexpr char kPost[] = "HTTP_METHOD_POST";
constexpr char kGet[] = "HTTP_METHOD_GET";
constexpr char kDelete[] = "HTTP_METHOD_DELETE";
constexpr char kSubmit42[] = "/slurm/v0.0.42/job/submit";
constexpr char kJob42[] = "/slurm/v0.0.42/job/42";
constexpr char kDbJob42[] = "/slurmdb/v0.0.42/job/42";
constexpr char kJobs42[] = "/slurm/v0.0.42/jobs/";
// start_time: the SlurmJob's creationTimestamp (the fake API server's
// 2023-11-14T22:13:20Z = 1700000000) minus an hour.
constexpr char kDbJobsTrain42[] = "/slurmdb/v0.0.42/jobs?job_name=train&start_time=uts1699996400";

// ------------------------------------------------------------ Slurm answers
// Slurm's JSON as slurmrestd 24.11 (v0.0.42) and 22.05 (v0.0.38) write it
// (slurm-rest-versions.md §4-5).

const std::string kMeta42 =
    R"("meta": {"plugin": {"type": "openapi/slurmctld", "name": "Slurm OpenAPI slurmctld", )"
    R"("data_parser": "data_parser/v0.0.42", "accounting_storage": "accounting_storage/slurmdbd"}, )"
    R"("client": {"source": "[unix]:/run/slurmrestd.socket", "user": "alice", "group": "alice"}, )"
    R"("command": [], "slurm": {"version": {"major": "24", "micro": "7", "minor": "11"}, )"
    R"("release": "24.11.7", "cluster": "cluster"}})";

const std::string kMeta38 =
    R"("meta": {"plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"}, )"
    R"("Slurm": {"version": {"major": 22, "micro": 8, "minor": 5}, "release": "22.05.8"}})";

std::string SubmitOk42(int64_t id, const std::string& warnings = "[]") {
  return absl::StrCat(R"({"job_id": )", id, R"(, "step_id": "batch", "job_submit_user_msg": "", )",
                      kMeta42, R"(, "errors": [], "warnings": )", warnings, "}");
}

std::string NoVal(int64_t n, bool set = true) {
  return absl::StrCat(R"({"set": )", set ? "true" : "false", R"(, "infinite": false, "number": )",
                      n, "}");
}

// One job record of GET /slurm/v0.0.42/job/ID or /jobs/.
std::string JobRecord42(int64_t id, const std::string& state, int return_code = 0,
                        const std::string& comment = kTag) {
  const bool pending = state == "PENDING";
  const bool final = state == "COMPLETED" || state == "FAILED" || state == "CANCELLED";
  const std::string status = !final                 ? "SUCCESS"
                             : state == "CANCELLED" ? "SIGNALED"
                             : return_code == 0     ? "SUCCESS"
                                                    : "ERROR";
  const std::string signal = state == "CANCELLED"
                                 ? absl::StrCat(R"({"id": )", NoVal(9), R"(, "name": "KILL"})")
                                 : absl::StrCat(R"({"id": )", NoVal(0, false), R"(, "name": ""})");
  return absl::StrCat(
      R"({"job_id": )", id, R"(, "name": "train", "account": "", "comment": ")", comment,
      R"(", "partition": "gpu", "job_state": [")", state, R"("], "state_reason": ")",
      pending ? "Priority" : "None", R"(", "state_description": "", )",
      R"("exit_code": {"status": [")", status, R"("], "return_code": )",
      NoVal(return_code, state != "CANCELLED"), R"(, "signal": )", signal, "}, ",
      R"("submit_time": )", NoVal(1700000000), R"(, "start_time": )",
      NoVal(pending ? 0 : 1700000005), R"(, "end_time": )", NoVal(final ? 1700000017 : 0),
      R"(, "time_limit": {"set": false, "infinite": true, "number": 0}, "nodes": ")",
      pending ? "" : "node1",
      R"(", "user_name": "alice", "current_working_directory": "/tmp", "standard_output": )"
      R"("/tmp/slurm-42.out"})");
}

std::string JobAnswer42(const std::string& records) {
  return absl::StrCat(R"({"jobs": [)", records, R"(], "last_backfill": )", NoVal(1700000010),
                      R"(, "last_update": )", NoVal(1700000017), ", ", kMeta42,
                      R"(, "errors": [], "warnings": []})");
}

const std::string kUnknownJob42 = absl::StrCat(
    R"({"jobs": [], "errors": [{"description": "Unable to query JobId=42", "error_number": 2017, )"
    R"("error": "Invalid job id specified", "source": "_handle_job_get"}], "warnings": [], )",
    kMeta42, "}");

std::string DbJob42(const std::string& state, int return_code) {
  return absl::StrCat(
      R"({"jobs": [{"job_id": 42, "name": "train", "user": "alice", "account": "", )"
      R"("partition": "gpu", "state": {"current": [")",
      state, R"("], "reason": "None"}, "exit_code": {"status": [")",
      return_code == 0 ? "SUCCESS" : "ERROR", R"("], "return_code": )", NoVal(return_code),
      R"(, "signal": {"id": )", NoVal(0, false),
      R"(, "name": ""}}, "comment": {"administrator": "", "job": ")", kTag,
      R"(", "system": ""}, "time": {"elapsed": 12, "eligible": 1700000000, "end": 1700000017, )"
      R"("start": 1700000005, "submission": 1700000000, "suspended": 0, "limit": )",
      NoVal(0, false), R"(, "planned": )", NoVal(5),
      R"(, "system": {"seconds": 0, "microseconds": 4000}, "total": {"seconds": 0, )"
      R"("microseconds": 9000}, "user": {"seconds": 0, "microseconds": 5000}}, )"
      R"("stdout": "/tmp/slurm-42.out", "working_directory": "/tmp", "steps": []}], )",
      kMeta42, R"(, "errors": [], "warnings": []})");
}

// DbJob42 with what slurmdbd records as allocated (data_parser v0.0.42 TRES elements).
std::string DbJob42WithTres(const std::string& state, int return_code) {
  nlohmann::json j = nlohmann::json::parse(DbJob42(state, return_code));
  j["jobs"][0]["account"] = "proj-llm";
  j["jobs"][0]["time"]["elapsed"] = 100;
  j["jobs"][0]["tres"] = {{"allocated",
                           {{{"type", "cpu"}, {"name", ""}, {"id", 1}, {"count", 8}},
                            {{"type", "mem"}, {"name", ""}, {"id", 2}, {"count", 32768}},
                            {{"type", "node"}, {"name", ""}, {"id", 4}, {"count", 1}},
                            {{"type", "billing"}, {"name", ""}, {"id", 5}, {"count", 8}},
                            {{"type", "gres"}, {"name", "gpu"}, {"id", 1001}, {"count", 2}}}},
                          {"requested", nlohmann::json::array()}};
  return j.dump();
}

// GET /slurmdb/v0.0.42/jobs?job_name=... when accounting has no such job.
const std::string kDbNothing42 = absl::StrCat(
    R"({"jobs": [], "errors": [], "warnings": [{"description": )"
    R"j("slurmdb_jobs_get(0x55d0c0a1b2c0) found nothing", "source": "slurmdb_jobs_get"}], )j",
    kMeta42, "}");

const std::string kCancelOk42 =
    absl::StrCat(R"({"status": [], )", kMeta42, R"(, "errors": [], "warnings": []})");

const std::string kBadPartition42 = absl::StrCat(
    "{", kMeta42,
    R"(, "errors": [{"description": "Batch job submission failed", "error_number": 2000, )"
    R"j("error": "Invalid partition name specified", "source": "slurm_submit_batch_job()"}], )j"
    R"("warnings": []})");

const std::string kBadFieldType42 = absl::StrCat(
    "{", kMeta42,
    R"(, "errors": [{"description": "Expected integer for field \"tasks_per_node\" but got )"
    R"(string \"two\"", "error_number": 9202, "error": "Data conversion failed", )"
    R"j("source": "PARSE_FUNC(UINT16)"}], "warnings": []})j");

// ------------------------------------------------------------ Google errors

const std::string kPermissionDenied = R"({
  "error": {
    "code": 403,
    "message": "Permission 'aiplatform.googleapis.com/modelDevelopmentClusters.run' denied on resource '//aiplatform.googleapis.com/projects/proj/locations/us-central1/modelDevelopmentClusters/c1' (or it may not exist).",
    "status": "PERMISSION_DENIED",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "IAM_PERMISSION_DENIED",
        "domain": "aiplatform.googleapis.com",
        "metadata": {
          "permission": "aiplatform.googleapis.com/modelDevelopmentClusters.run",
          "resource": "projects/proj/locations/us-central1/modelDevelopmentClusters/c1"
        }
      }
    ]
  }
}
)";

const std::string kClusterNotFound = R"({
  "error": {
    "code": 404,
    "message": "ModelDevelopmentCluster projects/proj/locations/us-central1/modelDevelopmentClusters/c1 not found.",
    "status": "NOT_FOUND"
  }
}
)";

const std::string kInvalidArgument = R"({
  "error": {
    "code": 400,
    "message": "Request contains an invalid argument.",
    "status": "INVALID_ARGUMENT",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.BadRequest",
        "fieldViolations": [
          {"field": "path", "description": "path must start with /slurm/ or /slurmdb/"}
        ]
      }
    ]
  }
}
)";

const std::string kUnavailable = R"({
  "error": {
    "code": 503,
    "message": "The service is currently unavailable.",
    "status": "UNAVAILABLE"
  }
}
)";

// ------------------------------------------------------------------ fixture

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    agentplatform::ClientOptions o;
    o.transport = &ap_;
    o.clock = &clock_;
    o.sleep = [this](std::chrono::nanoseconds d) {
      ++client_sleeps_;
      clock_.Advance(d);
    };
    o.jitter = [] { return 0.5; };
    api_ = agentplatform::NewSlurmApiClient(o);
    NewExecutor();
    AddCluster("v0.0.42");
  }

  void TearDown() override {
    EXPECT_THAT(ap_.unexpected(), IsEmpty()) << "calls the test did not script";
  }

  // A new executor = a restarted operator process (empty memos).
  // The fixture's SlurmCluster has no credentialsSecretRef: these tests run as a single-team
  // install that lends the operator's identity to namespaced SlurmClusters.
  void NewExecutor(bool allow_operator_identity = true, std::string note_key = "") {
    ExecutorOptions options;
    options.submit_note_key = std::move(note_key);
    options.access.allow_operator_identity_for_namespaced_clusters = allow_operator_identity;
    options.access.operator_namespace = "slurmjob-operator-system";
    exec_ = std::make_unique<Executor>(kube_, jobs_, clusters_, *api_, creds_, events_, clock_,
                                       options);
    exec_->SetClusterScopedCaches(&cluster_clusters_, &namespaces_);
  }

  void AddCluster(const std::string& version) {
    ASSERT_TRUE(
        kube_.Create(SlurmClustersResource(), kNs, testing::SlurmClusterObject(kNs, "a3", version))
            .ok());
    kube_.ClearCalls();
  }

  // Applies the SlurmJob as a user would; spec_extra is merged into .spec.
  void AddJob(const nlohmann::json& spec_extra = nlohmann::json::object()) {
    nlohmann::json spec = {{"clusterRef", {{"name", "a3"}}}, {"script", "#!/bin/bash\necho hi\n"}};
    spec.merge_patch(spec_extra);
    nlohmann::json j = {{"apiVersion", std::string(api::kApiVersion)},
                        {"kind", "SlurmJob"},
                        {"metadata", {{"name", kName}, {"namespace", kNs}, {"uid", kUid}}},
                        {"spec", spec}};
    ASSERT_TRUE(kube_.Create(SlurmJobsResource(), kNs, j).ok());
    kube_.ClearCalls();
  }

  // A SlurmJob whose script is key train.sh of ConfigMap "scripts".
  void AddJobWithScriptFrom() {
    AddJob({{"script", nullptr},
            {"scriptFrom", {{"configMapKeyRef", {{"name", "scripts"}, {"key", "train.sh"}}}}}});
  }

  ReconcileResult Reconcile() { return exec_->Reconcile(kKey); }

  std::optional<nlohmann::json> Object() { return kube_.Object("slurmjobs", kNs, kName); }

  // The user points SlurmCluster a3 at `cluster_id` (a new generation of it).
  void PointClusterAt(const std::string& cluster_id) {
    kube_.MutateBehindTheBack("slurmclusters", kNs, "a3", [&](nlohmann::json& o) {
      o["spec"]["clusterId"] = cluster_id;
      o["metadata"]["generation"] = o["metadata"].value("generation", 1) + 1;
    });
  }
  // Until on_request is reset, status writes made once `n` submits were sent are refused before
  // they leave: what is stored then is what a process dying after that submit would leave.
  void RefuseStatusWritesAfterSubmit(int n) {
    kube_.on_request = [this, n](const testing::KubeCall& c) {
      if (c.verb == "update-status" && Submits() == n) {
        kube_.FailNext("update-status", http::TransportError(absl::StatusCode::kUnavailable,
                                                             "connection refused", false));
      }
    };
  }

  // After RunJob42: the live queue shows job 42 COMPLETED and accounting's record of it says
  // `accounting_state` (with its allocation); one reconcile, and the status it leaves.
  v1alpha1::SlurmJobStatus EndJob42(const std::string& accounting_state) {
    clock_.Advance(std::chrono::seconds(1));
    ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "COMPLETED", 0))));
    ap_.On(kGet, kDbJob42, StructuredBody(200, DbJob42WithTres(accounting_state, 0)));
    Reconcile();
    v1alpha1::SlurmJobStatus s = Status();
    EXPECT_EQ(s.job_state(), "COMPLETED");
    return s;
  }
  v1alpha1::SlurmJobStatus Status() {
    std::optional<nlohmann::json> o = Object();
    if (!o) {
      ADD_FAILURE() << "the SlurmJob is gone";
      return {};
    }
    absl::StatusOr<v1alpha1::SlurmJob> j = api::SlurmJobFromObject(*o);
    EXPECT_TRUE(j.ok()) << j.status();
    return j.ok() ? j->status() : v1alpha1::SlurmJobStatus();
  }

  v1alpha1::Condition Cond(std::string_view type) {
    v1alpha1::SlurmJobStatus s = Status();
    const v1alpha1::Condition* c = FindCondition(s.conditions(), type);
    if (c == nullptr) {
      ADD_FAILURE() << "no condition " << type << " in " << Object()->dump();
      return {};
    }
    return *c;
  }

  bool HasFinalizer() {
    std::optional<nlohmann::json> o = Object();
    if (!o) return false;
    for (const auto& f : (*o)["metadata"].value("finalizers", nlohmann::json::array())) {
      if (f == std::string(api::kSlurmJobFinalizer)) return true;
    }
    return false;
  }

  int Submits(const std::string& path = kSubmit42) { return ap_.Count(kPost, path); }

  // A job submitted as 42 and recorded (reconcile 1 of its life).
  void SubmitJob42() {
    AddJob();
    ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));
    ReconcileResult r = Reconcile();
    ASSERT_EQ(Status().job_id(), 42) << Object()->dump();
    ASSERT_EQ(r.requeue_after, std::optional<Duration>(seconds(1)));
  }

  // The job seen RUNNING (a reconcile one poll interval later).
  // The accounting read of a job the live queue shows ended (its usage, job_usage.h).
  void ScriptAccountingOfTheEnd() {
    ap_.On(kGet, kDbJob42, StructuredBody(200, DbJob42("COMPLETED", 0)));
  }

  void RunJob42() {
    SubmitJob42();
    clock_.Advance(seconds(1));
    ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "RUNNING"))));
    Reconcile();
    ASSERT_EQ(Status().job_state(), "RUNNING");
  }

  FakeClock clock_;
  InMemoryKube kube_;
  CacheView jobs_{kube_, "slurmjobs"};
  CacheView clusters_{kube_, "slurmclusters"};
  CacheView cluster_clusters_{kube_, "clusterslurmclusters"};
  CacheView namespaces_{kube_, "namespaces"};
  ScriptedAgentPlatform ap_;
  std::shared_ptr<FixedTokenSource> token_ = std::make_shared<FixedTokenSource>(kToken);
  FakeCredentialsResolver creds_{token_};
  RecordingEventSink events_;
  int client_sleeps_ = 0;
  std::unique_ptr<agentplatform::SlurmApi> api_;
  std::unique_ptr<Executor> exec_;
};

MATCHER_P2(EventIs, type, reason, "") { return arg.type == type && arg.reason == reason; }

// ------------------------------------------------------ status 200 + job id

TEST_F(ExecutorTest, SubmitStructuredBodyRecordsTheJobAndSendsOneSubmit) {
  AddJob();
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));

  ReconcileResult r = Reconcile();

  // The user sees the id, PENDING, Submitted=True and a Submitted Event.
  v1alpha1::SlurmJobStatus s = Status();
  EXPECT_EQ(s.job_id(), 42);
  EXPECT_EQ(s.job_state(), "PENDING");
  EXPECT_EQ(s.phase(), "Pending");
  EXPECT_EQ(s.cluster(), "a3");
  EXPECT_EQ(Cond(kSubmitted).status(), "True");
  EXPECT_EQ(Cond(kSubmitted).reason(), "Submitted");
  EXPECT_EQ(Cond(kReconciling).status(), "True");
  EXPECT_EQ(Cond(kStalled).status(), "False");
  EXPECT_TRUE(HasFinalizer());
  ASSERT_THAT(events_.WithReason("Submitted"), ElementsAre(EventIs("Normal", "Submitted")));
  EXPECT_THAT(events_.WithReason("Submitted")[0].note, HasSubstr("Slurm job 42"));
  // Next look after the minimum poll interval; nothing transient.
  EXPECT_EQ(r.requeue_after, std::optional<Duration>(seconds(1)));
  EXPECT_FALSE(r.retry_with_backoff);

  // Exactly one call, and the envelope is what Agent Platform documents.
  ASSERT_EQ(ap_.calls().size(), 1u);
  const WireCall c = ap_.calls()[0];
  EXPECT_EQ(c.request.method, "POST");
  EXPECT_EQ(c.request.url, kCallUrl);
  EXPECT_EQ(c.request.headers.at("Authorization"), std::string("Bearer ") + kToken);
  EXPECT_EQ(c.request.headers.at("Content-Type"), "application/json");
  EXPECT_EQ(c.method, "HTTP_METHOD_POST");
  EXPECT_EQ(c.path, "/slurm/v0.0.42/job/submit");
  ASSERT_TRUE(c.body.is_object()) << c.raw_envelope;
  EXPECT_EQ(c.body["script"], "#!/bin/bash\necho hi\n");
  const nlohmann::json& job = c.body["job"];
  EXPECT_EQ(job["comment"], kTag);
  EXPECT_EQ(job["name"], "train");
  EXPECT_EQ(job["partition"], "gpu");
  EXPECT_EQ(job["current_working_directory"], "/tmp");
  ASSERT_TRUE(job["environment"].is_array()) << job.dump();
  EXPECT_THAT(job["environment"], Contains("PATH=/usr/local/bin:/usr/bin:/bin"));

  // Our own writes wake the key again (watch events): no second call, no write.
  kube_.ClearCalls();
  ReconcileResult again = Reconcile();
  EXPECT_EQ(ap_.calls().size(), 1u);
  EXPECT_EQ(kube_.WriteCount(), 0);
  EXPECT_TRUE(again.requeue_after.has_value());
}

TEST_F(ExecutorTest, SubmitBodyStringFormIsAcceptedToo) {
  AddJob();
  ap_.On(kPost, kSubmit42, StringBody(200, SubmitOk42(43)));
  ReconcileResult r = Reconcile();
  EXPECT_EQ(Status().job_id(), 43);
  EXPECT_EQ(Status().job_state(), "PENDING");
  EXPECT_EQ(Cond(kSubmitted).status(), "True");
  EXPECT_THAT(events_.WithReason("Submitted"), ElementsAre(EventIs("Normal", "Submitted")));
  EXPECT_EQ(Submits(), 1);
  EXPECT_FALSE(r.retry_with_backoff);
}

// ------------------------------------------------- status 200 with warnings

TEST_F(ExecutorTest, SubmitWithWarningsRecordsTheJobAndSurfacesTheWarning) {
  AddJob();
  ap_.On(kPost, kSubmit42,
         StructuredBody(200, SubmitOk42(42, R"([{"description": "Requested partition )"
                                            R"(configuration not available now", "source": )"
                                            R"j("slurm_submit_batch_job()"}])j")));
  Reconcile();
  EXPECT_EQ(Status().job_id(), 42);
  EXPECT_EQ(Cond(kSubmitted).status(), "True");
  std::vector<EventSpec> w = events_.WithReason("SlurmWarning");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].type, "Warning");
  EXPECT_THAT(w[0].note, HasSubstr("Requested partition configuration not available now"));
  EXPECT_EQ(Submits(), 1);
}

TEST_F(ExecutorTest, ThousandsOfSubmitWarningsAreOneEvent) {
  AddJob();
  std::string warnings = "[";
  for (int i = 0; i < 3000; ++i) {
    absl::StrAppend(&warnings, i == 0 ? "" : ",", R"({"description": "warning )", i, R"("})");
  }
  warnings += "]";
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42, warnings)));
  Reconcile();
  EXPECT_EQ(Status().job_id(), 42);
  std::vector<EventSpec> w = events_.WithReason("SlurmWarning");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0].note, StartsWith("Slurm warned 3000 times: warning 0; warning 1; "));
  EXPECT_THAT(w[0].note, HasSubstr(" more)"));
  EXPECT_LE(w[0].note.size(), 1024u);
  EXPECT_EQ(Submits(), 1);
}

// ------------------------------------- tracking; status 404 for a live job

TEST_F(ExecutorTest, TracksRunningThenCompleted) {
  ScriptAccountingOfTheEnd();
  RunJob42();
  v1alpha1::SlurmJobStatus s = Status();
  EXPECT_EQ(s.phase(), "Running");
  EXPECT_TRUE(s.has_start_time());
  EXPECT_EQ(Cond(kRunning).status(), "True");
  EXPECT_THAT(events_.WithReason("Started"), ElementsAre(EventIs("Normal", "Started")));

  clock_.Advance(seconds(1));
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "COMPLETED", 0))));
  ReconcileResult r = Reconcile();
  s = Status();
  EXPECT_EQ(s.job_state(), "COMPLETED");
  EXPECT_EQ(s.phase(), "Succeeded");
  ASSERT_TRUE(s.has_exit_code());
  EXPECT_EQ(s.exit_code(), 0);
  EXPECT_EQ(Cond(kReady).status(), "True");
  EXPECT_EQ(Cond(kSucceeded).status(), "True");
  EXPECT_EQ(Cond(kReconciling).status(), "False");
  EXPECT_THAT(events_.WithReason("Completed"), ElementsAre(EventIs("Normal", "Completed")));
  EXPECT_FALSE(r.requeue_after.has_value()) << "a finished job is not polled";
  EXPECT_FALSE(r.retry_with_backoff);

  // Once final, Slurm is not asked again.
  const size_t calls = ap_.calls().size();
  clock_.Advance(seconds(60));
  Reconcile();
  EXPECT_EQ(ap_.calls().size(), calls);
  EXPECT_EQ(ap_.Count(kGet, kJob42), 2);
  EXPECT_EQ(Submits(), 1);
}

// #14 item 4: the live queue shows the end; accounting gives the allocation, recorded in
// status.usage, and the usage counters count the run once, also across a restart.
TEST_F(ExecutorTest, AFinishedRunsUsageComesFromAccountingAndIsCountedOnce) {
  const server::Labels labels = {
      {"namespace", kNs}, {"cluster", "a3"}, {"partition", "gpu"}, {"account", "proj-llm"}};
  auto gpu = [&] {
    return server::GlobalMetrics().Value(server::metric::kAllocatedGpuSecondsTotal, labels);
  };
  auto cpu = [&] {
    return server::GlobalMetrics().Value(server::metric::kAllocatedCpuSecondsTotal, labels);
  };
  const double gpu0 = gpu(), cpu0 = cpu();
  RunJob42();
  EXPECT_EQ(ap_.Count(kGet, kDbJob42), 0) << "a running job's accounting is not read";
  const v1alpha1::SlurmJobStatus s = EndJob42("COMPLETED");
  ASSERT_TRUE(s.has_usage());
  EXPECT_EQ(s.usage().run(), 1);
  EXPECT_EQ(s.usage().elapsed_seconds(), 100);
  EXPECT_EQ(s.usage().allocated_tres().at("gres/gpu"), 2);
  EXPECT_EQ(s.usage().allocated_tres().at("mem"), 32768);
  EXPECT_EQ(s.usage().gpu_seconds(), 200);
  EXPECT_EQ(s.usage().cpu_seconds(), 800);
  EXPECT_EQ(s.usage().account(), "proj-llm");
  EXPECT_EQ(ap_.Count(kGet, kDbJob42), 1);
  EXPECT_EQ(gpu() - gpu0, 200);
  EXPECT_EQ(cpu() - cpu0, 800);

  // A restarted operator: the final status is recorded, nothing is asked or counted again.
  NewExecutor();
  clock_.Advance(seconds(60));
  Reconcile();
  EXPECT_EQ(ap_.Count(kGet, kDbJob42), 1);
  EXPECT_EQ(gpu() - gpu0, 200);
  EXPECT_EQ(cpu() - cpu0, 800);
}

// Accounting has not recorded the end yet: the run's end is recorded anyway, without usage.
TEST_F(ExecutorTest, AnEndAccountingHasNotRecordedYetIsRecordedWithoutUsage) {
  RunJob42();
  EXPECT_FALSE(EndJob42("RUNNING").has_usage());
}

// ... and accounting is looked at again (stage kAwaitingUsage, 2 s, 5 s ... after the end) until it
// shows the end: then status.usage is written, and counted once.
TEST_F(ExecutorTest, UsageAccountingShowsOnlyLaterIsRecordedThenAndCountedOnce) {
  const server::Labels labels = {
      {"namespace", kNs}, {"cluster", "a3"}, {"partition", "gpu"}, {"account", "proj-llm"}};
  auto gpu = [&] {
    return server::GlobalMetrics().Value(server::metric::kAllocatedGpuSecondsTotal, labels);
  };
  const double gpu0 = gpu();
  RunJob42();
  ASSERT_FALSE(EndJob42("RUNNING").has_usage());
  EXPECT_EQ(ap_.Count(kGet, kDbJob42), 1);
  EXPECT_EQ(gpu() - gpu0, 0);
  // Accounting learns the end; the next look (within seconds of the end) records it.
  ap_.On(kGet, kDbJob42, StructuredBody(200, DbJob42WithTres("COMPLETED", 0)));
  clock_.Set(Time(seconds(1700000017 + 5)));  // 5 s after the end JobRecord42 gives
  Reconcile();
  const v1alpha1::SlurmJobStatus s = Status();
  ASSERT_TRUE(s.has_usage()) << Object()->dump();
  EXPECT_EQ(s.usage().gpu_seconds(), 200);
  EXPECT_EQ(s.job_state(), "COMPLETED");
  EXPECT_EQ(s.phase(), "Succeeded");
  EXPECT_EQ(gpu() - gpu0, 200);
  const int db_reads = ap_.Count(kGet, kDbJob42);
  // Recorded: never looked for again, never counted again (also after a restart).
  NewExecutor();
  clock_.Advance(seconds(30));
  Reconcile();
  EXPECT_EQ(ap_.Count(kGet, kDbJob42), db_reads);
  EXPECT_EQ(gpu() - gpu0, 200);
}

// Accounting that never shows the end (a cluster without slurmdbd records) costs at most the
// eight looks of NextUsageLook, all within usage_window of the end.
TEST_F(ExecutorTest, UsageAccountingNeverShowsIsLookedForABoundedNumberOfTimes) {
  RunJob42();
  ASSERT_FALSE(EndJob42("RUNNING").has_usage());
  const int live_reads = ap_.Count(kGet, kJob42);
  for (int i = 0; i < 40; ++i) {
    clock_.Advance(seconds(15));
    Reconcile();
  }
  EXPECT_LE(ap_.Count(kGet, kDbJob42), 1 + 8);
  EXPECT_GE(ap_.Count(kGet, kDbJob42), 1 + 6) << "looked for again";
  EXPECT_EQ(ap_.Count(kGet, kJob42), live_reads) << "only accounting is read for the usage";
  EXPECT_FALSE(Status().has_usage());
  const int db_reads = ap_.Count(kGet, kDbJob42);
  clock_.Advance(std::chrono::minutes(10));
  Reconcile();
  EXPECT_EQ(ap_.Count(kGet, kDbJob42), db_reads) << "past usage_window: never again";
}

TEST_F(ExecutorTest, LiveQueue404ReadsAccountingForTheFinalState) {
  RunJob42();
  clock_.Advance(seconds(1));
  ap_.On(kGet, kJob42, StructuredBody(404, kUnknownJob42));
  ap_.On(kGet, kDbJob42, StructuredBody(200, DbJob42("FAILED", 3)));
  ReconcileResult r = Reconcile();

  std::vector<WireCall> calls = ap_.calls();
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(calls[calls.size() - 2].path, kJob42);
  EXPECT_EQ(calls[calls.size() - 1].path, kDbJob42);
  EXPECT_EQ(calls.back().method, kGet);
  EXPECT_FALSE(calls.back().has_body) << "GET carries no body";

  v1alpha1::SlurmJobStatus s = Status();
  EXPECT_EQ(s.job_state(), "FAILED");
  EXPECT_EQ(s.phase(), "Failed");
  ASSERT_TRUE(s.has_exit_code());
  EXPECT_EQ(s.exit_code(), 3);
  EXPECT_EQ(Cond(kStalled).status(), "True");
  EXPECT_EQ(Cond(kStalled).reason(), "JobFailed");
  EXPECT_THAT(events_.WithReason("Failed"), ElementsAre(EventIs("Warning", "Failed")));
  EXPECT_FALSE(r.requeue_after.has_value());
}

// --------------------------------------------- Slurm status 400 or 500

TEST_F(ExecutorTest, Slurm500BadPartitionIsSurfacedAndNotRetried) {
  AddJob({{"partition", "nosuch"}});
  ap_.On(kPost, kSubmit42, StructuredBody(500, kBadPartition42));
  ReconcileResult r = Reconcile();

  EXPECT_EQ(Status().job_id(), 0);
  EXPECT_EQ(Cond(kStalled).status(), "True");
  EXPECT_EQ(Cond(kStalled).reason(), "SubmitRejected");
  EXPECT_THAT(Cond(kStalled).message(), HasSubstr("Invalid partition name specified"));
  EXPECT_EQ(Cond(kSubmitted).status(), "False");
  EXPECT_EQ(Cond(kReady).status(), "False");
  EXPECT_THAT(Status().message(), HasSubstr("Invalid partition name specified (error 2000)"));
  std::vector<EventSpec> w = events_.WithReason("SubmitRejected");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].type, "Warning");
  EXPECT_THAT(w[0].note, HasSubstr("Invalid partition name specified"));
  EXPECT_FALSE(r.requeue_after.has_value());
  EXPECT_FALSE(r.retry_with_backoff);
  EXPECT_EQ(Submits(), 1);
  EXPECT_EQ(client_sleeps_, 0) << "the client did not retry";
  EXPECT_EQ(ap_.calls().size(), 1u) << "no tag search: Slurm's answer arrived";
}

TEST_F(ExecutorTest, Slurm400BadFieldTypeIsSurfacedAndNotRetried) {
  AddJob({{"extra", {{"tasks_per_node", "two"}}}});
  ap_.On(kPost, kSubmit42, StructuredBody(400, kBadFieldType42));
  ReconcileResult r = Reconcile();

  ASSERT_EQ(Submits(), 1);
  EXPECT_EQ(ap_.calls()[0].body["job"]["tasks_per_node"], "two") << "spec.extra is sent as is";
  EXPECT_EQ(Cond(kStalled).status(), "True");
  EXPECT_EQ(Cond(kStalled).reason(), "SubmitRejected");
  EXPECT_THAT(Cond(kStalled).message(), HasSubstr("Data conversion failed (error 9202)"));
  EXPECT_THAT(Cond(kStalled).message(), HasSubstr("tasks_per_node"));
  EXPECT_THAT(events_.WithReason("SubmitRejected"),
              ElementsAre(EventIs("Warning", "SubmitRejected")));
  EXPECT_FALSE(r.requeue_after.has_value());
  EXPECT_FALSE(r.retry_with_backoff);
}

// BUG (controller/reconcile/decide.cc, DecideSubmission): nothing remembers
// that this generation was already rejected. The next reconcile of the same
// SlurmJob (the watch event of the operator's own Stalled status write, an
// informer resync, a restart, a label change) submits the rejected job again,
// although the status says it "is submitted again when the spec changes".
// Today: 2 submits on the wire after the one wake-up below.
TEST_F(ExecutorTest, FixedRejectedSubmitIsNotSentAgainOnTheNextReconcile) {
  AddJob({{"partition", "nosuch"}});
  ap_.On(kPost, kSubmit42, StructuredBody(500, kBadPartition42));
  Reconcile();
  ASSERT_EQ(Cond(kStalled).reason(), "SubmitRejected");

  kube_.ClearCalls();
  ReconcileResult r = Reconcile();  // woken by its own status write
  EXPECT_EQ(Submits(), 1) << "a rejected submit was sent again, unchanged";
  EXPECT_EQ(kube_.WriteCount(), 0);
  EXPECT_FALSE(r.requeue_after.has_value());
  EXPECT_FALSE(r.retry_with_backoff);
}

// A rejected spec is sent again once its SlurmCluster changes (another cluster may take it).
// The stored status must stop saying "rejected" before that submit: if the jobId's write then
// fails and the operator restarts, a status still saying SubmitRejected for this generation
// made the new process stop at stage Refused without looking for the job, which ran unrecorded
// (seed 9008609 of the simulation).
TEST_F(ExecutorTest, ARetryAfterARejectionTakesTheRejectionOutOfTheStatusFirst) {
  AddJob({{"partition", "nosuch"}});
  ap_.On(kPost, kSubmit42, StructuredBody(500, kBadPartition42),
         StructuredBody(200, SubmitOk42(42)));
  Reconcile();
  ASSERT_EQ(Cond(kStalled).reason(), "SubmitRejected");

  PointClusterAt("c2");
  RefuseStatusWritesAfterSubmit(2);  // the jobId's write
  clock_.Advance(seconds(1));
  Reconcile();
  kube_.on_request = nullptr;
  ASSERT_EQ(Submits(), 2);
  EXPECT_EQ(Status().job_id(), 0);
  EXPECT_NE(Cond(kStalled).reason(), "SubmitRejected")
      << "a submit was sent while the stored status says this generation was rejected";
  EXPECT_EQ(Cond(kStalled).status(), "False");
  EXPECT_EQ(Status().submit_target().cluster_id(), "c2");
}

// The fix direction the status message promises: a new generation (spec
// change) is submitted again.
TEST_F(ExecutorTest, RejectedSubmitIsSentAgainAfterTheSpecChanges) {
  AddJob({{"partition", "nosuch"}});
  ap_.On(kPost, kSubmit42, StructuredBody(500, kBadPartition42));
  Reconcile();
  ASSERT_EQ(Cond(kStalled).reason(), "SubmitRejected");
  const int before = Submits();

  std::optional<nlohmann::json> o = Object();
  (*o)["spec"]["partition"] = "gpu";
  ASSERT_TRUE(kube_.Update(SlurmJobsResource(), *o).ok());
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));
  Reconcile();
  EXPECT_EQ(Submits(), before + 1);
  EXPECT_EQ(ap_.calls().back().body["job"]["partition"], "gpu");
  EXPECT_EQ(Status().job_id(), 42);
  EXPECT_EQ(Status().observed_generation(), 2);
  EXPECT_EQ(Cond(kStalled).status(), "False");
  EXPECT_EQ(Cond(kSubmitted).status(), "True");
}

// ------------------------------------------------- Google errors
//
// BUG (controller/reconcile/executor.cc, Action::kSubmit): a Google error
// answer carries no "request sent" mark, so http::MayHaveBeenDelivered() is
// true for it (client.h says so: "conservatively") and the executor sets
// out.submit_may_have_been_delivered for EVERY Google error. Decide() then
// treats PERMISSION_DENIED, NOT_FOUND and INVALID_ARGUMENT like a lost
// response: it searches for the tag (which fails the same way) and shows
// Reconciling/SubmitOutcomeUnknown "...the search for the job failed...;
// Retrying", retried with the short backoff forever. The user never sees
// Stalled/PermissionDenied with roles/aiplatform.user, or ClusterNotFound.
// These answers come from Agent Platform itself: the call was refused before
// it reached Slurm, so nothing can have been submitted.

// ------------------------------------------------- PERMISSION_DENIED

TEST_F(ExecutorTest, FixedPermissionDeniedIsSurfacedWithTheRoleAndRetriedLater) {
  AddJob();
  ap_.On(kPost, kSubmit42, GoogleErrorReply(403, kPermissionDenied));
  ap_.On(kGet, kJobs42, GoogleErrorReply(403, kPermissionDenied));
  ReconcileResult r = Reconcile();

  EXPECT_EQ(Cond(kStalled).status(), "True");
  EXPECT_EQ(Cond(kStalled).reason(), "PermissionDenied");
  EXPECT_THAT(Status().message(), HasSubstr("roles/aiplatform.user"));
  EXPECT_THAT(Status().message(), HasSubstr("modelDevelopmentClusters.run"));
  EXPECT_THAT(events_.WithReason("PermissionDenied"),
              ElementsAre(EventIs("Warning", "PermissionDenied")));
  EXPECT_EQ(r.requeue_after, std::optional<Duration>(DecideOptions{}.permission_retry));
  EXPECT_FALSE(r.retry_with_backoff);
  EXPECT_EQ(Submits(), 1);
  EXPECT_EQ(client_sleeps_, 0) << "403 is not retried by the client";
}

// The 403 reaches the user when it comes from a call whose outcome is not in
// doubt (reading a known job), which shows the expected wording.
TEST_F(ExecutorTest, PermissionDeniedWhileTrackingNamesTheRole) {
  SubmitJob42();
  clock_.Advance(seconds(1));
  ap_.On(kGet, kJob42, GoogleErrorReply(403, kPermissionDenied));
  ReconcileResult r = Reconcile();
  EXPECT_EQ(ap_.Count(kGet, kJob42), 1) << "403 is not retried by the client";
  EXPECT_EQ(Cond(kReconciling).reason(), "PermissionDenied");
  EXPECT_THAT(Status().message(), HasSubstr("roles/aiplatform.user"));
  EXPECT_THAT(Status().message(), HasSubstr("caller: service account slurm-operator@"));
  EXPECT_THAT(events_.WithReason("PermissionDenied"),
              ElementsAre(EventIs("Warning", "PermissionDenied")));
  EXPECT_EQ(r.requeue_after, std::optional<Duration>(DecideOptions{}.permission_retry));
  EXPECT_EQ(Status().job_id(), 42) << "the job is kept";
}

// ------------------------------------------------- NOT_FOUND (wrong cluster)

TEST_F(ExecutorTest, FixedWrongClusterIsSurfacedAsClusterNotFound) {
  AddJob();
  ap_.On(kPost, kSubmit42, GoogleErrorReply(404, kClusterNotFound));
  ap_.On(kGet, kJobs42, GoogleErrorReply(404, kClusterNotFound));
  ReconcileResult r = Reconcile();
  EXPECT_EQ(Cond(kStalled).status(), "True");
  EXPECT_EQ(Cond(kStalled).reason(), "ClusterNotFound");
  EXPECT_THAT(Status().message(),
              HasSubstr("projects/proj/locations/us-central1/modelDevelopmentClusters/c1"));
  EXPECT_THAT(Status().message(), HasSubstr("Check projectId, region and clusterId"));
  EXPECT_FALSE(r.retry_with_backoff);
  EXPECT_EQ(Submits(), 1);
}

// ------------------------------------------------- INVALID_ARGUMENT

TEST_F(ExecutorTest, ScriptOver1MBIsRefusedBeforeSendingWithAHint) {
  std::string script = "#!/bin/bash\n";
  while (script.size() < 1'100'000) script += "echo 0123456789012345678901234567890123456789\n";
  AddJob({{"script", script}});
  ReconcileResult r = Reconcile();

  EXPECT_THAT(ap_.unexpected(), IsEmpty());
  EXPECT_EQ(ap_.calls().size(), 0u) << "nothing may go on the wire";
  EXPECT_EQ(Status().job_id(), 0);
  EXPECT_EQ(Cond(kStalled).status(), "True");
  EXPECT_EQ(Cond(kStalled).reason(), "SubmitRejected");
  EXPECT_THAT(Status().message(), HasSubstr("over the 1 MB limit"));
  EXPECT_THAT(Status().message(), HasSubstr("shared storage"));
  EXPECT_THAT(events_.WithReason("SubmitRejected"),
              ElementsAre(EventIs("Warning", "SubmitRejected")));
  EXPECT_FALSE(r.requeue_after.has_value());
  EXPECT_FALSE(r.retry_with_backoff);
  EXPECT_EQ(token_->tokens_handed_out.load(), 0) << "refused before even asking for a token";
  Reconcile();
  EXPECT_EQ(ap_.calls().size(), 0u);
}

// Agent Platform's own INVALID_ARGUMENT (same root cause as the 403 above).
TEST_F(ExecutorTest, FixedServerInvalidArgumentIsSurfacedNotRetried) {
  AddJob();
  ap_.On(kPost, kSubmit42, GoogleErrorReply(400, kInvalidArgument));
  ap_.On(kGet, kJobs42, GoogleErrorReply(400, kInvalidArgument));
  ReconcileResult r = Reconcile();
  EXPECT_EQ(Cond(kStalled).status(), "True");
  EXPECT_EQ(Cond(kStalled).reason(), "SubmitRejected");
  EXPECT_THAT(Status().message(), HasSubstr("Request contains an invalid argument"));
  EXPECT_FALSE(r.retry_with_backoff);
  EXPECT_FALSE(r.requeue_after.has_value());
  EXPECT_EQ(Submits(), 1);
}

// ------------------------------------------------------ UNAVAILABLE

// Agent Platform's 503 UNAVAILABLE to a POST: the client does not repeat the
// POST (the request reached Google), and the executor treats the outcome as
// unknown: it searches for the tag at once (live queue, then accounting),
// backs off, and submits again only once nothing was found
// (google-auth.md §2.2 operator policy).
TEST_F(ExecutorTest, Unavailable503IsNotRepeatedBlindlySearchesThenSubmitsOnce) {
  AddJob();
  ap_.On(kPost, kSubmit42, GoogleErrorReply(503, kUnavailable),
         StructuredBody(200, SubmitOk42(42)));
  ap_.On(kGet, kJobs42, StructuredBody(200, JobAnswer42("")));
  ap_.On(kGet, kDbJobsTrain42, StructuredBody(200, kDbNothing42));
  ReconcileResult r = Reconcile();
  EXPECT_EQ(Submits(), 1) << "the client must not repeat a POST that reached Google";
  EXPECT_EQ(client_sleeps_, 0);
  // The search right away found nothing, but the submit may still be in
  // flight: wait out the settle window (60 s after the submit), then look again.
  EXPECT_FALSE(r.retry_with_backoff);
  ASSERT_TRUE(r.requeue_after.has_value());
  EXPECT_EQ(*r.requeue_after, seconds(61));
  EXPECT_EQ(Status().job_id(), 0);
  EXPECT_EQ(Cond(kReconciling).status(), "True");
  EXPECT_EQ(Cond(kStalled).status(), "False");
  EXPECT_EQ(Cond(kReady).status(), "Unknown");
  EXPECT_EQ(Cond(kReconciling).reason(), "SubmitOutcomeUnknown");
  EXPECT_THAT(Status().message(), HasSubstr("The service is currently unavailable"));
  EXPECT_THAT(events_.WithReason("SubmitOutcomeUnknown"),
              ElementsAre(EventIs("Warning", "SubmitOutcomeUnknown")));
  std::vector<WireCall> calls = ap_.calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[1].path, kJobs42);
  EXPECT_EQ(calls[2].path, kDbJobsTrain42);

  // Inside the window: no call at all.
  clock_.Advance(seconds(5));
  Reconcile();
  EXPECT_EQ(ap_.calls().size(), 3u);
  // After it: one more search, which now proves the submit never arrived,
  // then one new submit.
  clock_.Advance(seconds(60));
  Reconcile();
  calls = ap_.calls();
  ASSERT_EQ(calls.size(), 6u);
  EXPECT_EQ(calls[3].path, kJobs42);
  EXPECT_EQ(calls[5].path, kSubmit42);
  EXPECT_EQ(Submits(), 2);
  EXPECT_EQ(Status().job_id(), 42);
  EXPECT_EQ(Cond(kSubmitted).reason(), "Submitted");
}

// UNAVAILABLE from the transport before anything was written (connection
// refused): the client may and does retry the POST; nothing was delivered
// twice. When every attempt fails, the user sees SubmitRetrying.
TEST_F(ExecutorTest, ConnectionRefusedIsRetriedByTheClientThenSubmitRetrying) {
  AddJob();
  const absl::Status refused =
      http::TransportError(absl::StatusCode::kUnavailable, "connection refused", false);
  ap_.On(kPost, kSubmit42, absl::StatusOr<http::Response>(refused));
  ReconcileResult r = Reconcile();
  EXPECT_EQ(Submits(), 5) << "max_attempts attempts, none of which left the client";
  EXPECT_EQ(client_sleeps_, 4) << "with backoff between them";
  EXPECT_TRUE(r.retry_with_backoff);
  EXPECT_EQ(Cond(kReconciling).status(), "True");
  EXPECT_EQ(Cond(kReconciling).reason(), "SubmitRetrying");
  EXPECT_EQ(Cond(kStalled).status(), "False");
  EXPECT_THAT(Status().message(), HasSubstr("connection refused"));
  EXPECT_THAT(events_.WithReason("SubmitRetrying"),
              ElementsAre(EventIs("Warning", "SubmitRetrying")));

  // Next reconcile: no tag search is needed (nothing was delivered).
  ap_.ClearCalls();
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));
  Reconcile();
  ASSERT_EQ(ap_.calls().size(), 1u);
  EXPECT_EQ(ap_.calls()[0].path, kSubmit42);
  EXPECT_EQ(Status().job_id(), 42);
}

TEST_F(ExecutorTest, ConnectionRefusedOnceThenAcceptedIsOneDeliveredSubmit) {
  AddJob();
  ap_.On(kPost, kSubmit42,
         absl::StatusOr<http::Response>(
             http::TransportError(absl::StatusCode::kUnavailable, "connection refused", false)),
         StructuredBody(200, SubmitOk42(42)));
  ReconcileResult r = Reconcile();
  EXPECT_EQ(Submits(), 2) << "one refused attempt, one delivered";
  EXPECT_EQ(client_sleeps_, 1);
  EXPECT_EQ(Status().job_id(), 42);
  EXPECT_FALSE(r.retry_with_backoff);
}

// --------------------------------------------- response lost after sending

// The POST went out and the connection broke before the answer
// (request_sent=true). The job was in fact queued. The search by tag finds it
// and adopts it; the first search fails here (Agent Platform unavailable for
// the GET, retried by the client), so the adoption happens in the NEXT
// reconcile, still without a second submit.
TEST_F(ExecutorTest, LostSubmitResponseIsFollowedByATagSearchAndAdoption) {
  AddJob();
  ap_.On(kPost, kSubmit42,
         absl::StatusOr<http::Response>(http::TransportError(
             absl::StatusCode::kUnavailable, "connection reset by peer after the request", true)));
  const std::string found =
      JobAnswer42(absl::StrCat(JobRecord42(41, "RUNNING", 0, "slurmjob-operator:other-uid"), ", ",
                               JobRecord42(42, "PENDING")));
  ap_.On(kGet, kJobs42, GoogleErrorReply(503, kUnavailable), GoogleErrorReply(503, kUnavailable),
         GoogleErrorReply(503, kUnavailable), GoogleErrorReply(503, kUnavailable),
         GoogleErrorReply(503, kUnavailable), StructuredBody(200, found));
  ReconcileResult r = Reconcile();
  EXPECT_EQ(Submits(), 1);
  EXPECT_EQ(ap_.Count(kGet, kJobs42), 5) << "the GET is retried by the client";
  EXPECT_TRUE(r.retry_with_backoff);
  EXPECT_EQ(Status().job_id(), 0);
  EXPECT_EQ(Cond(kReconciling).reason(), "SubmitOutcomeUnknown");
  EXPECT_THAT(Status().message(), HasSubstr("nothing is submitted twice"));

  // Next reconcile: the search again, never a second submit. Another job of
  // the same user (another tag) is in the queue too. Once adopted, the job is
  // followed at once (no submit time of ours to wait from).
  clock_.Advance(seconds(2));
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "PENDING"))));
  r = Reconcile();
  EXPECT_EQ(Submits(), 1) << "exactly one submit across both reconciles";
  EXPECT_EQ(ap_.Count(kGet, kJobs42), 6);
  EXPECT_FALSE(ap_.calls(kGet, kJobs42).back().has_body);
  v1alpha1::SlurmJobStatus s = Status();
  EXPECT_EQ(s.job_id(), 42);
  EXPECT_EQ(s.job_state(), "PENDING");
  EXPECT_EQ(Cond(kSubmitted).status(), "True");
  EXPECT_EQ(Cond(kSubmitted).reason(), "Adopted");
  EXPECT_THAT(events_.WithReason("Adopted"), ElementsAre(EventIs("Normal", "Adopted")));
  EXPECT_FALSE(r.retry_with_backoff);
  EXPECT_TRUE(r.requeue_after.has_value());
}

TEST_F(ExecutorTest, LostSubmitResponseAdoptedInTheSameReconcileWhenTheSearchWorks) {
  AddJob();
  ap_.On(kPost, kSubmit42,
         absl::StatusOr<http::Response>(http::TransportError(
             absl::StatusCode::kDeadlineExceeded, "timed out waiting for the response", true)));
  ap_.On(kGet, kJobs42, StructuredBody(200, JobAnswer42(JobRecord42(42, "PENDING"))));
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "PENDING"))));
  Reconcile();
  EXPECT_EQ(Submits(), 1);
  EXPECT_EQ(Status().job_id(), 42);
  EXPECT_EQ(Cond(kSubmitted).reason(), "Adopted");
}

TEST_F(ExecutorTest, LostSubmitResponseAndNoJobFoundSubmitsAgainOnce) {
  AddJob();
  ap_.On(kPost, kSubmit42,
         absl::StatusOr<http::Response>(http::TransportError(
             absl::StatusCode::kDeadlineExceeded, "timed out waiting for the response", true)),
         StructuredBody(200, SubmitOk42(42)));
  ap_.On(kGet, kJobs42, StructuredBody(200, JobAnswer42("")));
  ap_.On(kGet, kDbJobsTrain42, StructuredBody(200, kDbNothing42));
  ReconcileResult r = Reconcile();
  EXPECT_EQ(Submits(), 1);
  EXPECT_FALSE(r.retry_with_backoff);
  EXPECT_TRUE(r.requeue_after.has_value()) << "waits until the submit cannot be in flight";
  EXPECT_EQ(Cond(kReconciling).reason(), "SubmitOutcomeUnknown");
  clock_.Advance(seconds(2));
  Reconcile();
  EXPECT_EQ(Submits(), 1) << "a submit sent 2 s ago may still land";
  clock_.Advance(seconds(60));
  Reconcile();
  EXPECT_EQ(ap_.Count(kGet, kJobs42), 2);
  EXPECT_EQ(ap_.Count(kGet, kDbJobsTrain42), 2);
  EXPECT_EQ(Submits(), 2) << "the search after the window proved the first submit never arrived";
  EXPECT_EQ(Status().job_id(), 42);
  EXPECT_EQ(Cond(kSubmitted).reason(), "Submitted");
}

// A restarted operator (no memo) that finds our finalizer but no job id
// searches before it submits.
TEST_F(ExecutorTest, RestartWithFinalizerButNoJobIdSearchesBeforeSubmitting) {
  AddJob();
  kube_.MutateBehindTheBack("slurmjobs", kNs, kName, [](nlohmann::json& o) {
    o["metadata"]["finalizers"] = {std::string(api::kSlurmJobFinalizer)};
  });
  ap_.On(kGet, kJobs42, StructuredBody(200, JobAnswer42(JobRecord42(42, "RUNNING"))));
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "RUNNING"))));
  Reconcile();
  EXPECT_EQ(Submits(), 0);
  EXPECT_EQ(Status().job_id(), 42);
  EXPECT_EQ(Status().job_state(), "RUNNING");
  EXPECT_EQ(Cond(kSubmitted).reason(), "Adopted");
}

// ------------------------------------------- 409 on the status write

TEST_F(ExecutorTest, ConflictOnStatusWriteRereadsAndWritesAgainNeverResubmits) {
  AddJob();
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));
  bool interfered = false;
  int status_writes = 0;
  kube_.on_request = [&](const testing::KubeCall& c) {
    // The first status write records where the submit goes (kRecordingTarget);
    // the second records the job, and meets the conflict.
    if (c.verb == "update-status" && ++status_writes == 2 && !interfered) {
      interfered = true;  // another client changes the object first
      kube_.MutateBehindTheBack("slurmjobs", kNs, kName,
                                [](nlohmann::json& o) { o["metadata"]["labels"]["team"] = "a"; });
    }
  };
  ReconcileResult r = Reconcile();

  EXPECT_EQ(Submits(), 1);
  std::vector<testing::KubeCall> writes;
  for (const auto& c : kube_.calls()) {
    if (c.verb == "update-status") writes.push_back(c);
  }
  ASSERT_EQ(writes.size(), 3u);
  EXPECT_TRUE(writes[0].result.ok()) << "the submit's target";
  EXPECT_EQ(writes[1].result.code(), absl::StatusCode::kAborted) << "409 Conflict";
  EXPECT_TRUE(writes[2].result.ok());
  EXPECT_EQ(kube_.Count("get"), 1) << "the executor re-read the object";
  EXPECT_EQ(Status().job_id(), 42);
  EXPECT_EQ((*Object())["metadata"]["labels"]["team"], "a") << "the other write is kept";
  EXPECT_EQ(events_.WithReason("Submitted").size(), 1u);
  EXPECT_FALSE(r.retry_with_backoff);
}

TEST_F(ExecutorTest, FailedStatusWriteIsRetriedFromMemoNeverResubmits) {
  AddJob();
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));
  kube_.FailNext("update-status", absl::UnavailableError("etcdserver: request timed out"));
  ReconcileResult r = Reconcile();
  EXPECT_TRUE(r.retry_with_backoff);
  EXPECT_EQ(Status().job_id(), 0);

  r = Reconcile();
  EXPECT_EQ(Submits(), 1);
  EXPECT_EQ(Status().job_id(), 42);
  EXPECT_FALSE(r.retry_with_backoff);
}

// What Slurm said is not "polled" until the status shows it: a status write
// that failed leaves the look undone, so the retry (or the next reconcile,
// however soon) looks again and writes COMPLETED. Before, the failed write's
// look counted as recent: the next reconcile within the poll interval found
// the cached status unchanged, wrote nothing and stretched its requeue to the
// tracker's 2 min, so status stayed RUNNING long after the API server came
// back (#13 item 9).
TEST_F(ExecutorTest, AnObservationWhoseStatusWriteFailedIsLookedAtAgain) {
  ScriptAccountingOfTheEnd();
  RunJob42();
  clock_.Advance(seconds(5));
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "COMPLETED", 0))));
  kube_.FailNext("update-status", absl::UnavailableError("connection refused"));
  ReconcileResult r = Reconcile();
  EXPECT_TRUE(r.retry_with_backoff);
  EXPECT_EQ(Status().job_state(), "RUNNING");

  clock_.Advance(std::chrono::milliseconds(10));  // the first backoff retry
  r = Reconcile();
  EXPECT_EQ(Status().job_state(), "COMPLETED");
  EXPECT_EQ(Status().phase(), "Succeeded");
}

// The informer cache lags behind the operator's own writes: the finalizer
// patch's watch event re-queues the key while reconcile 1 runs, so reconcile
// 2 follows at once and may still see the finalizer but no jobId. It must not
// submit again. (Fails at commit bc36d3c, where the memo forgot the job id as
// soon as the status write's RESPONSE carried it and a second job was
// submitted; passes since 1ea4bab.)
TEST_F(ExecutorTest, StaleCacheAfterOwnStatusWriteDoesNotResubmit) {
  AddJob();
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)),
         StructuredBody(200, SubmitOk42(43)));
  kube_.on_request = [&](const testing::KubeCall& c) {
    // The informer has delivered everything up to our status write.
    if (c.verb == "update-status") jobs_.Freeze();
  };
  Reconcile();
  kube_.on_request = nullptr;
  ASSERT_EQ(Status().job_id(), 42);

  // The finalizer patch's watch event, cache not yet caught up: past the
  // wait for the cache (CacheLag), the reconcile goes ahead on the old object.
  clock_.Advance(ExecutorOptions{}.cache_patience);
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "PENDING"))));
  Reconcile();
  EXPECT_EQ(Submits(), 1) << "a second Slurm job was submitted for the same SlurmJob";
  jobs_.Thaw();
  EXPECT_EQ(Status().job_id(), 42);
  Reconcile();  // the cache caught up
  EXPECT_EQ(Submits(), 1);
  EXPECT_EQ(Status().job_id(), 42);
}

// The same lag, within the wait for the cache: the reconcile sends nothing
// at all (before CacheLag it re-sent the jobId's status write, got a 409 and
// re-read the object), and asks to come back when the wait ends. The cache's
// next version, the watch event of our last write, is reconciled as usual.
TEST_F(ExecutorTest, ACacheBehindOurOwnWritesIsWaitedForNotActedOn) {
  AddJob();
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));
  kube_.on_request = [&](const testing::KubeCall& c) {
    if (c.verb == "update-status") jobs_.Freeze();  // the cache shows the finalizer only
  };
  Reconcile();
  kube_.on_request = nullptr;
  ASSERT_EQ(Status().job_id(), 42);
  kube_.ClearCalls();
  ap_.ClearCalls();

  clock_.Advance(std::chrono::seconds(1));
  ReconcileResult r = Reconcile();
  EXPECT_THAT(kube_.calls(), IsEmpty()) << "acted on a cache behind our own writes";
  EXPECT_THAT(ap_.calls(), IsEmpty());
  EXPECT_EQ(r.requeue_after,
            std::optional<Duration>(ExecutorOptions{}.cache_patience - std::chrono::seconds(1)));
  EXPECT_FALSE(r.retry_with_backoff);

  jobs_.Thaw();  // the watch event of the jobId's status write
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "RUNNING"))));
  Reconcile();
  EXPECT_EQ(Status().job_state(), "RUNNING") << "the caught-up cache is reconciled as usual";
  EXPECT_EQ(kube_.Count("get"), 0) << "no conflict, no re-read";
  EXPECT_EQ(Submits(), 0);
}

// A status write recording a new target landed but its answer was lost, and the cache never
// showed it (a lagging watch): the view still names the old target, where the SlurmCluster
// points again. Submitting on that view sent the job to c1 while the stored status said c2, so
// a crash before the jobId was written searched c2, found nothing and submitted a second job
// (seed 7268161 of the simulation). The stored object is read first, and the submit follows a
// record of where it goes.
TEST_F(ExecutorTest, AStatusWriteWithoutAnAnswerIsReadBackBeforeTheSubmit) {
  AddJob();
  ap_.On(kPost, kSubmit42, GoogleErrorReply(403, kPermissionDenied),
         StructuredBody(200, SubmitOk42(42)));
  Reconcile();  // finalizer, target c1 recorded, the submit refused
  ASSERT_EQ(Status().submit_target().cluster_id(), "c1");
  jobs_.Freeze();  // from here the cache shows target c1

  PointClusterAt("c2");
  kube_.LoseNextReply("update-status");
  clock_.Advance(seconds(1));
  EXPECT_TRUE(Reconcile().retry_with_backoff);
  ASSERT_EQ(Status().submit_target().cluster_id(), "c2") << "the write without an answer landed";
  EXPECT_EQ(Submits(), 1);

  PointClusterAt("c1");
  // The jobId's status write gets no answer either: what the store says then is all a
  // restarted operator would know of where the job went.
  RefuseStatusWritesAfterSubmit(2);
  // 10 s: after the 403, the credentials' calls go one at a time, 6 a minute, until the project
  // accepts one (quota_budget.h).
  clock_.Advance(seconds(10));
  Reconcile();
  kube_.on_request = nullptr;
  ASSERT_EQ(Submits(), 2);
  EXPECT_EQ(Status().submit_target().cluster_id(), "c1")
      << "submitted to c1 while the stored status says the submit went to "
      << Status().submit_target().cluster_id();
  jobs_.Thaw();
}

// The read-back itself gets no answer (the API server is down): nothing is submitted, and the
// key waits for the API server to answer again, not out its backoff.
TEST_F(ExecutorTest, AReadBackWithoutAnAnswerWaitsForTheApiServer) {
  AddJob();
  kube_.LoseNextReply("patch");  // the finalizer (the first write) lands unanswered
  EXPECT_TRUE(Reconcile().api_server_unreachable);
  kube_.FailNext("get",
                 http::TransportError(absl::StatusCode::kUnavailable, "connection refused", false));
  clock_.Advance(seconds(1));
  ReconcileResult r = Reconcile();
  EXPECT_EQ(kube_.Count("get"), 1) << "the stored object was asked for";
  EXPECT_TRUE(r.retry_with_backoff);
  EXPECT_TRUE(r.api_server_unreachable);
  EXPECT_EQ(Submits(), 0);

  // Answered, the read shows the finalizer. This process never saw its own patch answered, so
  // it cannot rule out an earlier submit: it looks for the tag (here, one is found and adopted).
  ap_.On(kGet, kJobs42, StructuredBody(200, JobAnswer42(JobRecord42(42, "RUNNING"))));
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "RUNNING"))));
  clock_.Advance(seconds(1));
  Reconcile();
  EXPECT_EQ(kube_.Count("get"), 2);
  EXPECT_EQ(Submits(), 0);
  EXPECT_EQ(Status().job_id(), 42);
}

// ---------------------------------------------------------------- deletion

TEST_F(ExecutorTest, DeletingARunningJobCancelsItThenReleasesTheFinalizer) {
  ScriptAccountingOfTheEnd();
  RunJob42();
  ASSERT_TRUE(kube_.Delete(SlurmJobsResource(), kNs, kName).ok());
  ASSERT_TRUE(Object().has_value()) << "the finalizer holds the object";
  ap_.ClearCalls();
  kube_.ClearCalls();

  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "RUNNING"))));
  ap_.On(kDelete, kJob42, StructuredBody(200, kCancelOk42));
  ReconcileResult r = Reconcile();
  EXPECT_EQ(ap_.Count(kDelete, kJob42), 1);
  EXPECT_FALSE(ap_.calls(kDelete, kJob42)[0].has_body) << "DELETE carries no body";
  EXPECT_TRUE(HasFinalizer()) << "kept until Slurm reports the job ended";
  EXPECT_THAT(events_.WithReason("CancelRequested"),
              ElementsAre(EventIs("Normal", "CancelRequested")));
  EXPECT_EQ(r.requeue_after, std::optional<Duration>(DecideOptions{}.cancel_wait_poll));

  clock_.Advance(seconds(1));
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "CANCELLED"))));
  r = Reconcile();
  EXPECT_FALSE(Object().has_value()) << "finalizer removed, the SlurmJob is gone";
  EXPECT_EQ(ap_.Count(kDelete, kJob42), 1) << "cancelled once";
  EXPECT_THAT(events_.WithReason("Cancelled"), ElementsAre(EventIs("Normal", "Cancelled")));
  EXPECT_EQ(kube_.Count("patch"), 1);
  EXPECT_FALSE(r.retry_with_backoff);
  EXPECT_EQ(exec_->MemoCount(), 0u);

  // A late watch event for the deleted object does nothing.
  ap_.ClearCalls();
  Reconcile();
  EXPECT_EQ(ap_.calls().size(), 0u);
}

// spec.ttlSecondsAfterFinished: a finished job is looked at again exactly at
// its expiry and then deleted, this incarnation only, in the background; the
// finalizer comes off without a cancel.
TEST_F(ExecutorTest, AFinishedJobIsDeletedOnceItsTtlPassed) {
  ScriptAccountingOfTheEnd();
  RunJob42();
  kube_.MutateBehindTheBack("slurmjobs", kNs, kName,
                            [](nlohmann::json& o) { o["spec"]["ttlSecondsAfterFinished"] = 30; });
  clock_.Set(Time(seconds(1700000020)));
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "COMPLETED", 0))));
  ReconcileResult r = Reconcile();
  ASSERT_EQ(Status().job_state(), "COMPLETED");
  EXPECT_EQ(r.requeue_after, std::optional<Duration>(seconds(27))) << "ended at 1700000017";
  EXPECT_EQ(kube_.Count("delete"), 0);

  clock_.Set(Time(seconds(1700000047)));
  ap_.ClearCalls();
  kube_.ClearCalls();
  r = Reconcile();
  EXPECT_FALSE(Object().has_value()) << "deleted, and its finalizer removed";
  ASSERT_EQ(kube_.Count("delete"), 1);
  const KubeCall del = kube_.calls()[0];
  EXPECT_EQ(del.verb, "delete");
  EXPECT_EQ(del.body["preconditions"]["uid"], kUid);
  EXPECT_EQ(del.body["propagationPolicy"], "Background");
  EXPECT_EQ(ap_.calls().size(), 0u) << "a finished job is neither looked at nor cancelled";
  EXPECT_THAT(events_.WithReason("TTLExpired"), ElementsAre(EventIs("Normal", "TTLExpired")));
  EXPECT_EQ(exec_->MemoCount(), 0u);
}

// The cache still shows the finished SlurmJob, but the name now belongs to a
// new one (another uid): the uid precondition fails and the new one stays.
TEST_F(ExecutorTest, TheTtlNeverDeletesASlurmJobReCreatedUnderTheName) {
  ScriptAccountingOfTheEnd();
  RunJob42();
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "COMPLETED", 0))));
  clock_.Advance(seconds(20));
  Reconcile();
  ASSERT_EQ(Status().job_state(), "COMPLETED");
  kube_.MutateBehindTheBack("slurmjobs", kNs, kName,
                            [](nlohmann::json& o) { o["spec"]["ttlSecondsAfterFinished"] = 0; });
  jobs_.Freeze();
  kube_.MutateBehindTheBack("slurmjobs", kNs, kName, [](nlohmann::json& o) {
    o["metadata"]["uid"] = "new-uid";
    o["spec"].erase("ttlSecondsAfterFinished");
  });
  kube_.ClearCalls();
  Reconcile();
  ASSERT_TRUE(Object().has_value()) << "the re-created SlurmJob was deleted";
  EXPECT_EQ(Meta(*Object(), "uid"), "new-uid");
  ASSERT_GE(kube_.Count("delete"), 1);
  EXPECT_EQ(kube_.calls()[0].body["preconditions"]["uid"], kUid);
  EXPECT_EQ(kube_.Count("delete", /*only_ok=*/true), 0);
  EXPECT_THAT(events_.WithReason("TTLExpired"), IsEmpty());
}

// spec.activeDeadlineSeconds through the real Agent Platform client: the
// deadline (firstSubmitTime 1700000000 + 10 s) passed, a look finds the job
// ours and running, the cancel is sent once, and Slurm's CANCELLED (ended at
// 1700000017, after the deadline) is recorded as Failed, DeadlineExceeded.
TEST_F(ExecutorTest, APassedDeadlineCancelsTheJobAndFailsIt) {
  ScriptAccountingOfTheEnd();
  RunJob42();
  ASSERT_EQ(Status().first_submit_time().seconds(), 1700000000);
  kube_.MutateBehindTheBack("slurmjobs", kNs, kName,
                            [](nlohmann::json& o) { o["spec"]["activeDeadlineSeconds"] = 10; });
  clock_.Set(Time(seconds(1700000011)));
  ap_.ClearCalls();
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "RUNNING"))));
  ap_.On(kDelete, kJob42, StructuredBody(200, kCancelOk42));
  ReconcileResult r = Reconcile();
  EXPECT_EQ(ap_.Count(kDelete, kJob42), 1);
  EXPECT_THAT(events_.WithReason("DeadlineExceeded"),
              ElementsAre(EventIs("Warning", "DeadlineExceeded")));
  EXPECT_EQ(r.requeue_after, std::optional<Duration>(DecideOptions{}.cancel_wait_poll));

  clock_.Advance(seconds(7));
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "CANCELLED"))));
  r = Reconcile();
  EXPECT_EQ(ap_.Count(kDelete, kJob42), 1) << "cancelled once";
  const v1alpha1::SlurmJobStatus s = Status();
  EXPECT_EQ(s.job_state(), "CANCELLED");
  EXPECT_EQ(s.phase(), "Failed");
  EXPECT_EQ(s.reason(), "DeadlineExceeded");
  EXPECT_EQ(Cond(kFailed).reason(), "DeadlineExceeded");
  EXPECT_EQ(events_.WithReason("DeadlineExceeded").size(), 2u) << "the cancel, then the end";
}

TEST_F(ExecutorTest, DeletionPolicyOrphanReleasesWithoutCancelling) {
  AddJob({{"deletionPolicy", "Orphan"}});
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));
  Reconcile();
  clock_.Advance(seconds(1));
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "RUNNING"))));
  Reconcile();
  ASSERT_EQ(Status().job_state(), "RUNNING");
  ASSERT_TRUE(kube_.Delete(SlurmJobsResource(), kNs, kName).ok());
  ap_.ClearCalls();

  ap_.On(kPost, kJob42, StructuredBody(200, R"({"errors": [], "warnings": []})"));
  Reconcile();
  EXPECT_EQ(ap_.Count(kDelete, kJob42), 0);
  // One call: the job's comment is replaced, so the orphan sweep leaves it alone.
  ASSERT_EQ(ap_.calls().size(), 1u);
  EXPECT_EQ(ap_.calls()[0].path, kJob42);
  EXPECT_FALSE(Object().has_value());
  std::vector<EventSpec> e = events_.WithReason("Orphaned");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_THAT(e[0].note, HasSubstr("Slurm job 42 is left running"));
}

// ---------------------------------------------------------------- v0.0.38

TEST_F(ExecutorTest, V0038EnvironmentIsAnObjectAndUnknownJobFallsBackToSlurmdb) {
  kube_.MutateBehindTheBack("slurmclusters", kNs, "a3",
                            [](nlohmann::json& o) { o["spec"]["slurmApiVersion"] = "v0.0.38"; });
  AddJob({{"environment", {{{"name", "OMP_NUM_THREADS"}, {"value", "4"}}}}});
  ap_.On(kPost, "/slurm/v0.0.38/job/submit",
         StructuredBody(200, absl::StrCat("{", kMeta38,
                                          R"(, "errors": [], "job_id": 42, "step_id": "BATCH", )"
                                          R"("job_submit_user_msg": ""})")));
  Reconcile();
  ASSERT_EQ(Submits("/slurm/v0.0.38/job/submit"), 1);
  const WireCall c = ap_.calls()[0];
  // The wire JSON, as text: environment is an object in v0.0.38.
  nlohmann::json sent = nlohmann::json::parse(c.raw_envelope);
  ASSERT_TRUE(sent["body"]["job"]["environment"].is_object()) << c.raw_envelope;
  EXPECT_EQ(sent["body"]["job"]["environment"],
            (nlohmann::json{{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"OMP_NUM_THREADS", "4"}}));
  EXPECT_THAT(c.raw_envelope, HasSubstr(R"("environment":{)"));
  EXPECT_EQ(sent["body"]["job"]["comment"], kTag);
  EXPECT_EQ(Status().job_id(), 42);

  // The live queue forgot the job: v0.0.38 says so with HTTP 500 + error 2017.
  clock_.Advance(seconds(1));
  ap_.On(kGet, "/slurm/v0.0.38/job/42",
         StructuredBody(500, absl::StrCat("{", kMeta38,
                                          R"(, "errors": [{"description": "Unable to find )"
                                          R"(JobId=42", "error_number": 2017, "error": "Invalid )"
                                          R"(job id specified", "source": "slurm_load_job"}], )"
                                          R"("jobs": []})")));
  ap_.On(kGet, "/slurmdb/v0.0.38/job/42",
         StructuredBody(
             200, absl::StrCat(
                      "{", kMeta38,
                      R"(, "errors": [], "jobs": [{"job_id": 42, "name": "train", "account": "", )"
                      R"("partition": "gpu", "user": "alice", "state": {"current": "COMPLETED", )"
                      R"("reason": "None"}, "exit_code": {"status": "SUCCESS", "return_code": 0}, )"
                      R"("derived_exit_code": {"status": "SUCCESS", "return_code": 0}, )"
                      R"("comment": {"administrator": null, "job": ")",
                      kTag,
                      R"(", "system": null}, "time": {"elapsed": 12, "eligible": 1700000000, )"
                      R"("end": 1700000017, "start": 1700000005, "submission": 1700000000, )"
                      R"("suspended": 0, "limit": null, "system": {"seconds": 0, "microseconds": )"
                      R"(4000}, "total": {"seconds": 0, "microseconds": 9000}, "user": )"
                      R"({"seconds": 0, "microseconds": 5000}}, "working_directory": "/tmp", )"
                      R"("steps": []}]})")));
  ReconcileResult r = Reconcile();
  EXPECT_EQ(ap_.Count(kGet, "/slurm/v0.0.38/job/42"), 1);
  EXPECT_EQ(ap_.Count(kGet, "/slurmdb/v0.0.38/job/42"), 1);
  EXPECT_EQ(Status().job_state(), "COMPLETED");
  EXPECT_EQ(Status().phase(), "Succeeded");
  EXPECT_EQ(Cond(kReady).status(), "True");
  EXPECT_FALSE(r.requeue_after.has_value());
}

// ------------------------------------------- Kubernetes writes per job life

// One plain life: apply, submit, PENDING, RUNNING, COMPLETED, delete. After
// every reconcile the test reconciles again at once, as the watch events of
// the operator's own writes would make it do, so redundant writes show up.
TEST_F(ExecutorTest, KubernetesWritesPerPlainJobLife) {
  ScriptAccountingOfTheEnd();
  AddJob();
  auto settle = [&] {
    ReconcileResult r;
    for (int i = 0; i < 3; ++i) r = Reconcile();
    return r;
  };
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));
  settle();
  const int after_submit = kube_.WriteCount();
  clock_.Advance(seconds(1));
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "PENDING"))));
  settle();
  const int after_pending = kube_.WriteCount();
  clock_.Advance(seconds(1));
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "RUNNING"))));
  settle();
  const int after_running = kube_.WriteCount();
  // A few polls while it runs: no change, no write.
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(seconds(2));
    settle();
  }
  const int after_polls = kube_.WriteCount();
  clock_.Advance(seconds(2));
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "COMPLETED"))));
  settle();
  const int after_completed = kube_.WriteCount();
  kube_.ClearCalls();
  ASSERT_TRUE(kube_.Delete(SlurmJobsResource(), kNs, kName).ok());  // the user's delete
  kube_.ClearCalls();
  settle();
  const int deletion = kube_.WriteCount();
  EXPECT_FALSE(Object().has_value());

  const int finalizer_add = 1;
  const int status_writes = after_completed - finalizer_add;
  std::cout << "[ WRITES   ] plain job life: finalizer add " << finalizer_add << ", status writes "
            << status_writes << " (submit " << (after_submit - finalizer_add) << ", pending "
            << (after_pending - after_submit) << ", running " << (after_running - after_pending)
            << ", polls while running " << (after_polls - after_running) << ", completed "
            << (after_completed - after_polls) << "), finalizer removal " << deletion << ", total "
            << (after_completed + deletion) << "; Slurm calls " << ap_.calls().size() << "\n";
  EXPECT_EQ(after_submit, 3)
      << "finalizer patch + the submit's target (status.submitTarget) + the status write "
         "recording the job";
  EXPECT_EQ(after_polls - after_running, 0);
  EXPECT_EQ(deletion, 1) << "only the finalizer removal";
  EXPECT_EQ(Submits(), 1);
}

// #16 item 2: with a note key, the finalizer patch records the first submit's
// target (an HMAC-signed annotation), so only one write precedes the submit;
// the status write recording the job copies the target into the status.
TEST_F(ExecutorTest, WithANoteKeyOneWritePrecedesTheFirstSubmit) {
  const std::string key = "0123456789abcdef0123456789abcdef";
  NewExecutor(/*allow_operator_identity=*/true, key);
  AddJob();
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));
  for (int i = 0; i < 3; ++i) Reconcile();
  EXPECT_EQ(Submits(), 1);
  EXPECT_EQ(kube_.WriteCount(), 2) << "finalizer patch with the note + the status write "
                                      "recording the job";
  const std::optional<nlohmann::json> obj = Object();
  ASSERT_TRUE(obj.has_value());
  const nlohmann::json& note =
      (*obj)["metadata"]["annotations"][std::string(kSubmitTargetAnnotation)];
  ASSERT_TRUE(note.is_string()) << obj->dump();
  JobFacts facts;
  facts.id.uid = (*obj)["metadata"]["uid"].get<std::string>();
  facts.annotations[std::string(kSubmitTargetAnnotation)] = note.get<std::string>();
  const std::optional<v1alpha1::SlurmJobLocation> noted = VerifiedSubmitTarget(key, facts);
  ASSERT_TRUE(noted.has_value()) << note;
  EXPECT_EQ((*obj)["status"]["jobId"], 42);
  EXPECT_EQ((*obj)["status"]["submitTarget"]["clusterId"], noted->cluster_id());
  EXPECT_EQ((*obj)["status"]["submittedTo"]["clusterId"], noted->cluster_id());
}

// The crash the note is for: the finalizer and the note landed, the submit
// reached Slurm but its answer said nothing (504), and the process died. The
// next process (same key) knows from the note alone that a submit may have
// gone out: it finds the job by its tag and adopts it.
TEST_F(ExecutorTest, WithANoteKeyARestartAfterAnAmbiguousSubmitAdoptsTheJob) {
  const std::string key = "0123456789abcdef0123456789abcdef";
  NewExecutor(/*allow_operator_identity=*/true, key);
  AddJob();
  ap_.On(kPost, kSubmit42, StructuredBody(504, "{}"), StructuredBody(200, SubmitOk42(43)));
  // The search right after the 504 fails too: the job stays unknown.
  ap_.On(kGet, kJobs42, StructuredBody(503, "{}"),
         StructuredBody(200, JobAnswer42(JobRecord42(42, "PENDING"))));
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "PENDING"))));
  Reconcile();
  ASSERT_EQ(Submits(), 1);
  EXPECT_EQ(Status().job_id(), 0);
  EXPECT_FALSE(Status().has_submit_target()) << "only the note records the target";
  NewExecutor(/*allow_operator_identity=*/true, key);  // the restart
  clock_.Advance(seconds(70));                         // past the settle window
  Reconcile();
  EXPECT_EQ(Submits(), 1) << "a second submit after a restart";
  EXPECT_EQ(Status().job_id(), 42);
  EXPECT_EQ(Cond(kSubmitted).reason(), "Adopted");
  EXPECT_TRUE(Status().has_submit_target());
}

// ---------------------- Slurm answers that may have queued the job (#13 E1)

// slurmrestd's 504 (slurmctld's reply timed out after it may have queued the
// job), communication errors, and a 2xx without job_id say nothing about
// whether the job exists. The job WAS queued here: the operator must find it
// by its tag and adopt it, never submit it a second time.
class AmbiguousSubmitAnswerTest
    : public ExecutorTest,
      public ::testing::WithParamInterface<std::pair<int, std::string>> {};

std::string SlurmError42(int number, const std::string& text) {
  return absl::StrCat("{", kMeta42,
                      R"(, "errors": [{"description": "Batch job submission failed", )",
                      R"("error_number": )", number, R"(, "error": ")", text,
                      R"j(", "source": "slurm_submit_batch_job()"}], "warnings": []})j");
}

TEST_P(AmbiguousSubmitAnswerTest, IsFollowedByATagSearchAndAdoptionNeverASecondSubmit) {
  AddJob();
  ap_.On(kPost, kSubmit42, StructuredBody(GetParam().first, GetParam().second),
         StructuredBody(200, SubmitOk42(43)));
  ap_.On(kGet, kJobs42, StructuredBody(200, JobAnswer42(JobRecord42(42, "PENDING"))));
  ap_.On(kGet, kJob42, StructuredBody(200, JobAnswer42(JobRecord42(42, "PENDING"))));
  Reconcile();
  clock_.Advance(seconds(70));
  Reconcile();
  EXPECT_EQ(Submits(), 1) << "a second submit after an ambiguous answer";
  EXPECT_GE(ap_.Count(kGet, kJobs42), 1) << "no tag search";
  EXPECT_EQ(Status().job_id(), 42);
  EXPECT_EQ(Cond(kSubmitted).reason(), "Adopted");
}

INSTANTIATE_TEST_SUITE_P(
    SlurmAnswers, AmbiguousSubmitAnswerTest,
    ::testing::Values(
        std::make_pair(504, SlurmError42(5004, "Socket timed out on send/recv operation")),
        std::make_pair(502, SlurmError42(1802, "Unable to contact slurm controller")),
        std::make_pair(500, SlurmError42(1004, "Communication shutdown failure")),
        std::make_pair(500, SlurmError42(1001, "Unable to contact slurm controller")),
        // A code slurmctld returns for a job it queued, here without the job id
        // (a definitive refusal is not searched for: Slurm500BadPartition...).
        std::make_pair(500, SlurmError42(2016, "Requested nodes are busy")),
        std::make_pair(200, absl::StrCat("{", kMeta42, R"(, "errors": [], "warnings": []})"))));

// ------------------------------------------------- fencing (#13 E2)

class FixedFence : public SubmitFence {
 public:
  absl::Status verdict = absl::OkStatus();
  absl::Status MaySubmit(Time) const override { return verdict; }
};

// A replica whose Lease is not valid with time to spare sends no submit: it
// says why and retries with backoff, and submits once the fence opens.
TEST_F(ExecutorTest, ClosedSubmitFenceSendsNoSubmit) {
  FixedFence fence;
  fence.verdict = absl::UnavailableError("the leader Lease was not renewed in time");
  exec_->SetSubmitFence(&fence);
  AddJob();
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));
  ReconcileResult r = Reconcile();
  EXPECT_EQ(Submits(), 0);
  EXPECT_TRUE(r.retry_with_backoff);
  EXPECT_EQ(Cond(kReconciling).reason(), "SubmitRetrying");
  EXPECT_THAT(Status().message(), HasSubstr("not renewed in time"));
  fence.verdict = absl::OkStatus();
  Reconcile();
  EXPECT_EQ(Submits(), 1);
  EXPECT_EQ(Status().job_id(), 42);
}

// A standby that became the leader an hour after it started: the previous
// leader may have sent a submit just before it lost the Lease, so an empty
// search proves nothing until submit_settle after the takeover (not after
// this process started).
TEST_F(ExecutorTest, NewLeadersSettleWindowStartsWhenItBecameLeader) {
  clock_.Advance(std::chrono::hours(1));
  exec_->AnchorSettleWindow(clock_.Now());
  AddJob();
  kube_.MutateBehindTheBack("slurmjobs", kNs, kName, [](nlohmann::json& o) {
    o["metadata"]["finalizers"] = {std::string(api::kSlurmJobFinalizer)};
  });
  ap_.On(kGet, kJobs42, StructuredBody(200, JobAnswer42("")));
  ap_.On(kGet, kDbJobsTrain42, StructuredBody(200, kDbNothing42));
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));
  clock_.Advance(seconds(5));
  ReconcileResult r = Reconcile();
  EXPECT_EQ(Submits(), 0) << "the old leader's submit may still land";
  EXPECT_EQ(Cond(kReconciling).reason(), "SubmitOutcomeUnknown");
  ASSERT_TRUE(r.requeue_after.has_value());
  EXPECT_EQ(*r.requeue_after, seconds(56));
  clock_.Advance(seconds(56));
  Reconcile();
  EXPECT_EQ(Submits(), 1);
  EXPECT_EQ(Status().job_id(), 42);
}

// ------------------------------------------ tenants: whose identity (issue 11)

constexpr char kPing42[] = "/slurm/v0.0.42/ping/";
constexpr char kOperatorNs[] = "slurmjob-operator-system";

ClusterIdentity OperatorId() {
  ClusterIdentity id;
  id.source = ClusterIdentity::Source::kOperator;
  return id;
}

ClusterIdentity SecretId(const std::string& ns, const std::string& name,
                         bool installer_secret = false) {
  ClusterIdentity id;
  id.source = ClusterIdentity::Source::kSecret;
  id.secret_namespace = ns;
  id.secret_name = name;
  id.secret_key = "credentials.json";
  id.installer_secret = installer_secret;
  return id;
}

class TenantAccessTest : public ExecutorTest {
 protected:
  void AddNamespace(const std::string& name, const nlohmann::json& labels) {
    nlohmann::json ns = {{"apiVersion", "v1"},
                         {"kind", "Namespace"},
                         {"metadata", {{"name", name}, {"labels", labels}}}};
    ASSERT_TRUE(kube_.Create(kube::Namespaces(), "", ns).ok());
  }
  // The ClusterSlurmCluster "shared"; `spec_extra` is merged into its spec.
  void AddClusterScoped(const nlohmann::json& spec_extra) {
    nlohmann::json spec = {{"projectId", "proj"},
                           {"region", "us-central1"},
                           {"clusterId", "c1"},
                           {"slurmApiVersion", "v0.0.42"}};
    spec.merge_patch(spec_extra);
    nlohmann::json c = {{"apiVersion", std::string(api::kApiVersion)},
                        {"kind", "ClusterSlurmCluster"},
                        {"metadata", {{"name", "shared"}}},
                        {"spec", spec}};
    ASSERT_TRUE(kube_.Create(ClusterSlurmClustersResource(), "", c).ok());
    kube_.ClearCalls();
  }
  // The cluster reconciler ("scl:" keys) with the same access options as NewExecutor's.
  ReconcileResult Probe(const std::string& key, bool allow_operator_identity) {
    ClusterReconciler reconciler(kube_, clusters_, *api_, creds_, events_, clock_);
    ClusterAccessOptions access;
    access.allow_operator_identity_for_namespaced_clusters = allow_operator_identity;
    access.operator_namespace = kOperatorNs;
    reconciler.SetClusterAccess(&cluster_clusters_, access);
    return reconciler.Reconcile(key);
  }
  void AddSharedJob() {
    AddJob({{"clusterRef", {{"kind", "ClusterSlurmCluster"}, {"name", "shared"}}}});
  }
  bool OperatorIdentityAsked() {
    for (const auto& id : creds_.identities) {
      if (id.source == ClusterIdentity::Source::kOperator) return true;
    }
    return false;
  }
};

TEST_F(TenantAccessTest, NamespacedClusterWithoutCredentialsIsRefusedUnlessTheInstallerAllows) {
  NewExecutor(/*allow_operator_identity=*/false);
  AddJob();

  Reconcile();

  EXPECT_TRUE(ap_.calls().empty()) << "nothing may be sent with the operator's identity";
  EXPECT_FALSE(OperatorIdentityAsked());
  v1alpha1::Condition stalled = Cond(kStalled);
  EXPECT_EQ(stalled.status(), "True");
  EXPECT_EQ(stalled.reason(), "CredentialsRequired");
  EXPECT_THAT(stalled.message(), HasSubstr("credentialsSecretRef"));
  EXPECT_THAT(stalled.message(), HasSubstr("ClusterSlurmCluster"));
  EXPECT_THAT(events_.WithReason("CredentialsRequired"),
              ElementsAre(EventIs("Warning", "CredentialsRequired")));
  EXPECT_EQ(Submits(), 0);
}

// #13 item 9 for SlurmCluster keys: a status write that got no answer parks
// the "scl:" key until the API server answers (ReconcileResult::
// api_server_unreachable), like a SlurmJob's; before, it waited out the
// key's backoff.
TEST_F(TenantAccessTest, AClusterStatusWriteWithoutAnAnswerWaitsForTheApiServer) {
  NewExecutor(/*allow_operator_identity=*/false);
  kube_.FailNext("update-status", absl::UnavailableError("dial tcp: connect: connection refused"));

  const ReconcileResult r = Probe("team-a/a3", /*allow_operator_identity=*/false);

  EXPECT_TRUE(r.retry_with_backoff);
  EXPECT_TRUE(r.api_server_unreachable);
}

// A refusal for good (RBAC, an admission policy, 422) is told on the SlurmCluster, like a
// SlurmJob's: its Ready condition cannot say so, since that is the refused write.
TEST_F(TenantAccessTest, AClusterStatusWriteRefusedForGoodIsAWarningEvent) {
  NewExecutor(/*allow_operator_identity=*/false);
  kube_.FailNext("update-status",
                 absl::PermissionDeniedError("admission webhook \"policy\" denied the request"));

  const ReconcileResult r = Probe("team-a/a3", /*allow_operator_identity=*/false);

  EXPECT_TRUE(r.retry_with_backoff);
  ASSERT_THAT(events_.WithReason("WriteRefused"), ElementsAre(EventIs("Warning", "WriteRefused")));
  EXPECT_THAT(events_.WithReason("WriteRefused")[0].note,
              HasSubstr("status write of this SlurmCluster: admission webhook"));

  kube_.FailNext("update-status", absl::UnavailableError("connection refused"));
  Probe("team-a/a3", /*allow_operator_identity=*/false);
  EXPECT_EQ(events_.WithReason("WriteRefused").size(), 1u) << "it clears up by itself";
}

// ... and for the protector's "protect:" keys.
TEST_F(ExecutorTest, AProtectorWriteWithoutAnAnswerWaitsForTheApiServer) {
  // No SlurmJob names the (kept) SlurmCluster: its finalizer is to go.
  ClusterProtector protector(
      kube_, clusters_,
      {[] { return true; }, [](const std::string&, const std::string&) { return false; }});
  kube_.FailNext("patch", absl::UnavailableError("dial tcp: connect: connection refused"));

  ReconcileResult r = protector.Reconcile("team-a/a3");
  EXPECT_TRUE(r.retry_with_backoff);
  EXPECT_TRUE(r.api_server_unreachable);

  // An answer that refuses (a conflict) keeps the per-key backoff alone.
  kube_.FailNext("patch", absl::AbortedError("the object has been modified"));
  r = protector.Reconcile("team-a/a3");
  EXPECT_TRUE(r.retry_with_backoff);
  EXPECT_FALSE(r.api_server_unreachable);
}

// An empty Secret in kNs with these finalizers.
bool CreateSecret(testing::InMemoryKube& kube, const std::string& name,
                  const std::vector<std::string>& finalizers) {
  nlohmann::json meta = {{"name", name}, {"namespace", kNs}};
  if (!finalizers.empty()) meta["finalizers"] = finalizers;
  return kube
      .Create(kube::Secrets(), kNs, {{"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", meta}})
      .ok();
}

// A protector whose SlurmJobs name exactly the SlurmClusters (of kNs) in `in_use`.
ClusterProtector ProtectorNaming(kube::Client& kube, const ObjectCache& clusters,
                                 const std::set<std::string>& in_use) {
  return ClusterProtector(
      kube, clusters,
      {[] { return true; },
       [&in_use](const std::string&, const std::string& n) { return in_use.contains(n); }});
}

// Two SlurmClusters share a credentials Secret. a3's last SlurmJob goes while b7, whose first
// SlurmJob just came, has put the finalizer on the Secret and not yet recorded it: a3's release
// must leave the finalizer b7 relies on. Before, a release looked only at the other
// SlurmClusters' protected-secret annotation, which b7 had not written yet: the Secret was
// released, and b7's annotation then named a Secret a namespace deletion could take at once.
TEST_F(ExecutorTest, ASharedSecretIsNotReleasedUnderAClusterStillProtectingIt) {
  const std::string secret = "shared-creds";
  ASSERT_TRUE(CreateSecret(kube_, secret, {}));
  kube_.MutateBehindTheBack("slurmclusters", kNs, "a3", [&](nlohmann::json& o) {
    o["metadata"].erase("finalizers");
    o["spec"]["credentialsSecretRef"] = {{"name", secret}};
  });
  nlohmann::json b7 = testing::SlurmClusterObject(kNs, "b7", "v0.0.40");
  b7["metadata"].erase("finalizers");
  b7["spec"]["credentialsSecretRef"] = {{"name", secret}};
  ASSERT_TRUE(kube_.Create(SlurmClustersResource(), kNs, b7).ok());
  std::set<std::string> in_use = {"a3"};
  ClusterProtector protector = ProtectorNaming(kube_, clusters_, in_use);
  const auto kept = [&] {
    return api::HasFinalizer(*kube_.Object("secrets", kNs, secret), kCredentialsInUseFinalizer);
  };
  ASSERT_EQ(protector.Reconcile("team-a/a3").requeue_after, std::nullopt);
  ASSERT_TRUE(kept());

  // b7's first SlurmJob comes, and a3's last one goes; a3's release runs right before b7 records
  // the Secret it has just protected.
  in_use = {"b7"};
  bool released_in_between = false;
  kube_.on_request = [&](const testing::KubeCall& c) {
    const nlohmann::json* annotations =
        c.body.is_object() && c.body.contains("metadata") ? &c.body["metadata"] : nullptr;
    if (released_in_between || c.verb != "patch" || c.name != "b7" || !annotations ||
        annotations->value("annotations", nlohmann::json::object())
                .value(kProtectedSecretAnnotation, nlohmann::json()) != secret) {
      return;
    }
    released_in_between = true;
    EXPECT_FALSE(protector.Reconcile("team-a/a3").retry_with_backoff);
  };
  EXPECT_FALSE(protector.Reconcile("team-a/b7").retry_with_backoff);
  kube_.on_request = nullptr;
  ASSERT_TRUE(released_in_between);
  EXPECT_FALSE(
      api::HasFinalizer(*kube_.Object("slurmclusters", kNs, "a3"), kClusterInUseFinalizer));
  EXPECT_TRUE(kept()) << "b7 relies on it: " << kube_.Object("slurmclusters", kNs, "b7")->dump();

  // b7's last SlurmJob goes too: now it is released.
  in_use.clear();
  EXPECT_FALSE(protector.Reconcile("team-a/b7").retry_with_backoff);
  EXPECT_FALSE(kept()) << kube_.Object("secrets", kNs, secret)->dump();
}

// A Secret an operator from before the protected-for annotation kept for a3 and b7 (the finalizer,
// no annotation): a new SlurmCluster keeping it lists all three; each release takes one; the last
// takes the finalizer.
TEST_F(ExecutorTest, ASecretKeptByAnOlderOperatorLearnsItsOwnersAndGoesWithTheLast) {
  const std::string secret = "shared-creds";
  ASSERT_TRUE(CreateSecret(kube_, secret, {kCredentialsInUseFinalizer}));
  const auto keep_with = [&](nlohmann::json& o) {
    o["metadata"]["finalizers"] = {kClusterInUseFinalizer};
    o["metadata"]["annotations"][kProtectedSecretAnnotation] = secret;
    o["spec"]["credentialsSecretRef"] = {{"name", secret}};
  };
  kube_.MutateBehindTheBack("slurmclusters", kNs, "a3", keep_with);
  for (const char* name : {"b7", "c9"}) {
    nlohmann::json c = testing::SlurmClusterObject(kNs, name, "v0.0.40");
    c["metadata"].erase("finalizers");
    c["spec"]["credentialsSecretRef"] = {{"name", secret}};
    if (std::string(name) == "b7") keep_with(c);
    ASSERT_TRUE(kube_.Create(SlurmClustersResource(), kNs, c).ok());
  }
  std::set<std::string> in_use = {"a3", "b7", "c9"};
  ClusterProtector protector = ProtectorNaming(kube_, clusters_, in_use);
  const auto secret_now = [&] { return *kube_.Object("secrets", kNs, secret); };
  const auto owners = [&] {
    return secret_now()["metadata"]
        .value("annotations", nlohmann::json::object())
        .value(kProtectedForAnnotation, "<none>");
  };

  EXPECT_FALSE(protector.Reconcile("team-a/c9").retry_with_backoff);
  EXPECT_EQ(owners(), "a3,b7,c9");
  for (const char* name : {"a3", "c9"}) {
    in_use.erase(name);
    EXPECT_FALSE(protector.Reconcile(absl::StrCat("team-a/", name)).retry_with_backoff);
    EXPECT_TRUE(api::HasFinalizer(secret_now(), kCredentialsInUseFinalizer)) << name;
  }
  EXPECT_EQ(owners(), "b7");
  in_use.clear();
  EXPECT_FALSE(protector.Reconcile("team-a/b7").retry_with_backoff);
  EXPECT_FALSE(api::HasFinalizer(secret_now(), kCredentialsInUseFinalizer));
  EXPECT_EQ(owners(), "<none>");
}

// A protection step the API server refuses (RBAC, an admission policy) is told on the
// SlurmCluster as a Warning Event: its SlurmJobs submit nothing meanwhile, and before only the
// operator's log said why. A conflict (a stale cache, retried at once) or no answer says nothing.
TEST_F(ExecutorTest, AProtectionStepRefusedIsAWarningOnTheSlurmCluster) {
  ClusterProtector protector(
      kube_, clusters_,
      {[] { return true; }, [](const std::string&, const std::string&) { return true; }}, &events_);
  kube_.MutateBehindTheBack("slurmclusters", kNs, "a3",
                            [](nlohmann::json& o) { o["metadata"].erase("finalizers"); });
  kube_.FailNext("patch", absl::AbortedError("the object has been modified"));
  EXPECT_TRUE(protector.Reconcile("team-a/a3").retry_with_backoff);
  kube_.FailNext("patch", absl::UnavailableError("dial tcp: connect: connection refused"));
  EXPECT_TRUE(protector.Reconcile("team-a/a3").retry_with_backoff);
  EXPECT_THAT(events_.WithReason("ProtectionFailed"), IsEmpty());

  kube_.FailNext("patch", absl::PermissionDeniedError(
                              "slurmclusters.hpc.slurmoperator.dev \"a3\" is forbidden"));
  EXPECT_TRUE(protector.Reconcile("team-a/a3").retry_with_backoff);
  ASSERT_THAT(events_.WithReason("ProtectionFailed"),
              ElementsAre(EventIs("Warning", "ProtectionFailed")));
  const testing::RecordedEvent e = events_.events().back();
  EXPECT_EQ(e.object, "team-a/a3");
  EXPECT_THAT(e.event.note, HasSubstr("is forbidden"));
  EXPECT_THAT(e.event.note, HasSubstr("Its SlurmJobs submit nothing until it is kept"));

  EXPECT_FALSE(protector.Reconcile("team-a/a3").retry_with_backoff) << "kept once it is allowed";
}

// A write of the SlurmJob the API server refuses for good (an admission policy, RBAC, an invalid
// object) was retried with nothing but a log line, and the SlurmJob's status could not say so:
// the refused write may be that very status. A Warning Event says it; a conflict or no answer,
// which pass by themselves, says nothing.
TEST_F(ExecutorTest, AWriteRefusedForGoodIsAWarningEvent) {
  AddJob();
  kube_.FailNext("patch", absl::PermissionDeniedError(
                              "admission webhook \"policy.example.com\" denied the request: "
                              "finalizers are not allowed"));
  EXPECT_TRUE(Reconcile().retry_with_backoff);
  EXPECT_EQ(Submits(), 0);
  ASSERT_THAT(events_.WithReason("WriteRefused"), ElementsAre(EventIs("Warning", "WriteRefused")));
  EXPECT_THAT(events_.events().back().event.note,
              HasSubstr("the operator's add-finalizer of this SlurmJob"));
  EXPECT_THAT(events_.events().back().event.note, HasSubstr("finalizers are not allowed"));

  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));
  kube_.FailNext("update-status",
                 absl::InvalidArgumentError("SlurmJob.hpc.slurmoperator.dev \"train\" is invalid"));
  EXPECT_TRUE(Reconcile().retry_with_backoff);
  EXPECT_EQ(Submits(), 0) << "the status records where the submit goes before it is sent";
  EXPECT_EQ(events_.WithReason("WriteRefused").size(), 2u);
  EXPECT_THAT(events_.events().back().event.note,
              HasSubstr("the operator's status write of this SlurmJob"));

  kube_.FailNext("update-status", absl::UnavailableError("connection refused"));
  Reconcile();
  EXPECT_EQ(events_.WithReason("WriteRefused").size(), 2u) << "it passes by itself";
  Reconcile();
  EXPECT_EQ(Status().job_id(), 42);
  EXPECT_EQ(Submits(), 1);
}

// A SlurmJob waiting for its SlurmCluster to be kept said nothing of its own: `kubectl describe
// slurmjob` showed no reason while the protector was refused. Its status and a Warning Event now
// say why; once the protector is let through, it is submitted.
TEST_F(ExecutorTest, ASlurmJobWaitingOnARefusedProtectionSaysWhyAndIsSubmittedOnceKept) {
  ClusterProtector protector(
      kube_, clusters_,
      {[] { return true; }, [](const std::string&, const std::string&) { return true; }}, &events_);
  exec_->SetProtectionProblems(&protector.problems());
  kube_.MutateBehindTheBack("slurmclusters", kNs, "a3",
                            [](nlohmann::json& o) { o["metadata"].erase("finalizers"); });
  AddJob();
  EXPECT_EQ(Reconcile().requeue_after, std::optional<Duration>(seconds(1)));
  EXPECT_TRUE(events_.WithReason("ClusterProtectionFailed").empty()) << "only a short wait";

  kube_.FailNext("patch", absl::PermissionDeniedError(
                              "slurmclusters.hpc.slurmoperator.dev \"a3\" is forbidden"));
  EXPECT_TRUE(protector.Reconcile("team-a/a3").retry_with_backoff);
  Reconcile();
  EXPECT_EQ(Submits(), 0);
  const v1alpha1::Condition reconciling = Cond(kReconciling);
  EXPECT_EQ(reconciling.reason(), "ClusterProtectionFailed");
  EXPECT_THAT(reconciling.message(), HasSubstr("is forbidden"));
  EXPECT_EQ(Status().phase(), "Pending");
  ASSERT_THAT(events_.WithReason("ClusterProtectionFailed"),
              ElementsAre(EventIs("Warning", "ClusterProtectionFailed")));
  EXPECT_EQ(events_.events().back().object, kKey);

  EXPECT_FALSE(protector.Reconcile("team-a/a3").retry_with_backoff);
  EXPECT_EQ(protector.problems().Get("team-a/a3"), "") << "kept: nothing on record";
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));
  Reconcile();
  EXPECT_EQ(Status().job_id(), 42) << Object()->dump();
  EXPECT_NE(Cond(kReconciling).reason(), "ClusterProtectionFailed");
}

TEST_F(TenantAccessTest, ProbeOfANamespacedClusterWithoutCredentialsSendsNothing) {
  NewExecutor(/*allow_operator_identity=*/false);

  Probe("team-a/a3", /*allow_operator_identity=*/false);

  EXPECT_TRUE(ap_.calls().empty());
  EXPECT_FALSE(OperatorIdentityAsked());
  absl::StatusOr<v1alpha1::SlurmCluster> c =
      api::SlurmClusterFromObject(*kube_.Object("slurmclusters", kNs, "a3"));
  ASSERT_TRUE(c.ok());
  const v1alpha1::Condition* ready = FindCondition(c->status().conditions(), kReady);
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->status(), "False");
  EXPECT_EQ(ready->reason(), "CredentialsRequired");
  EXPECT_THAT(events_.WithReason("CredentialsRequired"),
              ElementsAre(EventIs("Warning", "CredentialsRequired")));
}

TEST_F(TenantAccessTest, NamespacedClusterWithCredentialsUsesItsOwnNamespacesSecret) {
  NewExecutor(/*allow_operator_identity=*/false);
  kube_.MutateBehindTheBack("slurmclusters", kNs, "a3", [](nlohmann::json& o) {
    o["spec"]["credentialsSecretRef"] = {{"name", "tenant-creds"}};
    // As the protector leaves it: the Secret kept too (cluster_protection.h).
    o["metadata"]["annotations"][kProtectedSecretAnnotation] = "tenant-creds";
  });
  AddJob();
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));

  Reconcile();

  EXPECT_EQ(Status().job_id(), 42);
  ASSERT_FALSE(creds_.identities.empty());
  EXPECT_EQ(creds_.identities.back(), SecretId(kNs, "tenant-creds"));
  EXPECT_FALSE(OperatorIdentityAsked());
}

TEST_F(TenantAccessTest, ClusterSlurmClusterServesAMatchingNamespaceWithTheOperatorsIdentity) {
  NewExecutor(/*allow_operator_identity=*/false);
  AddNamespace(kNs, {{"team", "a"}, {"kubernetes.io/metadata.name", kNs}});
  AddClusterScoped({{"namespaceSelector", {{"matchLabels", {{"team", "a"}}}}}});
  AddSharedJob();
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));

  Reconcile();

  EXPECT_EQ(Status().job_id(), 42) << Object()->dump();
  EXPECT_EQ(Status().cluster(), "shared");
  ASSERT_FALSE(creds_.identities.empty());
  EXPECT_EQ(creds_.identities.back(), OperatorId());
}

TEST_F(TenantAccessTest, ClusterSlurmClusterRefusesANamespaceItsSelectorDoesNotMatch) {
  NewExecutor(/*allow_operator_identity=*/true);  // the flag is about namespaced clusters only
  AddNamespace(kNs, {{"team", "a"}});
  AddClusterScoped(
      {{"namespaceSelector",
        {{"matchExpressions", {{{"key", "team"}, {"operator", "In"}, {"values", {"b", "c"}}}}}}}});
  AddSharedJob();

  Reconcile();

  EXPECT_TRUE(ap_.calls().empty());
  EXPECT_FALSE(OperatorIdentityAsked());
  v1alpha1::Condition stalled = Cond(kStalled);
  EXPECT_EQ(stalled.reason(), "NamespaceNotAllowed");
  EXPECT_THAT(stalled.message(), HasSubstr("ClusterSlurmCluster \"shared\""));
  EXPECT_THAT(stalled.message(), HasSubstr("namespace \"team-a\""));
  EXPECT_THAT(events_.WithReason("NamespaceNotAllowed"),
              ElementsAre(EventIs("Warning", "NamespaceNotAllowed")));
}

TEST_F(TenantAccessTest, ClusterSlurmClusterWithoutSelectorServesNobody) {
  AddNamespace(kNs, {{"team", "a"}});
  AddClusterScoped(nlohmann::json::object());
  AddSharedJob();

  Reconcile();

  EXPECT_TRUE(ap_.calls().empty());
  EXPECT_EQ(Cond(kStalled).reason(), "NamespaceNotAllowed");
}

TEST_F(TenantAccessTest, ClusterSlurmClustersSecretIsReadFromTheOperatorsNamespace) {
  AddNamespace(kNs, {{"team", "a"}});
  AddClusterScoped({{"namespaceSelector", nlohmann::json::object()},
                    {"credentialsSecretRef", {{"name", "installer-creds"}}}});
  AddSharedJob();
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));

  Reconcile();

  EXPECT_EQ(Status().job_id(), 42);
  ASSERT_FALSE(creds_.identities.empty());
  EXPECT_EQ(creds_.identities.back(),
            SecretId(kOperatorNs, "installer-creds", /*installer_secret=*/true));
}

TEST_F(TenantAccessTest, ClusterSlurmClusterIsProbedAndItsStatusWritten) {
  AddClusterScoped({{"namespaceSelector", nlohmann::json::object()}});
  ap_.On(kGet, kPing42, StructuredBody(200, R"({"pings": []})"));

  Probe("/shared", /*allow_operator_identity=*/false);

  EXPECT_EQ(ap_.Count(kGet, kPing42), 1);
  EXPECT_EQ(creds_.identities.back(), OperatorId());
  absl::StatusOr<api::ClusterScopedCluster> c =
      api::ClusterSlurmClusterFromObject(*kube_.Object("clusterslurmclusters", "", "shared"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(IsConditionTrue(c->cluster.status().conditions(), kReady));
}

// Slurm's text on a failed probe is quoted in the Ready condition, cut without splitting a
// UTF-8 sequence: a split one made the status write fail to serialize.
TEST_F(TenantAccessTest, AProbesLongTextAnswerIsCutWithoutSplittingUtf8) {
  AddClusterScoped({{"namespaceSelector", nlohmann::json::object()}});
  std::string text(299, 'x');
  for (int i = 0; i < 400; ++i) text += "\u00e9";  // é: two bytes, the first at 299
  ap_.On(kGet, kPing42, StringBody(404, text));

  Probe("/shared", /*allow_operator_identity=*/false);

  std::optional<nlohmann::json> o = kube_.Object("clusterslurmclusters", "", "shared");
  ASSERT_TRUE(o);
  absl::StatusOr<api::ClusterScopedCluster> c = api::ClusterSlurmClusterFromObject(*o);
  ASSERT_TRUE(c.ok()) << c.status();
  const v1alpha1::Condition* ready = FindCondition(c->cluster.status().conditions(), kReady);
  ASSERT_NE(ready, nullptr) << o->dump();
  EXPECT_EQ(ready->status(), "False");
  EXPECT_THAT(ready->message(), HasSubstr("xxx"));
  EXPECT_LT(ready->message().size(), 1200u);
  EXPECT_NO_THROW(o->dump()) << "the message splits a UTF-8 sequence";
}

// A probe the project's budget holds back (here: paused after the quota ran
// out) is not a fact about the cluster: the status stays as the last sent
// probe left it, and the probe is retried when the pause ends (#16 item 3).
TEST_F(TenantAccessTest, AProbeHeldBackByTheProjectsBudgetLeavesTheStatusAlone) {
  AddClusterScoped({{"namespaceSelector", nlohmann::json::object()}});
  // A first probe answered: the project has accepted the operator's credentials (only then
  // does their 429 pause the project, quota_budget.h).
  ap_.On(kGet, kPing42, StructuredBody(200, R"({"pings": []})"),
         GoogleErrorReply(429, R"({"error": {"code": 429,
      "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED", "details": [
      {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "20s"}]}})"));
  Probe("/shared", /*allow_operator_identity=*/false);
  clock_.Advance(std::chrono::minutes(10));
  Probe("/shared", /*allow_operator_identity=*/false);
  ASSERT_EQ(ap_.Count(kGet, kPing42), 2);
  const nlohmann::json after_first = *kube_.Object("clusterslurmclusters", "", "shared");
  clock_.Advance(std::chrono::seconds(5));

  ReconcileResult second = Probe("/shared", /*allow_operator_identity=*/false);

  EXPECT_EQ(ap_.Count(kGet, kPing42), 2) << "nothing is sent during the pause";
  EXPECT_EQ(*kube_.Object("clusterslurmclusters", "", "shared"), after_first);
  ASSERT_TRUE(second.requeue_after.has_value());
  EXPECT_EQ(*second.requeue_after, std::chrono::seconds(15));
}

TEST_F(TenantAccessTest, UnknownClusterSlurmClusterIsNamedInTheCondition) {
  AddNamespace(kNs, {});
  AddSharedJob();

  Reconcile();

  EXPECT_TRUE(ap_.calls().empty());
  v1alpha1::Condition stalled = Cond(kStalled);
  EXPECT_EQ(stalled.reason(), "ClusterNotFound");
  EXPECT_THAT(stalled.message(), HasSubstr("ClusterSlurmCluster \"shared\" does not exist"));
}

// ------------------------------------------ spec.scriptFrom.configMapKeyRef

// A ConfigMap the operator may not read (403: the namespace has no read grant) is a condition
// saying how to grant it. Before, it was retried with backoff and only logged: the SlurmJob sat
// with no status at all.
TEST_F(ExecutorTest, AConfigMapTheOperatorMayNotReadIsAConditionWithTheGrantToMake) {
  AddJobWithScriptFrom();
  kube_.FailNext("get", absl::PermissionDeniedError("configmaps \"scripts\" is forbidden"));

  ReconcileResult r = Reconcile();

  EXPECT_EQ(Submits(), 0);
  v1alpha1::Condition stalled = Cond(kStalled);
  EXPECT_EQ(stalled.reason(), "ScriptNotFound");
  EXPECT_THAT(stalled.message(), HasSubstr("may not read ConfigMap \"scripts\""));
  EXPECT_THAT(stalled.message(), HasSubstr("slurmjob-operator-namespace-reader"));
  EXPECT_THAT(events_.WithReason("ScriptNotFound"),
              ElementsAre(EventIs("Warning", "ScriptNotFound")));
  EXPECT_TRUE(r.requeue_after.has_value());
}

TEST_F(ExecutorTest, AConfigMapReadWithoutAnAnswerIsRetriedWithoutACondition) {
  AddJobWithScriptFrom();
  kube_.FailNext("get", absl::UnavailableError("connection refused"));

  ReconcileResult r = Reconcile();

  EXPECT_EQ(Submits(), 0);
  EXPECT_TRUE(r.retry_with_backoff);
  EXPECT_THAT(events_.WithReason("ScriptNotFound"), IsEmpty());
}

// ---------------------------------- spec.environment[].valueFrom.secretKeyRef

constexpr char kApiKey[] = "sk-very-secret-value-0123456789";

class SecretEnvTest : public ExecutorTest {
 protected:
  void AddSecret(const std::string& name, const nlohmann::json& string_data) {
    nlohmann::json data = nlohmann::json::object();
    for (const auto& [k, v] : string_data.items()) {
      data[k] = absl::Base64Escape(v.get<std::string>());
    }
    nlohmann::json secret = {{"apiVersion", "v1"},
                             {"kind", "Secret"},
                             {"metadata", {{"name", name}, {"namespace", kNs}}},
                             {"data", data}};
    ASSERT_TRUE(kube_.Create(kube::Secrets(), kNs, secret).ok());
    kube_.ClearCalls();
  }
  void AddJobWithSecretEnv() {
    AddJob({{"environment",
             {{{"name", "MODE"}, {"value", "offline"}},
              {{"name", "API_KEY"},
               {"valueFrom", {{"secretKeyRef", {{"name", "wandb"}, {"key", "api-key"}}}}}}}}});
  }
  // Everything the operator wrote where users and logs can see it.
  std::string Visible() {
    std::string out = Object()->dump();
    for (const auto& e : events_.events()) out += e.event.note + "\n";
    return out;
  }
};

TEST_F(SecretEnvTest, TheSecretsValueReachesTheSubmitButNotStatusOrEvents) {
  AddSecret("wandb", {{"api-key", kApiKey}});
  AddJobWithSecretEnv();
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));

  Reconcile();

  ASSERT_EQ(Status().job_id(), 42) << Object()->dump();
  ASSERT_EQ(Submits(), 1);
  const nlohmann::json job = ap_.calls(kPost, kSubmit42)[0].body["job"];
  const nlohmann::json env = job["environment"];
  EXPECT_THAT(env.dump(), HasSubstr(std::string("API_KEY=") + kApiKey));
  EXPECT_THAT(env.dump(), HasSubstr("MODE=offline"));
  EXPECT_THAT(Visible(), Not(HasSubstr(kApiKey)));
  EXPECT_EQ(kube_.Count("get"), 1) << "the Secret is read once, at submit";
}

TEST_F(SecretEnvTest, AMissingSecretIsAConditionNamingItAndNothingIsSubmitted) {
  AddJobWithSecretEnv();

  ReconcileResult r = Reconcile();

  EXPECT_EQ(Submits(), 0);
  v1alpha1::Condition stalled = Cond(kStalled);
  EXPECT_EQ(stalled.reason(), "SecretNotFound");
  EXPECT_THAT(stalled.message(), HasSubstr("Secret \"wandb\""));
  EXPECT_THAT(stalled.message(), HasSubstr("API_KEY"));
  EXPECT_THAT(stalled.message(), HasSubstr("does not exist in namespace \"team-a\""));
  EXPECT_THAT(events_.WithReason("SecretNotFound"),
              ElementsAre(EventIs("Warning", "SecretNotFound")));
  EXPECT_EQ(r.requeue_after, std::optional<Duration>(seconds(30)));
}

TEST_F(SecretEnvTest, AMissingKeyIsNamedAndTheOtherKeysValuesAreNot) {
  AddSecret("wandb", {{"other", kApiKey}});
  AddJobWithSecretEnv();

  Reconcile();

  EXPECT_EQ(Submits(), 0);
  v1alpha1::Condition stalled = Cond(kStalled);
  EXPECT_EQ(stalled.reason(), "SecretNotFound");
  EXPECT_THAT(stalled.message(), HasSubstr("has no key \"api-key\""));
  EXPECT_THAT(Visible(), Not(HasSubstr(kApiKey)));
}

// 1,000 entries naming one 1 MiB Secret held a copy each: a gigabyte, and the operator ran out
// of memory on every restart. Now the values are capped at what a submit can carry.
TEST_F(SecretEnvTest, ValuesPastWhatASubmitCarriesAreRefusedBeforeTheyAreCopied) {
  AddSecret("big", {{"blob", std::string(400 * 1000, 'b')}});
  nlohmann::json env = nlohmann::json::array();
  for (int i = 0; i < 1000; ++i) {
    env.push_back({{"name", absl::StrCat("V", i)},
                   {"valueFrom", {{"secretKeyRef", {{"name", "big"}, {"key", "blob"}}}}}});
  }
  AddJob({{"environment", env}});

  Reconcile();

  EXPECT_EQ(Submits(), 0);
  v1alpha1::Condition stalled = Cond(kStalled);
  EXPECT_EQ(stalled.reason(), "SecretTooLarge");
  EXPECT_THAT(stalled.message(), HasSubstr("more than 1000000 bytes"));
  EXPECT_THAT(stalled.message(), HasSubstr("variable V2"));
  EXPECT_EQ(kube_.Count("get"), 1) << "the Secret is read once";
}

// Each Secret named is one GET of the whole object, made again every 30 s while one is missing:
// 999 Secrets of 1 MiB and a missing one were 1 GB of reads a pass, for one SlurmJob. More than
// kMaxSecretsPerSlurmJob distinct Secrets is an invalid spec, and none is read.
TEST_F(SecretEnvTest, MoreSecretsThanTheMostIsInvalidAndNoneIsRead) {
  nlohmann::json env = nlohmann::json::array();
  for (size_t i = 0; i <= kMaxSecretsPerSlurmJob; ++i) {
    AddSecret(absl::StrCat("s", i), {{"k", "v"}});
    env.push_back(
        {{"name", absl::StrCat("V", i)},
         {"valueFrom", {{"secretKeyRef", {{"name", absl::StrCat("s", i)}, {"key", "k"}}}}}});
  }
  AddJob({{"environment", env}});

  Reconcile();

  EXPECT_EQ(Submits(), 0);
  EXPECT_EQ(Cond(kStalled).reason(), "InvalidSpec");
  EXPECT_THAT(Cond(kStalled).message(), HasSubstr("names more than 32 Secrets"));
  EXPECT_EQ(kube_.Count("get"), 0) << "no Secret is read";
}

TEST_F(SecretEnvTest, SecretsAreReadOncePerSecretInOrderOfMention) {
  AddSecret("a", {{"k", "1"}});
  AddSecret("b", {{"k", "2"}});
  AddJob({{"environment",
           {{{"name", "A1"}, {"valueFrom", {{"secretKeyRef", {{"name", "a"}, {"key", "k"}}}}}},
            {{"name", "B1"}, {"valueFrom", {{"secretKeyRef", {{"name", "b"}, {"key", "k"}}}}}},
            {{"name", "A2"}, {"valueFrom", {{"secretKeyRef", {{"name", "a"}, {"key", "k"}}}}}}}}});
  ap_.On(kPost, kSubmit42, StructuredBody(200, SubmitOk42(42)));

  Reconcile();

  ASSERT_EQ(Submits(), 1);
  const std::string env = ap_.calls(kPost, kSubmit42)[0].body["job"]["environment"].dump();
  EXPECT_THAT(env, HasSubstr("A1=1"));
  EXPECT_THAT(env, HasSubstr("B1=2"));
  EXPECT_THAT(env, HasSubstr("A2=1"));
  EXPECT_EQ(kube_.Count("get"), 2);
}

TEST_F(SecretEnvTest, ASecretTheOperatorMayNotReadNamesTheGrantToMake) {
  AddJobWithSecretEnv();
  kube_.FailNext("get", absl::PermissionDeniedError("secrets \"wandb\" is forbidden"));

  Reconcile();

  EXPECT_EQ(Submits(), 0);
  v1alpha1::Condition stalled = Cond(kStalled);
  EXPECT_THAT(stalled.message(), HasSubstr("may not read Secret \"wandb\""));
  EXPECT_THAT(stalled.message(), HasSubstr("slurmjob-operator-namespace-reader"));
}

TEST_F(SecretEnvTest, ValueAndValueFromTogetherIsInvalid) {
  AddSecret("wandb", {{"api-key", kApiKey}});
  AddJob({{"environment",
           {{{"name", "API_KEY"},
             {"value", "x"},
             {"valueFrom", {{"secretKeyRef", {{"name", "wandb"}, {"key", "api-key"}}}}}}}}});

  Reconcile();

  EXPECT_EQ(Submits(), 0);
  EXPECT_EQ(Cond(kStalled).reason(), "InvalidSpec");
  EXPECT_THAT(Cond(kStalled).message(), HasSubstr("exactly one of value and valueFrom"));
}

}  // namespace
}  // namespace slurmop::reconcile
