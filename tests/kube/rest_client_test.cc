// File: tests/kube/rest_client_test.cc
//
// RestClient: request shapes (paths, queries, verbs, content types, auth),
// error mapping, 401 token refresh, watch line handling (split chunks, ERROR
// 410, malformed lines, cancel) against a fake transport, and one end-to-end
// run over CpprestTransport and an in-process HTTP server.

#include "controller/kube/rest_client.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "controller/common/bounded_json.h"
#include "controller/http/cpprest_transport.h"
#include "controller/http/line_splitter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/http/test_http_server.h"

namespace slurmop::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const ResourceType kJobs{"hpc.slurmoperator.dev", "v1alpha1", "slurmjobs", "SlurmJob", true};
constexpr char kBase[] = "https://k8s.example:6443";
constexpr char kJobsPath[] = "/apis/hpc.slurmoperator.dev/v1alpha1/namespaces/ns/slurmjobs";

// Records requests; answers Send() with `on_send` and Stream() by splitting
// `stream_chunks` into lines, as the real transport does.
class FakeTransport : public http::Transport {
 public:
  std::function<absl::StatusOr<http::Response>(const http::Request&)> on_send;
  absl::StatusOr<http::Response> stream_response = http::Response{200, {}, ""};
  std::vector<std::string> stream_chunks;

  absl::StatusOr<http::Response> Send(const http::Request& request) override {
    requests.push_back(request);
    return on_send(request);
  }
  absl::StatusOr<http::Response> Stream(const http::Request& request,
                                        const http::LineCallback& on_line,
                                        std::shared_ptr<http::StreamHandle> handle) override {
    requests.push_back(request);
    if (!stream_response.ok() || stream_response->status != 200) return stream_response;
    http::LineSplitter splitter(on_line);
    for (const std::string& chunk : stream_chunks) {
      if (handle->cancelled()) return absl::CancelledError("cancelled");
      if (!splitter.Feed(chunk)) return stream_response;
    }
    splitter.Finish();
    return stream_response;
  }

  std::vector<http::Request> requests;
};

http::Response Json(int status, const nlohmann::json& body) {
  return http::Response{status, {{"content-type", "application/json"}}, body.dump()};
}

class RestClientTest : public ::testing::Test {
 protected:
  RestClientTest() {
    config_.server = std::string(kBase) + "/";
    config_.token = "s3cret";
    config_.default_namespace = "defaultns";
    transport_.on_send = [](const http::Request&) {
      return Json(200, {{"kind", "SlurmJob"}, {"metadata", {{"name", "j1"}}}});
    };
  }
  std::unique_ptr<Client> NewTestClient() { return NewClient(config_, &transport_, clock_); }

  ClientConfig config_;
  FakeTransport transport_;
  FakeClock clock_;
};

TEST_F(RestClientTest, GetSendsPathAuthAndAcceptHeaders) {
  auto client = NewTestClient();
  absl::StatusOr<nlohmann::json> job = client->Get(kJobs, "ns", "j1");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)["metadata"]["name"], "j1");
  ASSERT_EQ(transport_.requests.size(), 1u);
  const http::Request& request = transport_.requests[0];
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.url, std::string(kBase) + kJobsPath + "/j1");
  EXPECT_EQ(request.headers.at("Authorization"), "Bearer s3cret");
  EXPECT_EQ(request.headers.at("Accept"), "application/json");
  EXPECT_EQ(request.headers.at("User-Agent"), "slurmjob-operator");
  EXPECT_EQ(request.timeout, std::chrono::seconds(30));
}

TEST_F(RestClientTest, NoTokenMeansNoAuthorizationHeader) {
  config_.token.clear();
  auto client = NewTestClient();
  ASSERT_TRUE(client->Get(kJobs, "ns", "j1").ok());
  EXPECT_EQ(transport_.requests[0].headers.count("Authorization"), 0u);
}

TEST_F(RestClientTest, ErrorsAreMappedFromStatus) {
  transport_.on_send = [](const http::Request&) {
    return Json(404, {{"kind", "Status"},
                      {"status", "Failure"},
                      {"reason", "NotFound"},
                      {"code", 404},
                      {"message", "slurmjobs.hpc.slurmoperator.dev \"j1\" not found"}});
  };
  auto client = NewTestClient();
  absl::StatusOr<nlohmann::json> job = client->Get(kJobs, "ns", "j1");
  EXPECT_TRUE(kube::IsNotFound(job.status()));
  EXPECT_EQ(job.status().message(), "slurmjobs.hpc.slurmoperator.dev \"j1\" not found");
}

TEST_F(RestClientTest, TransportErrorsPassThrough) {
  transport_.on_send = [](const http::Request&) -> absl::StatusOr<http::Response> {
    return http::TransportError(absl::StatusCode::kUnavailable, "connection refused", false);
  };
  auto client = NewTestClient();
  absl::StatusOr<nlohmann::json> created =
      client->Create(kJobs, "ns", {{"metadata", {{"name", "x"}}}});
  EXPECT_EQ(created.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(http::MayHaveBeenDelivered(created.status()));
}

TEST_F(RestClientTest, NonJsonSuccessIsInternal) {
  transport_.on_send = [](const http::Request&) { return http::Response{200, {}, "<html>"}; };
  auto client = NewTestClient();
  EXPECT_EQ(client->Get(kJobs, "ns", "j1").status().code(), absl::StatusCode::kInternal);
}

TEST_F(RestClientTest, ListEncodesOptions) {
  auto client = NewTestClient();
  ListOptions opts;
  opts.resource_version = "0";
  opts.label_selector = "app=x,tier in (a,b)";
  opts.limit = 50;
  opts.continue_token = "eyJ2Ijoi+/=";
  ASSERT_TRUE(client->List(kJobs, "ns", opts).ok());
  EXPECT_EQ(transport_.requests[0].url,
            std::string(kBase) + kJobsPath +
                "?resourceVersion=0&labelSelector=app%3Dx%2Ctier%20in%20%28a%2Cb%29&limit=50"
                "&continue=eyJ2Ijoi%2B%2F%3D");
  ASSERT_TRUE(client->List(kJobs, "", ListOptions{}).ok());
  EXPECT_EQ(transport_.requests[1].url,
            std::string(kBase) + "/apis/hpc.slurmoperator.dev/v1alpha1/slurmjobs");
}

// ListEach hands the items over one by one, in order, and returns the rest.
TEST_F(RestClientTest, ListEachHandsOverTheItemsAndReturnsTheRest) {
  transport_.on_send = [](const http::Request&) {
    return Json(200,
                {{"kind", "SlurmJobList"},
                 {"metadata", {{"resourceVersion", "9"}}},
                 {"items", {{{"metadata", {{"name", "a"}}}}, {{"metadata", {{"name", "b"}}}}}}});
  };
  auto client = NewTestClient();
  std::vector<std::string> names;
  ListOptions opts;
  opts.resource_version = "0";
  opts.limit = 500;
  absl::StatusOr<nlohmann::json> list =
      client->ListEach(kJobs, "ns", opts, [&](nlohmann::json item) {
        names.push_back(item["metadata"]["name"]);
        return absl::OkStatus();
      });
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(*list,
            (nlohmann::json{{"kind", "SlurmJobList"}, {"metadata", {{"resourceVersion", "9"}}}}));
  EXPECT_THAT(names, ElementsAre("a", "b"));
  EXPECT_EQ(transport_.requests[0].url,
            std::string(kBase) + kJobsPath + "?resourceVersion=0&limit=500");
  EXPECT_EQ(transport_.requests[0].headers.at("Authorization"), "Bearer s3cret");
  // A resourceVersion=0 list is one page of the whole collection, read item by item: the
  // 64 MiB cap of other answers made every relist of 62 SlurmJobs with 1 MiB scripts fail.
  EXPECT_EQ(transport_.requests[0].max_body_bytes, kMaxKubeListBytes);
  EXPECT_GT(kMaxKubeListBytes, kMaxKubeResponseBytes);
}

// A list carries its items two levels down: an item stored at the API server's limit (10,000
// levels) failed the whole list, so no relist of the kind ever succeeded, for any tenant.
TEST_F(RestClientTest, ListEachReadsAnItemAtTheApiServersLimit) {
  const int inner = kMaxKubeJsonDepth - 1;  // the item's own braces are the first level
  const std::string body = R"({"kind":"SlurmJobList","metadata":{"resourceVersion":"9"},)"
                           R"("items":[{"metadata":{"name":"deep"},"x":)" +
                           std::string(inner, '[') + std::string(inner, ']') + "}]}";
  transport_.on_send = [&](const http::Request&) {
    return http::Response{200, {{"content-type", "application/json"}}, body};
  };
  auto client = NewTestClient();
  std::vector<std::string> names;
  absl::StatusOr<nlohmann::json> list =
      client->ListEach(kJobs, "ns", ListOptions{}, [&](nlohmann::json item) {
        names.push_back(item["metadata"]["name"]);
        return absl::OkStatus();
      });
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_THAT(names, ElementsAre("deep"));
}

TEST_F(RestClientTest, ListEachOfAnErrorAnswerIsTheMappedError) {
  transport_.on_send = [](const http::Request&) {
    return Json(403, {{"kind", "Status"}, {"reason", "Forbidden"}, {"message", "no"}});
  };
  auto client = NewTestClient();
  int items = 0;
  absl::StatusOr<nlohmann::json> list =
      client->ListEach(kJobs, "ns", ListOptions{}, [&](nlohmann::json) {
        ++items;
        return absl::OkStatus();
      });
  EXPECT_EQ(list.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(items, 0);
}

TEST_F(RestClientTest, CreatePostsJsonToTheObjectsNamespace) {
  auto client = NewTestClient();
  nlohmann::json job = {{"apiVersion", "hpc.slurmoperator.dev/v1alpha1"},
                        {"kind", "SlurmJob"},
                        {"metadata", {{"name", "j1"}, {"namespace", "other"}}}};
  ASSERT_TRUE(client->Create(kJobs, "", job).ok());
  ASSERT_TRUE(client->Create(kJobs, "ns", job).ok());
  ASSERT_TRUE(client->Create(kJobs, "", {{"metadata", {{"name", "j2"}}}}).ok());
  EXPECT_EQ(transport_.requests[0].method, "POST");
  EXPECT_EQ(transport_.requests[0].url,
            std::string(kBase) + "/apis/hpc.slurmoperator.dev/v1alpha1/namespaces/other/slurmjobs");
  EXPECT_EQ(transport_.requests[0].headers.at("Content-Type"), "application/json");
  EXPECT_EQ(nlohmann::json::parse(transport_.requests[0].body), job);
  EXPECT_EQ(transport_.requests[1].url, std::string(kBase) + kJobsPath);
  EXPECT_THAT(transport_.requests[2].url, HasSubstr("/namespaces/defaultns/"));
}

TEST_F(RestClientTest, UpdateAndUpdateStatusPutTheObject) {
  auto client = NewTestClient();
  nlohmann::json job = {
      {"metadata", {{"name", "j1"}, {"namespace", "ns"}, {"resourceVersion", "42"}}},
      {"status", {{"jobId", 7}}}};
  ASSERT_TRUE(client->Update(kJobs, job).ok());
  ASSERT_TRUE(client->UpdateStatus(kJobs, job).ok());
  EXPECT_EQ(transport_.requests[0].method, "PUT");
  EXPECT_EQ(transport_.requests[0].url, std::string(kBase) + kJobsPath + "/j1");
  EXPECT_EQ(transport_.requests[1].url, std::string(kBase) + kJobsPath + "/j1/status");
  EXPECT_EQ(nlohmann::json::parse(transport_.requests[1].body)["metadata"]["resourceVersion"],
            "42");
  EXPECT_EQ(client->Update(kJobs, {{"metadata", nlohmann::json::object()}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A string that is not UTF-8 is sent with U+FFFD in its place. The strict dump() threw
// type_error 316, which nothing on a worker thread catches: the process ended.
TEST_F(RestClientTest, AStringThatIsNotUtf8IsSentReplacedRatherThanThrown) {
  auto client = NewTestClient();
  nlohmann::json job = {{"metadata", {{"name", "j1"}, {"namespace", "ns"}}},
                        {"status", {{"message", "cut mid-sequence \xC3"}}}};
  absl::StatusOr<nlohmann::json> r;
  ASSERT_NO_THROW(r = client->UpdateStatus(kJobs, job));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_NO_THROW(client->Patch(kJobs, "ns", "j1", PatchType::kMerge, job));
  ASSERT_NO_THROW(client->Create(kJobs, "ns", job));
  ASSERT_EQ(transport_.requests.size(), 3u);
  for (const auto& request : transport_.requests) {
    EXPECT_EQ(nlohmann::json::parse(request.body)["status"]["message"],
              "cut mid-sequence \xEF\xBF\xBD");
  }
}

TEST_F(RestClientTest, PatchContentTypesAndApplyParameters) {
  auto client = NewTestClient();
  ASSERT_TRUE(client->Patch(kJobs, "ns", "j1", PatchType::kMerge, {{"a", 1}}).ok());
  ASSERT_TRUE(client
                  ->Patch(kJobs, "ns", "j1", PatchType::kJson,
                          nlohmann::json::array({{{"op", "test"}, {"path", "/x"}, {"value", 1}}}))
                  .ok());
  ASSERT_TRUE(client
                  ->Patch(kJobs, "ns", "j1", PatchType::kApply, {{"status", {{"x", 1}}}},
                          /*status_subresource=*/true, "slurmjob-operator")
                  .ok());
  EXPECT_EQ(transport_.requests[0].method, "PATCH");
  EXPECT_EQ(transport_.requests[0].headers.at("Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(transport_.requests[0].url, std::string(kBase) + kJobsPath + "/j1");
  EXPECT_EQ(transport_.requests[1].headers.at("Content-Type"), "application/json-patch+json");
  EXPECT_EQ(transport_.requests[2].headers.at("Content-Type"), "application/apply-patch+yaml");
  EXPECT_EQ(transport_.requests[2].url, std::string(kBase) + kJobsPath +
                                            "/j1/status?fieldManager=slurmjob-operator&force=true");
  EXPECT_EQ(client->Patch(kJobs, "ns", "j1", PatchType::kApply, {{"a", 1}}).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "apply needs a field manager";
  EXPECT_EQ(transport_.requests.size(), 3u);
}

TEST_F(RestClientTest, OnlyPatchesWithAResourceVersionPreconditionAreReplaySafe) {
  auto client = NewTestClient();
  const nlohmann::json conditional = {
      {"metadata", {{"finalizers", {"f"}}, {"resourceVersion", "12"}}}};
  ASSERT_TRUE(client->Patch(kJobs, "ns", "j1", PatchType::kMerge, conditional).ok());
  ASSERT_TRUE(client->Patch(kJobs, "ns", "j1", PatchType::kMerge, {{"metadata", {{"x", 1}}}}).ok());
  ASSERT_TRUE(
      client->Patch(kJobs, "ns", "j1", PatchType::kMerge, {{"metadata", {{"resourceVersion", ""}}}})
          .ok());
  ASSERT_EQ(transport_.requests.size(), 3u);
  EXPECT_TRUE(transport_.requests[0].replay_safe);
  EXPECT_FALSE(transport_.requests[1].replay_safe);
  EXPECT_FALSE(transport_.requests[2].replay_safe);
}

TEST_F(RestClientTest, DeleteReturnsTheBody) {
  transport_.on_send = [](const http::Request&) {
    return Json(200, {{"kind", "Status"}, {"status", "Success"}});
  };
  auto client = NewTestClient();
  absl::StatusOr<nlohmann::json> deleted = client->Delete(kJobs, "ns", "j1");
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ((*deleted)["status"], "Success");
  EXPECT_EQ(transport_.requests[0].method, "DELETE");
  EXPECT_TRUE(transport_.requests[0].body.empty()) << "no options, no body";
}

// DeleteOptions go in the body, as kubectl sends them: a uid precondition
// and the propagation policy.
TEST_F(RestClientTest, DeleteSendsItsOptionsInTheBody) {
  transport_.on_send = [](const http::Request&) { return Json(200, {{"kind", "SlurmJob"}}); };
  auto client = NewTestClient();
  ASSERT_TRUE(client->Delete(kJobs, "ns", "j1", DeleteOptions{"uid-7", "Background"}).ok());
  ASSERT_EQ(transport_.requests.size(), 1u);
  const http::Request& r = transport_.requests[0];
  EXPECT_EQ(r.headers.at("Content-Type"), "application/json");
  const nlohmann::json body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["kind"], "DeleteOptions");
  EXPECT_EQ(body["apiVersion"], "v1");
  EXPECT_EQ(body["preconditions"]["uid"], "uid-7");
  EXPECT_EQ(body["propagationPolicy"], "Background");
}

TEST_F(RestClientTest, Unauthorized401RereadsTokenFileAndRetriesOnce) {
  char path[] = "/tmp/slurmop-token-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "old-token\n";
  config_.token.clear();
  config_.token_file = path;
  transport_.on_send = [](const http::Request& r) {
    if (r.headers.at("Authorization") == "Bearer new-token") return Json(200, {{"ok", true}});
    return Json(401, {{"kind", "Status"}, {"code", 401}, {"reason", "Unauthorized"}});
  };
  auto client = NewTestClient();
  EXPECT_EQ(client->Get(kJobs, "ns", "j1").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(transport_.requests.size(), 1u) << "re-read gave the same token: no retry";

  std::ofstream(path) << "new-token\n";  // rotated within the minute
  absl::StatusOr<nlohmann::json> got = client->Get(kJobs, "ns", "j1");
  EXPECT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(transport_.requests.size(), 3u);
  EXPECT_EQ(transport_.requests[1].headers.at("Authorization"), "Bearer old-token");
  EXPECT_EQ(transport_.requests[2].headers.at("Authorization"), "Bearer new-token");
  std::remove(path);
}

TEST_F(RestClientTest, WatchSendsParametersAndDeliversEventsAcrossChunks) {
  transport_.stream_chunks = {
      R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"6"}}})"
      "\n"
      R"({"type":"MODI)",
      R"(FIED","object":{"metadata":{"name":"a","resourceVersion":"7"}}})"
      "\n"
      R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"8"}}})"
      "\n"};
  auto client = NewTestClient();
  WatchOptions opts;
  opts.resource_version = "5";
  opts.timeout_seconds = 290;
  opts.label_selector = "a=b";
  std::vector<std::string> seen;
  absl::Status status = client->Watch(
      kJobs, "ns", opts,
      [&](const WatchEvent& event) {
        seen.push_back(event.type + ":" +
                       event.object["metadata"]["resourceVersion"].get<std::string>());
        return true;
      },
      std::make_shared<http::StreamHandle>());
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_THAT(seen, ElementsAre("ADDED:6", "MODIFIED:7", "BOOKMARK:8"));
  ASSERT_EQ(transport_.requests.size(), 1u);
  EXPECT_EQ(transport_.requests[0].url,
            std::string(kBase) + kJobsPath +
                "?watch=true&resourceVersion=5&allowWatchBookmarks=true&timeoutSeconds=290"
                "&labelSelector=a%3Db");
  EXPECT_GT(transport_.requests[0].timeout, std::chrono::seconds(290))
      << "the transport must not cut the watch before the server does";
}

TEST_F(RestClientTest, WatchErrorEvent410IsDeliveredThenReturnedAsGone) {
  transport_.stream_chunks = {
      R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"6"}}})"
      "\n",
      R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},)"
      R"j("status":"Failure","message":"too old resource version: 1 (3171407)","reason":"Expired","code":410}})j"
      "\n",
      R"({"type":"ADDED","object":{"metadata":{"name":"never","resourceVersion":"9"}}})"
      "\n"};
  auto client = NewTestClient();
  std::vector<std::string> types;
  absl::Status status = client->Watch(
      kJobs, "ns", WatchOptions{},
      [&](const WatchEvent& event) {
        types.push_back(event.type);
        return true;
      },
      nullptr);
  EXPECT_TRUE(kube::IsGone(status)) << status;
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(types, ElementsAre("ADDED", "ERROR"));
}

TEST_F(RestClientTest, WatchMalformedLineIsInternal) {
  transport_.stream_chunks = {"this is not json\n"};
  auto client = NewTestClient();
  absl::Status status = client->Watch(
      kJobs, "ns", WatchOptions{}, [](const WatchEvent&) { return true; }, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
}

TEST_F(RestClientTest, WatchHttpErrorIsMapped) {
  transport_.stream_response =
      Json(403, {{"kind", "Status"}, {"code", 403}, {"reason", "Forbidden"}, {"message", "no"}});
  auto client = NewTestClient();
  absl::Status status = client->Watch(
      kJobs, "ns", WatchOptions{}, [](const WatchEvent&) { return true; }, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
}

TEST_F(RestClientTest, WatchStopsWhenCallbackReturnsFalse) {
  transport_.stream_chunks = {R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"
                              "\n"
                              R"({"type":"ADDED","object":{"metadata":{"name":"b"}}})"
                              "\n"};
  auto client = NewTestClient();
  int calls = 0;
  absl::Status status = client->Watch(
      kJobs, "ns", WatchOptions{},
      [&](const WatchEvent&) {
        ++calls;
        return false;
      },
      nullptr);
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(calls, 1);
}

// The whole stack: RestClient -> CpprestTransport -> HTTP server on 127.0.0.1.
TEST(RestClientOverHttpTest, ListAndWatchAgainstALocalServer) {
  absl::Notification first_event_seen;
  slurmop::testing::TestHttpServer server([&](const slurmop::testing::ReceivedRequest& r,
                                              slurmop::testing::Connection& c) {
    if (r.target.find("watch=true") == std::string::npos) {
      c.WriteResponse(200, {{"Content-Type", "application/json"}},
                      R"({"kind":"SlurmJobList","metadata":{"resourceVersion":"5"},"items":[]})");
      return;
    }
    c.StartChunked(200, {{"Content-Type", "application/json"}});
    c.WriteChunk(R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"6"}}})"
                 "\n{\"type\":\"ERR");
    first_event_seen.WaitForNotificationWithTimeout(absl::Seconds(10));
    c.WriteChunk(
        R"(OR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}})"
        "\n");
    c.EndChunked();
  });
  absl::StatusOr<std::unique_ptr<http::CpprestTransport>> transport =
      http::CpprestTransport::Create({});
  ASSERT_TRUE(transport.ok());
  ClientConfig config;
  config.server = server.url();
  config.token = "t";
  auto client = NewClient(config, transport->get());

  absl::StatusOr<nlohmann::json> list = client->List(kJobs, "ns", ListOptions{"0", "", 500, ""});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ((*list)["metadata"]["resourceVersion"], "5");

  std::vector<std::string> types;
  absl::Status status = client->Watch(
      kJobs, "ns", WatchOptions{"5", true, 300, ""},
      [&](const WatchEvent& event) {
        types.push_back(event.type);
        if (!first_event_seen.HasBeenNotified()) first_event_seen.Notify();
        return true;
      },
      std::make_shared<http::StreamHandle>());
  EXPECT_TRUE(kube::IsGone(status)) << status;
  EXPECT_THAT(types, ElementsAre("ADDED", "ERROR"));
  std::vector<slurmop::testing::ReceivedRequest> requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].target, std::string(kJobsPath) + "?resourceVersion=0&limit=500");
  EXPECT_EQ(requests[0].headers["authorization"], "Bearer t");
  EXPECT_EQ(requests[1].target, std::string(kJobsPath) +
                                    "?watch=true&resourceVersion=5&allowWatchBookmarks=true"
                                    "&timeoutSeconds=300");
}

}  // namespace
}  // namespace slurmop::kube
