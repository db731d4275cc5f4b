// File: controller/reconcile/cluster_reconciler.cc

#include "controller/reconcile/cluster_reconciler.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "controller/api/json_codec.h"
#include "controller/api/types.h"
#include "controller/common/bounded_text.h"
#include "controller/reconcile/cluster_resolver.h"
#include "controller/reconcile/cluster_status.h"
#include "controller/reconcile/conditions.h"
#include "controller/reconcile/job_descriptor.h"
#include "controller/reconcile/resource_types.h"
#include "controller/reconcile/write_refusal.h"
#include "controller/slurm/dialects.h"
#include "glog/logging.h"
#include "google/protobuf/util/message_differencer.h"

namespace slurmop::reconcile {

namespace {

const char* KindOf(bool cluster_scoped) {
  return cluster_scoped ? "ClusterSlurmCluster" : "SlurmCluster";
}

// A SlurmCluster, or a ClusterSlurmCluster read as one (its namespaceSelector aside).
absl::StatusOr<v1alpha1::SlurmCluster> ReadCluster(const nlohmann::json& obj, bool cluster_scoped) {
  if (!cluster_scoped) return api::SlurmClusterFromObject(obj);
  absl::StatusOr<api::ClusterScopedCluster> c = api::ClusterSlurmClusterFromObject(obj);
  if (!c.ok()) return c.status();
  return c->cluster;
}

}  // namespace

ProbeOutcome ClusterReconciler::Probe(const std::string& key, const ClusterIdentity& identity,
                                      const v1alpha1::SlurmClusterSpec& spec) {
  ProbeOutcome p;
  p.spec = ValidateClusterSpec(spec);
  if (!p.spec.ok()) return p;
  const std::string version = slurm::VersionOrDefault(spec.slurm_api_version());
  absl::StatusOr<const slurm::Dialect*> dialect = slurm::DialectFor(version);
  absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> creds = credentials_.For(identity);
  if (!creds.ok()) {
    p.call = creds.status();
    return p;
  }
  if (!dialect.ok()) {
    p.call = dialect.status();
    return p;
  }
  // Swept for orphaned jobs from now on.
  if (tracker_)
    tracker_->RegisterCluster(ClusterEndpoint{key, version, ClusterNameOf(spec, key), *creds});
  // Probes draw last on the project's budget: submits, cancels and tracking
  // go first when it runs low.
  agentplatform::CallOptions probe;
  probe.priority = agentplatform::CallPriority::kProbe;
  absl::StatusOr<agentplatform::SlurmResponse> r =
      slurm_.Call(ClusterNameOf(spec, key), **creds, agentplatform::HttpMethod::kGet,
                  (*dialect)->PingPath(), nullptr, probe);
  if (!r.ok()) {
    p.call = r.status();
    return p;
  }
  p.slurm_http_status = r->status;
  if (r->status != 200) {
    p.slurm_detail = r->body.is_string() ? r->body.get<std::string>()
                     : r->body.is_null() ? ""
                                         : r->body.dump();
    p.slurm_detail = CutText(p.slurm_detail, 300);  // never splitting a UTF-8 sequence
  }
  return p;
}

ReconcileResult ClusterReconciler::WriteStatus(const std::string& key, bool cluster_scoped,
                                               const nlohmann::json& cached,
                                               const v1alpha1::SlurmCluster& cluster,
                                               const v1alpha1::SlurmClusterStatus& desired) {
  const bool was_ready = IsConditionTrue(cluster.status().conditions(), kReady);
  const bool ready = IsConditionTrue(desired.conditions(), kReady);
  nlohmann::json updated = cached;
  updated["status"] = api::StatusToJson(desired);
  absl::StatusOr<nlohmann::json> w = kube_.UpdateStatus(
      cluster_scoped ? ClusterSlurmClustersResource() : SlurmClustersResource(), updated);
  if (!w.ok()) {
    if (kube::IsNotFound(w.status())) return {};
    LOG(WARNING) << KindOf(cluster_scoped) << " " << key << ": status write failed: " << w.status();
    if (RefusedForGood(w.status())) {
      events_.Record(cached, WriteRefusedEvent(w.status(), "status write", KindOf(cluster_scoped)));
    }
    // No answer at all: retried as soon as the API server answers again (retry_scheduler.h).
    return {std::nullopt, true, kube::IsUnreachable(w.status())};
  }
  if (ready != was_ready || !ready) {
    const v1alpha1::Condition* c = FindCondition(desired.conditions(), kReady);
    events_.Record(*w, {ready ? kNormal : kWarning, c ? c->reason() : "Probe", "Probe",
                        c ? c->message() : ""});
  }
  LOG(INFO) << KindOf(cluster_scoped) << " " << key << ": " << (ready ? "ready" : "not ready");
  return {NextProbe(desired), false};
}

ReconcileResult ClusterReconciler::Reconcile(const std::string& key) {
  size_t slash = key.find('/');
  if (slash == std::string::npos) return {};
  const std::string ns = key.substr(0, slash);
  const std::string name = key.substr(slash + 1);
  const bool cluster_scoped = ns.empty();  // "/name": a ClusterSlurmCluster
  const ObjectCache* cache = cluster_scoped ? cluster_clusters_ : &clusters_;
  std::shared_ptr<const nlohmann::json> cached = cache ? cache->Get(ns, name) : nullptr;
  if (!cached) {
    if (tracker_) tracker_->ForgetCluster(key);
    return {};
  }
  absl::StatusOr<v1alpha1::SlurmCluster> cluster = ReadCluster(*cached, cluster_scoped);
  if (!cluster.ok()) {
    events_.Record(*cached, {kWarning, "InvalidSpec", "Validate",
                             absl::StrCat("The ", KindOf(cluster_scoped),
                                          " cannot be read: ", cluster.status().message())});
    return {};
  }
  const int64_t generation =
      cached->value("metadata", nlohmann::json::object()).value("generation", int64_t{0});
  const ClusterAccess access = ProbeAccess(*cached, cluster_scoped, cluster->spec(), access_);
  ProbeOutcome p;
  if (access.allowed) {
    p = Probe(key, access.identity, cluster->spec());
  } else {
    // Nothing is sent, and the orphan sweep forgets the cluster.
    p.refusal_reason = access.reason;
    p.refusal_message = absl::StrCat(access.message, ".");
    if (tracker_) tracker_->ForgetCluster(key);
  }
  if (agentplatform::HeldBackByBudget(p.call)) {
    // Not sent: the project's budget had no room for a probe. That says
    // nothing about the cluster, so its status stays as it is.
    const std::chrono::milliseconds after =
        std::max(agentplatform::RetryDelay(p.call).value_or(std::chrono::seconds(1)),
                 std::chrono::milliseconds(std::chrono::seconds(1)));
    VLOG(1) << KindOf(cluster_scoped) << " " << key << ": probe held back: " << p.call;
    return {Duration(after), false};
  }
  v1alpha1::SlurmClusterStatus desired =
      ClusterStatusFromProbe(cluster->status(), cluster->spec(), p, generation, clock_.Now());
  if (google::protobuf::util::MessageDifferencer::Equals(desired, cluster->status())) {
    return {NextProbe(desired), false};
  }
  return WriteStatus(key, cluster_scoped, *cached, *cluster, desired);
}

}  // namespace slurmop::reconcile
