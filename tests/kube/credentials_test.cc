// File: tests/kube/credentials_test.cc
//
// Token sources (file re-read, exec caching and refresh) and the exec
// plugin runner against a real shell-script plugin (testdata/plugins).

#include "controller/kube/credentials.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "controller/common/time_format.h"
#include "controller/kube/exec_plugin.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::kube {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class CredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("slurmop-cred-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::copy(SLURMOP_KUBE_TESTDATA, dir_, fs::copy_options::recursive);
    // The copy must be executable whatever the checkout did to the mode.
    fs::permissions(Plugin(), fs::perms::owner_all, fs::perm_options::add);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Plugin() const { return (dir_ / "plugins" / "exec-plugin.sh").string(); }
  ExecConfig PluginConfig(const std::string& mode) const {
    ExecConfig config;
    config.api_version = "client.authentication.k8s.io/v1";
    config.command = Plugin();
    config.args = {"--mode", mode};
    config.env = {{"EXEC_TEST_SUFFIX", "xyz"}};
    config.install_hint = "see the docs";
    return config;
  }
  int Runs() const {
    std::ifstream in(dir_ / "runs");
    int lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    return lines;
  }

  fs::path dir_;
  FakeClock clock_;
};

TEST_F(CredentialsTest, FileTokenIsRereadAfterAMinuteOrA401) {
  const fs::path path = dir_ / "token";
  std::ofstream(path) << "  first\n";
  FileTokenSource source(path.string(), clock_);
  EXPECT_EQ(source.Token().value(), "first");

  std::ofstream(path) << "second\n";
  clock_.Advance(std::chrono::seconds(59));
  EXPECT_EQ(source.Token().value(), "first") << "cached for a minute";
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ(source.Token().value(), "second");

  std::ofstream(path) << "third\n";
  source.OnUnauthorized("stale-token-from-another-request");
  EXPECT_EQ(source.Token().value(), "second") << "only the current token is invalidated";
  source.OnUnauthorized("second");
  EXPECT_EQ(source.Token().value(), "third") << "re-read at once after a 401";

  fs::remove(path);
  clock_.Advance(std::chrono::minutes(5));
  EXPECT_EQ(source.Token().value(), "third") << "a failed re-read keeps the last token";

  FileTokenSource missing((dir_ / "missing").string(), clock_);
  EXPECT_EQ(missing.Token().status().code(), absl::StatusCode::kUnauthenticated);
}

TEST_F(CredentialsTest, ExecTokenCachedUntilExpiryAndRefreshedAfter401) {
  int runs = 0;
  ExecTokenSource source(
      [&]() -> absl::StatusOr<ExecCredential> {
        ++runs;
        ExecCredential credential;
        credential.token = "token-" + std::to_string(runs);
        credential.expiration = clock_.Now() + std::chrono::minutes(10);
        return credential;
      },
      clock_);
  EXPECT_EQ(source.Token().value(), "token-1");
  EXPECT_EQ(source.Token().value(), "token-1");
  EXPECT_EQ(runs, 1);

  clock_.Advance(std::chrono::minutes(10));
  EXPECT_EQ(source.Token().value(), "token-2") << "expired: plugin runs again";

  source.OnUnauthorized("token-1");
  EXPECT_EQ(source.Token().value(), "token-2") << "a 401 for an old token changes nothing";
  source.OnUnauthorized("token-2");
  EXPECT_EQ(source.Token().value(), "token-3");
  EXPECT_EQ(runs, 3);
}

TEST_F(CredentialsTest, ExecTokenWithoutExpiryIsCachedUntil401AndErrorsPropagate) {
  int runs = 0;
  bool fail = false;
  ExecTokenSource source(
      [&]() -> absl::StatusOr<ExecCredential> {
        ++runs;
        if (fail) return absl::UnauthenticatedError("plugin failed");
        return ExecCredential{"forever", "", "", std::nullopt};
      },
      clock_);
  EXPECT_EQ(source.Token().value(), "forever");
  clock_.Advance(std::chrono::hours(24 * 365));
  EXPECT_EQ(source.Token().value(), "forever");
  EXPECT_EQ(runs, 1);
  fail = true;
  source.OnUnauthorized("forever");
  EXPECT_EQ(source.Token().status().code(), absl::StatusCode::kUnauthenticated);
}

TEST_F(CredentialsTest, NewTokenSourcePicksExecThenTokenThenFile) {
  ClientConfig config;
  EXPECT_EQ(NewTokenSource(config, clock_)->Token().value(), "");
  config.token_file = (dir_ / "tokens" / "prod-token").string();
  EXPECT_EQ(NewTokenSource(config, clock_)->Token().value(), "prod-token-from-file");
  config.token = "static";
  EXPECT_EQ(NewTokenSource(config, clock_)->Token().value(), "static");
  config.exec = PluginConfig("ok");
  EXPECT_EQ(NewTokenSource(config, clock_)->Token().value(), "exec-xyz-no-cluster");
}

TEST_F(CredentialsTest, RunsTheExecPluginAndParsesItsCredential) {
  ExecConfig config = PluginConfig("ok");
  config.env.emplace_back("EXEC_TEST_COUNT_FILE", (dir_ / "runs").string());
  config.env.emplace_back("EXEC_TEST_EXPIRY", "2030-05-06T07:08:09Z");
  absl::StatusOr<ExecCredential> credential = RunExecPlugin(config, {});
  ASSERT_TRUE(credential.ok()) << credential.status();
  EXPECT_EQ(credential->token, "exec-xyz-no-cluster");
  ASSERT_TRUE(credential->expiration.has_value());
  EXPECT_EQ(FormatRfc3339(*credential->expiration), "2030-05-06T07:08:09Z");
  EXPECT_EQ(Runs(), 1);

  config.provide_cluster_info = true;
  credential = RunExecPlugin(config, ExecClusterInfo{"https://10.0.0.1:6443", "CA", "", false});
  ASSERT_TRUE(credential.ok()) << credential.status();
  EXPECT_EQ(credential->token, "exec-xyz-with-cluster")
      << "KUBERNETES_EXEC_INFO carries the cluster";
}

TEST_F(CredentialsTest, ExecPluginFailuresAreUnauthenticated) {
  absl::Status failed = RunExecPlugin(PluginConfig("fail"), {}).status();
  EXPECT_EQ(failed.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(failed.message()), HasSubstr("exit status 3"));

  EXPECT_EQ(RunExecPlugin(PluginConfig("garbage"), {}).status().code(),
            absl::StatusCode::kUnauthenticated);

  ExecConfig missing = PluginConfig("ok");
  missing.command = (dir_ / "plugins" / "no-such-plugin").string();
  absl::Status not_found = RunExecPlugin(missing, {}).status();
  EXPECT_EQ(not_found.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(not_found.message()), HasSubstr("see the docs"));

  ExecConfig v1beta1 = PluginConfig("ok");
  v1beta1.api_version = "client.authentication.k8s.io/v1beta1";
  EXPECT_THAT(std::string(RunExecPlugin(v1beta1, {}).status().message()), HasSubstr("apiVersion"));
}

TEST_F(CredentialsTest, ExecPluginTimesOut) {
  ExecConfig sleeper;
  sleeper.api_version = "client.authentication.k8s.io/v1";
  sleeper.command = "/bin/sleep";
  sleeper.args = {"30"};
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = RunExecPlugin(sleeper, {}, std::chrono::milliseconds(200)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(status.message()), HasSubstr("timed out"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// A plugin that prints without end must not hold the operator's memory: its output is
// bounded and the plugin killed (before, 2 MB were read whole and parsed).
TEST_F(CredentialsTest, ExecPluginPrintingTooMuchIsRefused) {
  ExecConfig chatty;
  chatty.api_version = "client.authentication.k8s.io/v1";
  chatty.command = "/usr/bin/head";
  chatty.args = {"-c", std::to_string(2 * kMaxExecOutputBytes), "/dev/zero"};
  absl::Status status = RunExecPlugin(chatty, {}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(status.message()), HasSubstr("printed more than 1048576 bytes"));
}

TEST_F(CredentialsTest, ParsesClientCertificateCredentials) {
  absl::StatusOr<ExecCredential> credential = RunExecPlugin(PluginConfig("cert"), {});
  ASSERT_TRUE(credential.ok()) << credential.status();
  EXPECT_EQ(credential->token, "");
  EXPECT_EQ(credential->client_certificate_pem, "CERT");
  EXPECT_EQ(credential->client_key_pem, "KEY");
  EXPECT_FALSE(credential->expiration.has_value());

  EXPECT_FALSE(ParseExecCredential(
                   R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
                   R"("status":{}})",
                   "client.authentication.k8s.io/v1")
                   .ok());
  EXPECT_FALSE(ParseExecCredential(
                   R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
                   R"("status":{"token":"t","expirationTimestamp":"yesterday"}})",
                   "client.authentication.k8s.io/v1")
                   .ok());
}

}  // namespace
}  // namespace slurmop::kube
