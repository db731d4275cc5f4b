// File: tests/reconcile/credentials_resolver_test.cc
//
// SecretCredentialsResolver over an in-memory Kubernetes API and a fake clock: the token sources
// of Secrets no cluster uses any more are dropped.

#include "controller/reconcile/credentials_resolver.h"

#include <chrono>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/reconcile/fakes/fake_agent_platform.h"
#include "tests/reconcile/fakes/fake_kube.h"

namespace slurmop::reconcile {
namespace {

using testing::InMemoryKube;

void PutSecret(InMemoryKube& kube, const std::string& name) {
  const nlohmann::json file = {{"type", "authorized_user"},
                               {"client_id", "id.apps.googleusercontent.com"},
                               {"client_secret", "s-" + name},
                               {"refresh_token", "r-" + name}};
  nlohmann::json secret = {{"apiVersion", "v1"},
                           {"kind", "Secret"},
                           {"metadata", {{"name", name}, {"namespace", "team"}}},
                           {"data", {{"key.json", absl::Base64Escape(file.dump())}}}};
  ASSERT_TRUE(kube.Create(kube::Secrets(), "team", secret).ok());
}

ClusterIdentity SecretIdentity(const std::string& name) {
  ClusterIdentity id;
  id.source = ClusterIdentity::Source::kSecret;
  id.secret_namespace = "team";
  id.secret_name = name;
  id.secret_key = "key.json";
  return id;
}

// Every Secret a SlurmCluster ever named kept its token source for the life of the process.
// Those not used for SecretCredentialsResolver::kIdleEntry are dropped now; those in use stay.
TEST(SecretCredentialsResolverTest, SecretsNoClusterUsesAreForgotten) {
  InMemoryKube kube;
  FakeClock clock;
  testing::ScriptedAgentPlatform never_called;  // no token is fetched: only sources are built
  agentplatform::CredentialsOptions options;
  options.clock = &clock;
  options.transport = &never_called;
  SecretCredentialsResolver resolver(kube, options);
  for (int i = 0; i < 50; ++i) {
    PutSecret(kube, absl::StrCat("old-", i));
    auto source = resolver.For(SecretIdentity(absl::StrCat("old-", i)));
    ASSERT_TRUE(source.ok()) << source.status();
  }
  PutSecret(kube, "in-use");
  ASSERT_EQ(resolver.CachedSecrets(), 50u);
  // "in-use" is asked for every 30 s for 11 minutes; the 50 others are not.
  for (Duration t{}; t < std::chrono::minutes(11); t += std::chrono::seconds(30)) {
    clock.Advance(std::chrono::seconds(30));
    ASSERT_TRUE(resolver.For(SecretIdentity("in-use")).ok());
  }
  PutSecret(kube, "new");
  ASSERT_TRUE(resolver.For(SecretIdentity("new")).ok());
  EXPECT_EQ(resolver.CachedSecrets(), 2u) << "in-use and new";
}

}  // namespace
}  // namespace slurmop::reconcile
