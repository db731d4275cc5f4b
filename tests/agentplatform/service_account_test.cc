// File: tests/agentplatform/service_account_test.cc
//
// service_account credentials against a fake token endpoint: the exact
// JWT-bearer request, caching, refresh 300 s ahead of expiry, keeping the
// old token when a refresh fails, Invalidate() after a 401, and error
// mapping without secrets.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/agentplatform/credentials.h"
#include "tests/agentplatform/fake_transport.h"
#include "tests/agentplatform/test_util.h"

namespace slurmop::agentplatform {
namespace {

using ::slurmop::agentplatform::testing::DecodeJwt;
using ::slurmop::agentplatform::testing::Failure;
using ::slurmop::agentplatform::testing::FakeTransport;
using ::slurmop::agentplatform::testing::ParseForm;
using ::slurmop::agentplatform::testing::ReadTestdata;
using ::slurmop::agentplatform::testing::Respond;
using ::slurmop::agentplatform::testing::TokenJson;
using ::slurmop::agentplatform::testing::VerifyRs256;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

class ServiceAccountTest : public ::testing::Test {
 protected:
  ServiceAccountTest() {
    opts_.transport = &transport_;
    opts_.clock = &clock_;
  }

  std::shared_ptr<TokenSource> Load(const nlohmann::json& file) {
    auto source = CredentialsFromJson(file.dump(), opts_);
    EXPECT_TRUE(source.ok()) << source.status();
    return source.ok() ? *source : nullptr;
  }
  std::shared_ptr<TokenSource> Load() { return Load(file_); }

  FakeClock clock_;
  FakeTransport transport_;
  CredentialsOptions opts_;
  nlohmann::json file_ = nlohmann::json::parse(ReadTestdata("test_service_account.json"));
};

TEST_F(ServiceAccountTest, ExactTokenRequest) {
  transport_.Enqueue(Respond(200, TokenJson("ya29.first")));
  auto source = Load();
  EXPECT_EQ(source->Describe(),
            "service account operator-test@test-project.iam.gserviceaccount.com");
  EXPECT_EQ(transport_.request_count(), 0u);  // nothing fetched before the first Token()
  absl::StatusOr<std::string> token = source->Token();
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "ya29.first");

  ASSERT_EQ(transport_.request_count(), 1u);
  const http::Request req = transport_.requests()[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, "https://oauth2.googleapis.com/token");
  EXPECT_EQ(req.headers.at("Content-Type"), "application/x-www-form-urlencoded");
  EXPECT_THAT(req.body,
              HasSubstr("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"));
  auto form = ParseForm(req.body);
  EXPECT_EQ(form.size(), 2u);
  EXPECT_EQ(form["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer");
  auto jwt = DecodeJwt(form["assertion"]);
  EXPECT_EQ(jwt.header["alg"], "RS256");
  EXPECT_EQ(jwt.header["kid"], "0123456789abcdef0123456789abcdef01234567");
  EXPECT_EQ(jwt.claims["iss"], "operator-test@test-project.iam.gserviceaccount.com");
  EXPECT_EQ(jwt.claims["scope"], "https://www.googleapis.com/auth/cloud-platform");
  EXPECT_EQ(jwt.claims["aud"], "https://oauth2.googleapis.com/token");
  EXPECT_EQ(jwt.claims["iat"], 1700000000);
  EXPECT_EQ(jwt.claims["exp"], 1700003600);
  EXPECT_TRUE(VerifyRs256(ReadTestdata("test_sa_key.pub.pem"), jwt.signing_input, jwt.signature));
}

TEST_F(ServiceAccountTest, TokenUriAndScopesFromOptionsAndFile) {
  file_["token_uri"] = "http://127.0.0.1:9999/token";
  opts_.scopes = {"https://www.googleapis.com/auth/cloud-platform",
                  "https://www.googleapis.com/auth/userinfo.email"};
  transport_.Enqueue(Respond(200, TokenJson("t")));
  auto source = Load();
  ASSERT_TRUE(source->Token().ok());
  const http::Request req = transport_.requests()[0];
  EXPECT_EQ(req.url, "http://127.0.0.1:9999/token");
  auto jwt = DecodeJwt(ParseForm(req.body)["assertion"]);
  EXPECT_EQ(jwt.claims["aud"], "http://127.0.0.1:9999/token");
  EXPECT_EQ(jwt.claims["scope"],
            "https://www.googleapis.com/auth/cloud-platform "
            "https://www.googleapis.com/auth/userinfo.email");
}

TEST_F(ServiceAccountTest, CachedThenRefreshedThreeHundredSecondsEarly) {
  transport_.Enqueue(Respond(200, TokenJson("t1", 3600)));
  transport_.Enqueue(Respond(200, TokenJson("t2", 3600)));
  auto source = Load();
  EXPECT_EQ(*source->Token(), "t1");
  clock_.Advance(seconds(3600 - 301));
  EXPECT_EQ(*source->Token(), "t1");
  EXPECT_EQ(transport_.request_count(), 1u);
  clock_.Advance(seconds(2));  // now 299 s before expiry
  EXPECT_EQ(*source->Token(), "t2");
  EXPECT_EQ(transport_.request_count(), 2u);
  // The new assertion is signed at the new time.
  auto jwt = DecodeJwt(ParseForm(transport_.requests()[1].body)["assertion"]);
  EXPECT_EQ(jwt.claims["iat"], 1700000000 + 3301);
}

TEST_F(ServiceAccountTest, KeepsOldTokenWhileValidIfRefreshFails) {
  transport_.Enqueue(Respond(200, TokenJson("t1", 3600)));
  auto source = Load();
  EXPECT_EQ(*source->Token(), "t1");
  clock_.Advance(seconds(3600 - 100));
  transport_.Enqueue(Respond(503, R"({"error":"temporarily_unavailable"})"));
  EXPECT_EQ(*source->Token(), "t1");  // refresh failed, old token still valid
  EXPECT_EQ(transport_.request_count(), 2u);
  EXPECT_EQ(*source->Token(), "t1");  // no new attempt within 10 s
  EXPECT_EQ(transport_.request_count(), 2u);
  clock_.Advance(seconds(95));  // 5 s before expiry: no longer usable
  transport_.Enqueue(Failure(absl::StatusCode::kUnavailable, false));
  absl::StatusOr<std::string> token = source->Token();
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(
      token.status().message(),
      HasSubstr("could not reach the OAuth2 token endpoint https://oauth2.googleapis.com/token"));
  transport_.Enqueue(Respond(200, TokenJson("t3", 3600)));
  EXPECT_EQ(*source->Token(), "t3");
}

TEST_F(ServiceAccountTest, InvalidateAfter401Refreshes) {
  transport_.Enqueue(Respond(200, TokenJson("t1", 3600)));
  transport_.Enqueue(Respond(200, TokenJson("t2", 3600)));
  auto source = Load();
  EXPECT_EQ(*source->Token(), "t1");
  source->Invalidate();  // the API answered 401
  EXPECT_EQ(*source->Token(), "t2");
  EXPECT_EQ(*source->Token(), "t2");
  EXPECT_EQ(transport_.request_count(), 2u);
}

TEST_F(ServiceAccountTest, InvalidatedTokenIsNotReusedWhenRefreshFails) {
  transport_.Enqueue(Respond(200, TokenJson("t1", 3600)));
  auto source = Load();
  EXPECT_EQ(*source->Token(), "t1");
  source->Invalidate();
  transport_.Enqueue(Respond(500, "oops"));
  EXPECT_EQ(source->Token().status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ServiceAccountTest, ErrorMapping) {
  struct {
    int http;
    std::string body;
    absl::StatusCode code;
    std::string text;
  } cases[] = {
      {400, R"({"error":"invalid_grant","error_description":"Invalid JWT Signature."})",
       absl::StatusCode::kUnauthenticated, "invalid_grant: Invalid JWT Signature."},
      {401, R"({"error":"invalid_client","error_description":"The OAuth client was not found."})",
       absl::StatusCode::kUnauthenticated, "invalid_client"},
      {403, R"({"error":"access_denied"})", absl::StatusCode::kPermissionDenied, "access_denied"},
      {400, R"({"error":"unauthorized_client"})", absl::StatusCode::kPermissionDenied,
       "unauthorized_client"},
      {500, "<html>oops</html>", absl::StatusCode::kUnavailable,
       "HTTP 500 (a 17-byte body that is not a JSON error (not quoted))"},
      {429, R"({"error":"rate_limit_exceeded"})", absl::StatusCode::kUnavailable, "HTTP 429"},
      {400, R"({"error":"internal_failure"})", absl::StatusCode::kUnavailable, "internal_failure"},
      {200, R"({"token_type":"Bearer","expires_in":3600})", absl::StatusCode::kUnavailable,
       "no access_token"},
      {200, R"({"access_token":"x","token_type":"Bearer"})", absl::StatusCode::kUnavailable,
       "no positive expires_in"},
      {200, R"({"access_token":"x","expires_in":3600,"token_type":"MAC"})",
       absl::StatusCode::kUnavailable, "not Bearer"},
      {200, "not json", absl::StatusCode::kUnavailable, "not a JSON object"},
      // Hostile numbers: beyond int64 milliseconds (undefined behaviour in
      // the conversion before the range check), a year, NaN-like input.
      {200, R"({"access_token":"x","expires_in":1e300,"token_type":"Bearer"})",
       absl::StatusCode::kUnavailable, "expires_in is over 604800 s"},
      {200, R"({"access_token":"x","expires_in":31536000,"token_type":"Bearer"})",
       absl::StatusCode::kUnavailable, "expires_in is over 604800 s"},
      {200, R"({"access_token":"x","expires_in":-1e300,"token_type":"Bearer"})",
       absl::StatusCode::kUnavailable, "no positive expires_in"},
      // Nested deeper than the 100-level limit: refused unparsed.
      {200, std::string(5000, '[') + std::string(5000, ']'), absl::StatusCode::kUnavailable,
       "not a JSON object"},
  };
  for (const auto& c : cases) {
    FakeTransport transport;
    opts_.transport = &transport;
    transport.Enqueue(Respond(c.http, c.body));
    auto source = Load();
    absl::StatusOr<std::string> token = source->Token();
    ASSERT_FALSE(token.ok()) << c.body;
    EXPECT_EQ(token.status().code(), c.code) << c.body;
    EXPECT_THAT(token.status().message(), HasSubstr(c.text));
    EXPECT_THAT(token.status().message(), HasSubstr("https://oauth2.googleapis.com/token"));
    if (c.http != 200) {
      EXPECT_THAT(token.status().message(), HasSubstr("check that the key of service account"));
    }
  }
}

// A token endpoint's error text is untrusted input: cut to kMaxRemoteMessageBytes (a longer one
// could not be written into a condition), after the assertion is redacted from it, so that the
// cut never leaves the assertion's start readable.
TEST_F(ServiceAccountTest, AHugeErrorIsCutAfterTheAssertionIsRedacted) {
  for (size_t pad : {0, 300, 450, 480}) {
    transport_.SetHandler([pad](const http::Request& req) -> absl::StatusOr<http::Response> {
      const std::string assertion = ParseForm(req.body)["assertion"];
      return Respond(400, nlohmann::json({{"error", "invalid_grant"},
                                          {"error_description", std::string(pad, 'x') + assertion +
                                                                    std::string(40000, 'y')}})
                              .dump());
    });
    auto source = Load();
    absl::StatusOr<std::string> token = source->Token();
    ASSERT_FALSE(token.ok());
    const std::string message(token.status().message());
    const std::string assertion = ParseForm(transport_.requests().back().body)["assertion"];
    EXPECT_LT(message.size(), 2048u) << pad;
    EXPECT_THAT(message, Not(HasSubstr(assertion.substr(0, 20)))) << pad;
    EXPECT_THAT(message, HasSubstr("check that the key of service account")) << "the advice stays";
  }
}

TEST_F(ServiceAccountTest, NoAssertionOrKeyInErrors) {
  // A token endpoint that echoes the request body in its error.
  transport_.SetHandler([](const http::Request& req) -> absl::StatusOr<http::Response> {
    const std::string assertion = ParseForm(req.body)["assertion"];
    return Respond(400,
                   nlohmann::json({{"error", "invalid_grant"},
                                   {"error_description", "bad " + assertion + " / " + req.body}})
                       .dump());
  });
  auto source = Load();
  absl::StatusOr<std::string> token = source->Token();
  ASSERT_FALSE(token.ok());
  const std::string message(token.status().message());
  auto form = ParseForm(transport_.requests()[0].body);
  EXPECT_THAT(message, Not(HasSubstr(form["assertion"])));
  EXPECT_THAT(message, Not(HasSubstr(form["assertion"].substr(0, 40))));
  EXPECT_THAT(message, HasSubstr("[REDACTED]"));
  EXPECT_THAT(message, Not(HasSubstr("PRIVATE KEY")));
}

TEST_F(ServiceAccountTest, BadKeyFiles) {
  nlohmann::json no_email = file_;
  no_email.erase("client_email");
  auto s = CredentialsFromJson(no_email.dump(), opts_);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("client_email"));
  EXPECT_THAT(s.status().message(), Not(HasSubstr("PRIVATE KEY")));

  nlohmann::json bad_key = file_;
  bad_key["private_key"] = "-----BEGIN PRIVATE KEY-----\nQUJDREVGRw==\n-----END PRIVATE KEY-----\n";
  s = CredentialsFromJson(bad_key.dump(), opts_);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("private_key"));
  EXPECT_THAT(s.status().message(), Not(HasSubstr("QUJDREVGRw")));
}

}  // namespace
}  // namespace slurmop::agentplatform
