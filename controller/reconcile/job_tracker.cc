// File: controller/reconcile/job_tracker.cc

#include "controller/reconcile/job_tracker.h"

#include <malloc.h>

#include <algorithm>
#include <limits>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controller/common/bounded_text.h"
#include "controller/slurm/dialects.h"
#include "glog/logging.h"

namespace slurmop::reconcile {
namespace {

// What a SlurmJob's status is made of: a change here is worth a reconcile.
bool SameRecord(const slurm::JobInfo& a, const slurm::JobInfo& b) {
  return a.state == b.state && a.flags == b.flags && a.state_reason == b.state_reason &&
         a.exit_code == b.exit_code && a.signal == b.signal && a.start_time == b.start_time &&
         a.end_time == b.end_time && a.submit_time == b.submit_time && a.comment == b.comment &&
         a.array == b.array;
}

// The same Slurm cluster, reached the same way: a different one names other
// jobs by the same ids.
bool SameCluster(const ClusterEndpoint& a, const ClusterEndpoint& b) {
  return a.api_version == b.api_version && a.where.endpoint == b.where.endpoint &&
         a.where.project_id == b.where.project_id && a.where.region == b.where.region &&
         a.where.cluster_id == b.where.cluster_id;
}

}  // namespace

void JobTracker::SetEndpoint(Cluster& c, const ClusterEndpoint& e) {
  if (!c.endpoint.key.empty() && !SameCluster(c.endpoint, e)) {
    // What was learned describes the old cluster (#13 L1).
    c.jobs.clear();
    c.fetched_at.reset();
    c.released_list_at.reset();
    c.last_full.reset();
    c.last_update.reset();
    c.last_update_confirmed = false;
    c.unchanged_lists = 0;
    c.orphan_candidates.clear();
    c.accounted.clear();
    c.left_looked.clear();
    c.left_records.clear();
    c.endpoint_changes += 1;
  }
  if (!SameCluster(c.endpoint, e) || c.endpoint.credentials != e.credentials) {
    c.failures = 0;
    c.retry_at.reset();
    c.last_error.reset();
  }
  c.endpoint = e;
}

std::optional<Duration> JobTracker::IntervalLocked(const Cluster& c, Time now) const {
  ClusterPaceFacts facts;
  facts.registered = c.registered;
  facts.unchanged_lists = c.unchanged_lists;
  if (!c.tracked.empty()) {
    facts.eagerest_poll = *c.tracked_polls.begin();
    // Some tracked job is young exactly when the last one tracked is.
    facts.any_young = now - *c.tracked_since.rbegin() < options_.pace.eager_window;
  }
  return ListInterval(facts, options_.sweep_interval, options_.pace);
}

void JobTracker::SetTracked(Cluster& c, int64_t job_id, TrackedJob entry) {
  EraseTracked(c, job_id);
  c.tracked_polls.insert(entry.poll);
  c.tracked_since.insert(entry.since());
  c.tracked.emplace(job_id, std::move(entry));
}

void JobTracker::EraseTracked(Cluster& c, int64_t job_id) {
  auto it = c.tracked.find(job_id);
  if (it == c.tracked.end()) return;
  c.tracked_polls.erase(c.tracked_polls.find(it->second.poll));
  c.tracked_since.erase(c.tracked_since.find(it->second.since()));
  c.tracked.erase(it);
}

void JobTracker::ForgetTracked(Cluster& c, int64_t job_id) {
  EraseTracked(c, job_id);
  c.accounted.erase(job_id);
  c.left_looked.erase(job_id);
  c.left_records.erase(job_id);
}

std::optional<AccountingLook> JobTracker::AccountedLocked(const Cluster& c, int64_t job_id) {
  auto it = c.accounted.find(job_id);
  if (it == c.accounted.end()) return std::nullopt;
  return it->second;
}

JobTracker::JobTracker(Caller caller, const Clock& clock, Notify notify, KnownUid known_uid,
                       TrackerOptions options)
    : caller_(std::move(caller)),
      clock_(clock),
      notify_(std::move(notify)),
      known_uid_(std::move(known_uid)),
      options_(options) {
  for (int i = 0; i < std::max(1, options_.fetch_threads); ++i) {
    fetchers_.emplace_back([this] { FetchLoop(); });
  }
}

JobTracker::~JobTracker() {
  Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    fetchers_stopping_ = true;
  }
  fetch_cv_.notify_all();
  for (std::thread& t : fetchers_) t.join();
}

void JobTracker::QueueFetchLocked(const std::string& key) {
  Cluster& c = clusters_[key];
  if (c.fetching) return;
  c.fetching = true;
  fetch_queue_.push_back(key);
  fetch_cv_.notify_one();
}

void JobTracker::FetchLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    fetch_cv_.wait(lock, [this] { return fetchers_stopping_ || !fetch_queue_.empty(); });
    if (fetchers_stopping_) return;
    const std::string key = std::move(fetch_queue_.front());
    fetch_queue_.pop_front();
    ++in_flight_;
    absl::Status s = FetchLocked(lock, key);
    DropIfUnusedLocked(key);  // listed for a search that gave up waiting
    --in_flight_;
    idle_cv_.notify_all();
    if (!s.ok()) VLOG(1) << "SlurmCluster " << key << ": listing jobs failed: " << s;
  }
}

void JobTracker::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return fetch_queue_.empty() && in_flight_ == 0; });
}

void JobTracker::Track(const ClusterEndpoint& cluster, int64_t job_id, const std::string& job_key,
                       Duration poll) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = by_key_.try_emplace(job_key);
  Tracked& t = it->second;
  if (!inserted && (t.cluster_key != cluster.key || t.job_id != job_id)) {
    auto old = clusters_.find(t.cluster_key);
    if (old != clusters_.end()) ForgetTracked(old->second, t.job_id);
    inserted = true;
  }
  if (inserted) t.since = clock_.Now();
  t.cluster_key = cluster.key;
  t.job_id = job_id;
  Cluster& c = clusters_[cluster.key];
  SetEndpoint(c, cluster);
  SetTracked(c, job_id, TrackedJob{&*it, poll});
}

void JobTracker::Untrack(const std::string& job_key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(job_key);
  if (it == by_key_.end()) return;
  auto c = clusters_.find(it->second.cluster_key);
  if (c != clusters_.end()) ForgetTracked(c->second, it->second.job_id);
  const std::string cluster_key = it->second.cluster_key;
  by_key_.erase(it);
  DropIfUnusedLocked(cluster_key);
}

void JobTracker::RegisterCluster(const ClusterEndpoint& cluster) {
  std::lock_guard<std::mutex> lock(mu_);
  Cluster& c = clusters_[cluster.key];
  SetEndpoint(c, cluster);
  c.registered = true;
}

void JobTracker::ForgetCluster(const std::string& cluster_key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clusters_.find(cluster_key);
  if (it == clusters_.end()) return;
  it->second.registered = false;
  DropIfUnusedLocked(cluster_key);
}

size_t JobTracker::RecordsHeld() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, c] : clusters_) n += c.jobs.size();
  return n;
}

size_t JobTracker::TrackedCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_key_.size();
}

absl::Status JobTracker::AwaitListLocked(std::unique_lock<std::mutex>& lock, const std::string& key,
                                         Time not_before, const std::string& job_key) {
  auto fresh = [&](const Cluster& c) { return c.fetched_at && *c.fetched_at >= not_before; };
  {
    const Cluster& c = clusters_[key];
    if (c.last_error && c.retry_at && clock_.Now() < *c.retry_at && !fresh(c)) {
      return *c.last_error;
    }
  }
  // The list is fetched on a fetch thread; this caller waits for it only so long.
  const auto give_up = std::chrono::steady_clock::now() + options_.get_wait;
  clusters_[key].readers += 1;
  clusters_[key].last_read = clock_.Now();
  absl::Status result;
  for (;;) {
    Cluster& c = clusters_[key];
    if (fresh(c)) break;
    const uint64_t done_before = c.fetches_done;
    QueueFetchLocked(key);
    const bool ended = fetched_.wait_until(
        lock, give_up, [&] { return clusters_[key].fetches_done > done_before; });
    Cluster& after = clusters_[key];
    if (!ended) {
      if (!job_key.empty()) after.waiters.insert(job_key);
      result = absl::UnavailableError(absl::StrCat(
          "the job list of SlurmCluster ", key, " did not arrive within ",
          options_.get_wait.count(), " ms; the SlurmJob is looked at again when it does"));
      break;
    }
    if (after.last_error && !fresh(after)) {
      result = *after.last_error;
      break;
    }
  }
  clusters_[key].readers -= 1;
  return result;
}

void JobTracker::DropIfUnusedLocked(const std::string& key) {
  auto it = clusters_.find(key);
  if (it == clusters_.end()) return;
  Cluster& c = it->second;
  if (!c.tracked.empty() || c.registered || c.fetching || c.readers > 0) return;
  // Read a moment ago: more reads are likely (after a restart every SlurmJob
  // without a job id searches, one after another when the call budget spaces
  // them, often before the cluster's probe registered it), and each would
  // list the cluster anew. Tick() drops it once unread for sweep_interval.
  if (c.last_read && clock_.Now() - *c.last_read < options_.sweep_interval) return;
  if (c.last_error) {
    c.jobs.clear();  // the failure's backoff stays: searches do not hammer the cluster
    c.fetched_at.reset();
  } else {
    clusters_.erase(it);
  }
}

absl::StatusOr<JobTracker::Answer> JobTracker::Get(const ClusterEndpoint& cluster, int64_t job_id,
                                                   Time not_before, const std::string& job_key) {
  std::unique_lock<std::mutex> lock(mu_);
  const Time now = clock_.Now();
  {
    Cluster& c = clusters_[cluster.key];
    SetEndpoint(c, cluster);
    // A tracked job is served at the tracker's own pace.
    if (auto k = c.tracked.find(job_id); k != c.tracked.end()) {
      std::optional<Duration> interval = IntervalLocked(c, now);
      if (interval && not_before < now) not_before = std::min(not_before, now - *interval);
      // A snapshot that shows the job answers for it, whenever the tracking
      // began: after a restart or a shard move every running job is tracked
      // anew, and one list per cluster answers them all (not one list per
      // worker's job). One that does not show it may predate the job: its
      // absence counts only in a list sent after the tracking began.
      if (c.fetched_at && *c.fetched_at >= not_before) {
        if (std::optional<slurm::JobInfo> job = c.jobs.Find(job_id)) {
          return Answer{std::move(job), AccountedLocked(c, job_id), std::nullopt};
        }
      }
      not_before = std::max(not_before, k->second.since());
    }
  }
  if (absl::Status s = AwaitListLocked(lock, cluster.key, not_before, job_key); !s.ok()) return s;
  const Cluster& c = clusters_[cluster.key];
  Answer a;
  a.job = c.jobs.Find(job_id);
  if (a.job) {
    a.accounting = AccountedLocked(c, job_id);
  } else if (c.left_records.contains(job_id)) {
    a.left_record = c.left_records.Find(job_id);
  }
  return a;
}

absl::StatusOr<JobTracker::LiveJobs> JobTracker::FindLive(
    const ClusterEndpoint& cluster, const std::function<bool(const slurm::JobInfo&)>& match,
    Time not_before, const std::string& job_key) {
  std::unique_lock<std::mutex> lock(mu_);
  SetEndpoint(clusters_[cluster.key], cluster);
  absl::Status s = AwaitListLocked(lock, cluster.key, not_before, job_key);
  LiveJobs live;
  if (s.ok()) {
    const Cluster& c = clusters_[cluster.key];
    live.listed_at = *c.fetched_at;
    c.jobs.ForEach([&](const slurm::JobInfo& job) {
      if (match(job)) live.jobs.push_back(job);
    });
  }
  DropIfUnusedLocked(cluster.key);
  if (!s.ok()) return s;
  return live;
}

namespace {

// The records of a list, decoded as they arrive.
class RecordSink final : public agentplatform::JobSink {
 public:
  explicit RecordSink(slurm::JobListDecoder& records) : records_(records) {}
  absl::Status Job(nlohmann::json record) override {
    records_.Add(record);
    return absl::OkStatus();
  }
  void Restart() override { records_.Restart(); }

 private:
  slurm::JobListDecoder& records_;
};

}  // namespace

absl::StatusOr<slurm::PackedJobList> JobTracker::ListJobs(const ClusterEndpoint& endpoint,
                                                          std::optional<int64_t> update_time) {
  absl::StatusOr<const slurm::Dialect*> dialect = slurm::DialectFor(endpoint.api_version);
  if (!dialect.ok()) return dialect.status();
  list_calls_.fetch_add(1);
  // Of each job only the keys ParseJobs reads are kept, dropped while the
  // answer is decoded: a record is 60-110 keys (2.5-4.5 KB of JSON), of
  // which it reads 11. At 10,000 jobs the decoded list takes 37 MB instead
  // of 172 MB (bench/agentplatform_client_bench).
  // And the records are decoded one by one as the answer streams in
  // (JobSink): neither the answer's text nor a tree of the whole list is
  // ever held, only each record's JobInfo.
  agentplatform::CallOptions options;
  options.job_fields = (*dialect)->JobRecordKeys();
  slurm::JobListDecoder records;
  RecordSink sink(records);
  options.job_sink = &sink;
  absl::StatusOr<agentplatform::SlurmResponse> r = caller_(
      endpoint, agentplatform::HttpMethod::kGet, (*dialect)->JobsPath(update_time), options);
  if (!r.ok()) return r.status();
  return (*dialect)->ParseJobs(r->status, r->body, records);
}

void JobTracker::NoteLastUpdate(Cluster& c, const slurm::PackedJobList& list, bool full,
                                Time started) {
  if (!list.last_update) {
    c.last_update.reset();
    c.last_update_confirmed = false;
  } else if (list.last_update != c.last_update) {
    c.last_update = list.last_update;
    c.last_update_seen_at = started;
    c.last_update_confirmed = false;
  } else if (full && started - c.last_update_seen_at >= std::chrono::milliseconds(1500)) {
    c.last_update_confirmed = true;
  }
}

std::vector<std::string> JobTracker::ApplyList(Cluster& c, slurm::PackedJobList list,
                                               Time started) {
  // A list that is not `unchanged` is whole (Slurm answers all jobs or none
  // to an update_time). The snapshot is updated in place rather than rebuilt
  // beside the old one: at 10,000 jobs a second map is ~6 MB more at every
  // list (issue #16).
  std::set<std::string> changed;
  auto note = [&c, &changed](int64_t id) {
    if (auto k = c.tracked.find(id); k != c.tracked.end()) changed.insert(k->second.key());
  };
  std::vector<int64_t> listed;
  listed.reserve(list.jobs.size());
  slurm::JobInfo previous;
  for (const slurm::PackedJob& j : list.jobs) {
    const int64_t id = j.job_id;
    listed.push_back(id);
    // A new or changed record is copied into the snapshot; only a changed
    // one is decoded.
    switch (c.jobs.Put(j, &previous)) {
      case slurm::PackedJobs::PutOutcome::kAdded:
        if (c.left_looked.erase(id) > 0) c.left_records.erase(id);  // requeued
        note(id);
        break;
      case slurm::PackedJobs::PutOutcome::kChanged:
        if (std::optional<slurm::JobInfo> now = c.jobs.Find(id);
            !now || !SameRecord(previous, *now)) {
          note(id);
        }
        break;
      case slurm::PackedJobs::PutOutcome::kSame:
        break;
    }
  }
  // In the snapshot now: the list's array and blocks go now, not after the sweep.
  list.jobs = {};
  list.store = {};
  std::sort(listed.begin(), listed.end());
  std::set<int64_t> left;  // tracked jobs this list no longer shows
  c.jobs.EraseIf([&](int64_t id) {
    if (std::binary_search(listed.begin(), listed.end(), id)) return false;
    if (c.tracked.contains(id)) left.insert(id);
    note(id);
    return true;
  });
  for (const auto& [id, entry] : c.tracked) {
    if (c.jobs.contains(id) || left.contains(id)) continue;
    // Never seen, and absent from a list sent after it was tracked: the
    // job left the queue before any list saw it (it ended at once, or a
    // busy call budget delayed the lists). Its key is told once, so its
    // reconcile reads accounting now, not when its safety-net timer fires.
    Tracked& t = entry.owner->second;
    if (started > t.since && !t.reported_gone) {
      t.reported_gone = true;
      changed.insert(entry.key());
    }
  }
  return std::vector<std::string>(changed.begin(), changed.end());
}

std::vector<std::string> JobTracker::RecordListLocked(Cluster& c,
                                                      absl::StatusOr<slurm::PackedJobList>& list,
                                                      Time started, bool full) {
  std::vector<std::string> changed;
  if (!list.ok()) {
    c.last_error = list.status();
    std::optional<Duration> server_delay;
    if (auto d = agentplatform::RetryDelay(list.status())) server_delay = *d;
    if (agentplatform::HeldBackByBudget(list.status())) {
      // Not sent (the project's budget had no room): no failure of the
      // cluster, so no growing backoff; the list is due when the budget says.
      c.retry_at = started + server_delay.value_or(options_.pace.failure_base);
    } else {
      // From the failure, not the start: a list that hung until its deadline (minutes, with the
      // client's retries) was otherwise due again at once, and a few clusters pointed at a
      // remote that never answers kept every fetch thread, and so every other cluster's lists,
      // waiting on it.
      c.failures += 1;
      c.retry_at =
          std::max(started, clock_.Now()) +
          ListFailureBackoff(list.status().code(), c.failures, server_delay, options_.pace);
    }
    return changed;
  }
  c.last_error.reset();
  c.retry_at.reset();
  c.failures = 0;
  c.fetched_at = started;
  if (!list->unchanged) {
    if (full) c.last_full = started;
    NoteLastUpdate(c, *list, full, started);
    changed = ApplyList(c, std::move(*list), started);
  }
  c.unchanged_lists = changed.empty() ? c.unchanged_lists + 1 : 0;
  return changed;
}

absl::Status JobTracker::FetchLocked(std::unique_lock<std::mutex>& lock, const std::string& key) {
  Cluster& c = clusters_[key];
  const ClusterEndpoint endpoint = c.endpoint;
  const uint64_t endpoint_changes = c.endpoint_changes;
  const Time started = clock_.Now();
  const bool full = !c.last_full || started - *c.last_full >= options_.full_resync ||
                    !c.last_update || !c.fetched_at || !c.last_update_confirmed;
  std::optional<int64_t> update_time;
  // (A remote's last_update at int64's top would overflow the + 1: it gets a full list.)
  if (!full && *c.last_update < std::numeric_limits<int64_t>::max()) {
    update_time = *c.last_update + 1;
  }
  lock.unlock();

  absl::StatusOr<slurm::PackedJobList> list = ListJobs(endpoint, update_time);
  // A list of thousands of jobs leaves MB of freed memory behind (the
  // answer's chunks, each record's JSON while it was decoded); under glibc's
  // malloc, hand those pages back rather than let the arena keep its
  // high-water mark (a no-op under jemalloc, which returns them itself).
  if (list.ok() && list->jobs.size() >= 256) malloc_trim(0);

  lock.lock();
  // Jobs the list shows ended are looked up in accounting before the list
  // is applied: a Get() either sees the job not ended yet, or ended with
  // that look (see the header).
  if (list.ok() && !list->unchanged && clusters_[key].endpoint_changes == endpoint_changes) {
    std::vector<int64_t> ended = NewlyEndedLocked(clusters_[key], *list);
    std::vector<int64_t> left = LeftQueueLocked(clusters_[key], *list, started);
    if (!ended.empty() || !left.empty()) {
      AccountEndsLocked(lock, key, std::move(ended), std::move(left), endpoint_changes);
    }
  }
  Cluster& after = clusters_[key];
  if (after.endpoint_changes != endpoint_changes) {
    // Listed the cluster the key pointed at before: it says nothing of the
    // one it points at now, which is listed next (a Get() waiting sees this
    // fetch end and waits for that one; the waiters stay for it).
    EndFetchLocked(after);
    QueueFetchLocked(key);
    fetched_.notify_all();
    return list.status();
  }
  std::vector<std::string> changed = RecordListLocked(after, list, started, full);
  // (`after` stays valid: a cluster being fetched is never dropped.)
  if (list.ok() && options_.sweep && known_uid_ &&
      (!after.last_sweep || started - *after.last_sweep >= options_.sweep_interval)) {
    after.last_sweep = started;
    SweepLocked(lock, after, started);
  }
  // The fetch ends only now, after its sweep (which drops mu_ while it
  // cancels): a Get() waiting for it answers once nothing of it runs any
  // more, and no second fetch of the cluster starts meanwhile.
  EndFetchLocked(clusters_[key]);
  Cluster& done = clusters_[key];
  // Those whose Get() gave up on this list look again now, changed or not.
  for (const std::string& k : done.waiters) {
    if (std::find(changed.begin(), changed.end(), k) == changed.end()) changed.push_back(k);
  }
  const bool unread = !done.last_read || started - *done.last_read >= options_.sweep_interval;
  if (list.ok() && done.tracked.empty() && done.waiters.empty() && done.readers == 0 && unread) {
    ReleaseSnapshot(done);  // swept, and nobody reads it: see the header
  }
  done.waiters.clear();
  fetched_.notify_all();
  if (!changed.empty() && notify_) {
    lock.unlock();
    for (const std::string& k : changed) notify_(k);
    lock.lock();
  }
  return list.status();
}

std::vector<int64_t> JobTracker::NewlyEndedLocked(const Cluster& c,
                                                  const slurm::PackedJobList& list) {
  std::vector<int64_t> ended;
  for (const slurm::PackedJob& j : list.jobs) {
    if (!j.final || !c.tracked.contains(j.job_id) || c.accounted.contains(j.job_id)) continue;
    std::optional<slurm::JobInfo> before = c.jobs.Find(j.job_id);
    if (!before || !before->IsFinal()) ended.push_back(j.job_id);
  }
  return ended;
}

std::vector<int64_t> JobTracker::LeftQueueLocked(const Cluster& c, const slurm::PackedJobList& list,
                                                 Time started) const {
  std::vector<int64_t> left;
  if (options_.accounting_batch <= 0 || c.tracked.empty()) return left;
  std::vector<int64_t> listed;
  listed.reserve(list.jobs.size());
  for (const slurm::PackedJob& j : list.jobs) listed.push_back(j.job_id);
  std::sort(listed.begin(), listed.end());
  for (const auto& [id, entry] : c.tracked) {
    if (std::binary_search(listed.begin(), listed.end(), id) || c.left_looked.contains(id)) {
      continue;
    }
    // As ApplyList: a job the snapshot shows leaves now; one never seen has
    // left only if this list was sent after its tracking began.
    if (c.jobs.contains(id)) {
      left.push_back(id);
      continue;
    }
    if (started > entry.since()) left.push_back(id);
  }
  return left;
}

void JobTracker::AccountEndsLocked(std::unique_lock<std::mutex>& lock, const std::string& key,
                                   std::vector<int64_t> ended, std::vector<int64_t> left,
                                   uint64_t endpoint_changes) {
  if (options_.accounting_batch <= 0) return;
  const ClusterEndpoint endpoint = clusters_[key].endpoint;
  std::vector<int64_t> ids = ended;
  ids.insert(ids.end(), left.begin(), left.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::map<int64_t, slurm::JobInfo> found;
  std::set<int64_t> answered;  // ids of the batches that answered
  lock.unlock();
  const size_t batch = static_cast<size_t>(options_.accounting_batch);
  for (size_t i = 0; i < ids.size(); i += batch) {
    const std::vector<int64_t> some(ids.begin() + i, ids.begin() + std::min(ids.size(), i + batch));
    absl::StatusOr<std::map<int64_t, slurm::JobInfo>> records = LookUpRecords(endpoint, some);
    // A failed batch leaves its jobs to the executor's own lookup.
    if (!records.ok()) continue;
    answered.insert(some.begin(), some.end());
    found.merge(*records);
  }
  lock.lock();
  Cluster& c = clusters_[key];
  if (c.endpoint_changes != endpoint_changes) return;  // another cluster's job ids
  auto final_record = [&found](int64_t id) -> std::optional<slurm::JobInfo> {
    // As the executor's own lookup: only a record that shows the end counts.
    auto it = found.find(id);
    if (it == found.end() || !it->second.IsFinal()) return std::nullopt;
    return it->second;
  };
  for (int64_t id : ended) {
    if (!answered.contains(id) || !c.tracked.contains(id)) continue;
    AccountingLook look;
    if (std::optional<slurm::JobInfo> r = final_record(id); r && r->allocation) {
      look.allocation = std::move(r->allocation);
      look.account = std::move(r->account);
    }
    c.accounted.insert_or_assign(id, std::move(look));
  }
  for (int64_t id : left) {
    if (!answered.contains(id) || !c.tracked.contains(id)) continue;
    c.left_looked.insert(id);
    if (std::optional<slurm::JobInfo> r = final_record(id)) c.left_records.Put(*r);
  }
}

absl::StatusOr<std::map<int64_t, slurm::JobInfo>> JobTracker::LookUpRecords(
    const ClusterEndpoint& endpoint, const std::vector<int64_t>& ids) {
  absl::StatusOr<const slurm::Dialect*> dialect = slurm::DialectFor(endpoint.api_version);
  if (!dialect.ok()) return dialect.status();
  accounting_calls_.fetch_add(1);
  absl::StatusOr<agentplatform::SlurmResponse> r =
      caller_(endpoint, agentplatform::HttpMethod::kGet, (*dialect)->DbJobsByIdPath(ids), {});
  if (!r.ok()) return r.status();
  absl::StatusOr<slurm::DbRecordsById> records =
      (*dialect)->ParseDbJobsById(r->status, r->body, ids);
  if (!records.ok()) return records.status();
  return std::move(records->jobs);
}

void JobTracker::ReleaseSnapshot(Cluster& c) {
  c.jobs = slurm::PackedJobs();
  c.released_list_at = c.fetched_at;
  c.fetched_at.reset();
  c.last_full.reset();
  c.last_update.reset();
  c.last_update_confirmed = false;
}

void JobTracker::EndFetchLocked(Cluster& c) {
  c.fetching = false;
  c.fetches_done += 1;
}

void JobTracker::SweepLocked(std::unique_lock<std::mutex>& lock, Cluster& c, Time now) {
  (void)now;
  SweepScope scope{options_.installation, nullptr};
  if (options_.named_by_status) {
    scope.named_by_status = [&](int64_t id) { return options_.named_by_status(c.endpoint, id); };
  }
  SweepVerdict verdict = DecideSweep(c.jobs, c.orphan_candidates, known_uid_, scope);
  c.orphan_candidates = std::move(verdict.candidates);
  std::vector<std::pair<int64_t, std::string>>& to_cancel = verdict.to_cancel;
  if (to_cancel.empty()) return;
  const size_t cap = static_cast<size_t>(std::max(1, options_.max_cancels_per_sweep));
  if (to_cancel.size() > cap) {
    LOG(WARNING) << "SlurmCluster " << c.endpoint.key << ": " << to_cancel.size()
                 << " Slurm jobs belong to no current run of an existing SlurmJob; cancelling "
                 << cap << " now and the rest at the next sweeps";
    to_cancel.resize(cap);
  }
  const ClusterEndpoint endpoint = c.endpoint;
  const std::string key = endpoint.key;
  lock.unlock();
  absl::StatusOr<const slurm::Dialect*> dialect = slurm::DialectFor(endpoint.api_version);
  for (const auto& [id, comment] : to_cancel) {
    if (!dialect.ok()) break;
    LOG(WARNING) << "SlurmCluster " << key << ": Slurm job " << id << " ("
                 << CutText(comment, kMaxRemoteMessageBytes)
                 << ") belongs to no current run of an existing SlurmJob (its SlurmJob is gone, "
                    "or it duplicates the run's recorded job); cancelling it. Set "
                    "deletionPolicy: Orphan on SlurmJobs whose jobs must outlive them.";
    absl::StatusOr<agentplatform::SlurmResponse> r =
        caller_(endpoint, agentplatform::HttpMethod::kDelete, (*dialect)->CancelPath(id),
                agentplatform::CallOptions());
    if (r.ok()) {
      absl::StatusOr<slurm::CancelResponse> parsed =
          (*dialect)->ParseCancel(r->status, r->body, id);
      if (parsed.ok()) {
        orphans_cancelled_.fetch_add(1);
        continue;
      }
      LOG(WARNING) << "cancelling orphaned Slurm job " << id << " failed: " << parsed.status();
    } else {
      LOG(WARNING) << "cancelling orphaned Slurm job " << id << " failed: " << r.status();
    }
  }
  lock.lock();
}

void JobTracker::Tick() {
  std::unique_lock<std::mutex> lock(mu_);
  const Time now = clock_.Now();
  std::vector<std::string> due, unused;
  for (const auto& [key, c] : clusters_) {
    if (c.tracked.empty() && !c.registered && !c.fetching && c.readers == 0) {
      unused.push_back(key);  // kept for its readers (DropIfUnusedLocked)
      continue;
    }
    if (c.fetching || (c.retry_at && now < *c.retry_at)) continue;
    std::optional<Duration> want = IntervalLocked(c, now);
    if (!want) continue;
    // A released snapshot's list still sets the pace (else: listed every tick).
    const std::optional<Time> last = c.fetched_at ? c.fetched_at : c.released_list_at;
    if (!last || now - *last >= *want) due.push_back(key);
  }
  for (const std::string& key : due) QueueFetchLocked(key);
  for (const std::string& key : unused) DropIfUnusedLocked(key);
}

void JobTracker::Start() {
  std::lock_guard<std::mutex> lock(run_mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(run_mu_);
    while (!stopping_) {
      lock.unlock();
      Tick();
      lock.lock();
      run_cv_.wait_for(lock, options_.tick, [this] { return stopping_; });
    }
  });
}

void JobTracker::Stop() {
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    stopping_ = true;
  }
  run_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace slurmop::reconcile
