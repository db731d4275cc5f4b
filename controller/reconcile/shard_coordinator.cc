// File: controller/reconcile/shard_coordinator.cc
//
// See shard_coordinator.h.

#include "controller/reconcile/shard_coordinator.h"

#include <glog/logging.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/kube/metrics_hooks.h"
#include "controller/kube/request_deadline.h"
#include "controller/kube/resource_types.h"

namespace slurmop::reconcile {
namespace {

std::string StringField(const nlohmann::json& spec, const char* f) {
  auto it = spec.find(f);
  return it != spec.end() && it->is_string() ? it->get<std::string>() : "";
}

Duration LeaseDurationOf(const nlohmann::json& spec, Duration fallback) {
  auto it = spec.find("leaseDurationSeconds");
  if (it == spec.end() || !it->is_number_integer()) return fallback;
  const long long s = it->get<long long>();
  if (s < 1 || s > 2147483647LL) return fallback;
  return std::chrono::seconds(s);
}

}  // namespace

ShardCoordinator::ShardCoordinator(kube::Client& kube, const Clock& clock,
                                   ShardCoordinatorOptions options)
    : kube_(kube), clock_(clock), options_(std::move(options)) {}

ShardCoordinator::~ShardCoordinator() { Stop(); }

absl::Status ShardCoordinator::Start() {
  if (thread_.joinable()) return absl::OkStatus();
  auto elector_config = [&](const std::string& lease) {
    kube::LeaderElectionConfig c;
    c.lease_namespace = options_.lease_namespace;
    c.lease_name = lease;
    c.identity = options_.identity;
    c.lease_duration = options_.lease_duration;
    c.renew_deadline = options_.renew_deadline;
    c.retry_period = options_.retry_period;
    return c;
  };
  absl::StatusOr<std::unique_ptr<kube::LeaderElector>> member = kube::LeaderElector::Create(
      kube_, clock_, elector_config(MemberLeaseName(options_.lease_base, options_.identity)));
  if (!member.ok()) return member.status();
  member_ = std::move(*member);
  shards_.resize(std::max(1, options_.shards));
  for (int k = 0; k < static_cast<int>(shards_.size()); ++k) {
    absl::StatusOr<std::unique_ptr<kube::LeaderElector>> e = kube::LeaderElector::Create(
        kube_, clock_, elector_config(ShardLeaseName(options_.lease_base, k)));
    if (!e.ok()) return e.status();
    kube::LeaderElector* elector = e->get();
    shards_[k].elector = std::move(*e);
    shards_[k].fence = std::make_unique<LeaseSubmitFence>(
        [elector] { return elector->LeaseValidUntil(); }, options_.fence_spare);
    Report(k, false);
  }
  LOG(INFO) << "sharding: " << shards_.size() << " shards, Leases " << options_.lease_namespace
            << "/" << ShardLeaseName(options_.lease_base, 0) << "..., member Lease "
            << MemberLeaseName(options_.lease_base, options_.identity) << " as "
            << options_.identity;
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void ShardCoordinator::Report(int k, bool held) const {
  if (const auto& hook = kube::GetMetricsHooks().leader) {
    hook(ShardLeaseName(options_.lease_base, k), held);
  }
}

void ShardCoordinator::Run() {
  while (!stopping_.load()) {
    Round();
    std::unique_lock<std::mutex> lock(mu_);
    rounds_ = true;
    cv_.wait_for(lock, options_.retry_period, [this] { return stopping_.load(); });
  }
}

void ShardCoordinator::ObserveLeases(Time now) {
  absl::StatusOr<nlohmann::json> list =
      kube_.List(kube::Leases(), options_.lease_namespace, kube::ListOptions{});
  if (!list.ok()) {
    LOG(WARNING) << "sharding: cannot list Leases: " << list.status();
    return;
  }
  std::map<std::string, LeaseObservation> members;
  const nlohmann::json items = list->value("items", nlohmann::json::array());
  for (const nlohmann::json& lease : items) {
    const std::string name = lease.value("metadata", nlohmann::json::object()).value("name", "");
    const nlohmann::json spec = lease.value("spec", nlohmann::json::object());
    const std::string holder = StringField(spec, "holderIdentity");
    const std::string renew = StringField(spec, "renewTime");
    const Duration duration = LeaseDurationOf(spec, options_.lease_duration);
    if (IsMemberLeaseName(options_.lease_base, name)) {
      auto before = members_.find(name);
      members[name] = Observe(
          before == members_.end() ? std::nullopt : std::optional<LeaseObservation>(before->second),
          holder, renew, duration, now);
    } else if (std::optional<int> k = ShardOfLeaseName(options_.lease_base, name);
               k && *k < static_cast<int>(shards_.size())) {
      if (!shards_[*k].runner) shards_[*k].elector->Witness(lease);
      auto before = shard_leases_.find(*k);
      shard_leases_[*k] =
          Observe(before == shard_leases_.end() ? std::nullopt
                                                : std::optional<LeaseObservation>(before->second),
                  holder, renew, duration, now);
    }
  }
  members_ = std::move(members);
}

void ShardCoordinator::RenewHeld(Time now) {
  for (int k = 0; k < static_cast<int>(shards_.size()); ++k) {
    Shard& s = shards_[k];
    if (!s.runner || s.lost) continue;
    {
      kube::ScopedRequestDeadline bound(std::chrono::steady_clock::now() + options_.renew_deadline);
      if (s.elector->TryAcquireOrRenew()) {
        s.last_renewed = now;
        continue;
      }
    }
    if (clock_.Now() - s.last_renewed > options_.renew_deadline ||
        !s.elector->LeaseValidUntil().has_value()) {
      LOG(ERROR) << "sharding: lost the Lease of shard " << k << "; stopping its controllers";
      BeginStop(k, /*lost=*/true);
    }
  }
}

void ShardCoordinator::BeginStop(int k, bool lost) {
  Shard& s = shards_[k];
  if (!s.runner || s.stopped) return;
  s.lost = lost;
  s.stopped = std::make_shared<std::atomic<bool>>(false);
  ShardRunner* runner = s.runner.get();
  std::shared_ptr<std::atomic<bool>> done = s.stopped;
  s.stopper = std::thread([runner, done] {
    runner->Stop();
    done->store(true);
  });
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_.erase(std::remove(held_.begin(), held_.end(), k), held_.end());
  }
}

void ShardCoordinator::FinishStops() {
  for (int k = 0; k < static_cast<int>(shards_.size()); ++k) {
    Shard& s = shards_[k];
    if (!s.stopped || !s.stopped->load()) continue;
    if (s.stopper.joinable()) s.stopper.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      s.runner.reset();
    }
    s.stopped.reset();
    if (!s.lost) {
      if (absl::Status released = s.elector->Release(); !released.ok()) {
        LOG(WARNING) << "sharding: release of shard " << k << " failed: " << released;
      } else {
        LOG(INFO) << "sharding: released shard " << k;
      }
    }
    s.lost = false;
    Report(k, false);
  }
}

void ShardCoordinator::Take(int k, Time now) {
  Shard& s = shards_[k];
  if (s.runner) return;
  bool acquired = false;
  {
    kube::ScopedRequestDeadline bound(std::chrono::steady_clock::now() + options_.renew_deadline);
    acquired = s.elector->TryAcquireOrRenew();
  }
  if (!acquired) return;
  s.last_renewed = now;
  LOG(INFO) << "sharding: took shard " << k << " (Lease " << ShardLeaseName(options_.lease_base, k)
            << ")";
  Report(k, true);
  std::unique_ptr<ShardRunner> runner = options_.start(k, clock_.Now(), s.fence.get());
  std::lock_guard<std::mutex> lock(mu_);
  s.runner = std::move(runner);
  held_.push_back(k);
  std::sort(held_.begin(), held_.end());
}

void ShardCoordinator::Round() {
  Time now = clock_.Now();
  {
    kube::ScopedRequestDeadline bound(std::chrono::steady_clock::now() + options_.renew_deadline);
    if (!member_->TryAcquireOrRenew()) {
      LOG(WARNING) << "sharding: member Lease not renewed";
    }
  }
  FinishStops();
  RenewHeld(now);
  now = clock_.Now();
  ObserveLeases(now);

  ShardView view;
  view.shards = static_cast<int>(shards_.size());
  view.me = options_.identity;
  for (const auto& [name, o] : members_) {
    if (IsLive(o, now)) view.live_members.insert(o.holder);
  }
  for (const auto& [k, o] : shard_leases_) {
    if (IsLive(o, now) && o.holder != options_.identity) view.holders[k] = o.holder;
  }
  for (int k = 0; k < view.shards; ++k) {
    // What runs here counts as ours (a shard being given up too: not free yet).
    if (shards_[k].runner) view.holders[k] = options_.identity;
  }
  const ShardPlan plan = PlanShards(view);
  for (int k : plan.release) {
    if (shards_[k].stopped) continue;
    LOG(INFO) << "sharding: giving up shard " << k << " (quota " << plan.quota << " of "
              << view.shards << " shards over " << view.live_members.size() + 1
              << " replicas or fewer)";
    BeginStop(k, /*lost=*/false);
  }
  // The first round only announces this replica (its member Lease): replicas started together
  // see each other before they take shards, instead of the first taking all and giving most up.
  if (++round_ < 2) return;
  for (int k : plan.acquire) {
    if (stopping_.load()) break;
    Take(k, clock_.Now());
  }
}

void ShardCoordinator::Stop() {
  if (stopping_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  for (int k = 0; k < static_cast<int>(shards_.size()); ++k) {
    if (shards_[k].runner && !shards_[k].stopped) BeginStop(k, /*lost=*/false);
  }
  for (Shard& s : shards_) {
    if (s.stopper.joinable()) s.stopper.join();
    if (s.stopped) s.stopped->store(true);
  }
  FinishStops();
  if (member_) {
    if (absl::Status s = member_->Release(); !s.ok()) {
      LOG(WARNING) << "sharding: release of the member Lease failed: " << s;
    }
  }
}

std::vector<int> ShardCoordinator::Held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

bool ShardCoordinator::Synced() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!rounds_) return false;
  for (int k : held_) {
    const Shard& s = shards_[k];
    if (s.runner && !s.runner->Synced()) return false;
  }
  return true;
}

}  // namespace slurmop::reconcile
