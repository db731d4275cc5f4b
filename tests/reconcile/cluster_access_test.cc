// File: tests/reconcile/cluster_access_test.cc
//
// DecideClusterAccess and SelectorMatches (controller/reconcile/cluster_access.h): every way a
// namespace may or may not use a cluster, and with whose identity.

#include "controller/reconcile/cluster_access.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::reconcile {
namespace {

using ::testing::HasSubstr;
using Labels = std::map<std::string, std::string>;

v1alpha1::SecretKeySelector Ref(const std::string& name, const std::string& key = "") {
  v1alpha1::SecretKeySelector r;
  r.set_name(name);
  r.set_key(key);
  return r;
}

v1alpha1::LabelSelector MatchLabels(const Labels& labels) {
  v1alpha1::LabelSelector s;
  for (const auto& [k, v] : labels) (*s.mutable_match_labels())[k] = v;
  return s;
}

v1alpha1::LabelSelector Expression(const std::string& key, const std::string& op,
                                   std::vector<std::string> values = {}) {
  v1alpha1::LabelSelector s;
  auto* e = s.add_match_expressions();
  e->set_key(key);
  e->set_operator_(op);
  for (auto& v : values) e->add_values(v);
  return s;
}

ClusterAccessOptions Options(bool allow_operator_identity) {
  ClusterAccessOptions o;
  o.allow_operator_identity_for_namespaced_clusters = allow_operator_identity;
  o.operator_namespace = "slurmjob-operator-system";
  return o;
}

ClusterAccessRequest Namespaced(std::optional<v1alpha1::SecretKeySelector> ref = std::nullopt) {
  ClusterAccessRequest r;
  r.cluster_name = "a3";
  r.tenant_namespace = "team-a";
  r.credentials_secret_ref = std::move(ref);
  return r;
}

ClusterAccessRequest ClusterScoped(std::optional<v1alpha1::LabelSelector> selector,
                                   std::optional<Labels> labels = Labels{{"team", "a"}}) {
  ClusterAccessRequest r;
  r.cluster_scoped = true;
  r.cluster_name = "shared";
  r.tenant_namespace = "team-a";
  r.namespace_selector = std::move(selector);
  r.namespace_labels = std::move(labels);
  return r;
}

TEST(ClusterAccess, NamespacedWithoutSecretIsRefusedByDefault) {
  ClusterAccess a = DecideClusterAccess(Namespaced(), ClusterAccessOptions{});
  EXPECT_FALSE(a.allowed);
  EXPECT_FALSE(a.transient);
  EXPECT_EQ(a.identity.source, ClusterIdentity::Source::kNone);
  EXPECT_EQ(a.reason, "CredentialsRequired");
  EXPECT_THAT(a.message, HasSubstr("SlurmCluster \"a3\" in namespace \"team-a\""));
  EXPECT_THAT(a.message, HasSubstr("--allow-operator-identity-for-namespaced-clusters"));
  EXPECT_THAT(a.message, HasSubstr("credentialsSecretRef"));
  EXPECT_THAT(a.message, HasSubstr("ClusterSlurmCluster"));
}

TEST(ClusterAccess, NamespacedWithoutSecretGetsTheOperatorsIdentityWhenTheInstallerAllows) {
  ClusterAccess a = DecideClusterAccess(Namespaced(), Options(true));
  EXPECT_TRUE(a.allowed);
  EXPECT_EQ(a.identity.source, ClusterIdentity::Source::kOperator);
}

TEST(ClusterAccess, NamespacedWithSecretUsesItsOwnNamespaceWhateverTheFlag) {
  for (bool allow : {false, true}) {
    ClusterAccess a = DecideClusterAccess(Namespaced(Ref("creds")), Options(allow));
    ASSERT_TRUE(a.allowed);
    EXPECT_EQ(a.identity.source, ClusterIdentity::Source::kSecret);
    EXPECT_EQ(a.identity.secret_namespace, "team-a");
    EXPECT_EQ(a.identity.secret_name, "creds");
    EXPECT_EQ(a.identity.secret_key, "credentials.json");
    EXPECT_FALSE(a.identity.installer_secret) << "a tenant's Secret is restricted (kTenant)";
  }
  ClusterAccess keyed = DecideClusterAccess(Namespaced(Ref("creds", "sa.json")), Options(false));
  EXPECT_EQ(keyed.identity.secret_key, "sa.json");
}

TEST(ClusterAccess, NamespacedWithAnEmptySecretNameIsNoSecret) {
  ClusterAccess a = DecideClusterAccess(Namespaced(Ref("")), Options(false));
  EXPECT_FALSE(a.allowed);
  EXPECT_EQ(a.reason, "CredentialsRequired");
}

TEST(ClusterAccess, ClusterScopedServesAMatchingNamespaceWithTheOperatorsIdentity) {
  ClusterAccess a =
      DecideClusterAccess(ClusterScoped(MatchLabels({{"team", "a"}})), Options(false));
  ASSERT_TRUE(a.allowed) << a.message;
  EXPECT_EQ(a.identity.source, ClusterIdentity::Source::kOperator);
}

TEST(ClusterAccess, ClusterScopedSecretComesFromTheOperatorsNamespaceNeverTheTenants) {
  ClusterAccessRequest r = ClusterScoped(MatchLabels({}));
  r.credentials_secret_ref = Ref("installer-creds");
  ClusterAccess a = DecideClusterAccess(r, Options(false));
  ASSERT_TRUE(a.allowed);
  EXPECT_EQ(a.identity.source, ClusterIdentity::Source::kSecret);
  EXPECT_EQ(a.identity.secret_namespace, "slurmjob-operator-system");
  EXPECT_EQ(a.identity.secret_name, "installer-creds");
  EXPECT_TRUE(a.identity.installer_secret) << "the installer's Secret, trusted like its own ADC";
}

TEST(ClusterAccess, ClusterScopedRefusesANamespaceTheSelectorDoesNotMatch) {
  ClusterAccess a = DecideClusterAccess(ClusterScoped(MatchLabels({{"team", "b"}})), Options(true));
  EXPECT_FALSE(a.allowed);
  EXPECT_FALSE(a.transient);
  EXPECT_EQ(a.reason, "NamespaceNotAllowed");
  EXPECT_THAT(a.message, HasSubstr("ClusterSlurmCluster \"shared\""));
  EXPECT_THAT(a.message, HasSubstr("namespace \"team-a\""));
}

TEST(ClusterAccess, ClusterScopedWithoutSelectorServesNobodyButAnEmptyOneServesAll) {
  ClusterAccess none = DecideClusterAccess(ClusterScoped(std::nullopt), Options(true));
  EXPECT_FALSE(none.allowed);
  EXPECT_EQ(none.reason, "NamespaceNotAllowed");
  EXPECT_THAT(none.message, HasSubstr("no spec.namespaceSelector"));
  EXPECT_TRUE(
      DecideClusterAccess(ClusterScoped(v1alpha1::LabelSelector()), Options(false)).allowed);
}

TEST(ClusterAccess, ClusterScopedWithAnUnknownNamespaceIsRefusedForNow) {
  ClusterAccess a =
      DecideClusterAccess(ClusterScoped(MatchLabels({}), std::nullopt), Options(false));
  EXPECT_FALSE(a.allowed);
  EXPECT_TRUE(a.transient);
}

TEST(ClusterAccess, ClusterScopedWithAnInvalidSelectorServesNobody) {
  ClusterAccess a = DecideClusterAccess(ClusterScoped(Expression("team", "In")), Options(false));
  EXPECT_FALSE(a.allowed);
  EXPECT_EQ(a.reason, "InvalidNamespaceSelector");
  EXPECT_THAT(a.message, HasSubstr("operator In needs values"));
}

TEST(ClusterAccess, TheProbeOfAClusterScopedClusterIsTheInstallers) {
  ClusterAccessRequest r = ClusterScoped(std::nullopt, std::nullopt);
  r.tenant_namespace = "";
  ClusterAccess a = DecideClusterAccess(r, Options(false));
  ASSERT_TRUE(a.allowed);
  EXPECT_EQ(a.identity.source, ClusterIdentity::Source::kOperator);
}

TEST(SelectorMatches, MatchLabelsAndExpressionsAreAnded) {
  Labels labels = {{"team", "a"}, {"tier", "gpu"}};
  EXPECT_TRUE(*SelectorMatches(MatchLabels({{"team", "a"}}), labels));
  EXPECT_FALSE(*SelectorMatches(MatchLabels({{"team", "b"}}), labels));
  EXPECT_FALSE(*SelectorMatches(MatchLabels({{"owner", "x"}}), labels));
  v1alpha1::LabelSelector both = MatchLabels({{"team", "a"}});
  *both.add_match_expressions() = Expression("tier", "NotIn", {"cpu"}).match_expressions(0);
  EXPECT_TRUE(*SelectorMatches(both, labels));
  *both.add_match_expressions() = Expression("zone", "Exists").match_expressions(0);
  EXPECT_FALSE(*SelectorMatches(both, labels));
}

TEST(SelectorMatches, OperatorsFollowKubernetes) {
  Labels labels = {{"team", "a"}};
  EXPECT_TRUE(*SelectorMatches(Expression("team", "In", {"a", "b"}), labels));
  EXPECT_FALSE(*SelectorMatches(Expression("team", "In", {"b"}), labels));
  EXPECT_FALSE(*SelectorMatches(Expression("team", "NotIn", {"a"}), labels));
  EXPECT_TRUE(*SelectorMatches(Expression("other", "NotIn", {"a"}), labels));  // absent: NotIn
  EXPECT_TRUE(*SelectorMatches(Expression("team", "Exists"), labels));
  EXPECT_FALSE(*SelectorMatches(Expression("team", "DoesNotExist"), labels));
  EXPECT_TRUE(*SelectorMatches(Expression("other", "DoesNotExist"), labels));
  EXPECT_TRUE(*SelectorMatches(v1alpha1::LabelSelector(), labels));
  EXPECT_TRUE(*SelectorMatches(v1alpha1::LabelSelector(), {}));
}

TEST(SelectorMatches, InvalidRequirementsAreErrorsWhateverTheLabels) {
  EXPECT_THAT(SelectorMatches(Expression("team", "In"), {}).status().message(),
              HasSubstr("needs values"));
  EXPECT_THAT(SelectorMatches(Expression("team", "Exists", {"a"}), {}).status().message(),
              HasSubstr("takes no values"));
  EXPECT_THAT(SelectorMatches(Expression("team", "Gt", {"1"}), {}).status().message(),
              HasSubstr("unknown operator \"Gt\""));
  EXPECT_THAT(SelectorMatches(Expression("", "Exists"), {}).status().message(),
              HasSubstr("key is empty"));
  // An invalid requirement after one that does not hold is still reported.
  v1alpha1::LabelSelector s = Expression("team", "In", {"b"});
  *s.add_match_expressions() = Expression("x", "Bogus").match_expressions(0);
  EXPECT_FALSE(SelectorMatches(s, {{"team", "a"}}).ok());
}

}  // namespace
}  // namespace slurmop::reconcile
