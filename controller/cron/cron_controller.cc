// File: controller/cron/cron_controller.cc

#include "controller/cron/cron_controller.h"

#include "absl/strings/str_cat.h"
#include "controller/api/cron_resources.h"
#include "controller/api/types.h"
#include "controller/cron/cron_resource.h"
#include "controller/server/metric_names.h"
#include "controller/server/metrics.h"
#include "glog/logging.h"

namespace slurmop::cron {
namespace {

std::string KeyOf(const nlohmann::json& obj) {
  return absl::StrCat(api::MetadataString(obj, "namespace"), "/", api::MetadataString(obj, "name"));
}

// controller-runtime's reconcile series, with controller="slurmcronjob".
void CountReconcile(const reconcile::ReconcileResult& r, double seconds) {
  namespace metric = server::metric;
  const server::Labels controller = {{"controller", "slurmcronjob"}};
  server::Labels result = controller;
  result["result"] = r.retry_with_backoff ? "error" : r.requeue_after ? "requeue_after" : "success";
  server::Metrics& m = server::GlobalMetrics();
  m.Add(metric::kReconcileTotal, result);
  if (r.retry_with_backoff) m.Add(metric::kReconcileErrorsTotal, controller);
  m.Observe(metric::kReconcileTimeSeconds, controller, seconds);
}

}  // namespace

std::shared_ptr<const nlohmann::json> CronController::CacheView::Get(std::string_view ns,
                                                                     std::string_view name) const {
  return informer_ ? informer_->Get(ns, name) : nullptr;
}

CronController::CronController(kube::Client& kube, reconcile::EventSink& events, const Clock& clock,
                               std::string watch_namespace, std::function<bool()> jobs_synced)
    : queue_(clock, {}, "slurmcronjob"),
      jobs_synced_(std::move(jobs_synced)),
      crons_view_(crons_),
      executor_(
          kube, crons_view_,
          [this](const std::string& ns, const std::string& name) { return children_.Of(ns, name); },
          events, clock) {
  crons_ = std::make_unique<kube::Informer>(
      kube, SlurmCronJobsResource(), watch_namespace,
      [this](const std::string&, const std::shared_ptr<const nlohmann::json>& obj) {
        if (obj) queue_.Add(KeyOf(*obj));
      },
      clock);
}

CronController::~CronController() { Stop(); }

void CronController::OnJobEvent(const std::string& type,
                                const std::shared_ptr<const nlohmann::json>& obj) {
  for (const std::string& key : children_.Apply(type, obj)) queue_.Add(key);
}

void CronController::Start() {
  if (started_.exchange(true)) return;
  crons_->Start();
  worker_ = std::thread([this] { Work(); });
  LOG(INFO) << "SlurmCronJob controller started";
}

bool CronController::Synced() const { return crons_->HasSynced() && jobs_synced_(); }

void CronController::Stop() {
  if (!started_.exchange(false)) return;
  queue_.ShutDown();
  crons_->Stop();
  if (worker_.joinable()) worker_.join();
}

void CronController::Work() {
  while (std::optional<std::string> key = queue_.Get()) {
    if (queue_.ShuttingDown()) {
      queue_.Done(*key);
      return;
    }
    // Act only on complete caches: a child not listed yet must not look missing.
    if (!Synced()) {
      queue_.AddAfter(*key, std::chrono::milliseconds(200));
      queue_.Done(*key);
      continue;
    }
    const auto started = std::chrono::steady_clock::now();
    const reconcile::ReconcileResult r = executor_.Reconcile(*key);
    CountReconcile(
        r, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    if (r.retry_with_backoff) {
      queue_.AddRateLimited(*key);
    } else {
      queue_.Forget(*key);
      if (r.requeue_after) queue_.AddAfter(*key, *r.requeue_after);
    }
    queue_.Done(*key);
  }
}

}  // namespace slurmop::cron
