// File: controller/kube/workqueue.cc
//
// See workqueue.h for the contract.

#include "controller/kube/workqueue.h"

#include <glog/logging.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "controller/kube/metrics_hooks.h"

namespace slurmop::kube {
namespace {

// Upper bound of one sleep in Get(), so a wall-clock jump cannot park a
// worker for long past a deadline.
constexpr std::chrono::seconds kMaxSleep{10};

double SecondsBetween(Time from, Time to) {
  return std::max(0.0, std::chrono::duration<double>(to - from).count());
}

}  // namespace

WorkQueue::WorkQueue(const Clock& clock, RateLimiterOptions opts, std::string name)
    : clock_(clock), limiter_(clock, opts), name_(std::move(name)) {}

WorkQueue::~WorkQueue() { ShutDown(); }

void WorkQueue::AddLocked(const std::string& key, Priority priority) {
  if (shutting_down_) return;
  auto [it, inserted] = dirty_.try_emplace(key);
  Dirty& dirty = it->second;
  if (!inserted) {
    // Already queued (or dirty while processing): at most a promotion.
    if (priority <= dirty.priority) return;
    if (dirty.seq != 0) {  // queued: a new entry; the old one goes stale
      --queued_[static_cast<int>(dirty.priority)];
      ++queued_[static_cast<int>(priority)];
      EnqueueLocked(key, priority);
    }
    dirty.priority = priority;
    return;
  }
  dirty.priority = priority;
  if (!name_.empty()) {
    // As client-go: an add is counted once per key until Get() hands it out.
    added_at_.try_emplace(key, clock_.Now());
    if (const auto& hook = GetMetricsHooks().queue_add) hook(name_);
  }
  if (processing_.count(key) != 0) return;  // Done() re-queues it
  ++queued_[static_cast<int>(priority)];
  EnqueueLocked(key, priority);
}

void WorkQueue::EnqueueLocked(const std::string& key, Priority priority) {
  const uint64_t seq = next_seq_++;
  dirty_[key].seq = seq;
  queues_[static_cast<int>(priority)].emplace_back(seq, key);
  ready_.notify_one();
}

bool WorkQueue::ReadyLocked() const {
  if (queued_[static_cast<int>(Priority::kUrgent)] > 0) return true;
  return queued_[static_cast<int>(Priority::kNormal)] > 0 &&
         (normal_limit_ == 0 || normal_processing_ < normal_limit_);
}

std::pair<std::string, WorkQueue::Priority> WorkQueue::PopLocked() {
  for (int p = static_cast<int>(Priority::kUrgent); p >= 0; --p) {
    std::deque<Entry>& q = queues_[p];
    while (queued_[p] > 0 && !q.empty()) {
      Entry entry = std::move(q.front());
      q.pop_front();
      auto it = dirty_.find(entry.second);
      if (it == dirty_.end() || it->second.seq != entry.first) continue;  // stale
      dirty_.erase(it);
      --queued_[p];
      return {std::move(entry.second), static_cast<Priority>(p)};
    }
  }
  LOG(DFATAL) << "work queue: a key was counted as queued, none found";
  queued_[0] = queued_[1] = 0;
  return {"", Priority::kNormal};
}

void WorkQueue::SetNormalLimit(size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  normal_limit_ = limit;
  ready_.notify_all();
}

void WorkQueue::Add(const std::string& key, Priority priority) {
  std::lock_guard<std::mutex> lock(mu_);
  AddLocked(key, priority);
}

void WorkQueue::AddAfter(const std::string& key, Duration d) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_) return;
  if (d <= Duration::zero()) {
    AddLocked(key, Priority::kNormal);
    return;
  }
  const Time deadline = clock_.Now() + std::chrono::duration_cast<Time::duration>(d);
  auto [it, inserted] = waiting_.emplace(key, deadline);
  if (!inserted) {
    if (deadline >= it->second) return;  // the earlier deadline already waits
    by_deadline_.erase(Deadline(it->second, &it->first));
    it->second = deadline;
  }
  // Sleepers wake by the earliest deadline anyway; only an earlier one needs them now.
  const bool earliest = by_deadline_.empty() || deadline < by_deadline_.begin()->first;
  by_deadline_.emplace(deadline, &it->first);
  if (earliest) ready_.notify_all();  // sleepers recompute their wake-up time
}

void WorkQueue::AddRateLimited(const std::string& key) {
  if (!name_.empty()) {
    if (const auto& hook = GetMetricsHooks().queue_retry) hook(name_);
  }
  AddAfter(key, limiter_.When(key));
}

void WorkQueue::Forget(const std::string& key) { limiter_.Forget(key); }

int WorkQueue::NumRequeues(const std::string& key) const { return limiter_.NumRequeues(key); }

size_t WorkQueue::MoveDueLocked() {
  if (waiting_.empty()) return 0;
  const Time now = clock_.Now();
  size_t moved = 0;
  // Earliest deadline first (ties by key), as by_deadline_ orders them.
  while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
    std::string key = *by_deadline_.begin()->second;
    by_deadline_.erase(by_deadline_.begin());
    waiting_.erase(key);
    AddLocked(key, Priority::kNormal);
    ++moved;
  }
  return moved;
}

size_t WorkQueue::ProcessDue() {
  std::lock_guard<std::mutex> lock(mu_);
  return MoveDueLocked();
}

void WorkQueue::Poke() {
  std::lock_guard<std::mutex> lock(mu_);
  ready_.notify_all();
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (!shutting_down_) MoveDueLocked();
    if (ReadyLocked()) break;
    // After ShutDown() a normal key held back by the limit is still handed
    // out once a processing one is Done() (client-go hands out what is queued).
    if (shutting_down_ && queued_[0] + queued_[1] == 0) return std::nullopt;
    if (waiting_.empty()) {
      ready_.wait(lock);
      continue;
    }
    const Time earliest = by_deadline_.begin()->first;  // as many entries as waiting_
    Duration left = earliest - clock_.Now();
    left = std::clamp<Duration>(left, std::chrono::milliseconds(1), kMaxSleep);
    ready_.wait_for(lock, left);
  }
  auto [key, priority] = PopLocked();
  const Time now = clock_.Now();
  processing_[key] = {now, priority};
  if (priority == Priority::kNormal) ++normal_processing_;
  if (auto added = added_at_.find(key); added != added_at_.end()) {
    if (const auto& hook = GetMetricsHooks().queue_latency) {
      hook(name_, SecondsBetween(added->second, now));
    }
    added_at_.erase(added);
  }
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = processing_.find(key); it != processing_.end()) {
    if (!name_.empty()) {
      if (const auto& hook = GetMetricsHooks().queue_work_duration) {
        hook(name_, SecondsBetween(it->second.since, clock_.Now()));
      }
    }
    if (it->second.priority == Priority::kNormal) {
      --normal_processing_;
      // A Get() held back by the normal limit may go on now.
      if (normal_limit_ != 0) ready_.notify_all();
    }
    processing_.erase(it);
  }
  if (auto dirty = dirty_.find(key); dirty != dirty_.end()) {
    ++queued_[static_cast<int>(dirty->second.priority)];
    EnqueueLocked(key, dirty->second.priority);
  }
  drained_.notify_all();
}

void WorkQueue::ShutDown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutting_down_ = true;
  by_deadline_.clear();
  waiting_.clear();
  ready_.notify_all();
}

void WorkQueue::ShutDownWithDrain() {
  std::unique_lock<std::mutex> lock(mu_);
  shutting_down_ = true;
  by_deadline_.clear();
  waiting_.clear();
  ready_.notify_all();
  drained_.wait(lock, [this] { return processing_.empty(); });
}

bool WorkQueue::ShuttingDown() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::Len() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_[0] + queued_[1];
}

WorkQueue::ProcessingTimes WorkQueue::Processing() const {
  std::lock_guard<std::mutex> lock(mu_);
  const Time now = clock_.Now();
  ProcessingTimes t;
  for (const auto& [key, p] : processing_) {
    const double s = SecondsBetween(p.since, now);
    t.unfinished_seconds += s;
    t.longest_seconds = std::max(t.longest_seconds, s);
  }
  return t;
}

size_t WorkQueue::NumWaiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_.size();
}

}  // namespace slurmop::kube
