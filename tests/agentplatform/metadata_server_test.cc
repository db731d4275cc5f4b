// File: tests/agentplatform/metadata_server_test.cc
//
// Metadata-server credentials against a fake metadata server: the exact
// request (URL, scopes, Metadata-Flavor), host overrides, the 225 s refresh
// margin, Invalidate() after a 401, and errors with hints.

#include "controller/agentplatform/metadata_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/agentplatform/credentials.h"
#include "tests/agentplatform/fake_transport.h"
#include "tests/agentplatform/test_util.h"

namespace slurmop::agentplatform {
namespace {

using ::slurmop::agentplatform::testing::Failure;
using ::slurmop::agentplatform::testing::FakeTransport;
using ::slurmop::agentplatform::testing::Respond;
using ::slurmop::agentplatform::testing::ScopedEnv;
using ::slurmop::agentplatform::testing::TokenJson;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

const http::Headers kFlavor = {{"metadata-flavor", "Google"}};

class MetadataServerTest : public ::testing::Test {
 protected:
  MetadataServerTest() {
    opts_.transport = &transport_;
    opts_.clock = &clock_;
  }
  std::shared_ptr<TokenSource> Source() {
    auto source = MetadataServerCredentials(opts_);
    EXPECT_TRUE(source.ok()) << source.status();
    return *source;
  }

  ScopedEnv host_env_{"GCE_METADATA_HOST", std::nullopt};
  ScopedEnv root_env_{"GCE_METADATA_ROOT", std::nullopt};
  FakeClock clock_;
  FakeTransport transport_;
  CredentialsOptions opts_;
};

TEST_F(MetadataServerTest, ExactRequest) {
  transport_.Enqueue(Respond(200, TokenJson("ya29.gce", 3599), kFlavor));
  auto source = Source();
  EXPECT_EQ(*source->Token(), "ya29.gce");
  ASSERT_EQ(transport_.request_count(), 1u);
  const http::Request req = transport_.requests()[0];
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.url,
            "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/"
            "token?scopes=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcloud-platform");
  EXPECT_EQ(req.headers.at("Metadata-Flavor"), "Google");
  EXPECT_TRUE(req.body.empty());
  EXPECT_EQ(source->Describe(),
            "the metadata server's default service account (metadata.google.internal)");
}

TEST_F(MetadataServerTest, HostOverrides) {
  {
    ScopedEnv env("GCE_METADATA_HOST", "127.0.0.1:8181");
    EXPECT_EQ(ResolveMetadataHost(opts_), "127.0.0.1:8181");
    opts_.scopes = {"a", "b"};
    transport_.Enqueue(Respond(200, TokenJson("t"), kFlavor));
    ASSERT_TRUE(Source()->Token().ok());
    EXPECT_EQ(transport_.requests()[0].url,
              "http://127.0.0.1:8181/computeMetadata/v1/instance/service-accounts/default/"
              "token?scopes=a%2Cb");
  }
  {
    ScopedEnv env("GCE_METADATA_ROOT", "http://10.0.0.1/");
    EXPECT_EQ(ResolveMetadataHost(opts_), "10.0.0.1");
  }
  opts_.metadata_host = "169.254.169.254";
  ScopedEnv env("GCE_METADATA_HOST", "ignored:1");
  EXPECT_EQ(ResolveMetadataHost(opts_), "169.254.169.254");
  opts_.scopes = {};
  EXPECT_EQ(MetadataTokenUrl("h", {}),
            "http://h/computeMetadata/v1/instance/service-accounts/default/token");
}

TEST_F(MetadataServerTest, RefreshedTwoHundredTwentyFiveSecondsEarly) {
  transport_.Enqueue(Respond(200, TokenJson("m1", 3599), kFlavor));
  transport_.Enqueue(Respond(200, TokenJson("m2", 3599), kFlavor));
  auto source = Source();
  EXPECT_EQ(*source->Token(), "m1");
  clock_.Advance(seconds(3599 - 226));
  EXPECT_EQ(*source->Token(), "m1");  // 226 s left: still fresh
  EXPECT_EQ(transport_.request_count(), 1u);
  clock_.Advance(seconds(2));  // 224 s left
  EXPECT_EQ(*source->Token(), "m2");
  EXPECT_EQ(transport_.request_count(), 2u);
}

TEST_F(MetadataServerTest, UnauthorizedThenRefresh) {
  transport_.Enqueue(Respond(200, TokenJson("m1", 3599), kFlavor));
  transport_.Enqueue(Respond(200, TokenJson("m2", 3599), kFlavor));
  auto source = Source();
  EXPECT_EQ(*source->Token(), "m1");
  source->Invalidate();  // the API said 401
  EXPECT_EQ(*source->Token(), "m2");
}

TEST_F(MetadataServerTest, NotProbedUntilFirstToken) {
  auto source = Source();
  EXPECT_EQ(transport_.request_count(), 0u);
  transport_.Enqueue(Failure(absl::StatusCode::kUnavailable, false));
  absl::StatusOr<std::string> token = source->Token();
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(token.status().message(),
              HasSubstr("could not reach the metadata server at metadata.google.internal"));
  EXPECT_THAT(token.status().message(), HasSubstr("GOOGLE_APPLICATION_CREDENTIALS"));
}

TEST_F(MetadataServerTest, Errors) {
  struct {
    http::Response response;
    absl::StatusCode code;
    std::string text;
  } cases[] = {
      {Respond(404, "Not Found", kFlavor), absl::StatusCode::kUnauthenticated, "HTTP 404"},
      {Respond(403, "Forbidden", kFlavor), absl::StatusCode::kPermissionDenied,
       "Workload Identity"},
      {Respond(500, "", kFlavor), absl::StatusCode::kUnavailable, "HTTP 500"},
      {Respond(200, TokenJson("t")), absl::StatusCode::kUnavailable, "Metadata-Flavor: Google"},
      {Respond(200, "{}", kFlavor), absl::StatusCode::kUnavailable, "no access_token"},
  };
  for (const auto& c : cases) {
    FakeTransport transport;
    opts_.transport = &transport;
    transport.Enqueue(c.response);
    absl::StatusOr<std::string> token = Source()->Token();
    ASSERT_FALSE(token.ok());
    EXPECT_EQ(token.status().code(), c.code) << c.response.status;
    EXPECT_THAT(token.status().message(), HasSubstr(c.text));
    EXPECT_THAT(token.status().message(), Not(HasSubstr("\"t\"")));
  }
}

}  // namespace
}  // namespace slurmop::agentplatform
