// File: tests/kube/config_test.cc
//
// Kubeconfig parsing (fixtures in tests/kube/testdata, copied to a temp dir
// per test), in-cluster config and ResolveConfig() precedence.

#include "controller/kube/config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::kube {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// A temp copy of testdata/ plus environment variables restored afterwards.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("slurmop-config-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::copy(SLURMOP_KUBE_TESTDATA, dir_, fs::copy_options::recursive);
    for (const char* name :
         {"KUBECONFIG", "HOME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}) {
      const char* value = std::getenv(name);
      saved_env_[name] = value == nullptr ? std::nullopt : std::optional<std::string>(value);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_env_) {
      if (value.has_value()) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
    fs::remove_all(dir_);
  }
  std::string Path(const std::string& relative) const { return (dir_ / relative).string(); }
  std::string Write(const std::string& relative, const std::string& contents) const {
    fs::create_directories((dir_ / relative).parent_path());
    std::ofstream(dir_ / relative) << contents;
    return Path(relative);
  }

  fs::path dir_;
  std::map<std::string, std::optional<std::string>> saved_env_;
};

TEST_F(ConfigTest, TokenUserWithCaDataInCurrentContext) {
  absl::StatusOr<ClientConfig> config = LoadKubeconfig(Path("token.kubeconfig"), "");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://dev.example:6443");
  EXPECT_EQ(config->ca_data, "-----BEGIN CERTIFICATE-----\nDEV-CA\n-----END CERTIFICATE-----\n");
  EXPECT_EQ(config->ca_file, "");
  EXPECT_EQ(config->token, "dev-token");
  EXPECT_EQ(config->token_file, "");
  EXPECT_FALSE(config->exec.has_value());
  EXPECT_FALSE(config->insecure_skip_tls_verify);
  EXPECT_EQ(config->default_namespace, "team-a");
}

TEST_F(ConfigTest, NamedContextResolvesRelativePathsAgainstTheFile) {
  absl::StatusOr<ClientConfig> config = LoadKubeconfig(Path("token.kubeconfig"), "prod");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://prod.example");
  EXPECT_EQ(config->ca_file, Path("certs/ca.crt"));
  EXPECT_EQ(config->tls_server_name, "kubernetes.default.svc");
  EXPECT_EQ(config->token, "");
  EXPECT_EQ(config->token_file, Path("tokens/prod-token"));
  EXPECT_EQ(config->client_cert_file, Path("certs/client.crt"));
  EXPECT_EQ(config->client_key_file, "/etc/slurmop/client.key") << "absolute paths stay";
  EXPECT_EQ(config->default_namespace, "default");
}

TEST_F(ConfigTest, RelativeKubeconfigPathStillResolvesAgainstItsDirectory) {
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_.parent_path());
  absl::StatusOr<ClientConfig> config =
      LoadKubeconfig((dir_.filename() / "token.kubeconfig").string(), "prod");
  fs::current_path(cwd);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->ca_file, Path("certs/ca.crt"));
}

TEST_F(ConfigTest, ClientCertificateAndKeyData) {
  absl::StatusOr<ClientConfig> config = LoadKubeconfig(Path("certdata.kubeconfig"), "");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->client_cert_data,
            "-----BEGIN CERTIFICATE-----\nCLIENT-CERT\n-----END CERTIFICATE-----\n");
  EXPECT_EQ(config->client_key_data,
            "-----BEGIN EC PRIVATE KEY-----\nCLIENT-KEY\n-----END EC PRIVATE KEY-----\n");
  EXPECT_EQ(config->token, "");
}

TEST_F(ConfigTest, InsecureSkipTlsVerifyWithoutUser) {
  absl::StatusOr<ClientConfig> config = LoadKubeconfig(Path("insecure.kubeconfig"), "");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->insecure_skip_tls_verify);
  EXPECT_EQ(config->server, "https://localhost:8443");
  EXPECT_EQ(config->token, "");
}

TEST_F(ConfigTest, ExecPluginFields) {
  absl::StatusOr<ClientConfig> config = LoadKubeconfig(Path("exec.kubeconfig"), "");
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(config->exec.has_value());
  const ExecConfig& exec = *config->exec;
  EXPECT_EQ(exec.api_version, "client.authentication.k8s.io/v1");
  EXPECT_EQ(exec.command, Path("plugins/exec-plugin.sh"));
  EXPECT_THAT(exec.args, ElementsAre("--mode", "ok"));
  EXPECT_THAT(exec.env, ElementsAre(Pair("EXEC_TEST_SUFFIX", "abc")));
  EXPECT_EQ(exec.interactive_mode, "Never");
  EXPECT_TRUE(exec.provide_cluster_info);
  EXPECT_EQ(exec.install_hint, "install the test plugin");
  EXPECT_EQ(config->default_namespace, "jobs");
}

TEST_F(ConfigTest, ExecCommandWithoutSlashIsLookedUpOnPath) {
  const std::string path = Write("path.kubeconfig", R"(
current-context: x
clusters: [{name: c, cluster: {server: "https://h"}}]
users:
- name: u
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: gke-gcloud-auth-plugin}
contexts: [{name: x, context: {cluster: c, user: u}}]
)");
  absl::StatusOr<ClientConfig> config = LoadKubeconfig(path, "");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->exec->command, "gke-gcloud-auth-plugin");
  EXPECT_EQ(config->exec->interactive_mode, "Never");
}

TEST_F(ConfigTest, Errors) {
  EXPECT_EQ(LoadKubeconfig(Path("missing.kubeconfig"), "").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(LoadKubeconfig(Path("token.kubeconfig"), "nope").status().code(),
            absl::StatusCode::kNotFound);

  const std::string malformed = Write("malformed.kubeconfig", "clusters: [unclosed\n");
  EXPECT_EQ(LoadKubeconfig(malformed, "").status().code(), absl::StatusCode::kInvalidArgument);

  const std::string no_context = Write("nocontext.kubeconfig", "clusters: []\n");
  EXPECT_EQ(LoadKubeconfig(no_context, "").status().code(), absl::StatusCode::kInvalidArgument);

  const std::string missing_user = Write("nouser.kubeconfig", R"(
current-context: x
clusters: [{name: c, cluster: {server: "https://h"}}]
contexts: [{name: x, context: {cluster: c, user: ghost}}]
)");
  absl::StatusOr<ClientConfig> no_user = LoadKubeconfig(missing_user, "");
  EXPECT_EQ(no_user.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(no_user.status().message()), HasSubstr("ghost"));

  const std::string no_server = Write("noserver.kubeconfig", R"(
current-context: x
clusters: [{name: c, cluster: {}}]
contexts: [{name: x, context: {cluster: c}}]
)");
  EXPECT_EQ(LoadKubeconfig(no_server, "").status().code(), absl::StatusCode::kInvalidArgument);

  const std::string auth_provider = Write("authprovider.kubeconfig", R"(
current-context: x
clusters: [{name: c, cluster: {server: "https://h"}}]
users: [{name: u, user: {auth-provider: {name: gcp}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
)");
  EXPECT_EQ(LoadKubeconfig(auth_provider, "").status().code(), absl::StatusCode::kUnimplemented);

  const std::string insecure_with_ca = Write("insecureca.kubeconfig", R"(
current-context: x
clusters: [{name: c, cluster: {server: "https://h", insecure-skip-tls-verify: true, certificate-authority: ca.crt}}]
contexts: [{name: x, context: {cluster: c}}]
)");
  EXPECT_EQ(LoadKubeconfig(insecure_with_ca, "").status().code(),
            absl::StatusCode::kInvalidArgument);

  const std::string bad_base64 = Write("badb64.kubeconfig", R"(
current-context: x
clusters: [{name: c, cluster: {server: "https://h", certificate-authority-data: "%%%"}}]
contexts: [{name: x, context: {cluster: c}}]
)");
  EXPECT_EQ(LoadKubeconfig(bad_base64, "").status().code(), absl::StatusCode::kInvalidArgument);

  const std::string old_exec = Write("oldexec.kubeconfig", R"(
current-context: x
clusters: [{name: c, cluster: {server: "https://h"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
)");
  EXPECT_EQ(LoadKubeconfig(old_exec, "").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ConfigTest, InClusterConfigFromServiceAccountFiles) {
  Write("sa/token", "sa-token\n");
  Write("sa/ca.crt", "CA");
  Write("sa/namespace", "slurm-jobs\n");
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  absl::StatusOr<ClientConfig> config = InClusterConfigFrom(Path("sa"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->token_file, Path("sa/token"));
  EXPECT_EQ(config->token, "") << "the token is re-read from the file, never cached here";
  EXPECT_EQ(config->ca_file, Path("sa/ca.crt"));
  EXPECT_EQ(config->default_namespace, "slurm-jobs");

  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  config = InClusterConfigFrom(Path("sa"));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->server, "https://[fd00::1]:443");

  EXPECT_EQ(InClusterConfigFrom(Path("no-such-sa")).status().code(), absl::StatusCode::kNotFound);
  unsetenv("KUBERNETES_SERVICE_HOST");
  EXPECT_EQ(InClusterConfigFrom(Path("sa")).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ConfigTest, ResolveConfigPrecedence) {
  unsetenv("KUBERNETES_SERVICE_HOST");
  setenv("HOME", dir_.c_str(), 1);
  // Nothing anywhere.
  EXPECT_EQ(ResolveConfig("", "").status().code(), absl::StatusCode::kNotFound);

  // ~/.kube/config is the last resort.
  fs::create_directories(dir_ / ".kube");
  fs::copy_file(dir_ / "insecure.kubeconfig", dir_ / ".kube" / "config");
  absl::StatusOr<ClientConfig> config = ResolveConfig("", "");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://localhost:8443");

  // $KUBECONFIG (first file of the list) beats it.
  setenv("KUBECONFIG",
         (Path("missing") + ":" + Path("certdata.kubeconfig") + ":" + Path("token.kubeconfig"))
             .c_str(),
         1);
  config = ResolveConfig("", "");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://127.0.0.1:6443");

  // The flag beats everything, and the context applies.
  config = ResolveConfig(Path("token.kubeconfig"), "prod");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://prod.example");
}

}  // namespace
}  // namespace slurmop::kube
