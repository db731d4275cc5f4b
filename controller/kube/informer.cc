// File: controller/kube/informer.cc
//
// See informer.h for the contract.

#include "controller/kube/informer.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "controller/kube/errors.h"

namespace slurmop::kube {
namespace {

// A watch that ends this fast without any event is treated as a failure, so
// a server that closes watches at once cannot make the informer spin.
constexpr std::chrono::seconds kShortWatch{1};

std::string ResourceVersionOf(const nlohmann::json& object) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return "";
  auto rv = metadata->find("resourceVersion");
  if (rv == metadata->end() || !rv->is_string()) return "";
  return rv->get<std::string>();
}

void StripManagedFields(nlohmann::json& object) {
  auto metadata = object.find("metadata");
  if (metadata != object.end() && metadata->is_object()) metadata->erase("managedFields");
}

}  // namespace

Informer::Informer(Client& client, ResourceType rt, std::string ns, Handler handler,
                   const Clock& clock, InformerOptions opts)
    : client_(client),
      rt_(std::move(rt)),
      ns_(std::move(ns)),
      handler_(std::move(handler)),
      clock_(clock),
      opts_(std::move(opts)),
      packer_(opts_.packer != nullptr ? opts_.packer : std::make_shared<const ObjectPacker>()),
      random_(opts_.random ? opts_.random : DefaultRandom()),
      backoff_(clock, opts_.backoff, random_) {}

Informer::~Informer() { Stop(); }

void Informer::Start() {
  if (thread_.joinable() || stopping()) return;
  thread_ = std::thread([this] { Run(); });
}

void Informer::Stop() {
  stopping_.store(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (watch_handle_ != nullptr) watch_handle_->Cancel();
    stop_cv_.notify_all();
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool Informer::HasSynced() const { return synced_.load(); }

Informer::Entry Informer::MakeEntry(const Object& object) const {
  Entry entry;
  entry.resource_version = ResourceVersionOf(*object);
  if (opts_.compact_cache) {
    entry.packed = packer_->Pack(*object);
  } else {
    entry.object = object;
  }
  return entry;
}

Informer::Object Informer::UnpackBytes(const std::vector<std::uint8_t>& packed) const {
  absl::StatusOr<nlohmann::json> object = packer_->Unpack(packed);
  if (!object.ok()) {
    // Pack() made these bytes: this is a bug, not input. Read as absent.
    LOG(DFATAL) << "informer " << rt_.plural << ": cached object unreadable: " << object.status();
    return nullptr;
  }
  return std::make_shared<const nlohmann::json>(*std::move(object));
}

Informer::Object Informer::Unpack(const Entry& entry) const {
  if (entry.object != nullptr) return entry.object;
  return UnpackBytes(entry.packed);
}

std::shared_ptr<const nlohmann::json> Informer::Get(std::string_view ns,
                                                    std::string_view name) const {
  std::vector<std::uint8_t> packed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(Key(rt_.namespaced ? ns : "", name));
    if (it == cache_.end()) return nullptr;
    if (it->second.object != nullptr) return it->second.object;
    packed = it->second.packed;  // decode outside the lock
  }
  return UnpackBytes(packed);
}

std::vector<std::shared_ptr<const nlohmann::json>> Informer::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Object> objects;
  objects.reserve(cache_.size());
  for (const auto& [key, entry] : cache_) {
    if (Object object = Unpack(entry)) objects.push_back(std::move(object));
  }
  return objects;
}

std::string Informer::LastSyncResourceVersion() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_sync_rv_;
}

void Informer::SetResourceVersion(const std::string& rv) {
  std::lock_guard<std::mutex> lock(mu_);
  last_sync_rv_ = rv;
}

void Informer::Deliver(const std::string& type, const Object& object) {
  if (handler_) handler_(type, object);
}

void Informer::Run() {
  bool need_list = true;
  // After 410 the cached resourceVersion is useless: list with "" (quorum).
  bool quorum_list = false;
  while (!stopping()) {
    if (need_list) {
      absl::Status listed = ListAndReplace(quorum_list ? "" : "0");
      if (stopping()) break;
      if (listed.ok()) {
        need_list = false;
        quorum_list = false;
        continue;
      }
      if ((IsGone(listed) || IsResourceVersionTooLarge(listed)) && !quorum_list) {
        quorum_list = true;  // relist at once from the latest state
        continue;
      }
      LOG(WARNING) << "informer " << rt_.plural << ": list failed: " << listed;
      if (!WaitBeforeRetry(listed)) break;
      continue;
    }

    int events = 0;
    const Time started = clock_.Now();
    absl::Status watched = WatchOnce(&events);
    if (stopping()) break;
    if (watched.ok()) {
      if (events == 0 && clock_.Now() - started < kShortWatch) {
        if (!WaitBeforeRetry(absl::UnavailableError("watch closed at once"))) break;
      }
      continue;  // normal end (timeoutSeconds): re-watch from the last RV
    }
    if (IsGone(watched) || IsResourceVersionTooLarge(watched)) {
      LOG(INFO) << "informer " << rt_.plural << ": " << watched.message() << "; relisting";
      need_list = true;
      quorum_list = true;
      continue;
    }
    LOG(WARNING) << "informer " << rt_.plural << ": watch failed: " << watched;
    if (!WaitBeforeRetry(watched)) break;
  }
}

absl::Status Informer::ListAndReplace(const std::string& resource_version) {
  ListOptions options;
  options.resource_version = resource_version;
  options.label_selector = opts_.label_selector;
  options.limit = opts_.page_size;
  // Packed page by page (compact_cache), so the parsed objects of one page
  // at most exist at a time; deliveries unpack one object at a time.
  std::map<std::string, Entry> listed;
  std::string list_rv;
  for (;;) {
    // Each item is packed as it is decoded: a page is never held whole
    // (a resourceVersion=0 list is one page of the whole collection).
    absl::StatusOr<nlohmann::json> page =
        client_.ListEach(rt_, ns_, options, [&](nlohmann::json item) {
          if (!item.is_object()) return absl::OkStatus();
          // List items of built-in types come without kind/apiVersion.
          if (!item.contains("kind")) item["kind"] = rt_.kind;
          if (!item.contains("apiVersion")) item["apiVersion"] = rt_.ApiVersion();
          if (opts_.strip_managed_fields) StripManagedFields(item);
          std::string key = KeyOf(item);
          if (key.empty()) return absl::OkStatus();
          listed[key] = MakeEntry(std::make_shared<const nlohmann::json>(std::move(item)));
          return absl::OkStatus();
        });
    if (!page.ok()) return page.status();
    if (!page->is_object()) return absl::InternalError("list response is not an object");
    std::string continue_token;
    if (auto metadata = page->find("metadata"); metadata != page->end() && metadata->is_object()) {
      continue_token = metadata->value("continue", "");
      list_rv = metadata->value("resourceVersion", "");
    }
    if (continue_token.empty()) break;
    if (stopping()) return absl::CancelledError("informer stopped");
    // Continuation pages must not carry a resourceVersion (400 otherwise).
    options.continue_token = std::move(continue_token);
    options.resource_version.clear();
  }

  // (type, entry) pairs, pointing into cache_ and `removed`. Only this
  // thread changes cache_, so its entries stay put while they are delivered
  // (other threads only read them).
  std::vector<std::pair<const char*, const Entry*>> deliveries;
  std::map<std::string, Entry> removed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, entry] : listed) {
      auto cached = cache_.find(key);
      if (cached == cache_.end()) {
        deliveries.emplace_back(kAdded, &entry);
      } else if (cached->second.resource_version != entry.resource_version) {
        deliveries.emplace_back(kModified, &entry);
      }
    }
    for (auto& [key, entry] : cache_) {
      if (listed.count(key) == 0) removed.emplace(key, std::move(entry));
    }
    cache_ = std::move(listed);  // map nodes move: the pointers stay valid
    last_sync_rv_ = list_rv;
  }
  for (const auto& [key, entry] : removed) deliveries.emplace_back(kDeleted, &entry);
  for (const auto& [type, entry] : deliveries) {
    if (Object object = Unpack(*entry)) Deliver(type, object);
  }
  synced_.store(true);
  return absl::OkStatus();
}

absl::Status Informer::WatchOnce(int* events_applied) {
  auto handle = std::make_shared<http::StreamHandle>();
  WatchOptions options;
  {
    std::lock_guard<std::mutex> lock(mu_);
    options.resource_version = last_sync_rv_;
    watch_handle_ = handle;
  }
  if (stopping()) handle->Cancel();  // Stop() ran before the handle was published
  options.allow_bookmarks = true;
  const double min_seconds = std::chrono::duration<double>(opts_.min_watch_timeout).count();
  options.timeout_seconds =
      std::max(1, static_cast<int>(std::floor(min_seconds * (1.0 + random_()))));
  options.label_selector = opts_.label_selector;

  absl::Status status = client_.Watch(
      rt_, ns_, options,
      [this, events_applied](WatchEvent& event) {
        if (stopping()) return false;
        if (event.type == kError) return false;  // Watch() returns its Status
        ApplyWatchEvent(event);
        ++*events_applied;
        return true;
      },
      handle);
  std::lock_guard<std::mutex> lock(mu_);
  watch_handle_.reset();
  return status;
}

void Informer::ApplyWatchEvent(WatchEvent& event) {
  const std::string rv = ResourceVersionOf(event.object);
  if (event.type == kBookmark) {
    if (!rv.empty()) SetResourceVersion(rv);
    return;
  }
  auto object = std::make_shared<nlohmann::json>(std::move(event.object));
  if (!object->contains("kind")) (*object)["kind"] = rt_.kind;
  if (!object->contains("apiVersion")) (*object)["apiVersion"] = rt_.ApiVersion();
  if (opts_.strip_managed_fields) StripManagedFields(*object);
  const std::string key = KeyOf(*object);
  std::string type = event.type;
  const bool cached = !key.empty() && type != kDeleted;
  const bool keep_parsed = cached && opts_.compact_cache && opts_.recent_parsed > 0;
  Entry entry;
  if (keep_parsed) {
    entry.resource_version = ResourceVersionOf(*object);
    entry.object = object;
  } else if (cached) {
    entry = MakeEntry(object);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!key.empty()) {
      if (type == kDeleted) {
        cache_.erase(key);
      } else {
        auto [it, inserted] = cache_.insert_or_assign(key, std::move(entry));
        type = inserted ? kAdded : kModified;
      }
    }
    if (!rv.empty()) last_sync_rv_ = rv;
  }
  Deliver(type, object);
  if (keep_parsed) {
    recent_.emplace_back(key, object);
    PackOlderThanRecent();
  }
}

void Informer::PackOlderThanRecent() {
  while (recent_.size() > opts_.recent_parsed) {
    auto [key, object] = std::move(recent_.front());
    recent_.pop_front();
    {
      // Replaced, deleted or relisted since: nothing of this event's to pack.
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(key);
      if (it == cache_.end() || it->second.object != object) continue;
    }
    std::vector<std::uint8_t> packed = packer_->Pack(*object);  // outside the lock
    // Only this thread changes cache_, so the entry is still this object's.
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    it->second.packed = std::move(packed);
    it->second.object.reset();
  }
}

bool Informer::WaitBeforeRetry(const absl::Status& failure) {
  Duration wait = backoff_.Next();
  if (std::optional<Duration> retry_after = RetryAfter(failure);
      retry_after.has_value() && *retry_after > wait) {
    wait = *retry_after;
  }
  if (opts_.sleep_for_testing) {
    opts_.sleep_for_testing(wait);
    return !stopping();
  }
  std::unique_lock<std::mutex> lock(mu_);
  stop_cv_.wait_for(lock, wait, [this] { return stopping(); });
  return !stopping();
}

}  // namespace slurmop::kube
