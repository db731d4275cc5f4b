// File: controller/kube/events.h
//
// EventRecorder: Kubernetes Events about the operator's objects, best effort
// and asynchronous, with repeats aggregated into one Event.
//
// Contract:
//  * Record() never blocks on the network: it snapshots the object reference
//    and the current Clock time, queues the event (at most `max_queue`;
//    beyond that events are dropped with a warning) and returns. One worker
//    thread writes them in order. Failures are logged, never returned; an
//    Event must never fail a reconcile.
//  * Writes events.k8s.io/v1 Events: metadata.name "<object>.<hex nanos>",
//    namespace of the object ("default" for cluster-scoped objects), eventTime
//    (MicroTime), reportingController/-Instance, action, reason, note, type,
//    regarding {apiVersion, kind, namespace, name, uid, resourceVersion}.
//  * If events.k8s.io answers 404 (API not served), the recorder switches to
//    core/v1 Events for good: involvedObject, reason, message, type,
//    source.component, firstTimestamp/lastTimestamp (seconds), count,
//    reportingComponent/-Instance.
//  * Aggregation: an event with the same (object, type, reason, note) as one
//    written less than `aggregation_window` (10 min) before updates that
//    Event with a merge PATCH instead of creating a new one: series
//    {count, lastObservedTime} (count 2 on the first repeat) for
//    events.k8s.io, count/lastTimestamp for core/v1. If the Event is gone
//    (404) a new one is created.
//  * Spam filter (client-go's EventSourceObjectSpamFilter, event_spam_filter.h):
//    every write about one object, a new Event or a repeat's PATCH, takes a
//    token from that object's bucket (burst 25, refilled one per 5 minutes);
//    without a token the event is dropped (logged at V(1), counted by the
//    event_spam_filtered metrics hook). Applied after aggregation, as in
//    client-go, at the event's observed time.
//  * Limits: reason and action are cut to 128 bytes, note to 1024 bytes (at a
//    UTF-8 boundary).
//  * Flush() returns once every event recorded before it was written (or
//    failed). The destructor flushes and stops the worker. Thread-safe.

#ifndef SLURMOP_CONTROLLER_KUBE_EVENTS_H_
#define SLURMOP_CONTROLLER_KUBE_EVENTS_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "absl/status/status.h"
#include "controller/common/clock.h"
#include "controller/kube/client.h"
#include "controller/kube/event_spam_filter.h"

namespace slurmop::kube {

struct EventRecorderOptions {
  Duration aggregation_window = std::chrono::minutes(10);
  size_t max_queue = 1000;
  // Series kept for counting repeats (client-go's EventCorrelator keeps an
  // LRU of 4096): past it the least recently written series is forgotten,
  // so its next repeat creates a new Event instead of counting into it.
  // Without the bound 10,000 SlurmJobs kept ~30,000 series (~4 MB).
  size_t max_series = 4096;
  EventSpamFilterOptions spam;
};

class EventRecorder {
 public:
  EventRecorder(Client& client, const Clock& clock, std::string reporting_controller,
                std::string reporting_instance, EventRecorderOptions opts = {});
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  void Record(const nlohmann::json& regarding_object, std::string_view type /*Normal|Warning*/,
              std::string_view reason, std::string_view action, std::string_view note);
  void Flush();

 private:
  struct Pending {
    nlohmann::json regarding;  // ObjectReference
    std::string ns;
    std::string type;
    std::string reason;
    std::string action;
    std::string note;
    Time observed;
  };
  struct Series {
    std::string name;
    std::string ns;
    bool core = false;
    int count = 1;
    Time last_observed;
    std::list<uint64_t>::iterator lru;  // its place in series_lru_
  };
  using SeriesMap = std::unordered_map<uint64_t, Series>;
  // Every series_ change goes through these, so series_lru_ stays in step.
  SeriesMap::iterator EraseSeries(SeriesMap::iterator it);
  void KeepSeries(uint64_t key, Series series);

  void Loop();
  void Write(const Pending& event);
  absl::Status CreateEvent(const Pending& event, Series* series);
  absl::Status PatchSeries(const Pending& event, const Series& series);
  std::string NewEventName(const Pending& event);

  Client& client_;
  const Clock& clock_;
  const std::string controller_;
  const std::string instance_;
  const EventRecorderOptions opts_;

  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Pending> queue_;  // guarded by mu_
  bool writing_ = false;       // guarded by mu_
  bool stopping_ = false;      // guarded by mu_
  bool warned_full_ = false;   // guarded by mu_

  // Worker thread only. Keyed by a 64-bit hash of the aggregation key, not
  // the key itself (~200 bytes): with 10,000 SlurmJobs there are ~30,000 live
  // series. Two keys sharing a hash (odds ~1e-11 at that size) would only
  // count one Event's repeats on the other.
  SeriesMap series_;
  std::list<uint64_t> series_lru_;  // series_'s keys, most recently written first
  // When series_ was last swept of expired entries. A lookup ignores an
  // expired series by itself, so the sweep only bounds memory; it runs once
  // per aggregation_window / 10 instead of on every event (with 30,000 live
  // series, a walk per event made the writer fall behind and drop Events).
  Time last_sweep_{};
  EventSpamFilter spam_;  // worker thread only
  bool use_core_events_ = false;
  long long last_name_nanos_ = 0;

  std::thread worker_;
};

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_EVENTS_H_
