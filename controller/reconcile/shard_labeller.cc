// File: controller/reconcile/shard_labeller.cc
//
// See shard_labeller.h.

#include "controller/reconcile/shard_labeller.h"

#include <glog/logging.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "controller/api/resources.h"
#include "controller/kube/errors.h"
#include "controller/reconcile/resource_types.h"
#include "controller/reconcile/write_refusal.h"

namespace slurmop::reconcile {
namespace {

const kube::ResourceType& ResourceOf(std::string_view kind) {
  if (kind == api::kSlurmJobKind) return SlurmJobsResource();
  if (kind == api::kClusterSlurmClusterKind) return ClusterSlurmClustersResource();
  return SlurmClustersResource();
}

std::string Meta(const nlohmann::json& obj, const char* field) {
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return "";
  auto v = md->find(field);
  return v != md->end() && v->is_string() ? v->get<std::string>() : "";
}

}  // namespace

ShardLabeller::ShardLabeller(kube::Client& kube, const Clock& clock, EventSink& events, int shards,
                             std::string watch_namespace, std::string default_cluster, int workers)
    : kube_(kube),
      clock_(clock),
      events_(events),
      shards_(shards),
      ns_(std::move(watch_namespace)),
      default_cluster_(std::move(default_cluster)),
      queue_(clock, {}, "shardlabeller"),
      workers_(std::max(1, workers)) {}

ShardLabeller::~ShardLabeller() { Stop(); }

void ShardLabeller::Start() {
  if (started_.exchange(true)) return;
  for (int i = 0; i < workers_; ++i) worker_threads_.emplace_back([this] { Work(); });
}

void ShardLabeller::WatchUnlabelled() {
  if (!informers_.empty()) return;
  kube::InformerOptions options;
  options.label_selector = UnlabelledSelector(shards_);
  for (std::string_view kind :
       {api::kClusterSlurmClusterKind, api::kSlurmClusterKind, api::kSlurmJobKind}) {
    const std::string k(kind);
    informers_.push_back(std::make_unique<kube::Informer>(
        kube_, ResourceOf(kind), kind == api::kClusterSlurmClusterKind ? "" : ns_,
        [this, k](const std::string& type, const std::shared_ptr<const nlohmann::json>& obj) {
          if (type != kube::kDeleted) Offer(k, obj);
        },
        clock_, options));
  }
  for (auto& i : informers_) i->Start();
}

bool ShardLabeller::Synced() const {
  for (const auto& i : informers_) {
    if (!i->HasSynced()) return false;
  }
  return true;
}

void ShardLabeller::Offer(std::string_view kind, const std::shared_ptr<const nlohmann::json>& obj) {
  if (!obj) return;
  const int want = ShardOfObject(kind, *obj, default_cluster_, shards_);
  if (ShardLabelOf(*obj) == std::to_string(want)) return;
  const std::string key =
      absl::StrCat(std::string(kind), "|", Meta(*obj, "namespace"), "/", Meta(*obj, "name"));
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_[key] = obj;
  }
  queue_.Add(key);
}

bool ShardLabeller::Label(const std::string& key) {
  std::shared_ptr<const nlohmann::json> obj;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(key);
    if (it == pending_.end()) return true;
    obj = it->second;
  }
  const std::shared_ptr<const nlohmann::json> offered = obj;
  const std::string kind = key.substr(0, key.find('|'));
  const kube::ResourceType& rt = ResourceOf(kind);
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int want = ShardOfObject(kind, *obj, default_cluster_, shards_);
    std::optional<nlohmann::json> patch = ShardLabelPatch(*obj, want);
    if (!patch) break;
    absl::StatusOr<nlohmann::json> r = kube_.Patch(rt, Meta(*obj, "namespace"), Meta(*obj, "name"),
                                                   kube::PatchType::kMerge, *patch);
    if (r.ok()) {
      patched_ += 1;
      VLOG(1) << "labelled " << kind << " " << Meta(*obj, "namespace") << "/" << Meta(*obj, "name")
              << " shard " << want;
      break;
    }
    if (kube::IsNotFound(r.status())) break;
    if (r.status().code() != absl::StatusCode::kAborted) {
      LOG(WARNING) << "cannot label " << key << ": " << r.status();
      if (RefusedForGood(r.status())) {
        events_.Record(*obj, WriteRefusedEvent(r.status(), "shard label", kind));
      }
      return false;
    }
    // 409: changed meanwhile; label what it is now.
    absl::StatusOr<nlohmann::json> fresh =
        kube_.Get(rt, Meta(*obj, "namespace"), Meta(*obj, "name"));
    if (!fresh.ok()) return kube::IsNotFound(fresh.status());
    obj = std::make_shared<const nlohmann::json>(std::move(*fresh));
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(key);
  // A newer offer came meanwhile: keep it (the queue has the key again).
  if (it != pending_.end() && it->second == offered) pending_.erase(it);
  return true;
}

void ShardLabeller::Work() {
  while (true) {
    std::optional<std::string> key = queue_.Get();
    if (!key) return;
    if (Label(*key)) {
      queue_.Forget(*key);
    } else {
      queue_.AddRateLimited(*key);
    }
    queue_.Done(*key);
  }
}

void ShardLabeller::Stop() {
  for (auto& i : informers_) i->Stop();
  if (!started_.exchange(false)) return;
  queue_.ShutDown();
  for (std::thread& worker : worker_threads_) worker.join();
  worker_threads_.clear();
}

}  // namespace slurmop::reconcile
