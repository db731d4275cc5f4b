// File: tests/reconcile/sim/replica.cc

#include "tests/reconcile/sim/replica.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "controller/reconcile/resource_types.h"

namespace slurmop::reconcile::sim {
namespace {

constexpr char kProtectPrefix[] = "protect:";

std::string Describe(const ReconcileResult& r) {
  if (r.retry_with_backoff) return "backoff";
  if (r.requeue_after) {
    return absl::StrCat(
        "requeue ", std::chrono::duration_cast<std::chrono::milliseconds>(*r.requeue_after).count(),
        " ms");
  }
  return "done";
}

}  // namespace

Replica::Replica(int index, ReplicaDeps deps)
    : number_(index),
      d_(deps),
      kube_(d_.kube, d_.faults, link_),
      transport_(d_.fleet, d_.faults, link_, d_.clock, d_.refused_tags),
      token_(std::make_shared<testing::FixedTokenSource>("ya29.sim")),
      creds_(kube_, token_) {
  agentplatform::ClientOptions o;
  o.transport = &transport_;
  o.clock = &d_.clock;
  // Retries take simulated time (a dead process's retries take none).
  o.sleep = [this](std::chrono::nanoseconds ns) {
    if (!link_.dead) d_.clock.Advance(ns);
  };
  o.jitter = [this] { return std::uniform_real_distribution<double>(0, 1)(d_.faults.rng); };
  o.budget.requests_per_minute = 0;
  api_ = agentplatform::NewSlurmApiClient(o);
  fence_ = std::make_unique<LeaseSubmitFence>([this] { return LeaseValidUntil(); },
                                              kLease - kRenewDeadline);
  Build();
}

Replica::~Replica() {
  tracker_.reset();
  executor_.reset();
}

void Replica::Build() {
  jobs_ = std::make_unique<SimCache>(d_.kube, SlurmJobsResource());
  clusters_ = std::make_unique<SimCache>(d_.kube, SlurmClustersResource());
  index_ = std::make_unique<JobIndex>();
  ExecutorOptions o;
  o.installation = kInstallation;
  if (d_.notes) o.submit_note_key = "sim-note-key-0123456789abcdef0123456789";
  o.access.allow_operator_identity_for_namespaced_clusters = true;
  o.access.operator_namespace = "slurmjob-operator-system";
  executor_ =
      std::make_unique<Executor>(kube_, *jobs_, *clusters_, *api_, creds_, events_, d_.clock, o);
  executor_->SetSubmitFence(fence_.get());
  protector_ = std::make_unique<ClusterProtector>(
      kube_, *clusters_,
      ClusterProtector::JobsView{[] { return true; },
                                 [this](const std::string& ns, const std::string& name) {
                                   return !index_->Naming(ns, name, "").empty();
                                 }});
  executor_->SetProtectionProblems(&protector_->problems());
  if (d_.batched) {
    TrackerOptions t;
    t.fetch_threads = 1;
    t.get_wait = std::chrono::milliseconds(60000);
    t.installation = kInstallation;
    t.named_by_status = [this](const ClusterEndpoint&, int64_t id) {
      return index_->NamesJobId(id);
    };
    tracker_ = std::make_unique<JobTracker>(
        [this](const ClusterEndpoint& c, agentplatform::HttpMethod m, const std::string& path,
               const agentplatform::CallOptions& options) {
          return executor_->CallSlurm(c.where, *c.credentials, m, path, nullptr, options);
        },
        d_.clock,
        // On the fetch thread, which may still run when Get() returned: the
        // keys are queued by the schedule's thread once the tracker is idle.
        [this](const std::string& key) {
          executor_->MarkChanged(key);
          std::lock_guard<std::mutex> lock(notified_mu_);
          notified_.push_back(key);
        },
        [this](const std::string&, const std::string& uid) -> std::optional<TagOwner> {
          return index_->OwnerOfUid(uid);
        },
        t);
    executor_->SetTracker(tracker_.get());
  }
  due_.clear();
  failures_.clear();
  RefreshCaches();
}

void Replica::Restart() {
  protector_.reset();
  tracker_.reset();
  executor_.reset();
  notified_.clear();
  link_ = ReplicaLink();
  role_ = Role::kStandby;
  Build();
}

void Replica::BecomeLeader() {
  role_ = Role::kLeader;
  executor_->AnchorSettleWindow(d_.clock.Now());
  // The manager starts: its first list queues every SlurmJob.
  jobs_->frozen = false;
  RefreshCaches();
  for (const std::string& key : jobs_->Keys()) Queue(key, d_.clock.Now());
  QueueProtection(d_.clock.Now());
}

void Replica::Stall() {
  role_ = Role::kDeposed;
  stalled_at_ = d_.clock.Now();
}

std::optional<Time> Replica::LeaseValidUntil() const {
  switch (role_) {
    case Role::kLeader:
      return d_.clock.Now() + kLease;
    case Role::kDeposed:
      return stalled_at_ + kLease;
    case Role::kStandby:
      return std::nullopt;
  }
  return std::nullopt;
}

void Replica::Queue(const std::string& key, Time at) {
  auto [it, inserted] = due_.try_emplace(key, at);
  if (!inserted) it->second = std::min(it->second, at);
}

void Replica::QueueProtection(Time at) {
  for (const std::string& key : clusters_->Keys()) Queue(kProtectPrefix + key, at);
}

void Replica::RefreshCaches() {
  const Time now = d_.clock.Now();
  const std::vector<SimCache::Event> job_events = jobs_->Refresh();
  for (const SimCache::Event& e : job_events) {
    for (const std::string& k : index_->Apply(e.type, *e.object)) Queue(k, now);
    Queue(e.key, now);
  }
  const bool clusters_changed = !clusters_->Refresh().empty();
  if (clusters_changed) {
    for (const auto& [key, at] : std::map<std::string, Time>(due_)) Queue(key, now);
  }
  if (clusters_changed || !job_events.empty()) QueueProtection(now);
}

bool Replica::Reported(const std::string& key, const std::string& reason) const {
  for (const testing::RecordedEvent& e : events_.events()) {
    if (e.object == key && e.event.reason == reason) return true;
  }
  return false;
}

void Replica::FreezeCaches(bool frozen) {
  jobs_->frozen = frozen;
  if (!frozen) RefreshCaches();
}

std::vector<std::string> Replica::DueKeys() const {
  std::vector<std::string> out;
  const Time now = d_.clock.Now();
  for (const auto& [key, at] : due_) {
    if (at <= now) out.push_back(key);
  }
  return out;
}

std::optional<Time> Replica::NextDue() const {
  std::optional<Time> next;
  for (const auto& [key, at] : due_) next = next ? std::min(*next, at) : at;
  return next;
}

void Replica::QueueNotified() {
  if (tracker_) tracker_->WaitIdle();
  std::vector<std::string> keys;
  {
    std::lock_guard<std::mutex> lock(notified_mu_);
    keys.swap(notified_);
  }
  for (const std::string& key : keys) Queue(key, d_.clock.Now());
}

std::string Replica::Reconcile(const std::string& key) {
  due_.erase(key);
  const bool protect = key.rfind(kProtectPrefix, 0) == 0;
  const ReconcileResult r = protect ? protector_->Reconcile(key.substr(sizeof(kProtectPrefix) - 1))
                                    : executor_->Reconcile(key);
  QueueNotified();
  const Time now = d_.clock.Now();
  if (r.retry_with_backoff) {
    const int n = failures_[key]++;
    const Duration backoff = std::min<Duration>(
        std::chrono::milliseconds(5) * (int64_t{1} << std::min(n, 30)), std::chrono::seconds(1000));
    Queue(key, now + backoff);
  } else {
    failures_.erase(key);
    if (r.requeue_after) Queue(key, now + *r.requeue_after);
  }
  return absl::StrCat("r", number_, " reconcile ", key, " -> ", Describe(r),
                      link_.dead ? " (died)" : "");
}

void Replica::TickTracker() {
  if (!tracker_ || link_.dead) return;
  tracker_->Tick();
  QueueNotified();
}

}  // namespace slurmop::reconcile::sim
