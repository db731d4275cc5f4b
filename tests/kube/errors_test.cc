// File: tests/kube/errors_test.cc
//
// Error mapping (HTTP + metav1.Status -> absl::Status), helpers, keys,
// resource paths and watch line parsing.

#include "controller/kube/errors.h"

#include "absl/strings/match.h"
#include "controller/common/bounded_json.h"
#include "controller/common/bounded_text.h"
#include "controller/kube/resource_types.h"
#include "controller/kube/watch_event.h"
#include "gtest/gtest.h"

namespace slurmop::kube {
namespace {

http::Response StatusResponse(int code, const std::string& reason, const std::string& message,
                              http::Headers headers = {}) {
  nlohmann::json body = {
      {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
      {"status", "Failure"}, {"message", message}, {"reason", reason},
      {"code", code}};
  return http::Response{code, std::move(headers), body.dump()};
}

TEST(ErrorsTest, MapsHttpStatusesToAbslCodes) {
  struct Case {
    int http;
    std::string reason;
    absl::StatusCode code;
  };
  const Case cases[] = {
      {400, "BadRequest", absl::StatusCode::kInvalidArgument},
      {401, "Unauthorized", absl::StatusCode::kUnauthenticated},
      {403, "Forbidden", absl::StatusCode::kPermissionDenied},
      {404, "NotFound", absl::StatusCode::kNotFound},
      {409, "Conflict", absl::StatusCode::kAborted},
      {409, "AlreadyExists", absl::StatusCode::kAlreadyExists},
      {410, "Expired", absl::StatusCode::kOutOfRange},
      {410, "Gone", absl::StatusCode::kOutOfRange},
      {415, "UnsupportedMediaType", absl::StatusCode::kInvalidArgument},
      {422, "Invalid", absl::StatusCode::kInvalidArgument},
      {429, "TooManyRequests", absl::StatusCode::kResourceExhausted},
      {500, "InternalError", absl::StatusCode::kInternal},
      {503, "ServiceUnavailable", absl::StatusCode::kUnavailable},
      {504, "Timeout", absl::StatusCode::kUnavailable},
  };
  for (const Case& c : cases) {
    absl::Status status = StatusFromResponse(StatusResponse(c.http, c.reason, "msg " + c.reason));
    EXPECT_EQ(status.code(), c.code) << c.http << " " << c.reason;
    EXPECT_EQ(status.message(), "msg " + c.reason);
    EXPECT_EQ(HttpStatusCode(status), c.http);
    EXPECT_EQ(StatusReason(status), c.reason);
  }
}

// A body that is not a Status is quoted in part, never splitting a UTF-8 sequence.
TEST(ErrorsTest, AnExcerptOfAPlainBodyDoesNotSplitUtf8) {
  std::string body(255, 'x');
  for (int i = 0; i < 100; ++i) body += "\u00e9";  // the first é starts at byte 255 of 256
  const absl::Status s = StatusFromResponse(http::Response{502, {}, body});
  EXPECT_NO_THROW(nlohmann::json(std::string(s.message())).dump()) << "split UTF-8";
  EXPECT_TRUE(absl::EndsWith(s.message(), std::string(10, 'x'))) << s.message();
}

TEST(ErrorsTest, PredicatesDistinguishConflictFromAlreadyExists) {
  absl::Status conflict = StatusFromResponse(StatusResponse(
      409, "Conflict",
      "Operation cannot be fulfilled on slurmjobs.hpc.slurmoperator.dev \"j1\": the object has "
      "been modified; please apply your changes to the latest version and try again"));
  EXPECT_TRUE(kube::IsConflict(conflict));
  EXPECT_FALSE(kube::IsAlreadyExists(conflict));
  EXPECT_NE(std::string(conflict.message()).find("the object has been modified"),
            std::string::npos);

  absl::Status exists = StatusFromResponse(StatusResponse(409, "AlreadyExists", "exists"));
  EXPECT_TRUE(kube::IsAlreadyExists(exists));
  EXPECT_FALSE(kube::IsConflict(exists));

  absl::Status not_found = StatusFromResponse(StatusResponse(404, "NotFound", "nope"));
  EXPECT_TRUE(kube::IsNotFound(not_found));
  EXPECT_TRUE(kube::IsNotFound(absl::NotFoundError("what a fake Client returns")));
  EXPECT_TRUE(kube::IsConflict(absl::AbortedError("fake conflict")));
  EXPECT_FALSE(kube::IsInvalid(absl::InvalidArgumentError("a local 400-like error")));
  EXPECT_TRUE(kube::IsInvalid(StatusFromResponse(StatusResponse(422, "Invalid", "bad"))));
}

TEST(ErrorsTest, GoneFromHttpOrReason) {
  EXPECT_TRUE(kube::IsGone(StatusFromResponse(StatusResponse(410, "Expired", "too old"))));
  EXPECT_TRUE(kube::IsGone(StatusFromResponse(StatusResponse(410, "Gone", "gone"))));
  EXPECT_TRUE(kube::IsGone(StatusFromKubeStatus({{"kind", "Status"}, {"reason", "Expired"}})));
  EXPECT_FALSE(kube::IsGone(StatusFromResponse(StatusResponse(404, "NotFound", ""))));
  EXPECT_TRUE(kube::IsGone(absl::OutOfRangeError("what a fake Client returns")));
  EXPECT_FALSE(kube::IsGone(absl::UnavailableError("connection refused")));
}

// A write may have been applied unless the API server answered it with a 4xx (or, from a fake,
// the code of one), or the transport says the request never left.
TEST(ErrorsTest, AWriteMayHaveBeenAppliedUnlessAnsweredOrNeverSent) {
  EXPECT_TRUE(kube::MayHaveBeenApplied(
      http::TransportError(absl::StatusCode::kUnavailable, "connection reset", true)));
  EXPECT_TRUE(kube::MayHaveBeenApplied(
      http::TransportError(absl::StatusCode::kDeadlineExceeded, "request timed out", true)));
  EXPECT_FALSE(kube::MayHaveBeenApplied(
      http::TransportError(absl::StatusCode::kUnavailable, "connection refused", false)));
  EXPECT_TRUE(kube::MayHaveBeenApplied(StatusFromResponse(StatusResponse(504, "Timeout", ""))));
  EXPECT_TRUE(
      kube::MayHaveBeenApplied(StatusFromResponse(StatusResponse(500, "InternalError", ""))));
  EXPECT_FALSE(kube::MayHaveBeenApplied(StatusFromResponse(StatusResponse(409, "Conflict", ""))));
  EXPECT_FALSE(
      kube::MayHaveBeenApplied(StatusFromResponse(StatusResponse(429, "TooManyRequests", ""))));
  EXPECT_FALSE(kube::MayHaveBeenApplied(StatusFromResponse(StatusResponse(422, "Invalid", ""))));
  EXPECT_TRUE(kube::MayHaveBeenApplied(absl::UnavailableError("http2: client connection lost")));
  EXPECT_FALSE(kube::MayHaveBeenApplied(absl::AbortedError("the object has been modified")));
  EXPECT_FALSE(kube::MayHaveBeenApplied(absl::NotFoundError("gone")));
}

// Only a request that got no HTTP answer at all says the API server cannot be
// reached; any answer (a 503, a 504) says it can.
TEST(ErrorsTest, UnreachableOnlyWithoutAnHttpAnswer) {
  EXPECT_TRUE(kube::IsUnreachable(
      http::TransportError(absl::StatusCode::kUnavailable, "connection refused", false)));
  EXPECT_TRUE(kube::IsUnreachable(
      http::TransportError(absl::StatusCode::kDeadlineExceeded, "request timed out", true)));
  EXPECT_FALSE(
      kube::IsUnreachable(StatusFromResponse(StatusResponse(503, "ServiceUnavailable", "busy"))));
  EXPECT_FALSE(kube::IsUnreachable(StatusFromResponse(StatusResponse(504, "Timeout", "slow"))));
  EXPECT_FALSE(kube::IsUnreachable(StatusFromResponse(StatusResponse(500, "InternalError", ""))));
  EXPECT_FALSE(kube::IsUnreachable(StatusFromResponse(StatusResponse(422, "Invalid", "bad"))));
  EXPECT_FALSE(kube::IsUnreachable(absl::OkStatus()));
}

TEST(ErrorsTest, RetryAfterFromHeaderOrDetails) {
  absl::Status header = StatusFromResponse(
      StatusResponse(429, "TooManyRequests", "slow down", {{"retry-after", "3"}}));
  EXPECT_TRUE(kube::IsTooManyRequests(header));
  ASSERT_TRUE(RetryAfter(header).has_value());
  EXPECT_EQ(*RetryAfter(header), std::chrono::seconds(3));

  nlohmann::json body = {{"kind", "Status"},
                         {"code", 429},
                         {"reason", "TooManyRequests"},
                         {"details", {{"retryAfterSeconds", 5}}}};
  absl::Status details = StatusFromResponse(http::Response{429, {}, body.dump()});
  EXPECT_EQ(RetryAfter(details), std::chrono::seconds(5));
  EXPECT_FALSE(RetryAfter(absl::UnavailableError("x")).has_value());
}

TEST(ErrorsTest, NonStatusBodyKeepsAnExcerpt) {
  absl::Status status = StatusFromResponse(http::Response{502, {}, "<html>bad gateway</html>"});
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "HTTP 502: <html>bad gateway</html>");
  EXPECT_EQ(HttpStatusCode(status), 502);
  absl::Status teapot = StatusFromResponse(http::Response{418, {}, ""});
  EXPECT_EQ(teapot.code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(teapot.message(), "HTTP 418");
}

TEST(ErrorsTest, TooLargeResourceVersion) {
  nlohmann::json body = {
      {"kind", "Status"},
      {"code", 504},
      {"reason", "Timeout"},
      {"message", "Too large resource version: 99, current: 10"},
      {"details", {{"causes", {{{"reason", "ResourceVersionTooLarge"}, {"message", "x"}}}}}}};
  absl::Status status = StatusFromResponse(http::Response{504, {}, body.dump()});
  EXPECT_TRUE(IsResourceVersionTooLarge(status));
  EXPECT_FALSE(
      IsResourceVersionTooLarge(StatusFromResponse(StatusResponse(504, "Timeout", "just slow"))));
}

TEST(ErrorsTest, Keys) {
  EXPECT_EQ(Key("ns", "name"), "ns/name");
  EXPECT_EQ(Key("", "cluster-scoped"), "cluster-scoped");
  EXPECT_EQ(SplitKey("ns/name"), std::make_pair(std::string("ns"), std::string("name")));
  EXPECT_EQ(SplitKey("solo"), std::make_pair(std::string(""), std::string("solo")));
  EXPECT_EQ(KeyOf({{"metadata", {{"namespace", "a"}, {"name", "b"}}}}), "a/b");
  EXPECT_EQ(KeyOf(nlohmann::json::object()), "");
}

TEST(ResourceTypesTest, PathsForGroupsCoreAndClusterScope) {
  const ResourceType jobs{"hpc.slurmoperator.dev", "v1alpha1", "slurmjobs", "SlurmJob", true};
  EXPECT_EQ(jobs.ApiVersion(), "hpc.slurmoperator.dev/v1alpha1");
  EXPECT_EQ(jobs.CollectionPath("ns"),
            "/apis/hpc.slurmoperator.dev/v1alpha1/namespaces/ns/slurmjobs");
  EXPECT_EQ(jobs.CollectionPath(""), "/apis/hpc.slurmoperator.dev/v1alpha1/slurmjobs");
  EXPECT_EQ(jobs.ObjectPath("ns", "j1"),
            "/apis/hpc.slurmoperator.dev/v1alpha1/namespaces/ns/slurmjobs/j1");
  EXPECT_EQ(jobs.ListKind(), "SlurmJobList");

  EXPECT_EQ(ConfigMaps().ApiVersion(), "v1");
  EXPECT_EQ(ConfigMaps().ObjectPath("ns", "cm"), "/api/v1/namespaces/ns/configmaps/cm");
  EXPECT_EQ(Secrets().CollectionPath("ns"), "/api/v1/namespaces/ns/secrets");
  EXPECT_EQ(CoreEvents().CollectionPath("ns"), "/api/v1/namespaces/ns/events");
  EXPECT_EQ(EventsV1().CollectionPath("ns"), "/apis/events.k8s.io/v1/namespaces/ns/events");
  EXPECT_EQ(Leases().ObjectPath("kube-system", "slurmop"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/slurmop");
  EXPECT_EQ(Namespaces().ObjectPath("ignored", "default"), "/api/v1/namespaces/default");
}

// Names without a CRD pattern (credentialsSecretRef.name, configMapKeyRef.name)
// are tenant input: each stays one path segment, and cannot add a query.
TEST(ResourceTypesTest, NamesArePercentEncodedPathSegments) {
  EXPECT_EQ(ConfigMaps().ObjectPath("ns", "x?labelSelector=a"),
            "/api/v1/namespaces/ns/configmaps/x%3FlabelSelector%3Da");
  EXPECT_EQ(Secrets().ObjectPath("ns", "../../kube-system/secrets/k"),
            "/api/v1/namespaces/ns/secrets/..%2F..%2Fkube-system%2Fsecrets%2Fk");
  EXPECT_EQ(Secrets().ObjectPath("ns", ".."), "/api/v1/namespaces/ns/secrets/%2E%2E");
  EXPECT_EQ(Secrets().ObjectPath("ns", "."), "/api/v1/namespaces/ns/secrets/%2E");
  EXPECT_EQ(Secrets().ObjectPath("n s", "a#b"), "/api/v1/namespaces/n%20s/secrets/a%23b");
}

// A watch line nested deeper than the Kubernetes limit (10,000 levels) is
// refused without being built.
TEST(WatchEventTest, RefusesALineNestedTooDeep) {
  const std::string deep = R"({"type":"ADDED","object":{"x":)" + std::string(20000, '[') +
                           std::string(20000, ']') + "}}";
  EXPECT_EQ(ParseWatchLine(deep).status().code(), absl::StatusCode::kInternal);
}

// An object nested as deep as the API server stores (10,000 levels) is one level deeper inside
// its watch event: it was refused, and the informer re-watched from the same resourceVersion for
// ever.
TEST(WatchEventTest, AnObjectAtTheApiServersLimitIsRead) {
  const int inner = kMaxKubeJsonDepth - 1;  // the object's own braces are the first level
  const std::string at_limit = R"({"type":"ADDED","object":{"x":)" + std::string(inner, '[') +
                               std::string(inner, ']') + "}}";
  absl::StatusOr<WatchEvent> event = ParseWatchLine(at_limit);
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->type, "ADDED");
}

TEST(WatchEventTest, ParsesEventsAndRejectsMalformedLines) {
  absl::StatusOr<WatchEvent> added = ParseWatchLine(
      R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}})");
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(added->type, "ADDED");
  EXPECT_EQ(added->object["metadata"]["name"], "a");
  EXPECT_TRUE(StatusFromErrorEvent(*added).ok());
  EXPECT_FALSE(IsGone(*added));

  for (const char* bad : {"", "not json", "[]", R"({"type":"ADDED"})", R"({"object":{}})",
                          R"({"type":"WHATEVER","object":{}})", R"({"type":"ADDED","object":1})"}) {
    EXPECT_EQ(ParseWatchLine(bad).status().code(), absl::StatusCode::kInternal) << bad;
  }
}

TEST(WatchEventTest, Error410EventIsGone) {
  absl::StatusOr<WatchEvent> event =
      ParseWatchLine(R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},)"
                     R"j("status":"Failure","message":"too old resource version: 1 (3171407)",)j"
                     R"("reason":"Expired","code":410}})");
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_TRUE(IsGone(*event));
  absl::Status status = StatusFromErrorEvent(*event);
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(status.message(), "too old resource version: 1 (3171407)");
  EXPECT_TRUE(kube::IsGone(status));

  absl::StatusOr<WatchEvent> other = ParseWatchLine(
      R"({"type":"ERROR","object":{"kind":"Status","code":500,"reason":"InternalError","message":"boom"}})");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(IsGone(*other));
  EXPECT_EQ(StatusFromErrorEvent(*other).code(), absl::StatusCode::kInternal);
}

// An admission webhook's message is its own text, of any length: the operator quotes at most
// kMaxRemoteMessageBytes of it, so that its conditions and Events can still be written.
TEST(ErrorsTest, AWebhooksHugeMessageIsCut) {
  const std::string huge = "admission webhook denied the request: " + std::string(40000, 'x');
  absl::Status s = StatusFromResponse(StatusResponse(403, "Forbidden", huge));
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_LE(s.message().size(), kMaxRemoteMessageBytes);
  EXPECT_EQ(s.message().substr(0, 37), huge.substr(0, 37));
}

}  // namespace
}  // namespace slurmop::kube
