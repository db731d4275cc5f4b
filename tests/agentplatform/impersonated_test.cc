// File: tests/agentplatform/impersonated_test.cc
//
// impersonated_service_account credentials: the source token exchange, the
// exact generateAccessToken request, expiry from expireTime, the IAM 401
// retry, and a 403 that names the missing role without quoting tokens.

#include "controller/agentplatform/impersonated.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/agentplatform/credentials.h"
#include "controller/common/time_format.h"
#include "tests/agentplatform/fake_transport.h"
#include "tests/agentplatform/test_util.h"

namespace slurmop::agentplatform {
namespace {

using ::slurmop::agentplatform::testing::FakeTransport;
using ::slurmop::agentplatform::testing::ParseForm;
using ::slurmop::agentplatform::testing::Respond;
using ::slurmop::agentplatform::testing::TokenJson;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kIamUrl[] =
    "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/"
    "target@p.iam.gserviceaccount.com:generateAccessToken";

class ImpersonatedTest : public ::testing::Test {
 protected:
  ImpersonatedTest() {
    opts_.transport = &transport_;
    opts_.clock = &clock_;
    transport_.SetHandler([this](const http::Request& req) -> absl::StatusOr<http::Response> {
      if (req.url == "https://oauth2.googleapis.com/token") {
        return Respond(200, TokenJson("src-" + std::to_string(++source_tokens_), 3599));
      }
      if (req.url == kIamUrl) {
        if (!iam_answers_.empty()) {
          http::Response r = iam_answers_.front();
          iam_answers_.pop_front();
          return r;
        }
        return Respond(200,
                       nlohmann::json({{"accessToken", "imp-" + std::to_string(++imp_tokens_)},
                                       {"expireTime", FormatRfc3339(clock_.Now() + seconds(3600))}})
                           .dump());
      }
      return absl::InternalError("unexpected " + req.url);
    });
  }
  std::shared_ptr<TokenSource> Load() {
    auto source = CredentialsFromJson(file_.dump(), opts_);
    EXPECT_TRUE(source.ok()) << source.status();
    return source.ok() ? *source : nullptr;
  }

  FakeClock clock_;
  FakeTransport transport_;
  CredentialsOptions opts_;
  int source_tokens_ = 0;
  int imp_tokens_ = 0;
  std::deque<http::Response> iam_answers_;
  nlohmann::json file_ = {
      {"type", "impersonated_service_account"},
      {"service_account_impersonation_url", kIamUrl},
      {"delegates", {"projects/-/serviceAccounts/middle@p.iam.gserviceaccount.com"}},
      {"source_credentials",
       {{"type", "authorized_user"},
        {"client_id", "cid"},
        {"client_secret", "csecret-1234"},
        {"refresh_token", "rtoken-5678"}}}};
};

TEST_F(ImpersonatedTest, ExactRequests) {
  auto source = Load();
  EXPECT_EQ(source->Describe(),
            "service account target@p.iam.gserviceaccount.com impersonated by user credentials "
            "(OAuth client cid)");
  EXPECT_EQ(*source->Token(), "imp-1");
  auto requests = transport_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(ParseForm(requests[0].body)["scope"], "https://www.googleapis.com/auth/cloud-platform");
  const http::Request& iam = requests[1];
  EXPECT_EQ(iam.method, "POST");
  EXPECT_EQ(iam.url, kIamUrl);
  EXPECT_EQ(iam.headers.at("Authorization"), "Bearer src-1");
  EXPECT_EQ(iam.headers.at("Content-Type"), "application/json");
  EXPECT_EQ(nlohmann::json::parse(iam.body),
            nlohmann::json(
                {{"delegates", {"projects/-/serviceAccounts/middle@p.iam.gserviceaccount.com"}},
                 {"scope", {"https://www.googleapis.com/auth/cloud-platform"}},
                 {"lifetime", "3600s"}}));
}

TEST_F(ImpersonatedTest, ExpiryFromExpireTime) {
  auto source = Load();
  EXPECT_EQ(*source->Token(), "imp-1");
  clock_.Advance(seconds(3600 - 301));
  EXPECT_EQ(*source->Token(), "imp-1");
  clock_.Advance(seconds(2));
  EXPECT_EQ(*source->Token(), "imp-2");
}

TEST_F(ImpersonatedTest, IamUnauthorizedRefreshesSourceOnce) {
  iam_answers_.push_back(
      Respond(401, R"({"error":{"code":401,"status":"UNAUTHENTICATED","message":"x"}})"));
  auto source = Load();
  EXPECT_EQ(*source->Token(), "imp-1");
  auto requests = transport_.requests();
  ASSERT_EQ(requests.size(), 4u);  // src-1, IAM 401, src-2, IAM ok
  EXPECT_EQ(requests[3].headers.at("Authorization"), "Bearer src-2");
}

TEST_F(ImpersonatedTest, MissingRoleIsPermissionDenied) {
  iam_answers_.push_back(Respond(
      403,
      R"j({"error":{"code":403,"message":"Permission 'iam.serviceAccounts.getAccessToken' denied (src-1)","status":"PERMISSION_DENIED"}})j"));
  auto source = Load();
  absl::StatusOr<std::string> token = source->Token();
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), absl::StatusCode::kPermissionDenied);
  const std::string message(token.status().message());
  EXPECT_THAT(message, HasSubstr("iam.serviceAccounts.getAccessToken"));
  EXPECT_THAT(message, HasSubstr("roles/iam.serviceAccountTokenCreator on "
                                 "target@p.iam.gserviceaccount.com"));
  EXPECT_THAT(message, Not(HasSubstr("src-1")));
  EXPECT_THAT(message, Not(HasSubstr("rtoken-5678")));
  EXPECT_THAT(message, Not(HasSubstr("csecret-1234")));
}

TEST_F(ImpersonatedTest, MalformedAnswer) {
  iam_answers_.push_back(Respond(200, R"({"accessToken":"imp-x","expireTime":"tomorrow"})"));
  auto source = Load();
  absl::StatusOr<std::string> token = source->Token();
  EXPECT_EQ(token.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(token.status().message()), Not(HasSubstr("imp-x")));
}

TEST_F(ImpersonatedTest, BadFiles) {
  nlohmann::json f = file_;
  f.erase("source_credentials");
  EXPECT_EQ(CredentialsFromJson(f.dump(), opts_).status().code(),
            absl::StatusCode::kInvalidArgument);
  f = file_;
  f["source_credentials"] = file_;  // nested impersonation
  EXPECT_EQ(CredentialsFromJson(f.dump(), opts_).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ImpersonationTarget(kIamUrl), "target@p.iam.gserviceaccount.com");
}

}  // namespace
}  // namespace slurmop::agentplatform
