// File: controller/reconcile/cluster_resolver.cc

#include "controller/reconcile/cluster_resolver.h"

#include "absl/strings/str_cat.h"
#include "controller/api/resources.h"
#include "controller/api/types.h"
#include "controller/reconcile/cluster_protector.h"
#include "glog/logging.h"

namespace slurmop::reconcile {
namespace {

int64_t Generation(const nlohmann::json& obj) {
  return obj.value("metadata", nlohmann::json::object()).value("generation", int64_t{0});
}

bool BeingDeleted(const nlohmann::json& obj) {
  return !api::MetadataString(obj, "deletionTimestamp").empty();
}

// The labels of Namespace `ns` as the cache shows it; nullopt when absent.
std::optional<std::map<std::string, std::string>> NamespaceLabels(const ObjectCache* namespaces,
                                                                  const std::string& ns) {
  if (namespaces == nullptr) return std::nullopt;
  std::shared_ptr<const nlohmann::json> obj = namespaces->Get("", ns);
  if (!obj) return std::nullopt;
  std::map<std::string, std::string> labels;
  const auto& meta = obj->value("metadata", nlohmann::json::object());
  if (auto it = meta.find("labels"); it != meta.end() && it->is_object()) {
    for (const auto& [k, v] : it->items()) {
      if (v.is_string()) labels[k] = v.get<std::string>();
    }
  }
  return labels;
}

ClusterAccessRequest RequestFor(bool cluster_scoped, const std::string& name,
                                const std::string& tenant_ns,
                                const v1alpha1::SlurmClusterSpec& spec) {
  ClusterAccessRequest r;
  r.cluster_scoped = cluster_scoped;
  r.cluster_name = name;
  r.tenant_namespace = tenant_ns;
  if (spec.has_credentials_secret_ref()) r.credentials_secret_ref = spec.credentials_secret_ref();
  return r;
}

void Apply(const ClusterAccess& access, ClusterFacts* c) {
  if (access.allowed) {
    c->identity = access.identity;
  } else {
    c->kind = ClusterFacts::Kind::kRefused;
    c->access = access;
  }
}

// A ClusterSlurmCluster named by a SlurmJob of `ns`.
void ResolveClusterScoped(const ClusterCaches& caches, const std::string& ns,
                          const ClusterAccessOptions& options, ClusterFacts* c) {
  c->key = absl::StrCat("/", c->name);
  std::shared_ptr<const nlohmann::json> obj =
      caches.cluster_scoped ? caches.cluster_scoped->Get("", c->name) : nullptr;
  if (!obj) {
    c->kind = ClusterFacts::Kind::kNotFound;
    return;
  }
  c->kind = ClusterFacts::Kind::kFound;
  c->generation = Generation(*obj);
  c->deleting = BeingDeleted(*obj);
  absl::StatusOr<api::ClusterScopedCluster> read = api::ClusterSlurmClusterFromObject(*obj);
  if (!read.ok()) {
    // An unreadable selector allows nobody.
    LOG(WARNING) << "ClusterSlurmCluster " << c->name << " cannot be read: " << read.status();
    Apply({false,
           {},
           "InvalidCluster",
           absl::StrCat("ClusterSlurmCluster \"", c->name, "\" cannot be read (",
                        read.status().message(),
                        "); ask the operator's installer to fix it. Nothing was sent to the "
                        "cluster")},
          c);
    return;
  }
  c->spec = read->cluster.spec();
  ClusterAccessRequest r = RequestFor(true, c->name, ns, c->spec);
  r.namespace_selector = read->namespace_selector;
  r.namespace_labels = NamespaceLabels(caches.namespaces, ns);
  Apply(DecideClusterAccess(r, options), c);
}

}  // namespace

ClusterFacts ResolveJobCluster(const ClusterCaches& caches, const std::string& ns,
                               const v1alpha1::ClusterReference& ref,
                               const std::string& default_cluster,
                               const ClusterAccessOptions& options) {
  ClusterFacts c;
  c.name = ref.name().empty() ? default_cluster : ref.name();
  c.cluster_scoped = !ref.name().empty() && ref.kind() == api::kClusterSlurmClusterKind;
  if (c.name.empty()) {
    c.kind = ClusterFacts::Kind::kUnspecified;
    return c;
  }
  if (c.cluster_scoped) {
    ResolveClusterScoped(caches, ns, options, &c);
    return c;
  }
  c.key = absl::StrCat(ns, "/", c.name);
  std::shared_ptr<const nlohmann::json> obj =
      caches.namespaced ? caches.namespaced->Get(ns, c.name) : nullptr;
  if (!obj) {
    c.kind = ClusterFacts::Kind::kNotFound;
    return c;
  }
  c.kind = ClusterFacts::Kind::kFound;
  c.deleting = BeingDeleted(*obj);
  const ProtectionFacts protection = ProtectionFactsOf(*obj, true);
  c.unprotected = !KeptWhileInUse(protection);
  if (c.unprotected && caches.protection_problems) {
    c.protection_problem = caches.protection_problems->Get(c.key);
  }
  c.generation = Generation(*obj);
  absl::StatusOr<v1alpha1::SlurmCluster> cluster = api::SlurmClusterFromObject(*obj);
  if (!cluster.ok()) {
    // Unreadable: nothing is sent for it, and the job says why. (Read as an empty spec, it was
    // refused for a missing credentialsSecretRef, or seen repointed, whatever was wrong.)
    LOG(WARNING) << "SlurmCluster " << ns << "/" << c.name
                 << " cannot be read: " << cluster.status();
    Apply({false,
           {},
           "InvalidCluster",
           absl::StrCat("SlurmCluster \"", c.name, "\" cannot be read (",
                        cluster.status().message(), "); fix it with kubectl edit slurmcluster ",
                        c.name, " -n ", ns, ". Nothing was sent to the cluster")},
          &c);
    return c;
  }
  c.spec = cluster->spec();
  Apply(DecideClusterAccess(RequestFor(false, c.name, ns, c.spec), options), &c);
  return c;
}

ClusterAccess ProbeAccess(const nlohmann::json& object, bool cluster_scoped,
                          const v1alpha1::SlurmClusterSpec& spec,
                          const ClusterAccessOptions& options) {
  const std::string ns = cluster_scoped ? "" : api::MetadataString(object, "namespace");
  return DecideClusterAccess(
      RequestFor(cluster_scoped, api::MetadataString(object, "name"), ns, spec), options);
}

}  // namespace slurmop::reconcile
