// File: controller/reconcile/manager.cc

#include "controller/reconcile/manager.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/agentplatform/cached_token_source.h"
#include "controller/api/resources.h"
#include "controller/api/types.h"
#include "controller/common/log_context.h"
#include "controller/kube/request_deadline.h"
#include "controller/kube/watch_event.h"
#include "controller/reconcile/resource_types.h"
#include "controller/reconcile/slurmjob_packer.h"
#include "controller/reconcile/work_priority.h"
#include "controller/server/metric_names.h"
#include "controller/server/metrics.h"
#include "glog/logging.h"

namespace slurmop::reconcile {
namespace {

const std::string kClusterKeyPrefix = "scl:";
const std::string kProtectKeyPrefix = "protect:";  // cluster_protector.h
namespace metric = server::metric;

// A fresh random id for one reconcile (controller-runtime logs a UUID as reconcileID).
std::string NewReconcileId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const uint64_t a = rng(), b = rng();
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", a >> 32, (a >> 16) & 0xffff, a & 0xffff,
                         b >> 48, b & 0xffffffffffffULL);
}

// The controller label of controller-runtime's series.
const char* ControllerName(bool is_cluster) { return is_cluster ? "slurmcluster" : "slurmjob"; }

// SlurmJobs are many and are read one at a time (by the worker reconciling
// one): they are cached packed (informer.h, compact_cache).
kube::InformerOptions JobInformerOptions(const std::string& label_selector) {
  kube::InformerOptions options;
  options.compact_cache = true;
  options.packer = SlurmJobPacker();
  options.label_selector = label_selector;
  return options;
}

kube::InformerOptions Selecting(const std::string& label_selector) {
  kube::InformerOptions options;
  options.label_selector = label_selector;
  return options;
}

// The probe of RetryScheduler: does the API server answer at all? Any answer
// counts (a 403 too). kube-system exists in every cluster and the operator
// may get it (it reads its UID as the installation id): a point read, sent
// only while keys wait for the API server, at most once a second.
constexpr std::chrono::seconds kProbeTimeout{5};
bool ApiServerAnswers(kube::Client& kube) {
  kube::ScopedRequestDeadline deadline(std::chrono::steady_clock::now() + kProbeTimeout);
  absl::StatusOr<nlohmann::json> ns = kube.Get(kube::Namespaces(), "", "kube-system");
  return ns.ok() || !kube::IsUnreachable(ns.status());
}

}  // namespace

std::shared_ptr<const nlohmann::json> Manager::CacheView::Get(std::string_view ns,
                                                              std::string_view name) const {
  return informer_ ? informer_->Get(ns, name) : nullptr;
}

Manager::Manager(kube::Client& kube, agentplatform::SlurmApi& slurm_api,
                 CredentialsResolver& credentials, EventSink& events, const Clock& clock,
                 ManagerOptions options)
    : clock_(clock),
      options_(std::move(options)),
      queue_(clock, {}, "slurmjob"),
      retry_(queue_, clock, [&kube] { return ApiServerAnswers(kube); }),
      jobs_view_(jobs_),
      clusters_view_(clusters_),
      cluster_clusters_view_(cluster_clusters_),
      namespaces_view_(namespaces_),
      executor_(kube, jobs_view_, clusters_view_, slurm_api, credentials, events, clock,
                options_.executor),
      cluster_reconciler_(kube, clusters_view_, slurm_api, credentials, events, clock),
      protector_(kube, clusters_view_,
                 {[this] { return jobs_ && jobs_->HasSynced(); },
                  [this](const std::string& ns, const std::string& name) {
                    return !index_.Naming(ns, name, options_.executor.default_cluster).empty();
                  }},
                 &events) {
  if (options_.prioritize_submits && options_.workers_kept_for_submits > 0 &&
      options_.workers > options_.workers_kept_for_submits) {
    queue_.SetNormalLimit(
        static_cast<size_t>(options_.workers - options_.workers_kept_for_submits));
  }
  executor_.SetClusterScopedCaches(&cluster_clusters_view_, &namespaces_view_);
  executor_.SetProtectionProblems(&protector_.problems());
  cluster_reconciler_.SetClusterAccess(&cluster_clusters_view_, options_.executor.access);
  jobs_ = std::make_unique<kube::Informer>(
      kube, SlurmJobsResource(), options_.watch_namespace,
      [this](const std::string& type, const std::shared_ptr<const nlohmann::json>& obj) {
        OnJobEvent(type, obj);
      },
      clock, JobInformerOptions(options_.label_selector));
  if (options_.batched_tracking) MakeTracker();
  MakeClusterInformers(kube);
}

void Manager::MakeTracker() {
  tracker_ = std::make_unique<JobTracker>(
      [this](const ClusterEndpoint& c, agentplatform::HttpMethod m, const std::string& path,
             const agentplatform::CallOptions& options) {
        return executor_.CallSlurm(c.where, *c.credentials, m, path, nullptr, options);
      },
      clock_,
      [this](const std::string& key) {
        executor_.MarkChanged(key);
        queue_.Add(key);
      },
      [this](const std::string& ns, const std::string& uid) { return KnownUid(ns, uid); },
      SweepOptions());
  executor_.SetTracker(tracker_.get());
  cluster_reconciler_.SetTracker(tracker_.get());
}

void Manager::MakeClusterInformers(kube::Client& kube) {
  clusters_ = std::make_unique<kube::Informer>(
      kube, SlurmClustersResource(), options_.watch_namespace,
      [this](const std::string& type, const std::shared_ptr<const nlohmann::json>& obj) {
        OnClusterEvent(type, obj);
      },
      clock_, Selecting(options_.label_selector));
  // Cluster-scoped: watched across the cluster even with --namespace.
  cluster_clusters_ = std::make_unique<kube::Informer>(
      kube, ClusterSlurmClustersResource(), "",
      [this](const std::string& type, const std::shared_ptr<const nlohmann::json>& obj) {
        OnClusterEvent(type, obj, /*cluster_scoped=*/true);
      },
      clock_, Selecting(options_.label_selector));
  namespaces_ = std::make_unique<kube::Informer>(
      kube, kube::Namespaces(), "",
      [this](const std::string&, const std::shared_ptr<const nlohmann::json>& obj) {
        OnNamespaceEvent(obj);
      },
      clock_);
}

Manager::~Manager() { Stop(); }

void Manager::OnJobEvent(const std::string& type,
                         const std::shared_ptr<const nlohmann::json>& obj) {
  if (!obj) return;
  const std::string key =
      absl::StrCat(api::MetadataString(*obj, "namespace"), "/", api::MetadataString(*obj, "name"));
  const std::string& dflt = options_.executor.default_cluster;
  const std::optional<std::string> cluster_before = index_.NamespacedClusterOf(key, dflt);
  // Keep the indexes, and wake the SlurmJobs that wait for this one.
  std::vector<std::string> wake = index_.Apply(type, *obj);
  const std::optional<std::string> cluster_after = index_.NamespacedClusterOf(key, dflt);
  // One shard among others: a SlurmJob that appears after the first list may come from another
  // shard (its label changed), whose replica may have just sent its submit.
  if (type == kube::kAdded && !options_.label_selector.empty() && jobs_ && jobs_->HasSynced()) {
    executor_.AnchorSettleWindowFor(key, clock_.Now());
  }
  queue_.Add(key, options_.prioritize_submits ? WorkPriorityOf(type, *obj)
                                              : kube::WorkQueue::Priority::kNormal);
  for (const std::string& k : wake) queue_.Add(k);
  // A SlurmJob started or stopped naming a SlurmCluster: whether it is kept may change.
  if (type != std::string(kube::kModified) || cluster_before != cluster_after) {
    for (const std::optional<std::string>& c : {cluster_before, cluster_after}) {
      if (c) queue_.Add(kProtectKeyPrefix + *c);
    }
  }
  if (job_observer_) job_observer_(type, obj);
}

std::optional<JobTracker::Owner> Manager::KnownUid(const std::string& ns, const std::string& uid) {
  if (!jobs_ || !jobs_->HasSynced()) return std::nullopt;
  if (!options_.watch_namespace.empty() && ns != options_.watch_namespace) return std::nullopt;
  TagOwner owner = index_.OwnerOfUid(uid);
  // One shard among others: a SlurmJob this manager does not see may be another shard's.
  if (!owner.exists && !options_.label_selector.empty()) return std::nullopt;
  return owner;
}

TrackerOptions Manager::SweepOptions() {
  TrackerOptions o = options_.tracker;
  o.installation = options_.executor.installation;
  // Any cluster: a status written before it recorded where its job runs
  // could name the job on any of them, and leaving an orphan running is the
  // lesser harm than cancelling a job a SlurmJob still tracks.
  o.named_by_status = [this](const ClusterEndpoint&, int64_t id) { return index_.NamesJobId(id); };
  return o;
}

void Manager::OnClusterEvent(const std::string& type,
                             const std::shared_ptr<const nlohmann::json>& obj,
                             bool cluster_scoped) {
  if (!obj || !jobs_) return;
  if (cluster_observer_) cluster_observer_(cluster_scoped, type, obj);
  const std::string ns = cluster_scoped ? "" : api::MetadataString(*obj, "namespace");
  const std::string name = api::MetadataString(*obj, "name");
  const std::string key = absl::StrCat(ns, "/", name);
  // Its finalizer, annotation, deletion or Secret reference may have changed (cheap: caches only).
  if (!cluster_scoped && type != kube::kDeleted) queue_.Add(kProtectKeyPrefix + key);
  const ClusterChanges::Wake wake =
      cluster_changes_.Observe(key, type == kube::kDeleted, !cluster_scoped, *obj);
  if (wake.cluster) queue_.Add(kClusterKeyPrefix + key);
  if (!wake.jobs) return;  // a status write: nothing to redo
  std::vector<std::string> naming =
      cluster_scoped ? index_.NamingClusterScoped(name)
                     : index_.Naming(ns, name, options_.executor.default_cluster);
  for (const std::string& k : naming) queue_.Add(k);
}

void Manager::OnNamespaceEvent(const std::shared_ptr<const nlohmann::json>& obj) {
  if (!obj || !jobs_) return;
  for (const std::string& k :
       index_.InNamespaceNamingClusterScoped(api::MetadataString(*obj, "name"))) {
    queue_.Add(k);
  }
}

void Manager::Start() {
  if (started_.exchange(true)) return;
  if (options_.register_metrics) RegisterMetrics();
  namespaces_->Start();
  cluster_clusters_->Start();
  clusters_->Start();
  jobs_->Start();
  if (tracker_) tracker_->Start();
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { Work(); });
  }
  LOG(INFO) << "controller started with " << workers_.size() << " workers, watching "
            << (options_.watch_namespace.empty() ? std::string("all namespaces")
                                                 : "namespace " + options_.watch_namespace);
}

bool Manager::Synced() const {
  return jobs_->HasSynced() && clusters_->HasSynced() && cluster_clusters_->HasSynced() &&
         namespaces_->HasSynced();
}

void Manager::Stop() {
  if (!started_.exchange(false)) return;
  // The queue first: workers finish the reconcile they are in and start no
  // other (Work) while the tracker waits for its lists in flight (a list of an
  // unreachable cluster retries for seconds; meanwhile a worker would keep
  // re-submitting to it and outlast the shutdown grace period).
  queue_.ShutDown();
  if (tracker_) tracker_->Stop();
  jobs_->Stop();
  clusters_->Stop();
  cluster_clusters_->Stop();
  namespaces_->Stop();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

LogFields Manager::ReconcileLogFields(bool is_cluster, const std::string& key) const {
  // "scl:ns/name" and "protect:ns/name" are SlurmCluster keys.
  const std::string object = is_cluster ? key.substr(key.find(':') + 1) : key;
  const size_t slash = object.find('/');
  LogFields fields = {{"controller", ControllerName(is_cluster)},
                      {"namespace", object.substr(0, slash)},
                      {"name", slash == std::string::npos ? "" : object.substr(slash + 1)},
                      {"reconcileID", NewReconcileId()}};
  if (is_cluster) return fields;
  for (auto& field : index_.LogFieldsOf(key, options_.executor.default_cluster)) {
    fields.push_back(std::move(field));
  }
  return fields;
}

void Manager::Work() {
  while (true) {
    std::optional<std::string> key = queue_.Get();
    if (!key) return;
    if (queue_.ShuttingDown()) {
      // Stopping: start no new reconcile. Nothing is lost, every object is
      // reconciled again from the next leader's (or process's) initial list.
      queue_.Done(*key);
      return;
    }
    if (RetryScheduler::IsProbeKey(*key)) {
      retry_.Probe();
      queue_.Done(*key);
      continue;
    }
    const bool is_protect = key->rfind(kProtectKeyPrefix, 0) == 0;
    const bool is_cluster = is_protect || key->rfind(kClusterKeyPrefix, 0) == 0;
    const auto started = std::chrono::steady_clock::now();
    ScopedLogContext log_context(ReconcileLogFields(is_cluster, *key));
    active_[is_cluster] += 1;
    ReconcileResult r = is_protect ? protector_.Reconcile(key->substr(kProtectKeyPrefix.size()))
                        : is_cluster
                            ? cluster_reconciler_.Reconcile(key->substr(kClusterKeyPrefix.size()))
                            : executor_.Reconcile(*key);
    active_[is_cluster] -= 1;
    const server::Labels controller = {{"controller", ControllerName(is_cluster)}};
    server::Labels result = controller;
    result["result"] = r.retry_with_backoff ? "error"
                       : r.requeue_after    ? "requeue_after"
                                            : "success";
    server::Metrics& m = server::GlobalMetrics();
    m.Add(metric::kReconcileTotal, result);
    if (r.retry_with_backoff) m.Add(metric::kReconcileErrorsTotal, controller);
    m.Observe(metric::kReconcileTimeSeconds, controller,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    retry_.Requeue(*key, r);
    queue_.Done(*key);
  }
}

}  // namespace slurmop::reconcile
