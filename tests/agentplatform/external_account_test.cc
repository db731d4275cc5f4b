// File: tests/agentplatform/external_account_test.cc
//
// external_account (workload identity federation) credentials: subject
// tokens from a file (re-read at each refresh) or a URL, the exact STS
// request, optional impersonation afterwards, and errors that never quote
// the subject token.

#include "controller/agentplatform/external_account.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "controller/agentplatform/credentials.h"
#include "controller/common/time_format.h"
#include "tests/agentplatform/fake_transport.h"
#include "tests/agentplatform/test_util.h"

namespace slurmop::agentplatform {
namespace {

using ::slurmop::agentplatform::testing::FakeTransport;
using ::slurmop::agentplatform::testing::ParseForm;
using ::slurmop::agentplatform::testing::Respond;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kAudience[] =
    "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/providers/k8s";

std::string StsJson(const std::string& token, int expires_in = 3600) {
  return nlohmann::json({{"access_token", token},
                         {"issued_token_type", "urn:ietf:params:oauth:token-type:access_token"},
                         {"token_type", "Bearer"},
                         {"expires_in", expires_in}})
      .dump();
}

class ExternalAccountTest : public ::testing::Test {
 protected:
  ExternalAccountTest() {
    opts_.transport = &transport_;
    opts_.clock = &clock_;
    token_path_ = ::testing::TempDir() + "/ap_subject_token_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name();
    WriteSubject("eyJhbGciOiJSUzI1NiJ9.subject-one.sig\n");
    file_ = {{"type", "external_account"},
             {"audience", kAudience},
             {"subject_token_type", "urn:ietf:params:oauth:token-type:jwt"},
             {"token_url", "https://sts.googleapis.com/v1/token"},
             {"credential_source", {{"file", token_path_}}}};
  }
  ~ExternalAccountTest() override { std::remove(token_path_.c_str()); }

  void WriteSubject(const std::string& s) { std::ofstream(token_path_) << s; }
  std::shared_ptr<TokenSource> Load() {
    auto source = CredentialsFromJson(file_.dump(), opts_);
    EXPECT_TRUE(source.ok()) << source.status();
    return source.ok() ? *source : nullptr;
  }

  FakeClock clock_;
  FakeTransport transport_;
  CredentialsOptions opts_;
  std::string token_path_;
  nlohmann::json file_;
};

TEST_F(ExternalAccountTest, FileSourceExactStsRequest) {
  transport_.Enqueue(Respond(200, StsJson("sts-1")));
  auto source = Load();
  EXPECT_EQ(source->Describe(), std::string("workload identity federation (") + kAudience + ")");
  EXPECT_EQ(*source->Token(), "sts-1");
  const http::Request req = transport_.requests()[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, "https://sts.googleapis.com/v1/token");
  EXPECT_EQ(req.headers.at("Content-Type"), "application/x-www-form-urlencoded");
  EXPECT_EQ(ParseForm(req.body),
            (std::map<std::string, std::string>{
                {"grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"},
                {"requested_token_type", "urn:ietf:params:oauth:token-type:access_token"},
                {"audience", kAudience},
                {"scope", "https://www.googleapis.com/auth/cloud-platform"},
                {"subject_token_type", "urn:ietf:params:oauth:token-type:jwt"},
                {"subject_token", "eyJhbGciOiJSUzI1NiJ9.subject-one.sig"}}));
}

TEST_F(ExternalAccountTest, SubjectTokenIsReReadAtRefresh) {
  transport_.Enqueue(Respond(200, StsJson("sts-1")));
  transport_.Enqueue(Respond(200, StsJson("sts-2")));
  auto source = Load();
  EXPECT_EQ(*source->Token(), "sts-1");
  WriteSubject("rotated-subject");
  clock_.Advance(seconds(3600 - 299));
  EXPECT_EQ(*source->Token(), "sts-2");
  EXPECT_EQ(ParseForm(transport_.requests()[1].body)["subject_token"], "rotated-subject");
}

TEST_F(ExternalAccountTest, UrlSourceWithJsonFormat) {
  file_["credential_source"] = {
      {"url", "http://169.254.169.254/token"},
      {"headers", {{"Metadata", "True"}}},
      {"format", {{"type", "json"}, {"subject_token_field_name", "access_token"}}}};
  transport_.Enqueue(Respond(200, R"({"access_token":"url-subject"})"));
  transport_.Enqueue(Respond(200, StsJson("sts-1")));
  auto source = Load();
  EXPECT_EQ(*source->Token(), "sts-1");
  auto requests = transport_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].url, "http://169.254.169.254/token");
  EXPECT_EQ(requests[0].headers.at("Metadata"), "True");
  EXPECT_EQ(ParseForm(requests[1].body)["subject_token"], "url-subject");
}

TEST_F(ExternalAccountTest, ImpersonationAfterExchange) {
  const std::string iam =
      "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/"
      "op@p.iam.gserviceaccount.com:generateAccessToken";
  file_["service_account_impersonation_url"] = iam;
  file_["service_account_impersonation"] = {{"token_lifetime_seconds", 1800}};
  opts_.scopes = {"https://www.googleapis.com/auth/cloud-platform.read-only"};
  transport_.Enqueue(Respond(200, StsJson("sts-1")));
  transport_.Enqueue(
      Respond(200, nlohmann::json({{"accessToken", "imp-1"},
                                   {"expireTime", FormatRfc3339(clock_.Now() + seconds(1800))}})
                       .dump()));
  auto source = Load();
  EXPECT_EQ(*source->Token(), "imp-1");
  auto requests = transport_.requests();
  ASSERT_EQ(requests.size(), 2u);
  // STS is asked for cloud-platform (needed to call IAM); IAM for the caller's scopes.
  EXPECT_EQ(ParseForm(requests[0].body)["scope"], "https://www.googleapis.com/auth/cloud-platform");
  EXPECT_EQ(requests[1].url, iam);
  EXPECT_EQ(requests[1].headers.at("Authorization"), "Bearer sts-1");
  const auto body = nlohmann::json::parse(requests[1].body);
  EXPECT_EQ(body["lifetime"], "1800s");
  EXPECT_EQ(body["scope"],
            nlohmann::json({"https://www.googleapis.com/auth/cloud-platform.read-only"}));
  EXPECT_THAT(source->Describe(), HasSubstr("op@p.iam.gserviceaccount.com impersonated by "
                                            "workload identity federation"));
}

TEST_F(ExternalAccountTest, StsRejectionHidesSubjectToken) {
  transport_.SetHandler([](const http::Request& req) -> absl::StatusOr<http::Response> {
    return Respond(
        400, nlohmann::json({{"error", "invalid_grant"},
                             {"error_description", "The audience in ID Token does not match: " +
                                                       ParseForm(req.body)["subject_token"]}})
                 .dump());
  });
  auto source = Load();
  absl::StatusOr<std::string> token = source->Token();
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(token.status().message(), HasSubstr("The audience in ID Token does not match"));
  EXPECT_THAT(token.status().message(), HasSubstr(kAudience));
  EXPECT_THAT(token.status().message(), Not(HasSubstr("subject-one")));
}

TEST_F(ExternalAccountTest, MissingSubjectFile) {
  std::remove(token_path_.c_str());
  auto source = Load();
  absl::StatusOr<std::string> token = source->Token();
  EXPECT_EQ(token.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(token.status().message(), HasSubstr("cannot read the subject token file"));
  EXPECT_EQ(transport_.request_count(), 0u);
}

TEST_F(ExternalAccountTest, UnsupportedSources) {
  file_["credential_source"] = {{"environment_id", "aws1"}};
  EXPECT_EQ(CredentialsFromJson(file_.dump(), opts_).status().code(),
            absl::StatusCode::kUnimplemented);
  file_["credential_source"] = {{"executable", {{"command", "/bin/true"}}}};
  EXPECT_EQ(CredentialsFromJson(file_.dump(), opts_).status().code(),
            absl::StatusCode::kUnimplemented);
  file_.erase("audience");
  EXPECT_EQ(CredentialsFromJson(file_.dump(), opts_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace slurmop::agentplatform
