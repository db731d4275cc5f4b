// File: tests/agentplatform/credentials_test.cc
//
// Application Default Credentials lookup order and CredentialsFromJson()
// dispatch and validation.

#include "controller/agentplatform/credentials.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/agentplatform/fake_transport.h"
#include "tests/agentplatform/test_util.h"

namespace slurmop::agentplatform {
namespace {

using ::slurmop::agentplatform::testing::FakeTransport;
using ::slurmop::agentplatform::testing::ReadTestdata;
using ::slurmop::agentplatform::testing::Respond;
using ::slurmop::agentplatform::testing::ScopedEnv;
using ::slurmop::agentplatform::testing::TestdataPath;
using ::slurmop::agentplatform::testing::TokenJson;
using ::testing::HasSubstr;
using ::testing::Not;

const char kUserJson[] =
    R"({"type":"authorized_user","client_id":"cid","client_secret":"sec-ret-1","refresh_token":"rt-1"})";

class DefaultCredentialsTest : public ::testing::Test {
 protected:
  DefaultCredentialsTest() {
    opts_.transport = &transport_;
    opts_.clock = &clock_;
    dir_ =
        std::filesystem::path(::testing::TempDir()) /
        (std::string("ap_adc_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~DefaultCredentialsTest() override { std::filesystem::remove_all(dir_); }

  void Write(const std::filesystem::path& p, const std::string& content) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }

  ScopedEnv gac_{"GOOGLE_APPLICATION_CREDENTIALS", std::nullopt};
  ScopedEnv cloudsdk_{"CLOUDSDK_CONFIG", std::nullopt};
  ScopedEnv home_{"HOME", std::nullopt};
  ScopedEnv host_{"GCE_METADATA_HOST", std::nullopt};
  ScopedEnv quota_{"GOOGLE_CLOUD_QUOTA_PROJECT", std::nullopt};
  FakeClock clock_;
  FakeTransport transport_;
  CredentialsOptions opts_;
  std::filesystem::path dir_;
};

TEST_F(DefaultCredentialsTest, EnvironmentVariableFirst) {
  ScopedEnv env("GOOGLE_APPLICATION_CREDENTIALS", TestdataPath("test_service_account.json"));
  ScopedEnv home("HOME", dir_.string());
  Write(dir_ / ".config/gcloud/application_default_credentials.json", kUserJson);
  auto source = DefaultCredentials(opts_);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ((*source)->Describe(),
            "service account operator-test@test-project.iam.gserviceaccount.com");
}

TEST_F(DefaultCredentialsTest, EnvironmentVariableMustLoadNoFallback) {
  const std::string missing = (dir_ / "missing.json").string();
  ScopedEnv env("GOOGLE_APPLICATION_CREDENTIALS", missing);
  ScopedEnv home("HOME", dir_.string());
  Write(dir_ / ".config/gcloud/application_default_credentials.json", kUserJson);
  auto source = DefaultCredentials(opts_);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(source.status().message(),
              HasSubstr("GOOGLE_APPLICATION_CREDENTIALS=" + missing + ": cannot open"));

  Write(dir_ / "broken.json", "{not json -----BEGIN PRIVATE KEY----- abc");
  ScopedEnv broken("GOOGLE_APPLICATION_CREDENTIALS", (dir_ / "broken.json").string());
  source = DefaultCredentials(opts_);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(source.status().message(), HasSubstr("not valid JSON"));
  EXPECT_THAT(source.status().message(), Not(HasSubstr("PRIVATE KEY")));
  EXPECT_EQ(transport_.request_count(), 0u);
}

TEST_F(DefaultCredentialsTest, CloudSdkConfigThenHome) {
  Write(dir_ / "sdk/application_default_credentials.json", kUserJson);
  Write(dir_ / "home/.config/gcloud/application_default_credentials.json",
        ReadTestdata("test_service_account.json"));
  {
    ScopedEnv sdk("CLOUDSDK_CONFIG", (dir_ / "sdk").string());
    ScopedEnv home("HOME", (dir_ / "home").string());
    auto source = DefaultCredentials(opts_);
    ASSERT_TRUE(source.ok()) << source.status();
    EXPECT_EQ((*source)->Describe(), "user credentials (OAuth client cid)");
  }
  ScopedEnv home("HOME", (dir_ / "home").string());
  auto source = DefaultCredentials(opts_);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ((*source)->Describe(),
            "service account operator-test@test-project.iam.gserviceaccount.com");
}

TEST_F(DefaultCredentialsTest, MetadataServerLastAndNotProbed) {
  ScopedEnv home("HOME", dir_.string());  // no gcloud file there
  ScopedEnv host("GCE_METADATA_HOST", "127.0.0.1:9911");
  auto source = DefaultCredentials(opts_);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ(transport_.request_count(), 0u);
  EXPECT_EQ((*source)->Describe(),
            "the metadata server's default service account (127.0.0.1:9911)");
  transport_.Enqueue(Respond(200, TokenJson("gce"), {{"metadata-flavor", "Google"}}));
  EXPECT_EQ(*(*source)->Token(), "gce");
  EXPECT_THAT(transport_.requests()[0].url, HasSubstr("http://127.0.0.1:9911/computeMetadata/v1/"));
}

TEST_F(DefaultCredentialsTest, QuotaProjectEnvironmentApplies) {
  ScopedEnv env("GOOGLE_APPLICATION_CREDENTIALS", TestdataPath("test_service_account.json"));
  ScopedEnv quota("GOOGLE_CLOUD_QUOTA_PROJECT", "bill-me");
  auto source = DefaultCredentials(opts_);
  ASSERT_TRUE(source.ok());
  EXPECT_EQ((*source)->QuotaProject(), "bill-me");
}

TEST(CredentialsFromJsonTest, Validation) {
  FakeTransport transport;
  CredentialsOptions opts;
  opts.transport = &transport;
  EXPECT_EQ(CredentialsFromJson("[1,2]", opts).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CredentialsFromJson("{}", opts).status().code(), absl::StatusCode::kInvalidArgument);
  auto unknown = CredentialsFromJson(R"({"type":"gdch_service_account"})", opts);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(unknown.status().message(), HasSubstr("gdch_service_account"));
  CredentialsOptions no_transport;
  EXPECT_EQ(CredentialsFromJson(kUserJson, no_transport).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A null clock means the real clock.
  auto user = CredentialsFromJson(kUserJson, opts);
  ASSERT_TRUE(user.ok());
}

// Credentials from a tenant's Secret are untrusted: external_account is
// refused whatever its source (naming the field, never reading the file or
// the URL), and token / impersonation URLs must be Google's or listed. The
// operator's own ADC (kInstaller) keeps accepting them.
class TenantCredentialsTest : public ::testing::Test {
 protected:
  TenantCredentialsTest() {
    canary_ = std::filesystem::path(::testing::TempDir()) / "tenant_canary";
    std::ofstream(canary_) << "CANARY-7f3a";
    tenant_.transport = &transport_;
    tenant_.trust = CredentialsTrust::kTenant;
    installer_.transport = &transport_;
  }
  std::string External(const std::string& source) const {
    return R"({"type":"external_account","audience":"//iam.googleapis.com/x",)"
           R"("subject_token_type":"urn:ietf:params:oauth:token-type:jwt",)"
           R"("token_url":"http://127.0.0.1:9/token","credential_source":)" +
           source + "}";
  }
  std::filesystem::path canary_;
  FakeTransport transport_;
  CredentialsOptions tenant_, installer_;
};

TEST_F(TenantCredentialsTest, ExternalAccountIsRefusedNamingTheField) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"file":")" + canary_.string() + R"("})", "credential_source.file"},
      {R"({"url":"http://127.0.0.1:9/secret?key=k-123","headers":{"Metadata-Flavor":"Google"}})",
       "credential_source.url"},
      {R"({"executable":{"command":"/bin/cat /etc/passwd"}})", "credential_source.executable"},
  };
  for (const auto& [source, field] : cases) {
    auto refused = CredentialsFromJson(External(source), tenant_);
    ASSERT_FALSE(refused.ok()) << field;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_THAT(refused.status().message(), HasSubstr(field));
    EXPECT_THAT(refused.status().message(), Not(HasSubstr(canary_.string())));
    EXPECT_THAT(refused.status().message(), Not(HasSubstr("127.0.0.1")));
    EXPECT_THAT(refused.status().message(), Not(HasSubstr("k-123")));
  }
  EXPECT_EQ(transport_.request_count(), 0u);
  // The installer's ADC may still use a file source.
  EXPECT_TRUE(
      CredentialsFromJson(External(R"({"file":")" + canary_.string() + R"("})"), installer_).ok());
}

TEST_F(TenantCredentialsTest, TokenAndImpersonationUrlsMustBeAllowed) {
  const std::string user_to =
      R"({"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r",)"
      R"("token_uri":"http://127.0.0.1:8999/token"})";
  auto refused = CredentialsFromJson(user_to, tenant_);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("token_uri is refused"));
  EXPECT_THAT(refused.status().message(), HasSubstr("--allowed-endpoint-hosts=127.0.0.1:8999"));

  const std::string impersonated =
      R"({"type":"impersonated_service_account","service_account_impersonation_url":)"
      R"("https://evil.example/v1/projects/-/serviceAccounts/a@b.c:generateAccessToken",)"
      R"("source_credentials":)" +
      std::string(kUserJson) + "}";
  refused = CredentialsFromJson(impersonated, tenant_);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("service_account_impersonation_url is refused"));

  // A source that is external_account is refused inside impersonation too.
  const std::string nested =
      R"({"type":"impersonated_service_account","service_account_impersonation_url":)"
      R"("https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/a@b.c:generateAccessToken",)"
      R"("source_credentials":)" +
      External(R"({"file":")" + canary_.string() + R"("})") + "}";
  refused = CredentialsFromJson(nested, tenant_);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("credential_source.file"));

  // Google's token endpoint (the default) and listed hosts are accepted.
  EXPECT_TRUE(CredentialsFromJson(kUserJson, tenant_).ok());
  absl::StatusOr<EndpointPolicy> listed = EndpointPolicy::Create({"127.0.0.1:8999"});
  ASSERT_TRUE(listed.ok());
  tenant_.endpoint_policy = *listed;
  EXPECT_TRUE(CredentialsFromJson(user_to, tenant_).ok());
  EXPECT_EQ(transport_.request_count(), 0u);
}

// A listed token endpoint's answer is read; the request passed the policy
// transport (the credentials cannot reach a host the policy refuses even if
// some code path built such a URL).
TEST_F(TenantCredentialsTest, RequestsGoThroughThePolicy) {
  transport_.Enqueue(Respond(200, TokenJson("tok-1", 3600)));
  auto source = CredentialsFromJson(kUserJson, tenant_);
  ASSERT_TRUE(source.ok()) << source.status();
  absl::StatusOr<std::string> token = (*source)->Token();
  ASSERT_TRUE(token.ok()) << token.status();
  ASSERT_EQ(transport_.request_count(), 1u);
  EXPECT_EQ(transport_.requests()[0].url, "https://oauth2.googleapis.com/token");
}

}  // namespace
}  // namespace slurmop::agentplatform
