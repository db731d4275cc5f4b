// File: tests/kube/fake_apiserver_test.cc
//
// The Kubernetes layer against the strict stand-in API server
// (tests/fakes/kube_apiserver.py) over TLS, as the operator runs in the e2e
// tests: kubeconfig loading, CRUD and error mapping, the informer through
// split/coalesced chunks, dropped watches and a 410 relist, token rotation
// through a token file, 429 Retry-After, Events and Lease election.
//
// Needs /usr/bin/python3 with PyYAML and the openssl CLI; skipped otherwise.
// Uses real time (the informer's backoff is real here), a few seconds.

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "controller/http/cpprest_transport.h"
#include "controller/kube/client.h"
#include "controller/kube/config.h"
#include "controller/kube/events.h"
#include "controller/kube/informer.h"
#include "controller/kube/leader_election.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace slurmop::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kPython[] = "/usr/bin/python3";
constexpr char kNs[] = "default";

bool Eventually(const std::function<bool()>& done) {
  return slurmop::testing::WaitUntil(done, seconds(20), milliseconds(20));
}

class FakeApiServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (access(kPython, X_OK) != 0 ||
        slurmop::testing::RunCommand({kPython, "-c", "import yaml"}).exit_code != 0) {
      return;  // tests skip themselves
    }
    dir_ = new std::string(slurmop::testing::MakeTempDir("slurmop-kube-fake-"));
    server_ = new slurmop::testing::Subprocess(
        {kPython, SLURMOP_FAKE_APISERVER, "--port", "0", "--port-file", *dir_ + "/port",
         "--kubeconfig-out", *dir_ + "/kubeconfig", "--token-file", *dir_ + "/token", "--tls-auto",
         *dir_ + "/tls"},
        *dir_ + "/apiserver.log");
    if (!slurmop::testing::WaitUntil([] { return std::filesystem::exists(*dir_ + "/kubeconfig"); },
                                     seconds(30))) {
      ADD_FAILURE() << slurmop::testing::ReadFile(*dir_ + "/apiserver.log");
      return;
    }
    absl::StatusOr<ClientConfig> config = LoadKubeconfig(*dir_ + "/kubeconfig", "");
    ASSERT_TRUE(config.ok()) << config.status();
    config_ = new ClientConfig(*config);
    http::CpprestTransportOptions admin_options;
    admin_options.tls.ca_file = config_->ca_file;
    admin_ = http::CpprestTransport::Create(admin_options).value().release();
  }

  static void TearDownTestSuite() {
    delete admin_;
    delete server_;
    if (dir_ != nullptr) std::filesystem::remove_all(*dir_);
    delete config_;
    delete dir_;
    admin_ = nullptr;
    server_ = nullptr;
    config_ = nullptr;
    dir_ = nullptr;
  }

  void SetUp() override {
    if (config_ == nullptr) GTEST_SKIP() << "needs " << kPython << " with PyYAML";
    absl::StatusOr<std::unique_ptr<Client>> client = NewClientFromConfig(*config_);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
    Admin("POST", "faults/clear");
    Admin("POST", "latency/clear");
    Admin("POST", "chunking", {{"split", false}, {"coalesce", false}});
  }

  // Calls the stand-in's admin API.
  static nlohmann::json Admin(const std::string& method, const std::string& command,
                              const nlohmann::json& body = nlohmann::json::object()) {
    http::Request request;
    request.method = method;
    request.url = config_->server + "/__admin/" + command;
    request.headers["Content-Type"] = "application/json";
    if (method != "GET") request.body = body.dump();
    absl::StatusOr<http::Response> response = admin_->Send(request);
    EXPECT_TRUE(response.ok() && response->status == 200)
        << command << ": " << (response.ok() ? response->body : response.status().ToString());
    if (!response.ok()) return nlohmann::json::object();
    return nlohmann::json::parse(response->body, nullptr, false);
  }

  static int Count(const std::string& verb) {
    nlohmann::json counters = Admin("GET", "counters");
    return counters["byVerb"].value(verb, 0);
  }

  static nlohmann::json ConfigMap(const std::string& name, const std::string& label) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"namespace", kNs}, {"labels", {{"test", label}}}}},
            {"data", {{"k", "v"}}}};
  }

  static std::string* dir_;
  static slurmop::testing::Subprocess* server_;
  static ClientConfig* config_;
  static http::CpprestTransport* admin_;
  std::unique_ptr<Client> client_;
};

std::string* FakeApiServerTest::dir_ = nullptr;
slurmop::testing::Subprocess* FakeApiServerTest::server_ = nullptr;
ClientConfig* FakeApiServerTest::config_ = nullptr;
http::CpprestTransport* FakeApiServerTest::admin_ = nullptr;

TEST_F(FakeApiServerTest, CrudAndErrorMappingOverTls) {
  EXPECT_EQ(config_->server.rfind("https://127.0.0.1:", 0), 0u) << config_->server;
  absl::StatusOr<nlohmann::json> namespaces = client_->List(Namespaces(), "", ListOptions{});
  ASSERT_TRUE(namespaces.ok()) << namespaces.status();
  EXPECT_EQ((*namespaces)["kind"], "NamespaceList");

  absl::StatusOr<nlohmann::json> created =
      client_->Create(ConfigMaps(), kNs, ConfigMap("crud", "crud"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(kube::IsAlreadyExists(
      client_->Create(ConfigMaps(), kNs, ConfigMap("crud", "crud")).status()));

  nlohmann::json updated = *created;
  updated["data"]["k"] = "v2";
  absl::StatusOr<nlohmann::json> put = client_->Update(ConfigMaps(), updated);
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_NE((*put)["metadata"]["resourceVersion"], (*created)["metadata"]["resourceVersion"]);
  absl::Status stale = client_->Update(ConfigMaps(), updated).status();  // old RV
  EXPECT_TRUE(kube::IsConflict(stale)) << stale;
  EXPECT_NE(std::string(stale.message()).find("the object has been modified"), std::string::npos);

  absl::StatusOr<nlohmann::json> patched =
      client_->Patch(ConfigMaps(), kNs, "crud", PatchType::kMerge, {{"data", {{"extra", "x"}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["data"]["extra"], "x");
  absl::StatusOr<nlohmann::json> json_patch = client_->Patch(
      ConfigMaps(), kNs, "crud", PatchType::kJson,
      nlohmann::json::array({{{"op", "test"}, {"path", "/data/k"}, {"value", "wrong"}}}));
  EXPECT_TRUE(kube::IsInvalid(json_patch.status())) << json_patch.status();
  absl::StatusOr<nlohmann::json> applied =
      client_->Patch(ConfigMaps(), kNs, "crud", PatchType::kApply,
                     {{"apiVersion", "v1"},
                      {"kind", "ConfigMap"},
                      {"metadata", {{"name", "crud"}, {"namespace", kNs}}},
                      {"data", {{"applied", "yes"}}}},
                     false, "slurmop-test");
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ((*applied)["data"]["applied"], "yes");

  ASSERT_TRUE(client_->Delete(ConfigMaps(), kNs, "crud").ok());
  absl::Status missing = client_->Get(ConfigMaps(), kNs, "crud").status();
  EXPECT_TRUE(kube::IsNotFound(missing)) << missing;
}

TEST_F(FakeApiServerTest, TooManyRequestsCarriesRetryAfter) {
  Admin("POST", "faults",
        {{"method", "GET"},
         {"path", "configmaps/throttled"},
         {"status", 429},
         {"count", 1},
         {"retry_after", 2}});
  absl::Status throttled = client_->Get(ConfigMaps(), kNs, "throttled").status();
  EXPECT_EQ(throttled.code(), absl::StatusCode::kResourceExhausted) << throttled;
  EXPECT_EQ(RetryAfter(throttled), seconds(2));
}

TEST_F(FakeApiServerTest, InformerSurvivesChunkingDropsAndCompaction) {
  std::mutex mu;
  std::map<std::string, std::string> last_event;  // name -> type
  const std::string label = "informer";
  InformerOptions options;
  options.label_selector = "test=" + label;
  Informer informer(
      *client_, ConfigMaps(), kNs,
      [&](const std::string& type, const std::shared_ptr<const nlohmann::json>& obj) {
        std::lock_guard<std::mutex> lock(mu);
        last_event[(*obj)["metadata"]["name"].get<std::string>()] = type;
      },
      RealClock::Get(), options);
  auto seen = [&](const std::string& name, const std::string& type) {
    return Eventually([&] {
      std::lock_guard<std::mutex> lock(mu);
      auto it = last_event.find(name);
      return it != last_event.end() && it->second == type;
    });
  };

  ASSERT_TRUE(client_->Create(ConfigMaps(), kNs, ConfigMap("inf-before", label)).ok());
  informer.Start();
  ASSERT_TRUE(Eventually([&] { return informer.HasSynced(); }));
  EXPECT_TRUE(seen("inf-before", "ADDED"));
  ASSERT_TRUE(Eventually([&] { return Admin("GET", "watches")["watches"].size() >= 1; }));

  // Events split at random byte offsets and packed several to a chunk.
  Admin("POST", "chunking",
        {{"split", true}, {"coalesce", true}, {"seed", 7}, {"max_coalesce", 3}});
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(
        client_->Create(ConfigMaps(), kNs, ConfigMap("inf-" + std::to_string(i), label)).ok());
  }
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(seen("inf-" + std::to_string(i), "ADDED")) << i;
  ASSERT_TRUE(
      client_->Patch(ConfigMaps(), kNs, "inf-0", PatchType::kMerge, {{"data", {{"k", "2"}}}}).ok());
  EXPECT_TRUE(seen("inf-0", "MODIFIED"));
  Admin("POST", "chunking", {{"split", false}, {"coalesce", false}});

  // A broken connection: the informer re-watches from its last RV, no relist.
  const int lists_before_drop = Count("list");
  Admin("POST", "drop_watches");
  ASSERT_TRUE(client_->Create(ConfigMaps(), kNs, ConfigMap("inf-after-drop", label)).ok());
  EXPECT_TRUE(seen("inf-after-drop", "ADDED"));
  EXPECT_EQ(Count("list"), lists_before_drop);

  // Compaction while the informer is away: its re-watch gets the 410 ERROR
  // event, it relists and reports the object deleted in the gap.
  Admin("POST", "latency",
        {{"method", "GET"}, {"path", "watch="}, {"delay_ms", 1500}, {"count", 1}});
  Admin("POST", "drop_watches");
  ASSERT_TRUE(client_->Delete(ConfigMaps(), kNs, "inf-1").ok());
  ASSERT_TRUE(client_->Create(ConfigMaps(), kNs, ConfigMap("inf-in-gap", label)).ok());
  Admin("POST", "compact");
  EXPECT_TRUE(seen("inf-1", "DELETED"));
  EXPECT_TRUE(seen("inf-in-gap", "ADDED"));
  EXPECT_GT(Count("list"), lists_before_drop) << "a 410 must lead to a relist";
  EXPECT_EQ(informer.Get(kNs, "inf-1"), nullptr);
  EXPECT_NE(informer.Get(kNs, "inf-in-gap"), nullptr);
  informer.Stop();
}

TEST_F(FakeApiServerTest, RotatedTokenIsRereadFromTheTokenFileAfter401) {
  ClientConfig config = *config_;
  config.token.clear();
  config.token_file = *dir_ + "/token";
  absl::StatusOr<std::unique_ptr<Client>> client = NewClientFromConfig(config);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->List(ConfigMaps(), kNs, ListOptions{}).ok());
  const std::string old_token = slurmop::testing::ReadFile(*dir_ + "/token");
  Admin("POST", "rotate_token");
  absl::Status listed = (*client)->List(ConfigMaps(), kNs, ListOptions{}).status();
  EXPECT_TRUE(listed.ok()) << listed;
  // Put the original token back for the other tests' kubeconfig clients.
  Admin("POST", "rotate_token", {{"token", old_token.substr(0, old_token.find('\n'))}});
}

TEST_F(FakeApiServerTest, EventsAreCreatedAndAggregated) {
  absl::StatusOr<nlohmann::json> owner =
      client_->Create(ConfigMaps(), kNs, ConfigMap("event-owner", "events"));
  ASSERT_TRUE(owner.ok()) << owner.status();
  {
    EventRecorder recorder(*client_, RealClock::Get(), "slurmjob-operator", "test-instance");
    recorder.Record(*owner, "Warning", "SubmitFailed", "Submit", "no such partition");
    recorder.Record(*owner, "Warning", "SubmitFailed", "Submit", "no such partition");
    recorder.Record(*owner, "Normal", "Submitted", "Submit", "job 42");
    recorder.Flush();
  }
  absl::StatusOr<nlohmann::json> events = client_->List(EventsV1(), kNs, ListOptions{});
  ASSERT_TRUE(events.ok()) << events.status();
  int failed = 0;
  int submitted = 0;
  for (const nlohmann::json& event : (*events)["items"]) {
    if (event["regarding"].value("name", "") != "event-owner") continue;
    if (event["reason"] == "SubmitFailed") {
      ++failed;
      EXPECT_EQ(event["series"]["count"], 2);
      EXPECT_EQ(event["regarding"]["uid"], (*owner)["metadata"]["uid"]);
    }
    if (event["reason"] == "Submitted") ++submitted;
  }
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(submitted, 1);
}

TEST_F(FakeApiServerTest, LeaseElectionAgainstTheServer) {
  auto make = [&](const std::string& identity) {
    LeaderElectionConfig config;
    config.lease_namespace = kNs;
    config.lease_name = "slurmop-test-lease";
    config.identity = identity;
    return LeaderElector::Create(*client_, RealClock::Get(), config).value();
  };
  auto a = make("replica-a");
  auto b = make("replica-b");
  ASSERT_TRUE(a->TryAcquireOrRenew());
  EXPECT_FALSE(b->TryAcquireOrRenew());
  ASSERT_TRUE(a->TryAcquireOrRenew()) << "renewal";

  // Another writer bumps the Lease behind a's back: a's fast-path PUT gets a
  // 409, a re-reads and still renews (it is the holder).
  Admin("POST", "lease_race", {{"namespace", kNs}, {"name", "slurmop-test-lease"}});
  EXPECT_TRUE(a->TryAcquireOrRenew());

  ASSERT_TRUE(a->Release().ok());
  EXPECT_TRUE(b->TryAcquireOrRenew());
  absl::StatusOr<nlohmann::json> lease = client_->Get(Leases(), kNs, "slurmop-test-lease");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "replica-b");
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);
}

}  // namespace
}  // namespace slurmop::kube
