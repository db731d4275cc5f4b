// File: controller/kube/leader_election.cc
//
// See leader_election.h for the contract.

#include "controller/kube/leader_election.h"

#include <glog/logging.h>

#include <utility>

#include "controller/common/time_format.h"
#include "controller/kube/backoff.h"
#include "controller/kube/errors.h"
#include "controller/kube/metrics_hooks.h"
#include "controller/kube/request_deadline.h"
#include "controller/kube/resource_types.h"

namespace slurmop::kube {
namespace {

constexpr double kJitterFactor = 1.2;  // client-go JitterFactor

std::string Holder(const nlohmann::json& spec) {
  auto it = spec.find("holderIdentity");
  return it != spec.end() && it->is_string() ? it->get<std::string>() : "";
}

long long IntField(const nlohmann::json& spec, const char* field, long long fallback) {
  auto it = spec.find(field);
  return it != spec.end() && it->is_number_integer() ? it->get<long long>() : fallback;
}

long long Seconds(Duration d) {
  return std::chrono::duration_cast<std::chrono::seconds>(d).count();
}

// Lease fields are int32 in the API. Anything else in leaseDurationSeconds
// (absent, < 1, beyond int32: a hostile or broken writer) is refused: the
// configured duration is used, never a value whose addition to a time point
// would overflow.
constexpr long long kMaxInt32 = 2147483647;

Duration LeaseDurationOf(const nlohmann::json& spec, Duration configured) {
  const long long s = IntField(spec, "leaseDurationSeconds", 0);
  if (s < 1 || s > kMaxInt32) return configured;
  return std::chrono::seconds(s);
}

long long TransitionsOf(const nlohmann::json& spec) {
  const long long t = IntField(spec, "leaseTransitions", 0);
  return t < 0 || t >= kMaxInt32 ? 0 : t;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Create(Client& client,
                                                                     const Clock& clock,
                                                                     LeaderElectionConfig config) {
  if (config.identity.empty()) return absl::InvalidArgumentError("leader election: empty identity");
  if (config.lease_name.empty()) {
    return absl::InvalidArgumentError("leader election: empty lease name");
  }
  if (config.retry_period <= Duration::zero() || config.lease_duration <= config.renew_deadline ||
      std::chrono::duration<double>(config.renew_deadline).count() <=
          kJitterFactor * std::chrono::duration<double>(config.retry_period).count()) {
    return absl::InvalidArgumentError(
        "leader election: need leaseDuration > renewDeadline > 1.2 * retryPeriod > 0");
  }
  return std::unique_ptr<LeaderElector>(new LeaderElector(client, clock, std::move(config)));
}

LeaderElector::LeaderElector(Client& client, const Clock& clock, LeaderElectionConfig config)
    : client_(client),
      clock_(clock),
      config_(std::move(config)),
      random_(config_.random ? config_.random : DefaultRandom()) {}

LeaderElector::~LeaderElector() { Stop(); }

void LeaderElector::ReportLeading(bool leading) const {
  if (const auto& hook = GetMetricsHooks().leader) hook(config_.lease_name, leading);
}

void LeaderElector::Start() {
  if (thread_.joinable() || stopping_.load()) return;
  ReportLeading(false);  // a standby shows 0 from the start, not no series
  thread_ = std::thread([this] { Run(); });
}

void LeaderElector::Stop() {
  stopping_.store(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_cv_.notify_all();
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool LeaderElector::IsLeader() const { return leading_.load(); }

std::string LeaderElector::CurrentLeader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Holder(observed_spec_);
}

bool LeaderElector::IsLeaderLocked() const { return Holder(observed_spec_) == config_.identity; }

bool LeaderElector::IsLeaseValidLocked(Time now) const {
  return observed_time_ + LeaseDurationOf(observed_spec_, config_.lease_duration) > now;
}

std::optional<Time> LeaderElector::LeaseValidUntil() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!renewed_at_ || !IsLeaderLocked()) return std::nullopt;
  return *renewed_at_ + config_.lease_duration;
}

void LeaderElector::Renewed(Time round_start) {
  std::lock_guard<std::mutex> lock(mu_);
  renewed_at_ = round_start;
}

nlohmann::json LeaderElector::NewSpec(Time now, const std::optional<nlohmann::json>& old_spec,
                                      bool keep_acquire) const {
  const std::string stamp = FormatRfc3339Micro(now);
  nlohmann::json spec = {{"holderIdentity", config_.identity},
                         {"leaseDurationSeconds", Seconds(config_.lease_duration)},
                         {"acquireTime", stamp},
                         {"renewTime", stamp},
                         {"leaseTransitions", 0}};
  if (old_spec.has_value()) {
    const long long transitions = TransitionsOf(*old_spec);
    if (keep_acquire) {
      if (auto acquired = old_spec->find("acquireTime"); acquired != old_spec->end()) {
        spec["acquireTime"] = *acquired;
      }
      spec["leaseTransitions"] = transitions;
    } else {
      spec["leaseTransitions"] = transitions + 1;
    }
  }
  return spec;
}

absl::StatusOr<nlohmann::json> LeaderElector::WriteLease(nlohmann::json lease,
                                                         nlohmann::json spec) {
  lease["spec"] = std::move(spec);
  // PUT of the Lease as last read: its resourceVersion makes a race a 409.
  return client_.Update(Leases(), lease);
}

void LeaderElector::Observe(const nlohmann::json& lease) {
  std::string new_leader;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lease_ = lease;
    observed_spec_ = lease.value("spec", nlohmann::json::object());
    observed_time_ = clock_.Now();
    const std::string holder = Holder(observed_spec_);
    if (holder != reported_leader_) {
      reported_leader_ = holder;
      new_leader = holder;
    }
  }
  if (!new_leader.empty() && config_.on_new_leader) config_.on_new_leader(new_leader);
}

bool LeaderElector::CreateLease(Time now) {
  nlohmann::json lease = {
      {"apiVersion", Leases().ApiVersion()},
      {"kind", Leases().kind},
      {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
      {"spec", NewSpec(now, std::nullopt, false)}};
  absl::StatusOr<nlohmann::json> created = client_.Create(Leases(), config_.lease_namespace, lease);
  if (!created.ok()) {
    LOG(WARNING) << "lease " << config_.lease_name << ": create failed: " << created.status();
    return false;
  }
  Observe(*created);
  Renewed(now);
  return true;
}

bool LeaderElector::RenewKnownLease(Time now) {
  std::optional<nlohmann::json> known_lease;
  nlohmann::json known_spec;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lease_.has_value() && IsLeaderLocked() && IsLeaseValidLocked(now)) {
      known_lease = lease_;
      known_spec = observed_spec_;
    }
  }
  if (!known_lease.has_value()) return false;
  absl::StatusOr<nlohmann::json> renewed =
      WriteLease(*known_lease, NewSpec(now, known_spec, /*keep_acquire=*/true));
  if (!renewed.ok()) {
    LOG(WARNING) << "lease " << config_.lease_name
                 << ": optimistic renewal failed, falling back: " << renewed.status();
    return false;
  }
  Observe(*renewed);
  Renewed(now);
  return true;
}

bool LeaderElector::HeldByAnother(const nlohmann::json& current, Time now, bool& was_leader) {
  const nlohmann::json spec = current.value("spec", nlohmann::json::object());
  bool held_by_other = false;
  std::string new_leader;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lease_ = current;
    if (spec != observed_spec_) {
      observed_spec_ = spec;
      observed_time_ = clock_.Now();
    }
    const std::string holder = Holder(spec);
    if (holder != reported_leader_) {
      reported_leader_ = holder;
      new_leader = holder;
    }
    was_leader = IsLeaderLocked();
    held_by_other = !holder.empty() && IsLeaseValidLocked(now) && !was_leader;
  }
  if (!new_leader.empty() && config_.on_new_leader) config_.on_new_leader(new_leader);
  return held_by_other;
}

bool LeaderElector::TryAcquireOrRenew() {
  const Time now = clock_.Now();

  // 1. Fast path: the leader renews the Lease it wrote last.
  if (RenewKnownLease(now)) return true;

  // 2. Read the Lease, or create it.
  absl::StatusOr<nlohmann::json> current =
      client_.Get(Leases(), config_.lease_namespace, config_.lease_name);
  if (!current.ok()) {
    if (!kube::IsNotFound(current.status())) {
      LOG(WARNING) << "lease " << config_.lease_name << ": get failed: " << current.status();
      return false;
    }
    return CreateLease(now);
  }

  // 3. Remember when the record last changed, on the local clock.
  bool was_leader = false;
  if (HeldByAnother(*current, now, was_leader)) return false;

  // 4. Take it over (or renew it after a failed fast path).
  const nlohmann::json old_spec = current->value("spec", nlohmann::json::object());
  absl::StatusOr<nlohmann::json> written =
      WriteLease(*current, NewSpec(now, old_spec, /*keep_acquire=*/was_leader));
  if (!written.ok()) {
    LOG(WARNING) << "lease " << config_.lease_name << ": update failed: " << written.status();
    return false;
  }
  Observe(*written);
  Renewed(now);
  return true;
}

void LeaderElector::Witness(const nlohmann::json& lease) {
  const nlohmann::json spec = lease.value("spec", nlohmann::json::object());
  std::lock_guard<std::mutex> lock(mu_);
  if (spec == observed_spec_) return;
  lease_ = lease;
  observed_spec_ = spec;
  observed_time_ = clock_.Now();
}

absl::Status LeaderElector::Release() {
  nlohmann::json lease;
  long long transitions = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!lease_.has_value() || !IsLeaderLocked()) return absl::OkStatus();
    lease = *lease_;
    transitions = TransitionsOf(observed_spec_);
  }
  const std::string stamp = FormatRfc3339Micro(clock_.Now());
  nlohmann::json spec = {{"holderIdentity", ""},
                         {"leaseDurationSeconds", 1},
                         {"acquireTime", stamp},
                         {"renewTime", stamp},
                         {"leaseTransitions", transitions}};
  absl::StatusOr<nlohmann::json> written = WriteLease(std::move(lease), std::move(spec));
  if (!written.ok()) return written.status();
  Observe(*written);
  return absl::OkStatus();
}

Duration LeaderElector::Jittered(Duration d) {
  return d + std::chrono::duration_cast<Duration>(std::chrono::duration<double, Duration::period>(
                 static_cast<double>(d.count()) * kJitterFactor * random_()));
}

bool LeaderElector::Sleep(Duration d) {
  if (config_.sleep_for_testing) {
    config_.sleep_for_testing(d);
    return !stopping_.load();
  }
  std::unique_lock<std::mutex> lock(mu_);
  stop_cv_.wait_for(lock, d, [this] { return stopping_.load(); });
  return !stopping_.load();
}

bool LeaderElector::Acquire() {
  while (!stopping_.load()) {
    if (TryAcquireOrRenew()) return true;
    if (!Sleep(Jittered(config_.retry_period))) return false;
  }
  return false;
}

void LeaderElector::RenewUntilLost() {
  for (;;) {
    const Time deadline = clock_.Now() + config_.renew_deadline;
    bool renewed = false;
    {
      // No request of this renewal outlasts the renew deadline: a hung API
      // server ends leadership on time, not after three request timeouts.
      ScopedRequestDeadline bound(std::chrono::steady_clock::now() + config_.renew_deadline);
      while (!renewed) {
        if (stopping_.load()) return;
        renewed = TryAcquireOrRenew();
        if (renewed) break;
        if (clock_.Now() + config_.retry_period > deadline) break;
        if (!Sleep(config_.retry_period)) return;
      }
    }
    if (!renewed) {
      LOG(ERROR) << "lease " << config_.lease_name << ": failed to renew within "
                 << Seconds(config_.renew_deadline) << " s; leadership lost";
      return;
    }
    if (!Sleep(config_.retry_period)) return;
  }
}

void LeaderElector::Run() {
  if (!Acquire()) return;
  LOG(INFO) << "lease " << config_.lease_name << ": acquired by " << config_.identity;
  leading_.store(true);
  ReportLeading(true);
  if (config_.on_started_leading) config_.on_started_leading();
  RenewUntilLost();
  if (stopping_.load() && config_.release_on_cancel) {
    absl::Status released = Release();
    if (!released.ok())
      LOG(WARNING) << "lease " << config_.lease_name << ": release failed: " << released;
  }
  leading_.store(false);
  ReportLeading(false);
  if (config_.on_stopped_leading) config_.on_stopped_leading();
}

}  // namespace slurmop::kube
