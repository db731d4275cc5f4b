// File: tests/agentplatform/authorized_user_test.cc
//
// authorized_user credentials (gcloud user ADC) against a fake token
// endpoint: the exact refresh-token request, quota project, refresh margin,
// and errors that never quote the refresh token or the client secret.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/agentplatform/credentials.h"
#include "tests/agentplatform/fake_transport.h"
#include "tests/agentplatform/test_util.h"

namespace slurmop::agentplatform {
namespace {

using ::slurmop::agentplatform::testing::FakeTransport;
using ::slurmop::agentplatform::testing::ParseForm;
using ::slurmop::agentplatform::testing::Respond;
using ::slurmop::agentplatform::testing::ScopedEnv;
using ::slurmop::agentplatform::testing::TokenJson;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kRefreshToken[] = "1//0gSECRET-refresh-token";
constexpr char kClientSecret[] = "d-FL95Q19q7MQmFpd7hHD0Ty";

class AuthorizedUserTest : public ::testing::Test {
 protected:
  AuthorizedUserTest() {
    opts_.transport = &transport_;
    opts_.clock = &clock_;
  }
  std::shared_ptr<TokenSource> Load() {
    auto source = CredentialsFromJson(file_.dump(), opts_);
    EXPECT_TRUE(source.ok()) << source.status();
    return source.ok() ? *source : nullptr;
  }

  ScopedEnv no_quota_env_{"GOOGLE_CLOUD_QUOTA_PROJECT", std::nullopt};
  FakeClock clock_;
  FakeTransport transport_;
  CredentialsOptions opts_;
  nlohmann::json file_ = {
      {"type", "authorized_user"},
      {"client_id", "764086051850-6qr4p6gpi6hn506pt8ejuq83di341hur.apps.googleusercontent.com"},
      {"client_secret", kClientSecret},
      {"refresh_token", kRefreshToken},
      {"account", ""},
      {"universe_domain", "googleapis.com"}};
};

TEST_F(AuthorizedUserTest, ExactRefreshRequest) {
  transport_.Enqueue(Respond(200, TokenJson("ya29.user")));
  auto source = Load();
  EXPECT_EQ(*source->Token(), "ya29.user");
  ASSERT_EQ(transport_.request_count(), 1u);
  const http::Request req = transport_.requests()[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, "https://oauth2.googleapis.com/token");
  EXPECT_EQ(req.headers.at("Content-Type"), "application/x-www-form-urlencoded");
  auto form = ParseForm(req.body);
  EXPECT_EQ(form, (std::map<std::string, std::string>{
                      {"grant_type", "refresh_token"},
                      {"client_id", file_["client_id"]},
                      {"client_secret", kClientSecret},
                      {"refresh_token", kRefreshToken},
                      {"scope", "https://www.googleapis.com/auth/cloud-platform"}}));
  EXPECT_THAT(req.body, HasSubstr("grant_type=refresh_token&client_id="));
  EXPECT_THAT(source->Describe(), HasSubstr("user credentials"));
  EXPECT_THAT(source->Describe(), Not(HasSubstr(kClientSecret)));
  EXPECT_EQ(source->QuotaProject(), "");
}

TEST_F(AuthorizedUserTest, QuotaProjectFromFileAndEnvironment) {
  file_["quota_project_id"] = "file-proj";
  file_["account"] = "alice@example.com";
  auto source = Load();
  EXPECT_EQ(source->QuotaProject(), "file-proj");
  EXPECT_EQ(source->Describe(), "user alice@example.com");
  ScopedEnv env("GOOGLE_CLOUD_QUOTA_PROJECT", "env-proj");
  EXPECT_EQ(Load()->QuotaProject(), "env-proj");
}

TEST_F(AuthorizedUserTest, RefreshedThreeHundredSecondsEarlyAndAfterInvalidate) {
  transport_.Enqueue(Respond(200, TokenJson("u1", 3599)));
  transport_.Enqueue(Respond(200, TokenJson("u2", 3599)));
  transport_.Enqueue(Respond(200, TokenJson("u3", 3599)));
  auto source = Load();
  EXPECT_EQ(*source->Token(), "u1");
  clock_.Advance(seconds(3599 - 301));
  EXPECT_EQ(*source->Token(), "u1");
  clock_.Advance(seconds(2));
  EXPECT_EQ(*source->Token(), "u2");
  source->Invalidate();
  EXPECT_EQ(*source->Token(), "u3");
  EXPECT_EQ(transport_.request_count(), 3u);
}

TEST_F(AuthorizedUserTest, RevokedRefreshTokenIsUnauthenticatedWithoutSecrets) {
  transport_.SetHandler([](const http::Request& req) -> absl::StatusOr<http::Response> {
    return Respond(
        400,
        nlohmann::json({{"error", "invalid_grant"},
                        {"error_description", "Token has been expired or revoked: " + req.body}})
            .dump());
  });
  auto source = Load();
  absl::StatusOr<std::string> token = source->Token();
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), absl::StatusCode::kUnauthenticated);
  const std::string message(token.status().message());
  EXPECT_THAT(message, HasSubstr("invalid_grant: Token has been expired or revoked"));
  EXPECT_THAT(message, HasSubstr("gcloud auth application-default login"));
  EXPECT_THAT(message, Not(HasSubstr(kRefreshToken)));
  EXPECT_THAT(message, Not(HasSubstr("0gSECRET")));
  EXPECT_THAT(message, Not(HasSubstr(kClientSecret)));
}

TEST_F(AuthorizedUserTest, MissingFields) {
  file_.erase("refresh_token");
  auto source = CredentialsFromJson(file_.dump(), opts_);
  EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(source.status().message(), HasSubstr("refresh_token"));
  EXPECT_THAT(source.status().message(), Not(HasSubstr(kClientSecret)));
}

}  // namespace
}  // namespace slurmop::agentplatform
