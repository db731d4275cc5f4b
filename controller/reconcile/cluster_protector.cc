// File: controller/reconcile/cluster_protector.cc

#include "controller/reconcile/cluster_protector.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "controller/api/finalizers.h"
#include "controller/api/types.h"
#include "controller/common/json_members.h"
#include "controller/kube/errors.h"
#include "controller/kube/resource_types.h"
#include "controller/reconcile/resource_types.h"
#include "glog/logging.h"

namespace slurmop::reconcile {
namespace {

using std::chrono::seconds;

using api::HasFinalizer;

std::string Annotation(const nlohmann::json& obj, const char* name) {
  const nlohmann::json* meta = FindMember(obj, "metadata");
  const nlohmann::json* annotations = meta ? FindMember(*meta, "annotations") : nullptr;
  return annotations ? StringMember(*annotations, name) : "";
}

// A merge patch setting `finalizer` present or absent, conditional on the resourceVersion so that
// it fails with a conflict instead of dropping a finalizer someone else just added.
nlohmann::json FinalizerPatch(const nlohmann::json& obj, const char* finalizer, bool present) {
  std::vector<std::string> fins = api::Finalizers(obj);
  fins.erase(std::remove(fins.begin(), fins.end(), finalizer), fins.end());
  if (present) fins.emplace_back(finalizer);
  return {
      {"metadata",
       {{"finalizers", fins}, {"resourceVersion", api::MetadataString(obj, "resourceVersion")}}}};
}

// The conditional merge patch that leaves `owners` in kProtectedForAnnotation of Secret `s`, with
// kCredentialsInUseFinalizer on it exactly while some SlurmCluster owns it.
nlohmann::json OwnersPatch(const nlohmann::json& s, const std::set<std::string>& owners) {
  nlohmann::json patch = FinalizerPatch(s, kCredentialsInUseFinalizer, !owners.empty());
  patch["metadata"]["annotations"][kProtectedForAnnotation] =
      owners.empty() ? nlohmann::json(nullptr) : nlohmann::json(absl::StrJoin(owners, ","));
  return patch;
}

// What `step` does, for a message.
std::string StepDescription(const ProtectionStep& step) {
  return step.kind == ProtectionStep::Kind::kPatchCluster
             ? "patching the SlurmCluster's finalizer and annotations"
             : absl::StrCat("patching the finalizer of Secret ", step.secret);
}

// The Warning Event for a protection step the API server refused.
EventSpec RefusalEvent(const ProtectionFacts& f, const ProtectionStep& step,
                       const absl::Status& s) {
  const std::string what = StepDescription(step);
  const std::string failed =
      f.in_use ? absl::StrCat(
                     "Keeping the SlurmCluster and its credentials Secret while SlurmJobs "
                     "name it failed (",
                     what, "): ", s.message(),
                     ". Its SlurmJobs submit nothing until it is kept (a namespace "
                     "deletion could otherwise leave their jobs running).")
               : absl::StrCat(
                     "Releasing the SlurmCluster and its credentials Secret, which no "
                     "SlurmJob names any more, failed (",
                     what, "): ", s.message(),
                     ". Their deletion (or their namespace's) waits until it succeeds.");
  return {kWarning, "ProtectionFailed", "Protect",
          absl::StrCat(failed,
                       " Check that the operator may patch SlurmClusters and Secrets in this "
                       "namespace and that no admission policy refuses its finalizers; retrying.")};
}

}  // namespace

ProtectionFacts ProtectionFactsOf(const nlohmann::json& cluster, bool in_use) {
  ProtectionFacts f;
  f.in_use = in_use;
  f.deleting = !api::MetadataString(cluster, "deletionTimestamp").empty();
  f.has_finalizer = HasFinalizer(cluster, kClusterInUseFinalizer);
  const nlohmann::json* spec = FindMember(cluster, "spec");
  const nlohmann::json* ref = spec ? FindMember(*spec, "credentialsSecretRef") : nullptr;
  if (ref) f.wanted_secret = StringMember(*ref, "name");
  f.protected_secret = Annotation(cluster, kProtectedSecretAnnotation);
  f.pending_secret = Annotation(cluster, kPendingSecretAnnotation);
  return f;
}

ReconcileResult ClusterProtector::Reconcile(const std::string& key) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos || slash == 0) return {};
  const std::string ns = key.substr(0, slash);
  const std::string name = key.substr(slash + 1);
  std::shared_ptr<const nlohmann::json> cached = clusters_.Get(ns, name);
  if (!cached) {
    problems_.Clear(key);
    return {};
  }
  if (!jobs_.synced()) return {seconds(1), false};
  const ProtectionFacts facts = ProtectionFactsOf(*cached, jobs_.name_cluster(ns, name));
  nlohmann::json cluster = *cached;  // as the previous step's patch left it
  for (const ProtectionStep& step : PlanProtection(facts)) {
    if (absl::Status s = Apply(ns, cluster, step); !s.ok()) {
      LOG(WARNING) << "SlurmCluster " << key << ": keeping it (and its Secret) while SlurmJobs "
                   << "name it: " << s;
      if (!kube::IsConflict(s) && !kube::IsUnreachable(s)) {
        if (events_) events_->Record(*cached, RefusalEvent(facts, step, s));
        if (facts.in_use) {
          problems_.Set(key, absl::StrCat(StepDescription(step), " failed: ", s.message()));
        }
      }
      // No answer at all: retried as soon as the API server answers again (retry_scheduler.h).
      return {std::nullopt, true, kube::IsUnreachable(s)};
    }
  }
  problems_.Clear(key);
  return {};
}

absl::Status ClusterProtector::Apply(const std::string& ns, nlohmann::json& cluster,
                                     const ProtectionStep& step) {
  switch (step.kind) {
    case ProtectionStep::Kind::kProtectSecret:
      return ProtectSecret(ns, api::MetadataString(cluster, "name"), step.secret);
    case ProtectionStep::Kind::kReleaseSecret:
      return ReleaseSecret(ns, api::MetadataString(cluster, "name"), step.secret);
    case ProtectionStep::Kind::kPatchCluster:
      return PatchCluster(ns, cluster, step);
  }
  return absl::OkStatus();
}

absl::Status ClusterProtector::ProtectSecret(const std::string& ns, const std::string& cluster,
                                             const std::string& secret) {
  absl::StatusOr<nlohmann::json> s = kube_.Get(kube::Secrets(), ns, secret);
  if (kube::IsNotFound(s.status())) return absl::OkStatus();  // nothing to keep
  if (!s.ok()) return s.status();
  // A Secret already being deleted cannot get a new finalizer; the jobs' cancels then fail with
  // a condition naming it.
  if (!api::MetadataString(*s, "deletionTimestamp").empty()) return absl::OkStatus();
  absl::StatusOr<std::set<std::string>> owners = Owners(ns, *s, secret);
  if (!owners.ok()) return owners.status();
  if (HasFinalizer(*s, kCredentialsInUseFinalizer) && owners->contains(cluster)) {
    return absl::OkStatus();
  }
  owners->insert(cluster);
  return kube_.Patch(kube::Secrets(), ns, secret, kube::PatchType::kMerge, OwnersPatch(*s, *owners))
      .status();
}

absl::Status ClusterProtector::ReleaseSecret(const std::string& ns, const std::string& cluster,
                                             const std::string& secret) {
  absl::StatusOr<nlohmann::json> s = kube_.Get(kube::Secrets(), ns, secret);
  if (kube::IsNotFound(s.status())) return absl::OkStatus();
  if (!s.ok()) return s.status();
  if (!HasFinalizer(*s, kCredentialsInUseFinalizer)) return absl::OkStatus();
  absl::StatusOr<std::set<std::string>> owners = Owners(ns, *s, secret);
  if (!owners.ok()) return owners.status();
  if (owners->erase(cluster) == 0 && !owners->empty()) return absl::OkStatus();
  absl::StatusOr<nlohmann::json> r =
      kube_.Patch(kube::Secrets(), ns, secret, kube::PatchType::kMerge, OwnersPatch(*s, *owners));
  return kube::IsNotFound(r.status()) ? absl::OkStatus() : r.status();
}

absl::StatusOr<std::set<std::string>> ClusterProtector::Owners(const std::string& ns,
                                                               const nlohmann::json& s,
                                                               const std::string& secret) {
  // Without the finalizer nobody keeps it (whatever a leftover annotation says).
  if (!HasFinalizer(s, kCredentialsInUseFinalizer)) return std::set<std::string>{};
  const nlohmann::json* meta = FindMember(s, "metadata");
  const nlohmann::json* annotations = meta ? FindMember(*meta, "annotations") : nullptr;
  if (annotations && FindMember(*annotations, kProtectedForAnnotation)) {
    std::set<std::string> owners;
    for (absl::string_view name : absl::StrSplit(
             StringMember(*annotations, kProtectedForAnnotation), ',', absl::SkipEmpty())) {
      owners.emplace(name);
    }
    return owners;
  }
  // Kept by an operator from before the annotation: by every SlurmCluster that is kept and whose
  // annotation names it.
  absl::StatusOr<nlohmann::json> clusters = kube_.List(SlurmClustersResource(), ns, {});
  if (!clusters.ok()) return clusters.status();
  std::set<std::string> owners;
  for (const nlohmann::json& c : clusters->value("items", nlohmann::json::array())) {
    if (HasFinalizer(c, kClusterInUseFinalizer) &&
        Annotation(c, kProtectedSecretAnnotation) == secret) {
      owners.insert(api::MetadataString(c, "name"));
    }
  }
  return owners;
}

absl::Status ClusterProtector::PatchCluster(const std::string& ns, nlohmann::json& cluster,
                                            const ProtectionStep& step) {
  nlohmann::json patch = FinalizerPatch(cluster, kClusterInUseFinalizer, step.finalizer);
  const auto value = [](const std::string& s) {
    return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);  // null deletes it
  };
  patch["metadata"]["annotations"][kProtectedSecretAnnotation] = value(step.secret);
  patch["metadata"]["annotations"][kPendingSecretAnnotation] = value(step.pending);
  absl::StatusOr<nlohmann::json> r =
      kube_.Patch(SlurmClustersResource(), ns, api::MetadataString(cluster, "name"),
                  kube::PatchType::kMerge, patch);
  if (kube::IsNotFound(r.status())) return absl::OkStatus();
  if (r.ok()) {
    cluster = *r;
    LOG(INFO) << "SlurmCluster " << ns << "/" << api::MetadataString(cluster, "name") << ": "
              << (step.finalizer ? "kept while SlurmJobs name it" : "no SlurmJob names it")
              << (step.secret.empty() ? "" : absl::StrCat(", Secret ", step.secret, " kept"));
  }
  return r.status();
}

}  // namespace slurmop::reconcile
