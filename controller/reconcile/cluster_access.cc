// File: controller/reconcile/cluster_access.cc

#include "controller/reconcile/cluster_access.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace slurmop::reconcile {
namespace {

constexpr char kDefaultCredentialsKey[] = "credentials.json";

ClusterAccess Allow(ClusterIdentity identity) {
  ClusterAccess a;
  a.allowed = true;
  a.identity = std::move(identity);
  return a;
}

ClusterAccess Refuse(std::string reason, std::string message, bool transient = false) {
  ClusterAccess a;
  a.reason = std::move(reason);
  a.message = std::move(message);
  a.transient = transient;
  return a;
}

ClusterIdentity SecretIdentity(const std::string& ns, const v1alpha1::SecretKeySelector& ref) {
  ClusterIdentity id;
  id.source = ClusterIdentity::Source::kSecret;
  id.secret_namespace = ns;
  id.secret_name = ref.name();
  id.secret_key = ref.key().empty() ? kDefaultCredentialsKey : ref.key();
  return id;
}

ClusterIdentity OperatorIdentity() {
  ClusterIdentity id;
  id.source = ClusterIdentity::Source::kOperator;
  return id;
}

bool HasSecretRef(const ClusterAccessRequest& r) {
  return r.credentials_secret_ref.has_value() && !r.credentials_secret_ref->name().empty();
}

// A namespaced SlurmCluster: its own namespace's Secret, or the operator's identity if allowed.
ClusterAccess NamespacedAccess(const ClusterAccessRequest& r, const ClusterAccessOptions& o) {
  if (HasSecretRef(r)) return Allow(SecretIdentity(r.tenant_namespace, *r.credentials_secret_ref));
  if (o.allow_operator_identity_for_namespaced_clusters) return Allow(OperatorIdentity());
  return Refuse(
      "CredentialsRequired",
      absl::StrCat(
          "SlurmCluster \"", r.cluster_name, "\" in namespace \"", r.tenant_namespace,
          "\" has no spec.credentialsSecretRef, and this operator does not lend its own Google "
          "identity to namespaced SlurmClusters (its installer did not start it with "
          "--allow-operator-identity-for-namespaced-clusters). Add spec.credentialsSecretRef "
          "naming a Secret of this namespace that holds the credentials to use, or use a "
          "ClusterSlurmCluster set up by the installer (spec.clusterRef.kind: "
          "ClusterSlurmCluster). Nothing was sent to the cluster"));
}

// A ClusterSlurmCluster: the tenant's namespace must match its selector; the identity is the
// installer's (a Secret of the operator's namespace, or the operator's own).
ClusterAccess ClusterScopedAccess(const ClusterAccessRequest& r, const ClusterAccessOptions& o) {
  ClusterIdentity identity = OperatorIdentity();
  if (HasSecretRef(r)) {
    identity = SecretIdentity(o.operator_namespace, *r.credentials_secret_ref);
    identity.installer_secret = true;
  }
  if (r.tenant_namespace.empty()) return Allow(identity);  // the installer's own probe
  const std::string who = absl::StrCat("ClusterSlurmCluster \"", r.cluster_name, "\"");
  if (!r.namespace_selector.has_value()) {
    return Refuse("NamespaceNotAllowed",
                  absl::StrCat(who,
                               " has no spec.namespaceSelector, so no namespace may use it; ask "
                               "the operator's installer to add one matching namespace \"",
                               r.tenant_namespace, "\". Nothing was sent to the cluster"));
  }
  if (!r.namespace_labels.has_value()) {
    return Refuse("NamespaceUnknown",
                  absl::StrCat("namespace \"", r.tenant_namespace,
                               "\" is not known to the operator yet; retrying"),
                  /*transient=*/true);
  }
  absl::StatusOr<bool> match = SelectorMatches(*r.namespace_selector, *r.namespace_labels);
  if (!match.ok()) {
    return Refuse(
        "InvalidNamespaceSelector",
        absl::StrCat(who, " has an invalid spec.namespaceSelector (", match.status().message(),
                     "); ask the operator's installer to fix it. Nothing was sent to "
                     "the cluster"));
  }
  if (!*match) {
    return Refuse("NamespaceNotAllowed",
                  absl::StrCat(who, " does not allow SlurmJobs of namespace \"", r.tenant_namespace,
                               "\" (its spec.namespaceSelector does not match the namespace's "
                               "labels). Ask the operator's installer to allow this namespace, or "
                               "use a SlurmCluster of this namespace. Nothing was sent to the "
                               "cluster"));
  }
  return Allow(identity);
}

absl::StatusOr<bool> RequirementHolds(const v1alpha1::LabelSelectorRequirement& req, int index,
                                      const std::map<std::string, std::string>& labels) {
  const std::string where = absl::StrCat("matchExpressions[", index, "] (key \"", req.key(), "\")");
  if (req.key().empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": key is empty"));
  const auto it = labels.find(req.key());
  const bool has = it != labels.end();
  const auto& values = req.values();
  const bool in_values = has && std::find(values.begin(), values.end(), it->second) != values.end();
  const std::string& op = req.operator_();
  if (op == "In" || op == "NotIn") {
    if (values.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": operator ", op, " needs values"));
    }
    return op == "In" ? in_values : !in_values;
  }
  if (op == "Exists" || op == "DoesNotExist") {
    if (!values.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": operator ", op, " takes no values"));
    }
    return op == "Exists" ? has : !has;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": unknown operator \"", op, "\" (In, NotIn, Exists, DoesNotExist)"));
}

}  // namespace

absl::StatusOr<bool> SelectorMatches(const v1alpha1::LabelSelector& selector,
                                     const std::map<std::string, std::string>& labels) {
  bool all = true;
  // Every requirement is checked, not only up to the first miss, so that an invalid selector is
  // reported whatever the labels are.
  for (int i = 0; i < selector.match_expressions_size(); ++i) {
    absl::StatusOr<bool> holds = RequirementHolds(selector.match_expressions(i), i, labels);
    if (!holds.ok()) return holds.status();
    all = all && *holds;
  }
  for (const auto& [key, value] : selector.match_labels()) {
    const auto it = labels.find(key);
    all = all && it != labels.end() && it->second == value;
  }
  return all;
}

ClusterAccess DecideClusterAccess(const ClusterAccessRequest& request,
                                  const ClusterAccessOptions& options) {
  return request.cluster_scoped ? ClusterScopedAccess(request, options)
                                : NamespacedAccess(request, options);
}

}  // namespace slurmop::reconcile
