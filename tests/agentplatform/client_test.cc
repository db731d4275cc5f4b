// File: tests/agentplatform/client_test.cc
//
// The callSlurmRestApi client against a scripted transport and a FakeClock:
// URL and headers, retries (GET/DELETE on UNAVAILABLE and transport errors;
// POST only when never delivered), 401 handling, RESOURCE_EXHAUSTED, the
// 1 MB limit, argument validation, rate limiting, and that no token ever
// appears in an error message.

#include "controller/agentplatform/client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>

#include "controller/agentplatform/google_error.h"
#include "tests/agentplatform/fake_transport.h"

namespace slurmop::agentplatform {
namespace {

using ::slurmop::agentplatform::testing::Failure;
using ::slurmop::agentplatform::testing::FakeSleeper;
using ::slurmop::agentplatform::testing::FakeTransport;
using ::slurmop::agentplatform::testing::Respond;
using ::testing::HasSubstr;
using ::testing::Not;
using ms = std::chrono::milliseconds;

constexpr char kUrl[] =
    "https://us-central1-aiplatform.googleapis.com/v1beta1/projects/my-proj/locations/"
    "us-central1/modelDevelopmentClusters/train-1:callSlurmRestApi?prettyPrint=false";

// Hands out "tok-1", "tok-2", ... (a new one after each Invalidate()).
class FakeTokenSource : public TokenSource {
 public:
  absl::StatusOr<std::string> Token() override {
    if (!errors.empty()) {
      absl::Status s = errors.front();
      errors.pop_front();
      return s;
    }
    return "tok-" + std::to_string(generation);
  }
  void Invalidate() override {
    ++invalidations;
    ++generation;
  }
  std::string Describe() const override { return "service account op@p.iam.gserviceaccount.com"; }
  std::string QuotaProject() const override { return quota_project; }

  std::deque<absl::Status> errors;
  int generation = 1;
  int invalidations = 0;
  std::string quota_project;
};

std::string Envelope(int status, const std::string& structured_body) {
  return "{\"status\":" + std::to_string(status) + ",\"structuredBody\":" + structured_body + "}";
}

std::string GoogleError(int code, const std::string& status, const std::string& message,
                        const std::string& details = "[]") {
  return "{\"error\":{\"code\":" + std::to_string(code) + ",\"message\":\"" + message +
         "\",\"status\":\"" + status + "\",\"details\":" + details + "}}";
}

class ClientTest : public ::testing::Test {
 protected:
  ClientTest() {
    cluster_.project_id = "my-proj";
    cluster_.region = "us-central1";
    cluster_.cluster_id = "train-1";
    options_.transport = &transport_;
    options_.clock = &clock_;
    options_.sleep = FakeSleeper{&clock_, &sleeps_};
    options_.jitter = [] { return 1.0; };  // the top of each backoff window
  }

  std::unique_ptr<SlurmApi> Client() { return NewSlurmApiClient(options_); }

  // One answered call, so that the project has accepted credentials_ and its
  // budget is theirs (until then they draw on a small bucket of their own,
  // quota_budget.h).
  void AcceptCredentials(SlurmApi& api) {
    transport_.Enqueue(Respond(200, Envelope(200, "{}")));
    ASSERT_TRUE(Get(api).ok());
    clock_.Advance(std::chrono::minutes(1));  // the project's bucket refills
  }

  absl::StatusOr<SlurmResponse> Get(SlurmApi& api,
                                    const std::string& path = "/slurm/v0.0.42/job/1") {
    return api.Call(cluster_, credentials_, HttpMethod::kGet, path, nullptr);
  }
  absl::StatusOr<SlurmResponse> Submit(SlurmApi& api) {
    return api.Call(cluster_, credentials_, HttpMethod::kPost, "/slurm/v0.0.42/job/submit",
                    &submit_body_);
  }

  FakeClock clock_;
  FakeTransport transport_;
  FakeTokenSource credentials_;
  std::vector<std::chrono::nanoseconds> sleeps_;
  ClientOptions options_;
  ClusterName cluster_;
  nlohmann::json submit_body_ = {{"job", {{"name", "t"}}}, {"script", "#!/bin/bash\ntrue\n"}};
};

TEST(ClusterNameTest, ResourceNameAndUrl) {
  ClusterName c{"", "p", "europe-west4", "c1"};
  EXPECT_EQ(c.ResourceName(), "projects/p/locations/europe-west4/modelDevelopmentClusters/c1");
  EXPECT_EQ(c.CallUrl(),
            "https://europe-west4-aiplatform.googleapis.com/v1beta1/projects/p/locations/"
            "europe-west4/modelDevelopmentClusters/c1:callSlurmRestApi");
  c.endpoint = "http://127.0.0.1:8080/";
  EXPECT_EQ(c.CallUrl(),
            "http://127.0.0.1:8080/v1beta1/projects/p/locations/europe-west4/"
            "modelDevelopmentClusters/c1:callSlurmRestApi");
}

// A domain-scoped project id (the CRD allows "example.com:proj") is accepted
// and percent-encoded in the URL path; the resource name keeps it as is.
TEST_F(ClientTest, DomainScopedProjectIdIsEncodedInThePath) {
  transport_.Enqueue(Respond(200, Envelope(200, R"({"jobs":[]})")));
  cluster_.project_id = "example.com:proj";
  auto api = Client();
  absl::StatusOr<SlurmResponse> r =
      api->Call(cluster_, credentials_, HttpMethod::kGet, "/slurm/v0.0.42/jobs/", nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(transport_.request_count(), 1u);
  EXPECT_THAT(transport_.requests()[0].url,
              HasSubstr("/v1beta1/projects/example.com%3Aproj/locations/"));
  EXPECT_EQ(cluster_.ResourceName().rfind("projects/example.com:proj/", 0), 0u);
  // ':' only in the project id.
  cluster_.cluster_id = "c:1";
  EXPECT_EQ(api->Call(cluster_, credentials_, HttpMethod::kGet, "/slurm/v0.0.42/jobs/", nullptr)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ClientTest, SendsEnvelopeWithBearerToken) {
  transport_.Enqueue(Respond(200, Envelope(200, R"({"job_id":1234,"errors":[],"warnings":[]})")));
  options_.timeout = ms(12000);
  auto api = Client();
  absl::StatusOr<SlurmResponse> r = Submit(*api);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body["job_id"].get<int64_t>(), 1234);
  EXPECT_TRUE(r->body["job_id"].is_number_integer());

  ASSERT_EQ(transport_.request_count(), 1u);
  const http::Request req = transport_.requests()[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, kUrl);
  EXPECT_EQ(req.headers.at("Authorization"), "Bearer tok-1");
  EXPECT_EQ(req.headers.at("Content-Type"), "application/json");
  EXPECT_EQ(req.headers.count("x-goog-user-project"), 0u);
  EXPECT_EQ(req.timeout, ms(12000));
  const nlohmann::json sent = nlohmann::json::parse(req.body);
  EXPECT_EQ(sent["method"], "HTTP_METHOD_POST");
  EXPECT_EQ(sent["path"], "/slurm/v0.0.42/job/submit");
  EXPECT_EQ(sent["body"], submit_body_);
}

TEST_F(ClientTest, GetSendsNoBodyField) {
  transport_.Enqueue(Respond(200, Envelope(200, R"({"jobs":[]})")));
  auto api = Client();
  ASSERT_TRUE(Get(*api, "/slurm/v0.0.42/jobs/").ok());
  EXPECT_EQ(transport_.requests()[0].body,
            R"({"method":"HTTP_METHOD_GET","path":"/slurm/v0.0.42/jobs/"})");
}

TEST_F(ClientTest, SendsQuotaProjectHeader) {
  credentials_.quota_project = "billing-proj";
  transport_.Enqueue(Respond(200, Envelope(200, "{}")));
  auto api = Client();
  ASSERT_TRUE(Get(*api).ok());
  EXPECT_EQ(transport_.requests()[0].headers.at("x-goog-user-project"), "billing-proj");
}

TEST_F(ClientTest, SlurmErrorStatusIsStillOk) {
  transport_.Enqueue(Respond(
      200,
      Envelope(404, R"({"errors":[{"error":"Unable to query JobId=9","error_number":2017}]})")));
  auto api = Client();
  absl::StatusOr<SlurmResponse> r = Get(*api);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body["errors"][0]["error_number"].get<int>(), 2017);
}

TEST_F(ClientTest, GetRetriedOn503ThenSucceeds) {
  transport_.Enqueue(Respond(503, GoogleError(503, "UNAVAILABLE", "cluster unreachable")));
  transport_.Enqueue(Respond(502, "<html>Bad Gateway</html>"));
  transport_.Enqueue(Respond(200, Envelope(200, R"({"jobs":[{"job_id":1}]})")));
  auto api = Client();
  absl::StatusOr<SlurmResponse> r = Get(*api);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(transport_.request_count(), 3u);
  // Full jitter at the top of the window: 500 ms, then 1 s.
  EXPECT_THAT(sleeps_, ::testing::ElementsAre(ms(500), ms(1000)));
}

TEST_F(ClientTest, GetRetriedOnTransportErrorsEvenIfDelivered) {
  transport_.Enqueue(Failure(absl::StatusCode::kUnavailable, /*request_sent=*/true));
  transport_.Enqueue(Failure(absl::StatusCode::kUnavailable, /*request_sent=*/false));
  transport_.Enqueue(Respond(200, Envelope(200, "{}")));
  auto api = Client();
  EXPECT_TRUE(Get(*api).ok());
  EXPECT_EQ(transport_.request_count(), 3u);
}

// Credentials a project refuses (a tenant naming another team's project)
// never spend that project's budget; the project's own callers keep it.
TEST_F(ClientTest, CredentialsTheProjectRefusesSpendAtMostTheirSmallBucket) {
  options_.budget.requests_per_minute = 60;  // one a second, a burst of 10
  auto api = Client();
  transport_.SetHandler([](const http::Request& request) -> absl::StatusOr<http::Response> {
    if (request.headers.at("Authorization") == "Bearer intruder") {
      return Respond(403, GoogleError(403, "PERMISSION_DENIED", "denied"));
    }
    return Respond(200, Envelope(200, "{}"));
  });
  struct Intruder : FakeTokenSource {
    absl::StatusOr<std::string> Token() override { return "intruder"; }
  } bad;
  int sent = 0;
  for (int i = 0; i < 50; ++i) {
    absl::StatusOr<SlurmResponse> r =
        api->Call(cluster_, bad, HttpMethod::kPost, "/slurm/v0.0.42/job/submit", &submit_body_);
    ASSERT_FALSE(r.ok());
    if (r.status().code() == absl::StatusCode::kPermissionDenied) ++sent;
    if (i == 49) {
      EXPECT_TRUE(HeldBackByBudget(r.status()));
      EXPECT_THAT(r.status().message(),
                  HasSubstr("of service account op@p.iam.gserviceaccount.com in project my-proj "
                            "(6 calls/min until the project accepts one of their calls"));
    }
  }
  EXPECT_EQ(sent, 3) << "the unproven burst";
  // The project's own credentials: the rest of the burst (the intruder's 3 calls were counted).
  for (int i = 0; i < 7; ++i) EXPECT_TRUE(Submit(*api).ok()) << i;
  EXPECT_TRUE(HeldBackByBudget(Submit(*api).status()));
}

// A cluster that does not answer holds a shared thread for one timeout, not
// for every attempt of every call (silent_clusters.h).
TEST_F(ClientTest, ASilentClusterIsNotWaitedForAgainUntilItsHoldHasPassed) {
  auto api = Client();
  AcceptCredentials(*api);
  for (int i = 0; i < 2; ++i) {
    transport_.Enqueue(Failure(absl::StatusCode::kDeadlineExceeded, /*request_sent=*/true));
    absl::StatusOr<SlurmResponse> r = Get(*api);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  }
  EXPECT_EQ(transport_.request_count(), 3u) << "a timed-out attempt is not retried in-thread";
  EXPECT_TRUE(sleeps_.empty());

  // Every call to it is now refused unsent for the hold (5 s).
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<SlurmResponse> held = i == 0 ? Submit(*api) : Get(*api);
    ASSERT_FALSE(held.ok());
    EXPECT_EQ(held.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_FALSE(http::MayHaveBeenDelivered(held.status()));
    EXPECT_TRUE(HeldBackByBudget(held.status())) << "nothing sent: the caller waits, no failure";
    EXPECT_EQ(held.status().message(),
              "Agent Platform: cluster "
              "projects/my-proj/locations/us-central1/modelDevelopmentClusters/train-1 did not "
              "answer in time; so that it does not hold the operator's shared workers, its calls "
              "are held back and go one at a time until it answers again");
    EXPECT_EQ(RetryDelay(held.status()), ms(5000));
  }
  EXPECT_EQ(transport_.request_count(), 3u);

  // Another cluster is called as usual.
  ClusterName other = cluster_;
  other.cluster_id = "train-2";
  transport_.Enqueue(Respond(200, Envelope(200, "{}")));
  EXPECT_TRUE(
      api->Call(other, credentials_, HttpMethod::kGet, "/slurm/v0.0.42/jobs", nullptr).ok());

  // After the hold one trial call goes; a second silence doubles the hold.
  clock_.Advance(ms(5000));
  transport_.Enqueue(Failure(absl::StatusCode::kDeadlineExceeded, /*request_sent=*/true));
  EXPECT_EQ(Get(*api).status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(transport_.requests().back().timeout, ms(5000)) << "a trial waits 5 s, not 30";
  absl::StatusOr<SlurmResponse> held = Get(*api);
  EXPECT_EQ(RetryDelay(held.status()), ms(10000));

  // A 403 comes from Google's front end: it says nothing about the cluster,
  // so the call after it is still a trial (5 s), whose answer closes it.
  clock_.Advance(ms(10000));
  transport_.Enqueue(Respond(403, GoogleError(403, "PERMISSION_DENIED", "denied")));
  EXPECT_EQ(Get(*api).status().code(), absl::StatusCode::kPermissionDenied);
  AcceptCredentials(*api);  // the 403 put them back on their own small bucket
  EXPECT_EQ(transport_.requests().back().timeout, ms(5000)) << "still a trial";
  transport_.Enqueue(Respond(200, Envelope(200, "{}")));
  EXPECT_TRUE(Get(*api).ok());
  EXPECT_EQ(transport_.requests().back().timeout, ms(30000)) << "closed";
  EXPECT_EQ(transport_.request_count(), 8u);
}

// A gateway that answers 504 only after waiting most of the timeout holds a
// thread as long as silence does, and counts as silence; a quick 504 is an
// answer, retried as before (DeleteRetriedOn504).
TEST_F(ClientTest, AFailedAnswerThatTookHalfTheTimeoutCountsAsSilence) {
  transport_.SetHandler([this](const http::Request&) -> absl::StatusOr<http::Response> {
    clock_.Advance(ms(20000));
    return Respond(504, GoogleError(504, "DEADLINE_EXCEEDED", "backend did not answer"));
  });
  auto api = Client();
  absl::StatusOr<SlurmResponse> r = Get(*api);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(transport_.request_count(), 1u) << "not retried after 20 s of waiting";
  EXPECT_FALSE(Get(*api).ok());
  EXPECT_THAT(Get(*api).status().message(), HasSubstr("did not answer in time"));
  EXPECT_EQ(transport_.request_count(), 2u);
}

// Server delays are waited out in the caller's shared thread only up to
// max_backoff (5 s): a longer one is returned for the caller to requeue.
TEST_F(ClientTest, ServerDelaysPastFiveSecondsAreNotSleptInTheCallersThread) {
  transport_.Enqueue(Respond(503, GoogleError(503, "UNAVAILABLE", "busy"), {{"retry-after", "6"}}));
  auto api = Client();
  absl::StatusOr<SlurmResponse> r = Get(*api);
  EXPECT_EQ(RetryDelay(r.status()), ms(6000));
  EXPECT_EQ(transport_.request_count(), 1u);
  EXPECT_TRUE(sleeps_.empty());
}

TEST_F(ClientTest, DeleteRetriedOn504) {
  transport_.Enqueue(Respond(504, GoogleError(504, "DEADLINE_EXCEEDED", "timeout")));
  transport_.Enqueue(Respond(200, Envelope(200, R"({"errors":[]})")));
  auto api = Client();
  absl::StatusOr<SlurmResponse> r =
      api->Call(cluster_, credentials_, HttpMethod::kDelete, "/slurm/v0.0.42/job/5", nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(transport_.request_count(), 2u);
  EXPECT_THAT(transport_.requests()[0].body, HasSubstr("HTTP_METHOD_DELETE"));
}

TEST_F(ClientTest, BackoffGrowsAndIsCapped) {
  options_.max_attempts = 6;
  options_.initial_backoff = ms(500);
  options_.max_backoff = ms(3000);
  for (int i = 0; i < 6; ++i) {
    transport_.Enqueue(Respond(503, GoogleError(503, "UNAVAILABLE", "down")));
  }
  auto api = Client();
  absl::StatusOr<SlurmResponse> r = Get(*api);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(), "Agent Platform: down (after 6 attempts)");
  EXPECT_EQ(transport_.request_count(), 6u);
  EXPECT_THAT(sleeps_, ::testing::ElementsAre(ms(500), ms(1000), ms(2000), ms(3000), ms(3000)));
}

TEST_F(ClientTest, FullJitterStaysInWindow) {
  options_.jitter = [] { return 0.25; };
  transport_.Enqueue(Respond(503, GoogleError(503, "UNAVAILABLE", "down")));
  transport_.Enqueue(Respond(503, GoogleError(503, "UNAVAILABLE", "down")));
  transport_.Enqueue(Respond(200, Envelope(200, "{}")));
  auto api = Client();
  ASSERT_TRUE(Get(*api).ok());
  EXPECT_THAT(sleeps_, ::testing::ElementsAre(ms(125), ms(250)));
}

TEST_F(ClientTest, HonoursRetryInfoAndRetryAfter) {
  options_.jitter = [] { return 0.0; };
  transport_.Enqueue(Respond(
      503, GoogleError(
               503, "UNAVAILABLE", "busy",
               R"([{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"4.5s"}])")));
  transport_.Enqueue(Respond(503, GoogleError(503, "UNAVAILABLE", "busy"), {{"retry-after", "2"}}));
  transport_.Enqueue(Respond(200, Envelope(200, "{}")));
  auto api = Client();
  ASSERT_TRUE(Get(*api).ok());
  EXPECT_THAT(sleeps_, ::testing::ElementsAre(ms(4500), ms(2000)));
}

TEST_F(ClientTest, ServerDelayBeyondMaxBackoffIsReturnedToCaller) {
  transport_.Enqueue(Respond(
      503, GoogleError(
               503, "UNAVAILABLE", "maintenance",
               R"([{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"120s"}])")));
  auto api = Client();
  absl::StatusOr<SlurmResponse> r = Get(*api);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(RetryDelay(r.status()), ms(120000));
  EXPECT_EQ(r.status().message(), "Agent Platform: maintenance (retry after 120s)");
  EXPECT_EQ(transport_.request_count(), 1u);
  EXPECT_TRUE(sleeps_.empty());
}

TEST_F(ClientTest, PostNotRetriedAfterPossiblyDeliveredFailure) {
  for (auto code : {absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded}) {
    FakeTransport transport;
    options_.transport = &transport;
    transport.Enqueue(Failure(code, /*request_sent=*/true));
    transport.Enqueue(Respond(200, Envelope(200, R"({"job_id":1})")));
    auto api = Client();
    absl::StatusOr<SlurmResponse> r = Submit(*api);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), code);
    EXPECT_TRUE(http::MayHaveBeenDelivered(r.status()));
    EXPECT_THAT(r.status().message(), HasSubstr("Agent Platform: POST /slurm/v0.0.42/job/submit"));
    EXPECT_EQ(transport.request_count(), 1u);
  }
}

TEST_F(ClientTest, PostRetriedWhenNeverDelivered) {
  transport_.Enqueue(Failure(absl::StatusCode::kUnavailable, /*request_sent=*/false));
  transport_.Enqueue(Failure(absl::StatusCode::kUnavailable, /*request_sent=*/false));
  transport_.Enqueue(Respond(200, Envelope(200, R"({"job_id":77})")));
  auto api = Client();
  absl::StatusOr<SlurmResponse> r = Submit(*api);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body["job_id"].get<int>(), 77);
  EXPECT_EQ(transport_.request_count(), 3u);
}

TEST_F(ClientTest, PostNotRetriedOnUnavailableAnswer) {
  transport_.Enqueue(Respond(503, GoogleError(503, "UNAVAILABLE", "cluster unreachable")));
  auto api = Client();
  absl::StatusOr<SlurmResponse> r = Submit(*api);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(http::MayHaveBeenDelivered(r.status()));
  EXPECT_EQ(transport_.request_count(), 1u);
}

TEST_F(ClientTest, UnauthenticatedInvalidatesAndRetriesOnce) {
  transport_.Enqueue(Respond(401, GoogleError(401, "UNAUTHENTICATED", "token expired")));
  transport_.Enqueue(Respond(200, Envelope(200, R"({"job_id":5})")));
  auto api = Client();
  absl::StatusOr<SlurmResponse> r = Submit(*api);  // POST too
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(credentials_.invalidations, 1);
  ASSERT_EQ(transport_.request_count(), 2u);
  EXPECT_EQ(transport_.requests()[0].headers.at("Authorization"), "Bearer tok-1");
  EXPECT_EQ(transport_.requests()[1].headers.at("Authorization"), "Bearer tok-2");
  EXPECT_TRUE(sleeps_.empty());
}

TEST_F(ClientTest, SecondUnauthenticatedIsReturned) {
  transport_.Enqueue(Respond(401, GoogleError(401, "UNAUTHENTICATED", "bad token")));
  transport_.Enqueue(Respond(401, "{}"));  // bare 401 without a Google body
  auto api = Client();
  absl::StatusOr<SlurmResponse> r = Get(*api);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(r.status().message(),
            "Agent Platform: HTTP 401; caller: service account op@p.iam.gserviceaccount.com");
  EXPECT_EQ(credentials_.invalidations, 1);
  EXPECT_EQ(transport_.request_count(), 2u);
}

// RESOURCE_EXHAUSTED is returned at once and pauses the project and region
// (every cluster in it: the quota is theirs together) for the server's
// RetryInfo delay, and halves the budget there (#16 item 3).
TEST_F(ClientTest, ResourceExhaustedPausesTheWholeProjectAndRegion) {
  options_.budget.requests_per_minute = 480;
  options_.budget.recovery_per_minute = 0;  // the halved rate stays put for the message below
  auto api = Client();
  AcceptCredentials(*api);  // another caller's 429 pauses nothing
  transport_.Enqueue(Respond(
      429, GoogleError(
               429, "RESOURCE_EXHAUSTED", "Quota exceeded for aiplatform requests",
               R"([{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}])")));
  absl::StatusOr<SlurmResponse> r = Get(*api);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(r.status().message(),
            "Agent Platform: Quota exceeded for aiplatform requests (retry after 1.5s)");
  EXPECT_EQ(RetryDelay(r.status()), ms(1500));
  EXPECT_EQ(transport_.request_count(), 2u);

  // Within the pause, calls to any cluster of that project and region fail
  // fast and send nothing, and say what the budget is now.
  clock_.Advance(ms(1000));
  ClusterName sibling = cluster_;
  sibling.cluster_id = "train-2";
  absl::StatusOr<SlurmResponse> paused = api->Call(sibling, credentials_, HttpMethod::kPost,
                                                   "/slurm/v0.0.42/job/submit", &submit_body_);
  ASSERT_FALSE(paused.ok());
  EXPECT_EQ(paused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RetryDelay(paused.status()), ms(500));
  EXPECT_FALSE(http::MayHaveBeenDelivered(paused.status()));
  EXPECT_THAT(std::string(paused.status().message()),
              HasSubstr("quota of project my-proj in us-central1 is exhausted"));
  EXPECT_THAT(std::string(paused.status().message()),
              HasSubstr("budget there (480 calls/min) is halved"));
  EXPECT_EQ(transport_.request_count(), 2u);
  // A later call of the same pause gets the same message (only the retry
  // delay shrinks): the message becomes a SlurmJob's condition, and one that
  // changed per retry was a status write, a watch event and a reconcile each.
  clock_.Advance(ms(300));
  absl::StatusOr<SlurmResponse> later = Get(*api);
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.status().message(), paused.status().message());
  EXPECT_EQ(RetryDelay(later.status()), ms(200));
  EXPECT_EQ(transport_.request_count(), 2u);

  // Another region of the same project has its own quota.
  ClusterName elsewhere = cluster_;
  elsewhere.region = "europe-west4";
  transport_.Enqueue(Respond(200, Envelope(200, R"({"jobs":[]})")));
  EXPECT_TRUE(
      api->Call(elsewhere, credentials_, HttpMethod::kGet, "/slurm/v0.0.42/jobs/", nullptr).ok());
  EXPECT_EQ(transport_.request_count(), 3u);

  // After the server's delay, calls go through again.
  clock_.Advance(ms(200));
  transport_.Enqueue(Respond(200, Envelope(200, R"({"jobs":[]})")));
  EXPECT_TRUE(Get(*api).ok());
  EXPECT_EQ(transport_.request_count(), 4u);
}

// Without a RetryInfo delay the pause is 30 s.
TEST_F(ClientTest, ResourceExhaustedWithoutADelayPausesThirtySeconds) {
  auto api = Client();
  AcceptCredentials(*api);  // another caller's 429 pauses nothing
  transport_.Enqueue(Respond(429, GoogleError(429, "RESOURCE_EXHAUSTED", "Quota exceeded", "[]")));
  absl::StatusOr<SlurmResponse> r = Get(*api);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RetryDelay(r.status()), ms(30000));
}

TEST_F(ClientTest, PermanentErrorsAreNotRetried) {
  struct {
    int http;
    const char* status;
    absl::StatusCode code;
  } cases[] = {{403, "PERMISSION_DENIED", absl::StatusCode::kPermissionDenied},
               {404, "NOT_FOUND", absl::StatusCode::kNotFound},
               {400, "INVALID_ARGUMENT", absl::StatusCode::kInvalidArgument},
               {500, "INTERNAL", absl::StatusCode::kInternal}};
  for (const auto& c : cases) {
    FakeTransport transport;
    options_.transport = &transport;
    transport.Enqueue(Respond(c.http, GoogleError(c.http, c.status, "nope")));
    auto api = Client();
    absl::StatusOr<SlurmResponse> r = Get(*api);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code);
    EXPECT_EQ(transport.request_count(), 1u) << c.status;
    if (c.code == absl::StatusCode::kPermissionDenied) {
      EXPECT_EQ(r.status().message(),
                "Agent Platform: nope; caller: service account op@p.iam.gserviceaccount.com");
    } else {
      EXPECT_EQ(r.status().message(), "Agent Platform: nope");
    }
  }
}

TEST_F(ClientTest, RequestOverOneMegabyteIsRejectedBeforeSending) {
  nlohmann::json body = {{"job", {{"name", "big"}}}, {"script", std::string(1000 * 1000, 'x')}};
  auto api = Client();
  absl::StatusOr<SlurmResponse> r =
      api->Call(cluster_, credentials_, HttpMethod::kPost, "/slurm/v0.0.42/job/submit", &body);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string skeleton = R"({"method":"HTTP_METHOD_POST","path":"/slurm/v0.0.42/job/submit",)"
                               R"("body":{"job":{"name":"big"},"script":""}})";
  const std::string size = std::to_string(skeleton.size() + 1000 * 1000);
  EXPECT_THAT(r.status().message(), HasSubstr("the request is " + size + " bytes"));
  EXPECT_THAT(r.status().message(), HasSubstr("over the 1 MB limit"));
  EXPECT_THAT(r.status().message(), HasSubstr("shared storage"));
  EXPECT_THAT(r.status().message(), HasSubstr("short wrapper script"));
  EXPECT_FALSE(http::MayHaveBeenDelivered(r.status()));
  EXPECT_EQ(transport_.request_count(), 0u);

  // Just under the limit goes out.
  body["script"] = std::string(1000 * 1000 - 200, 'x');
  transport_.Enqueue(Respond(200, Envelope(200, "{}")));
  EXPECT_TRUE(
      api->Call(cluster_, credentials_, HttpMethod::kPost, "/slurm/v0.0.42/job/submit", &body)
          .ok());
}

TEST_F(ClientTest, InvalidArgumentsSendNothing) {
  auto api = Client();
  ClusterName bad = cluster_;
  bad.cluster_id = "";
  EXPECT_EQ(api->Call(bad, credentials_, HttpMethod::kGet, "/slurm/v0.0.42/jobs/", nullptr)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  bad = cluster_;
  bad.project_id = "p/../x";
  EXPECT_EQ(api->Call(bad, credentials_, HttpMethod::kGet, "/slurm/v0.0.42/jobs/", nullptr)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // Past the CRD's maxLength (the names become URL segments, messages and metric labels).
  bad = cluster_;
  bad.project_id = std::string(129, 'p');
  absl::StatusOr<SlurmResponse> r =
      api->Call(bad, credentials_, HttpMethod::kGet, "/slurm/v0.0.42/jobs/", nullptr);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("longer than 128 bytes"));
  bad.project_id = std::string(128, 'p');
  bad.region = std::string(64, 'r');
  EXPECT_EQ(api->Call(bad, credentials_, HttpMethod::kGet, "/slurm/v0.0.42/jobs/", nullptr)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(transport_.request_count(), 0u);
  EXPECT_EQ(api->Call(cluster_, credentials_, HttpMethod::kGet, "slurm/v0.0.42/jobs/", nullptr)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status post =
      api->Call(cluster_, credentials_, HttpMethod::kPost, "/slurm/v0.0.42/job/submit", nullptr)
          .status();
  EXPECT_EQ(post.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(http::MayHaveBeenDelivered(post));
  EXPECT_EQ(transport_.request_count(), 0u);
}

TEST_F(ClientTest, MissingTransportIsAnError) {
  options_.transport = nullptr;
  auto api = Client();
  EXPECT_EQ(Get(*api).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ClientTest, TokenUnavailableIsRetriedForPostToo) {
  credentials_.errors.push_back(absl::UnavailableError("metadata server unreachable"));
  transport_.Enqueue(Respond(200, Envelope(200, R"({"job_id":3})")));
  auto api = Client();
  ASSERT_TRUE(Submit(*api).ok());
  EXPECT_EQ(transport_.request_count(), 1u);
  EXPECT_EQ(sleeps_.size(), 1u);
}

TEST_F(ClientTest, TokenErrorIsReturnedWithIdentity) {
  credentials_.errors.push_back(absl::UnauthenticatedError("invalid_grant"));
  auto api = Client();
  absl::Status s = Submit(*api).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(s.message(),
            "Agent Platform: no access token from service account "
            "op@p.iam.gserviceaccount.com: invalid_grant");
  EXPECT_FALSE(http::MayHaveBeenDelivered(s));
  EXPECT_EQ(transport_.request_count(), 0u);
}

TEST_F(ClientTest, MalformedSuccessIsInternal) {
  transport_.Enqueue(Respond(200, "<html>captive portal</html>"));
  auto api = Client();
  absl::Status s = Get(*api).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("not a callSlurmRestApi envelope"));
}

TEST_F(ClientTest, NoTokenInAnyErrorMessage) {
  // Servers and transports that echo the Authorization header back.
  transport_.SetHandler([](const http::Request& req) -> absl::StatusOr<http::Response> {
    const std::string auth = req.headers.at("Authorization");
    if (req.body.find("job/1") != std::string::npos) {
      return http::TransportError(absl::StatusCode::kUnavailable, "reset; sent " + auth, true);
    }
    if (req.body.find("job/2") != std::string::npos) {
      return Respond(403, GoogleError(403, "PERMISSION_DENIED", "denied for " + auth));
    }
    if (req.body.find("job/3") != std::string::npos) {
      return Respond(502, "<html>" + auth + "</html>");
    }
    return Respond(200, "not json " + auth);
  });
  options_.max_attempts = 2;
  options_.budget.requests_per_minute = 0;  // about redaction, not the budget
  auto api = Client();
  for (const char* path : {"/slurm/v0.0.42/job/1", "/slurm/v0.0.42/job/2", "/slurm/v0.0.42/job/3",
                           "/slurm/v0.0.42/job/4"}) {
    absl::Status s = Get(*api, path).status();
    ASSERT_FALSE(s.ok()) << path;
    EXPECT_THAT(std::string(s.message()), Not(HasSubstr("tok-1"))) << s;
    if (std::string(path) == "/slurm/v0.0.42/job/3") {
      // A non-JSON body is never quoted at all.
      EXPECT_THAT(std::string(s.message()), HasSubstr("not quoted")) << s;
    } else if (std::string(path) != "/slurm/v0.0.42/job/4") {
      EXPECT_THAT(std::string(s.message()), HasSubstr("[REDACTED]")) << s;
    }
  }
  // And a 401 loop: neither the old nor the new token.
  transport_.SetHandler([](const http::Request& req) -> absl::StatusOr<http::Response> {
    return Respond(
        401, GoogleError(401, "UNAUTHENTICATED", "rejected " + req.headers.at("Authorization")));
  });
  absl::Status s = Get(*api).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(s.message()), Not(HasSubstr("tok-")));
}

// One budget per project and region, shared by its clusters (#16 item 3).
TEST_F(ClientTest, ClustersOfOneProjectAndRegionShareOneBudget) {
  options_.budget.requests_per_minute = 300;  // 5 a second
  options_.budget.burst = 10;
  transport_.SetHandler([](const http::Request&) -> absl::StatusOr<http::Response> {
    return Respond(200, Envelope(200, "{}"));
  });
  auto api = Client();
  AcceptCredentials(*api);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Submit(*api).ok());
  EXPECT_TRUE(sleeps_.empty());
  // Another cluster of the same project and region: the bucket is empty.
  ClusterName sibling = cluster_;
  sibling.cluster_id = "train-2";
  ASSERT_TRUE(api->Call(sibling, credentials_, HttpMethod::kPost, "/slurm/v0.0.42/job/submit",
                        &submit_body_)
                  .ok());
  EXPECT_THAT(sleeps_, ::testing::ElementsAre(ms(200)));
  // Another project has its own.
  ClusterName other = cluster_;
  other.project_id = "other-proj";
  ASSERT_TRUE(
      api->Call(other, credentials_, HttpMethod::kGet, "/slurm/v0.0.42/jobs/", nullptr).ok());
  EXPECT_EQ(sleeps_.size(), 1u);
}

// A SlurmCluster's spec.callBudget caps its own calls and the refusal names it;
// a sibling of the same project is not held back by that cap, and the
// Budgets() snapshot shows the project's rate.
TEST_F(ClientTest, ASlurmClustersOwnCapHoldsBackOnlyItsCallsAndSaysSo) {
  options_.budget.requests_per_minute = 600;
  options_.budget.burst = 2;
  options_.max_rate_limit_wait = ms(0);
  transport_.SetHandler([](const http::Request&) -> absl::StatusOr<http::Response> {
    return Respond(200, Envelope(200, "{}"));
  });
  auto api = Client();
  ClusterName capped = cluster_;
  capped.budget.owner = "team-a/train";
  capped.budget.own_requests_per_minute = 6;
  ASSERT_TRUE(
      api->Call(capped, credentials_, HttpMethod::kGet, "/slurm/v0.0.42/jobs/", nullptr).ok());
  absl::StatusOr<SlurmResponse> refused =
      api->Call(capped, credentials_, HttpMethod::kGet, "/slurm/v0.0.42/jobs/", nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(HeldBackByBudget(refused.status()));
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("SlurmCluster team-a/train (6 calls/min, its "
                        "spec.callBudget.requestsPerMinute)"));
  ClusterName sibling = cluster_;
  sibling.budget.owner = "team-b/train";
  EXPECT_TRUE(api->Call(sibling, credentials_, HttpMethod::kPost, "/slurm/v0.0.42/job/submit",
                        &submit_body_)
                  .ok());
  const std::vector<BudgetState> budgets = api->Budgets();
  ASSERT_EQ(budgets.size(), 1u);
  EXPECT_DOUBLE_EQ(budgets[0].requests_per_minute, 600);
}

// Tracking (GET) keeps a reserve for submits; an explicit probe priority
// keeps a larger one.
TEST_F(ClientTest, SubmitsGetTheLastOfTheBudgetAndProbesStopFirst) {
  options_.budget.requests_per_minute = 60;
  options_.budget.burst = 8;  // tracking leaves 2, probes 4
  options_.max_rate_limit_wait = ms(0);
  transport_.SetHandler([](const http::Request&) -> absl::StatusOr<http::Response> {
    return Respond(200, Envelope(200, "{}"));
  });
  auto api = Client();
  AcceptCredentials(*api);
  CallOptions probe;
  probe.priority = CallPriority::kProbe;
  int probes = 0, lists = 0, submits = 0;
  while (api->Call(cluster_, credentials_, HttpMethod::kGet, "/slurm/v0.0.42/ping", nullptr, probe)
             .ok()) {
    ++probes;
  }
  while (Get(*api).ok()) ++lists;
  absl::StatusOr<SlurmResponse> refused = Get(*api);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("this track call is not sent"));
  while (Submit(*api).ok()) ++submits;
  EXPECT_EQ(probes, 4);
  EXPECT_EQ(lists, 2);
  EXPECT_EQ(submits, 2);
}

// A call that would wait for the rate limiter longer than
// max_rate_limit_wait fails at once, unsent, with the wait as its retry
// delay, instead of sleeping in a shared worker (#13 A2); the token it did
// not take is there for the next call once the wait has passed.
TEST_F(ClientTest, ALongRateLimitWaitFailsFastInsteadOfSleeping) {
  options_.budget.requests_per_minute = 300;
  options_.budget.burst = 1;
  options_.max_rate_limit_wait = std::chrono::milliseconds(100);
  int sent = 0;
  transport_.SetHandler([&](const http::Request&) -> absl::StatusOr<http::Response> {
    ++sent;
    return Respond(200, Envelope(200, "{}"));
  });
  auto api = Client();
  AcceptCredentials(*api);
  ASSERT_TRUE(Get(*api).ok());
  absl::StatusOr<SlurmResponse> r = Get(*api);  // would wait 200 ms
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("client-side budget"));
  EXPECT_EQ(RetryDelay(r.status()), ms(200));
  EXPECT_FALSE(http::MayHaveBeenDelivered(r.status()));
  EXPECT_TRUE(sleeps_.empty());
  EXPECT_EQ(sent, 1);
  // 50 ms later the wait is shorter, the message the same (see
  // ResourceExhaustedPausesTheWholeProjectAndRegion).
  clock_.Advance(ms(50));
  absl::StatusOr<SlurmResponse> again = Get(*api);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(RetryDelay(again.status()), ms(150));
  EXPECT_EQ(again.status().message(), r.status().message());
  clock_.Advance(ms(150));
  EXPECT_TRUE(Get(*api).ok());
  EXPECT_EQ(sent, 2);
}

}  // namespace
}  // namespace slurmop::agentplatform
