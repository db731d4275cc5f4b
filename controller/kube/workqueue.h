// File: controller/kube/workqueue.h
//
// WorkQueue: client-go's rate-limited delaying work queue
// (util/workqueue: queue.go, delaying_queue.go, rate_limiting_queue.go).
//
// Contract:
//  * Add(key): no-op if the key is already queued (dedup). If a worker is
//    processing it, the key is only marked dirty and re-queued by Done(), so
//    one key is never processed by two workers at once.
//  * Add(key, Priority::kUrgent): the key is handed out before every key
//    queued at kNormal (first in, first out within a priority; controller-
//    runtime's priority queue, two levels). A key already queued at kNormal
//    moves ahead; one being processed is re-queued by Done() as urgent. A key
//    keeps the highest priority it was added with until Get() hands it out.
//    Urgent keys can hold normal ones back for as long as they keep coming:
//    that is the point (the manager marks SlurmJobs not submitted yet urgent,
//    so a new job does not wait behind the status updates of running ones).
//  * SetNormalLimit(n): at most n keys handed out at kNormal are processed at
//    once (0, the default: no limit). A Get() with only kNormal keys queued
//    and n of them processing blocks until one is Done() or an urgent key
//    comes. With n = workers - 1 one worker is always free for urgent keys:
//    a new SlurmJob starts at once instead of waiting for a worker busy with
//    the status writes a tracking tick queued.
//  * Get() blocks until a key is ready and marks it processing; every Get()
//    must be followed by Done(key). After ShutDown() it still hands out the
//    keys already queued, then returns nullopt (client-go semantics); delayed
//    keys not yet due are dropped.
//  * AddAfter(key, d): adds the key once d has passed; d <= 0 adds now. For a
//    key already waiting the earlier deadline wins.
//  * AddRateLimited(key) = AddAfter(key, limiter.When(key)) (rate_limiter.h:
//    5 ms * 2^n capped at 1000 s, max'ed with a 10 qps / 100 burst bucket).
//    Forget(key) resets the key's failure count; NumRequeues() reads it.
//  * Delays are measured with the injected Clock. Get() sleeps (condition
//    variable, real time) until the earliest deadline; with a FakeClock a test
//    advances the clock and calls Poke() (wake sleeping Get()s to re-check)
//    or ProcessDue() (move due keys into the queue now), so tests never sleep.
//  * Metrics: a queue constructed with a name reports client-go's workqueue
//    metrics through kube::GetMetricsHooks() (adds, retries, queue latency,
//    work duration); Processing() gives what workqueue_unfinished_work_seconds
//    and workqueue_longest_running_processor_seconds show. Unnamed: no metrics.
//  * Thread-safe.

#ifndef SLURMOP_CONTROLLER_KUBE_WORKQUEUE_H_
#define SLURMOP_CONTROLLER_KUBE_WORKQUEUE_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "controller/common/clock.h"
#include "controller/kube/rate_limiter.h"

namespace slurmop::kube {

class WorkQueue {
 public:
  explicit WorkQueue(const Clock& clock, RateLimiterOptions opts = {}, std::string name = "");
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  enum class Priority { kNormal = 0, kUrgent = 1 };

  void Add(const std::string& key, Priority priority = Priority::kNormal);
  void AddAfter(const std::string& key, Duration d);
  void AddRateLimited(const std::string& key);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;

  // See the contract above; takes effect for the next Get().
  void SetNormalLimit(size_t limit);

  std::optional<std::string> Get();
  void Done(const std::string& key);

  void ShutDown();
  // ShutDown(), then waits until every key handed out by Get() is Done().
  void ShutDownWithDrain();
  bool ShuttingDown() const;

  // Keys queued for Get() (delayed keys not yet due are not counted; a kNormal
  // key may still wait for the normal limit).
  size_t Len() const;
  // Keys waiting for an AddAfter() deadline.
  size_t NumWaiting() const;

  // The keys being processed (handed out by Get(), not yet Done()): the sum of
  // their processing times so far and the longest one, in seconds.
  struct ProcessingTimes {
    double unfinished_seconds = 0;
    double longest_seconds = 0;
  };
  ProcessingTimes Processing() const;
  const std::string& name() const { return name_; }

  // Moves every waiting key whose deadline has passed into the queue; returns
  // how many were due.
  size_t ProcessDue();
  // Wakes blocked Get() calls so they re-read the clock.
  void Poke();

 private:
  void AddLocked(const std::string& key, Priority priority);      // requires mu_
  void EnqueueLocked(const std::string& key, Priority priority);  // requires mu_
  // Requires mu_: whether Get() may hand out a key now (an urgent one is
  // queued, or a normal one and the normal limit allows it).
  bool ReadyLocked() const;
  // Requires ReadyLocked(): the next key to hand out, and its priority.
  std::pair<std::string, Priority> PopLocked();
  size_t MoveDueLocked();  // requires mu_

  // A waiting key's deadline, and the key itself as waiting_ holds it.
  using Deadline = std::pair<Time, const std::string*>;
  // Earliest deadline first, ties by key.
  struct EarlierDeadline {
    bool operator()(const Deadline& a, const Deadline& b) const {
      return a.first != b.first ? a.first < b.first : *a.second < *b.second;
    }
  };
  // A key that Add() has seen and Get() has not handed out yet (queued, or
  // waiting for Done() while it is processed).
  struct Dirty {
    Priority priority = Priority::kNormal;
    // The sequence number of its live entry in queues_ (0: none, while it is
    // processed). An entry whose number differs is stale (the key moved to the
    // urgent queue, or was handed out) and skipped.
    uint64_t seq = 0;
  };
  using Entry = std::pair<uint64_t, std::string>;

  const Clock& clock_;
  RateLimiter limiter_;
  const std::string name_;  // "" = no metrics
  mutable std::mutex mu_;
  std::condition_variable ready_;       // queues_ changed, waiting_ changed, or shutdown
  std::condition_variable drained_;     // processing_ shrank
  std::deque<Entry> queues_[2];         // guarded by mu_: by Priority, with stale entries
  size_t queued_[2] = {0, 0};           // guarded by mu_: live entries in queues_, by Priority
  uint64_t next_seq_ = 1;               // guarded by mu_
  std::map<std::string, Dirty> dirty_;  // guarded by mu_
  struct InFlight {
    Time since;         // when Get() handed it out
    Priority priority;  // the priority it was handed out at
  };
  std::map<std::string, InFlight> processing_;  // guarded by mu_
  size_t normal_limit_ = 0;                     // guarded by mu_: 0 = none
  size_t normal_processing_ = 0;                // guarded by mu_: kNormal keys in processing_
  std::map<std::string, Time> added_at_;        // guarded by mu_: queued key -> when it was added
  std::map<std::string, Time> waiting_;         // guarded by mu_: key -> its (earliest) deadline
  // The same deadlines in order, so that finding what is due and the next
  // wake-up are O(log n), not a walk over every waiting key (with 10,000
  // SlurmJobs each requeued after its poll interval, every Get() walked all of
  // them under mu_). Exactly one entry per waiting_ entry, changed with it;
  // it points at waiting_'s key (map nodes never move) rather than copying
  // it, in a B-tree of 16-byte entries (issue #16: a heap of key copies with
  // stale entries was ~100 bytes per waiting SlurmJob).
  absl::btree_set<Deadline, EarlierDeadline> by_deadline_;  // guarded by mu_
  bool shutting_down_ = false;                              // guarded by mu_
};

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_WORKQUEUE_H_
