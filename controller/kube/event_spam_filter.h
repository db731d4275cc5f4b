// File: controller/kube/event_spam_filter.h
//
// EventSpamFilter: client-go's EventSourceObjectSpamFilter (tools/record/events_cache.go), so a
// flapping object cannot flood etcd with Events: one token bucket per source+object, holding
// `burst` tokens (25) and refilled at `qps` (1/300: one Event every 5 minutes); every Event
// written about the object, new or a repeat counted into an existing series, takes a token, and
// an Event finding none is dropped. Buckets live in an LRU of `max_objects` (4096) entries: an
// object evicted starts again with a full bucket, as in client-go.
//
// Pure: time is passed in. Not thread-safe (the EventRecorder's worker owns it).

#ifndef SLURMOP_CONTROLLER_KUBE_EVENT_SPAM_FILTER_H_
#define SLURMOP_CONTROLLER_KUBE_EVENT_SPAM_FILTER_H_

#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

#include "controller/common/clock.h"

namespace slurmop::kube {

struct EventSpamFilterOptions {
  int burst = 25;             // client-go defaultSpamBurst
  double qps = 1.0 / 300.0;   // client-go defaultSpamQPS
  size_t max_objects = 4096;  // client-go maxLruCacheEntries
};

class EventSpamFilter {
 public:
  explicit EventSpamFilter(EventSpamFilterOptions opts = {}) : opts_(opts) {}

  // True if an Event about `object` (its source+object key) may be written at `now`; takes the
  // token. False: drop it.
  bool Allow(const std::string& object, Time now);

  size_t TrackedObjects() const { return buckets_.size(); }

 private:
  struct Bucket {
    std::string object;
    double tokens;
    Time last;
  };
  using Lru = std::list<Bucket>;
  EventSpamFilterOptions opts_;
  Lru lru_;  // most recently used first
  // Each key views its bucket's `object`, so a key is stored once (issue
  // #16: keys of 4096 objects stored twice were 0.7 MB): list nodes never
  // move, and an entry here is erased before its bucket.
  std::unordered_map<std::string_view, Lru::iterator> buckets_;
};

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_EVENT_SPAM_FILTER_H_
