// File: controller/kube/events.cc
//
// See events.h for the contract.

#include "controller/kube/events.h"

#include <glog/logging.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <utility>

#include "controller/common/bounded_text.h"
#include "controller/common/time_format.h"
#include "controller/kube/errors.h"
#include "controller/kube/metrics_hooks.h"
#include "controller/kube/resource_types.h"

namespace slurmop::kube {
namespace {

constexpr size_t kMaxReason = 128;
constexpr size_t kMaxAction = 128;
constexpr size_t kMaxNote = 1024;

std::string Field(const nlohmann::json& object, const char* field) {
  auto it = object.find(field);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

nlohmann::json ObjectReference(const nlohmann::json& object) {
  nlohmann::json ref = nlohmann::json::object();
  for (const char* field : {"apiVersion", "kind"}) {
    if (std::string value = Field(object, field); !value.empty()) ref[field] = value;
  }
  if (auto metadata = object.find("metadata"); metadata != object.end() && metadata->is_object()) {
    for (const char* field : {"namespace", "name", "uid", "resourceVersion"}) {
      if (std::string value = Field(*metadata, field); !value.empty()) ref[field] = value;
    }
  }
  return ref;
}

std::string AggregationKey(const nlohmann::json& ref, const std::string& type,
                           const std::string& reason, const std::string& note) {
  std::string object = Field(ref, "uid");
  if (object.empty()) {
    object = Field(ref, "apiVersion") + "/" + Field(ref, "kind") + "/" + Field(ref, "namespace") +
             "/" + Field(ref, "name");
  }
  return object + "\x1f" + type + "\x1f" + reason + "\x1f" + note;
}

// client-go's getSpamKey: the object (this recorder is the one source).
std::string SpamKey(const nlohmann::json& ref) {
  return Field(ref, "apiVersion") + "/" + Field(ref, "kind") + "/" + Field(ref, "namespace") + "/" +
         Field(ref, "name") + "/" + Field(ref, "uid");
}

}  // namespace

EventRecorder::EventRecorder(Client& client, const Clock& clock, std::string reporting_controller,
                             std::string reporting_instance, EventRecorderOptions opts)
    : client_(client),
      clock_(clock),
      controller_(std::move(reporting_controller)),
      instance_(Utf8Prefix(reporting_instance, 128)),
      opts_(opts),
      spam_(opts.spam),
      worker_([this] { Loop(); }) {}

EventRecorder::~EventRecorder() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    changed_.notify_all();
  }
  worker_.join();  // the worker drains the queue first
}

void EventRecorder::Record(const nlohmann::json& regarding_object, std::string_view type,
                           std::string_view reason, std::string_view action,
                           std::string_view note) {
  Pending event;
  event.regarding = ObjectReference(regarding_object);
  event.ns = Field(event.regarding, "namespace");
  if (event.ns.empty()) event.ns = "default";
  event.type = std::string(type);
  event.reason = Utf8Prefix(reason, kMaxReason);
  event.action = Utf8Prefix(action, kMaxAction);
  event.note = Utf8Prefix(note, kMaxNote);
  event.observed = clock_.Now();

  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  if (queue_.size() >= opts_.max_queue) {
    if (!warned_full_) LOG(WARNING) << "event queue full; dropping events";
    warned_full_ = true;
    return;
  }
  warned_full_ = false;
  queue_.push_back(std::move(event));
  changed_.notify_all();
}

void EventRecorder::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return queue_.empty() && !writing_; });
}

void EventRecorder::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and drained
    Pending event = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    lock.unlock();
    Write(event);
    lock.lock();
    writing_ = false;
    changed_.notify_all();
  }
}

std::string EventRecorder::NewEventName(const Pending& event) {
  long long nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(event.observed.time_since_epoch())
          .count();
  // client-go uses "<name>.<hex UnixNano>"; keep names unique even when two
  // events share a timestamp (coarse or fake clocks).
  nanos = std::max(nanos, last_name_nanos_ + 1);
  last_name_nanos_ = nanos;
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), ".%llx", nanos);
  std::string name = Field(event.regarding, "name");
  if (name.empty()) name = "event";
  return name + suffix;
}

void EventRecorder::Write(const Pending& event) {
  const uint64_t key = std::hash<std::string>{}(
      AggregationKey(event.regarding, event.type, event.reason, event.note));
  auto expired = [&](const Series& s) {
    return event.observed - s.last_observed > opts_.aggregation_window;
  };
  if (event.observed - last_sweep_ >= opts_.aggregation_window / 10 ||
      event.observed < last_sweep_) {
    last_sweep_ = event.observed;
    for (auto it = series_.begin(); it != series_.end();) {
      it = expired(it->second) ? EraseSeries(it) : std::next(it);
    }
  }
  if (auto it = series_.find(key); it != series_.end() && expired(it->second)) EraseSeries(it);
  if (!spam_.Allow(SpamKey(event.regarding), event.observed)) {
    VLOG(1) << "event " << event.reason << " about " << Field(event.regarding, "name")
            << " dropped by the spam filter";
    if (const auto& hook = GetMetricsHooks().event_spam_filtered) hook();
    return;
  }
  if (auto it = series_.find(key); it != series_.end()) {
    Series& series = it->second;
    series.count += 1;
    series.last_observed = event.observed;
    series_lru_.splice(series_lru_.begin(), series_lru_, series.lru);
    absl::Status patched = PatchSeries(event, series);
    if (patched.ok()) return;
    EraseSeries(it);
    if (!kube::IsNotFound(patched)) {
      LOG(WARNING) << "event " << event.reason << ": update failed: " << patched;
      return;
    }
  }
  Series series;
  absl::Status created = CreateEvent(event, &series);
  if (!created.ok()) {
    LOG(WARNING) << "event " << event.reason << ": create failed: " << created;
    return;
  }
  KeepSeries(key, std::move(series));
}

EventRecorder::SeriesMap::iterator EventRecorder::EraseSeries(SeriesMap::iterator it) {
  series_lru_.erase(it->second.lru);
  return series_.erase(it);
}

void EventRecorder::KeepSeries(uint64_t key, Series series) {
  if (auto it = series_.find(key); it != series_.end()) EraseSeries(it);
  while (!series_lru_.empty() && series_.size() >= std::max<size_t>(opts_.max_series, 1)) {
    EraseSeries(series_.find(series_lru_.back()));
  }
  series_lru_.push_front(key);
  series.lru = series_lru_.begin();
  series_.emplace(key, std::move(series));
}

absl::Status EventRecorder::CreateEvent(const Pending& event, Series* series) {
  series->name = NewEventName(event);
  series->ns = event.ns;
  series->count = 1;
  series->last_observed = event.observed;
  if (!use_core_events_) {
    nlohmann::json body = {
        {"apiVersion", "events.k8s.io/v1"},
        {"kind", "Event"},
        {"metadata", {{"name", series->name}, {"namespace", event.ns}}},
        {"eventTime", FormatRfc3339Micro(event.observed)},
        {"reportingController", controller_},
        {"reportingInstance", instance_},
        {"action", event.action},
        {"reason", event.reason},
        {"note", event.note},
        {"type", event.type},
        {"regarding", event.regarding},
    };
    absl::StatusOr<nlohmann::json> created = client_.Create(EventsV1(), event.ns, body);
    if (created.ok()) {
      series->core = false;
      return absl::OkStatus();
    }
    if (!kube::IsNotFound(created.status())) return created.status();
    LOG(INFO) << "events.k8s.io/v1 not served; recording core/v1 Events";
    use_core_events_ = true;
  }
  const std::string timestamp = FormatRfc3339(event.observed);
  nlohmann::json body = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", series->name}, {"namespace", event.ns}}},
      {"involvedObject", event.regarding},
      {"reason", event.reason},
      {"message", event.note},
      {"type", event.type},
      {"source", {{"component", controller_}}},
      {"firstTimestamp", timestamp},
      {"lastTimestamp", timestamp},
      {"count", 1},
      {"reportingComponent", controller_},
      {"reportingInstance", instance_},
  };
  absl::StatusOr<nlohmann::json> created = client_.Create(CoreEvents(), event.ns, body);
  if (!created.ok()) return created.status();
  series->core = true;
  return absl::OkStatus();
}

absl::Status EventRecorder::PatchSeries(const Pending& event, const Series& series) {
  if (series.core) {
    nlohmann::json patch = {{"count", series.count},
                            {"lastTimestamp", FormatRfc3339(event.observed)}};
    return client_.Patch(CoreEvents(), series.ns, series.name, PatchType::kMerge, patch).status();
  }
  nlohmann::json patch = {
      {"series",
       {{"count", series.count}, {"lastObservedTime", FormatRfc3339Micro(event.observed)}}}};
  return client_.Patch(EventsV1(), series.ns, series.name, PatchType::kMerge, patch).status();
}

}  // namespace slurmop::kube
