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

}  // namespace
}  // namespace slurmop::agentplatform
