// File: controller/kube/event_spam_filter.cc
//
// See event_spam_filter.h for the contract.

#include "controller/kube/event_spam_filter.h"

#include <algorithm>
#include <chrono>

namespace slurmop::kube {

bool EventSpamFilter::Allow(const std::string& object, Time now) {
  auto it = buckets_.find(object);
  if (it == buckets_.end()) {
    if (buckets_.size() >= opts_.max_objects && !lru_.empty()) {
      buckets_.erase(lru_.back().object);
      lru_.pop_back();
    }
    lru_.push_front(Bucket{object, static_cast<double>(opts_.burst), now});
    it = buckets_.emplace(lru_.front().object, lru_.begin()).first;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second);
  }
  Bucket& b = *it->second;
  if (now > b.last) {
    const double elapsed = std::chrono::duration<double>(now - b.last).count();
    b.tokens = std::min<double>(opts_.burst, b.tokens + elapsed * opts_.qps);
    b.last = now;
  }
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

}  // namespace slurmop::kube
