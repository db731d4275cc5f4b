// File: tests/kube/fake_client.h
//
// FakeClient: a scripted kube::Client for informer and event tests.
//
// Contract:
//  * List() pops the next scripted result (kUnavailable when none is left)
//    and records the ListOptions.
//  * Watch() pops the next WatchScript, hands its events to the callback in
//    order (stopping early if the callback returns false) and returns its
//    final status. With no script left it blocks until the handle is
//    cancelled and returns kCancelled; `idle_watches()` counts watches
//    blocked that way, so tests can wait for the informer to go quiet.
//  * Create()/Patch() are recorded and answered by the optional hooks
//    (default: echo the object / an empty object). Get/Update/UpdateStatus/
//    Delete answer kUnimplemented.
//  * WaitUntil(pred) polls `pred` (1 ms steps) for up to 10 s: tests wait for
//    state, not for time.

#ifndef SLURMOP_TESTS_KUBE_FAKE_CLIENT_H_
#define SLURMOP_TESTS_KUBE_FAKE_CLIENT_H_

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "controller/kube/client.h"

namespace slurmop::kube::testing {

struct WatchScript {
  std::vector<WatchEvent> events;
  absl::Status end = absl::OkStatus();
};

struct RecordedCall {
  std::string verb;  // create | patch
  ResourceType rt;
  std::string ns;
  std::string name;
  PatchType patch_type = PatchType::kMerge;
  nlohmann::json body;
};

class FakeClient : public Client {
 public:
  void AddList(absl::StatusOr<nlohmann::json> result) {
    std::lock_guard<std::mutex> lock(mu_);
    lists_.push_back(std::move(result));
  }
  void AddWatch(WatchScript script) {
    std::lock_guard<std::mutex> lock(mu_);
    watches_.push_back(std::move(script));
  }

  std::vector<ListOptions> list_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return list_calls_;
  }
  std::vector<WatchOptions> watch_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return watch_calls_;
  }
  std::vector<RecordedCall> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  int idle_watches() const {
    std::lock_guard<std::mutex> lock(mu_);
    return idle_watches_;
  }

  std::function<absl::StatusOr<nlohmann::json>(const RecordedCall&)> on_create;
  std::function<absl::StatusOr<nlohmann::json>(const RecordedCall&)> on_patch;

  absl::StatusOr<nlohmann::json> Get(const ResourceType&, std::string_view,
                                     std::string_view) override {
    return absl::UnimplementedError("Get");
  }
  absl::StatusOr<nlohmann::json> List(const ResourceType&, std::string_view,
                                      const ListOptions& opts) override {
    std::lock_guard<std::mutex> lock(mu_);
    list_calls_.push_back(opts);
    if (lists_.empty()) return absl::UnavailableError("no scripted list");
    absl::StatusOr<nlohmann::json> result = std::move(lists_.front());
    lists_.pop_front();
    return result;
  }
  absl::StatusOr<nlohmann::json> Create(const ResourceType& rt, std::string_view ns,
                                        const nlohmann::json& obj) override {
    RecordedCall call{"create", rt, std::string(ns), "", PatchType::kMerge, obj};
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back(call);
    }
    return on_create ? on_create(call) : absl::StatusOr<nlohmann::json>(obj);
  }
  absl::StatusOr<nlohmann::json> Update(const ResourceType&, const nlohmann::json&) override {
    return absl::UnimplementedError("Update");
  }
  absl::StatusOr<nlohmann::json> UpdateStatus(const ResourceType&, const nlohmann::json&) override {
    return absl::UnimplementedError("UpdateStatus");
  }
  absl::StatusOr<nlohmann::json> Patch(const ResourceType& rt, std::string_view ns,
                                       std::string_view name, PatchType type,
                                       const nlohmann::json& patch, bool,
                                       std::string_view) override {
    RecordedCall call{"patch", rt, std::string(ns), std::string(name), type, patch};
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back(call);
    }
    return on_patch ? on_patch(call) : absl::StatusOr<nlohmann::json>(nlohmann::json::object());
  }
  absl::StatusOr<nlohmann::json> Delete(const ResourceType&, std::string_view, std::string_view,
                                        const DeleteOptions& = {}) override {
    return absl::UnimplementedError("Delete");
  }
  absl::Status Watch(const ResourceType&, std::string_view, const WatchOptions& opts,
                     const std::function<bool(WatchEvent&)>& on_event,
                     std::shared_ptr<http::StreamHandle> handle) override {
    WatchScript script;
    bool scripted = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      watch_calls_.push_back(opts);
      if (!watches_.empty()) {
        script = std::move(watches_.front());
        watches_.pop_front();
        scripted = true;
      } else {
        ++idle_watches_;
      }
    }
    if (!scripted) {
      while (!handle->cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::lock_guard<std::mutex> lock(mu_);
      --idle_watches_;
      return absl::CancelledError("watch cancelled");
    }
    for (const WatchEvent& scripted_event : script.events) {
      if (handle->cancelled()) return absl::CancelledError("watch cancelled");
      WatchEvent event = scripted_event;  // the callback may take its object
      const bool keep_going = on_event(event);
      if (event.type == kError) return StatusFromErrorEvent(event);
      if (!keep_going) return absl::OkStatus();
    }
    return script.end;
  }

 private:
  mutable std::mutex mu_;
  std::deque<absl::StatusOr<nlohmann::json>> lists_;
  std::deque<WatchScript> watches_;
  std::vector<ListOptions> list_calls_;
  std::vector<WatchOptions> watch_calls_;
  std::vector<RecordedCall> calls_;
  int idle_watches_ = 0;
};

inline bool WaitUntil(const std::function<bool()>& predicate) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace slurmop::kube::testing

#endif  // SLURMOP_TESTS_KUBE_FAKE_CLIENT_H_
