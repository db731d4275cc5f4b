// File: controller/reconcile/cluster_reconciler.cc

#include "controller/reconcile/cluster_reconciler.h"

#include "absl/strings/str_cat.h"
#include "controller/api/json_codec.h"
#include "controller/api/types.h"
#include "controller/reconcile/cluster_status.h"
#include "controller/reconcile/conditions.h"
#include "controller/reconcile/job_descriptor.h"
#include "controller/reconcile/resource_types.h"
#include "controller/slurm/dialects.h"
#include "glog/logging.h"
#include "google/protobuf/util/message_differencer.h"

namespace slurmop::reconcile {

ProbeOutcome ClusterReconciler::Probe(const std::string& key, const std::string& ns,
                                      const v1alpha1::SlurmClusterSpec& spec) {
  ProbeOutcome p;
  p.spec = ValidateClusterSpec(spec);
  if (!p.spec.ok()) return p;
  const std::string version = slurm::VersionOrDefault(spec.slurm_api_version());
  absl::StatusOr<const slurm::Dialect*> dialect = slurm::DialectFor(version);
  absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> creds = credentials_.For(ns, spec);
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
    tracker_->RegisterCluster(ClusterEndpoint{key, version, ClusterNameOf(spec), *creds});
  absl::StatusOr<agentplatform::SlurmResponse> r =
      slurm_.Call(ClusterNameOf(spec), **creds, agentplatform::HttpMethod::kGet,
                  (*dialect)->PingPath(), nullptr);
  if (!r.ok()) {
    p.call = r.status();
    return p;
  }
  p.slurm_http_status = r->status;
  if (r->status != 200) {
    p.slurm_detail = r->body.is_string() ? r->body.get<std::string>()
                     : r->body.is_null() ? ""
                                         : r->body.dump();
    if (p.slurm_detail.size() > 300) p.slurm_detail.resize(300);
  }
  return p;
}

ReconcileResult ClusterReconciler::WriteStatus(const std::string& key, const nlohmann::json& cached,
                                               const v1alpha1::SlurmCluster& cluster,
                                               const v1alpha1::SlurmClusterStatus& desired) {
  const bool was_ready = IsConditionTrue(cluster.status().conditions(), kReady);
  const bool ready = IsConditionTrue(desired.conditions(), kReady);
  nlohmann::json updated = cached;
  updated["status"] = api::StatusToJson(desired);
  absl::StatusOr<nlohmann::json> w = kube_.UpdateStatus(SlurmClustersResource(), updated);
  if (!w.ok()) {
    if (kube::IsNotFound(w.status())) return {};
    LOG(WARNING) << "SlurmCluster " << key << ": status write failed: " << w.status();
    return {std::nullopt, true};
  }
  if (ready != was_ready || !ready) {
    const v1alpha1::Condition* c = FindCondition(desired.conditions(), kReady);
    events_.Record(*w, {ready ? kNormal : kWarning, c ? c->reason() : "Probe", "Probe",
                        c ? c->message() : ""});
  }
  LOG(INFO) << "SlurmCluster " << key << ": " << (ready ? "ready" : "not ready");
  return {NextProbe(desired), false};
}

ReconcileResult ClusterReconciler::Reconcile(const std::string& key) {
  size_t slash = key.find('/');
  if (slash == std::string::npos) return {};
  const std::string ns = key.substr(0, slash);
  const std::string name = key.substr(slash + 1);
  std::shared_ptr<const nlohmann::json> cached = clusters_.Get(ns, name);
  if (!cached) {
    if (tracker_) tracker_->ForgetCluster(key);
    return {};
  }
  absl::StatusOr<v1alpha1::SlurmCluster> cluster = api::SlurmClusterFromObject(*cached);
  if (!cluster.ok()) {
    events_.Record(*cached,
                   {kWarning, "InvalidSpec", "Validate",
                    absl::StrCat("The SlurmCluster cannot be read: ", cluster.status().message())});
    return {};
  }
  const int64_t generation =
      cached->value("metadata", nlohmann::json::object()).value("generation", int64_t{0});
  ProbeOutcome p = Probe(key, ns, cluster->spec());
  v1alpha1::SlurmClusterStatus desired =
      ClusterStatusFromProbe(cluster->status(), cluster->spec(), p, generation, clock_.Now());
  if (google::protobuf::util::MessageDifferencer::Equals(desired, cluster->status())) {
    return {NextProbe(desired), false};
  }
  return WriteStatus(key, *cached, *cluster, desired);
}

}  // namespace slurmop::reconcile
