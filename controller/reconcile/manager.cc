// File: controller/reconcile/manager.cc

#include "controller/reconcile/manager.h"

#include "absl/strings/str_cat.h"
#include "controller/agentplatform/cached_token_source.h"
#include "controller/api/resources.h"
#include "controller/api/types.h"
#include "controller/kube/watch_event.h"
#include "controller/reconcile/resource_types.h"
#include "controller/server/metric_names.h"
#include "controller/server/metrics.h"
#include "glog/logging.h"

namespace slurmop::reconcile {
namespace {

const std::string kClusterKeyPrefix = "scl:";

// SlurmJobs are many and are read one at a time (by the worker reconciling
// one): they are cached packed (informer.h, compact_cache).
kube::InformerOptions JobInformerOptions() {
  kube::InformerOptions options;
  options.compact_cache = true;
  return options;
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
      queue_(clock),
      jobs_view_(jobs_),
      clusters_view_(clusters_),
      executor_(kube, jobs_view_, clusters_view_, slurm_api, credentials, events, clock,
                options_.executor),
      cluster_reconciler_(kube, clusters_view_, slurm_api, credentials, events, clock) {
  jobs_ = std::make_unique<kube::Informer>(
      kube, SlurmJobsResource(), options_.watch_namespace,
      [this](const std::string& type, const std::shared_ptr<const nlohmann::json>& obj) {
        OnJobEvent(type, obj);
      },
      clock, JobInformerOptions());
  if (options_.batched_tracking) {
    tracker_ = std::make_unique<JobTracker>(
        [this](const ClusterEndpoint& c, agentplatform::HttpMethod m, const std::string& path,
               const agentplatform::CallOptions& options) {
          return executor_.CallSlurm(c.where, *c.credentials, m, path, nullptr, options);
        },
        clock,
        [this](const std::string& key) {
          executor_.MarkChanged(key);
          queue_.Add(key);
        },
        [this](const std::string& ns, const std::string& uid) { return KnownUid(ns, uid); },
        options_.tracker);
    executor_.SetTracker(tracker_.get());
    cluster_reconciler_.SetTracker(tracker_.get());
  }
  clusters_ = std::make_unique<kube::Informer>(
      kube, SlurmClustersResource(), options_.watch_namespace,
      [this](const std::string& type, const std::shared_ptr<const nlohmann::json>& obj) {
        OnClusterEvent(type, obj);
      },
      clock);
}

Manager::~Manager() { Stop(); }

void Manager::OnJobEvent(const std::string& type,
                         const std::shared_ptr<const nlohmann::json>& obj) {
  if (!obj) return;
  const std::string key =
      absl::StrCat(api::MetadataString(*obj, "namespace"), "/", api::MetadataString(*obj, "name"));
  // Keep the indexes, and wake the SlurmJobs that wait for this one.
  std::vector<std::string> wake = index_.Apply(type, *obj);
  queue_.Add(key);
  for (const std::string& k : wake) queue_.Add(k);
}

std::optional<JobTracker::Owner> Manager::KnownUid(const std::string& ns, const std::string& uid) {
  if (!jobs_ || !jobs_->HasSynced()) return std::nullopt;
  if (!options_.watch_namespace.empty() && ns != options_.watch_namespace) return std::nullopt;
  return index_.OwnerOfUid(uid);
}

void Manager::OnClusterEvent(const std::string& type,
                             const std::shared_ptr<const nlohmann::json>& obj) {
  if (!obj || !jobs_) return;
  const std::string ns = api::MetadataString(*obj, "namespace");
  const std::string name = api::MetadataString(*obj, "name");
  const std::string key = absl::StrCat(ns, "/", name);
  {
    int64_t generation =
        obj->value("metadata", nlohmann::json::object()).value("generation", int64_t{0});
    std::lock_guard<std::mutex> lock(generations_mu_);
    if (type == kube::kDeleted) {
      cluster_generations_.erase(key);
    } else {
      auto [it, inserted] = cluster_generations_.try_emplace(key, generation);
      if (!inserted && it->second == generation) return;  // a status write: nothing to redo
      it->second = generation;
      queue_.Add(kClusterKeyPrefix + key);
    }
  }
  std::vector<std::string> naming = index_.Naming(ns, name, options_.executor.default_cluster);
  for (const std::string& k : naming) queue_.Add(k);
}

void Manager::Start() {
  if (started_.exchange(true)) return;
  server::Metrics& m = server::GlobalMetrics();
  m.Declare(server::metric::kReconcileTotal, server::Metrics::Type::kCounter,
            "Total number of reconciliations per controller and result.");
  m.Declare(server::metric::kReconcileTimeSeconds, server::Metrics::Type::kHistogram,
            "Length of time per reconciliation per controller.", server::LatencyBuckets());
  m.Declare(server::metric::kWorkqueueDepth, server::Metrics::Type::kGauge,
            "Current depth of the work queue.");
  m.Declare(server::metric::kSlurmApiRequestsTotal, server::Metrics::Type::kCounter,
            "callSlurmRestApi calls by method, Slurm path template and code (Slurm's HTTP "
            "status, or the canonical error code when no Slurm answer arrived).");
  m.Declare(server::metric::kSlurmApiRequestDurationSeconds, server::Metrics::Type::kHistogram,
            "Latency of callSlurmRestApi calls, retries included.", server::LatencyBuckets());
  m.Declare(server::metric::kJobQueueWaitSeconds, server::Metrics::Type::kHistogram,
            "Time Slurm jobs waited in the queue (start - submit), observed when they end.",
            server::JobDurationBuckets());
  m.Declare(server::metric::kJobRunSeconds, server::Metrics::Type::kHistogram,
            "Run time of Slurm jobs (end - start) by final state.", server::JobDurationBuckets());
  m.Declare(server::metric::kTokenRefreshesTotal, server::Metrics::Type::kCounter,
            "Access token exchanges by credential type and result (ok, or the error code).");
  agentplatform::SetTokenRefreshObserver([](const std::string& source, const absl::Status& s) {
    // A bounded label from the fetcher's description (which names accounts).
    auto starts = [&](const char* p) { return source.rfind(p, 0) == 0; };
    const std::string type = starts("the metadata server") ? "metadata_server"
                             : starts("service account")   ? "service_account"
                             : starts("workload identity") ? "external_account"
                             : starts("user")              ? "authorized_user"
                                                           : "other";
    server::GlobalMetrics().Add(
        server::metric::kTokenRefreshesTotal,
        {{"type", type}, {"result", s.ok() ? "ok" : absl::StatusCodeToString(s.code())}});
  });
  m.Declare(server::metric::kTrackedJobs, server::Metrics::Type::kGauge,
            "Active Slurm jobs followed through the per-cluster batched list.");
  m.SetCallback(server::metric::kTrackedJobs, [this] {
    return std::vector<std::pair<server::Labels, double>>{
        {{}, tracker_ ? static_cast<double>(tracker_->TrackedCount()) : 0.0}};
  });
  m.Declare(server::metric::kOrphansCancelledTotal, server::Metrics::Type::kCounter,
            "Slurm jobs carrying the operator's tag whose SlurmJob no longer existed, cancelled by "
            "the orphan sweep.");
  m.SetCallback(server::metric::kOrphansCancelledTotal, [this] {
    return std::vector<std::pair<server::Labels, double>>{
        {{}, tracker_ ? static_cast<double>(tracker_->OrphansCancelled()) : 0.0}};
  });
  m.SetCallback(server::metric::kWorkqueueDepth, [this] {
    return std::vector<std::pair<server::Labels, double>>{
        {{{"name", "slurmjob"}}, static_cast<double>(queue_.Len())}};
  });
  m.Declare(server::metric::kSlurmJobs, server::Metrics::Type::kGauge,
            "SlurmJobs known to the operator, by status.phase (\"\" before the first status).");
  m.SetCallback(server::metric::kSlurmJobs, [this] {
    std::vector<std::pair<server::Labels, double>> out;
    for (const auto& [phase, n] : index_.CountByPhase()) out.push_back({{{"phase", phase}}, n});
    return out;
  });
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

bool Manager::Synced() const { return jobs_->HasSynced() && clusters_->HasSynced(); }

void Manager::Stop() {
  if (!started_.exchange(false)) return;
  if (tracker_) tracker_->Stop();
  jobs_->Stop();
  clusters_->Stop();
  queue_.ShutDown();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void Manager::Work() {
  while (true) {
    std::optional<std::string> key = queue_.Get();
    if (!key) return;
    const bool is_cluster = key->rfind(kClusterKeyPrefix, 0) == 0;
    const auto started = std::chrono::steady_clock::now();
    ReconcileResult r = is_cluster
                            ? cluster_reconciler_.Reconcile(key->substr(kClusterKeyPrefix.size()))
                            : executor_.Reconcile(*key);
    const server::Labels controller = {{"controller", is_cluster ? "slurmcluster" : "slurmjob"}};
    server::Labels result = controller;
    result["result"] = r.retry_with_backoff ? "error"
                       : r.requeue_after    ? "requeue_after"
                                            : "success";
    server::GlobalMetrics().Add(server::metric::kReconcileTotal, result);
    server::GlobalMetrics().Observe(
        server::metric::kReconcileTimeSeconds, controller,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    if (r.retry_with_backoff) {
      queue_.AddRateLimited(*key);
    } else {
      queue_.Forget(*key);
      if (r.requeue_after) queue_.AddAfter(*key, *r.requeue_after);
    }
    queue_.Done(*key);
  }
}

}  // namespace slurmop::reconcile
