// File: controller/agentplatform/quota_budget.h
//
// The client-side call budget of Agent Platform, one per project and region:
// Agent Platform's quota ("Resource management (CRUD) requests", about 600
// per minute) is counted per project and region, so every SlurmCluster in one
// project and region draws on one budget (#16 item 3), not one bucket each.
//
// Contract:
//  * A token bucket per key (QuotaKey()): `requests_per_minute / 60` tokens a
//    second, at most `burst` banked, full at first. requests_per_minute <= 0
//    disables the budget (every reservation is free).
//  * Priorities: a call may take a token only while the bucket keeps, after
//    it, the reserve of its class: kChange (submit, cancel, update) none,
//    kTrack (job lists, lookups, searches) `track_reserve` of the burst,
//    kProbe (cluster probes) `probe_reserve`. So when the budget runs low,
//    probes stop first, then tracking, and submits and cancels still go.
//  * TryReserve() never waits itself: it returns how long the caller must
//    wait (zero when a token is there), or nullopt when that would exceed
//    `max_wait` (nothing taken, the wait in *would_wait), so a caller on a
//    shared thread fails fast instead of sleeping.
//  * Exhausted(): after a RESOURCE_EXHAUSTED answer for the key, no call is
//    allowed until the server's retry delay (RetryInfo) has passed (a later
//    pause than one already set wins), and the key's rate is halved (never
//    below min_requests_per_minute). It then grows back linearly, by
//    `recovery_per_minute` of the halved rate per minute, to the configured
//    rate. After the pause the bucket starts empty and holds at most one
//    token until a call succeeds again (Succeeded()): one call finds out
//    whether the quota is back, not a burst of them.
//  * Settings from the clusters' resources (BudgetRequest, carried by each
//    call): a ClusterSlurmCluster's `callBudget` sets its project and
//    region's rate in place of `requests_per_minute` (the lowest of the
//    settings seen in the last `setting_memory` wins; a setting no call has
//    carried for that long is forgotten, e.g. of a deleted resource); a
//    SlurmCluster's `callBudget` is a bucket of its own the call must also
//    take a token from, so a tenant can slow only its own calls. Reserves
//    apply in both buckets; a call takes a token from both or from neither.
//  * Callers the project has not accepted draw on it only slowly. A call
//    names its caller (BudgetRequest::caller: its credentials object, which
//    no tenant can forge, and the cluster resource). Until the project
//    answers a call of that caller with anything but a 401, 403 or 429
//    (Google refuses a caller without access with 401/403 before anything
//    else; Accepted()), each of its calls takes a token from a small bucket
//    of its own (`unproven_requests_per_minute`, `unproven_burst`) as well as
//    from the project's. A 401 or 403 puts it back there (Rejected()). So a
//    SlurmCluster naming another team's project with credentials that
//    project refuses spends at most 6 of that team's calls a minute (it
//    spent all of them before), and the project's quota still holds for
//    every call.
//  * Buckets are forgotten once at rest: untouched for `setting_memory`, not
//    paused, not probing, rate recovered and tokens full, i.e. the same as a
//    new one. Keys come from tenants' resources (project, region, the owner
//    of a cap), so kept forever they would grow with every edit.
//  * Thread-safe; time comes only from the injected Clock.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_QUOTA_BUDGET_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_QUOTA_BUDGET_H_

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "controller/common/clock.h"

namespace slurmop::agentplatform {

// What a call is for, highest priority first.
enum class CallPriority { kChange, kTrack, kProbe };

const char* CallPriorityName(CallPriority p);

struct QuotaBudgetOptions {
  // The documented 600 requests per minute per project and region, less 20%
  // headroom for other clients of the same project (gcloud, the console).
  double requests_per_minute = 480;
  double burst = 10;
  double track_reserve = 0.25;  // fractions of the burst
  double probe_reserve = 0.5;
  double min_requests_per_minute = 30;      // RESOURCE_EXHAUSTED never shrinks below
  double recovery_per_minute = 0.5;         // of the shrunk rate, per minute after a shrink
  std::chrono::minutes setting_memory{10};  // see BudgetRequest in the file comment
  // A caller's own bucket until the project accepted one of its calls; a
  // burst of 3 lets a first submit whose reply was lost be followed at once
  // by the two searches that find out its fate.
  double unproven_requests_per_minute = 6;
  double unproven_burst = 3;
};

// What one cluster's resource asks of the budget (slurmcluster.proto CallBudget).
struct BudgetRequest {
  // "namespace/name" of a SlurmCluster, "/name" of a ClusterSlurmCluster; ""
  // when the call has no resource behind it (nothing below applies).
  std::string owner;
  // > 0: a ClusterSlurmCluster's budget for its whole project and region.
  double project_requests_per_minute = 0;
  // > 0: a SlurmCluster's cap on its own calls.
  double own_requests_per_minute = 0;
  // Who calls (the credentials' TokenSource::Instance()); "" for a caller
  // trusted as accepted (tests, tools).
  std::string caller;
};

// What TryReserve() found.
struct Reservation {
  bool granted = false;
  std::chrono::nanoseconds wait{0};  // granted: wait this long first; else what it would have been
  bool limited_by_own_cap = false;   // the owner's own bucket set the wait
  bool unproven = false;             // the caller's own bucket, not the project's, was drawn on
};

// One project and region's budget now, for the metrics.
struct BudgetState {
  std::string key;
  double requests_per_minute = 0;  // after shrinks and recovery
  bool paused = false;
};

// "<endpoint>|projects/<project>/locations/<region>": the endpoint too, so that
// two stand-ins (or a private endpoint) never share a budget.
std::string QuotaKey(const std::string& endpoint, const std::string& project,
                     const std::string& region);

class QuotaBudget {
 public:
  QuotaBudget(const Clock* clock, QuotaBudgetOptions options);

  // Takes a token of `key` (and of request.owner's own bucket, if capped)
  // unless that means waiting longer than `max_wait`; see the file comment.
  Reservation Reserve(const std::string& key, const BudgetRequest& request, CallPriority priority,
                      std::chrono::nanoseconds max_wait);
  // The same for a call without a resource's settings: the wait, or nullopt
  // (the wait in *would_wait).
  std::optional<std::chrono::nanoseconds> TryReserve(const std::string& key, CallPriority priority,
                                                     std::chrono::nanoseconds max_wait,
                                                     std::chrono::nanoseconds* would_wait);

  // See the file comment. `retry_delay`: the server's, if it sent one.
  void Exhausted(const std::string& key, std::optional<std::chrono::milliseconds> retry_delay);
  // A call of `key` was answered without RESOURCE_EXHAUSTED: the full burst
  // is allowed again.
  void Succeeded(const std::string& key);
  // `caller` got an answer of `key` that only an authorized caller gets: its
  // calls draw on the project's budget from now on (see the file comment).
  void Accepted(const std::string& key, const std::string& caller);
  // `caller` was refused by `key` (401/403): back on its own small bucket.
  void Rejected(const std::string& key, const std::string& caller);
  // When `key` may be called again, if it is paused now.
  std::optional<Time> PausedUntil(const std::string& key);
  // The key's rate now (requests per minute), after shrinks and recovery.
  double RequestsPerMinute(const std::string& key);
  // The key's configured rate (the flag, or the lowest ClusterSlurmCluster
  // setting): unlike RequestsPerMinute, it does not move while a shrunk
  // rate recovers, so messages that quote it stay the same from one held-back
  // call to the next.
  double ConfiguredRequestsPerMinute(const std::string& key);
  // Every project and region called so far.
  std::vector<BudgetState> Snapshot();

  // The pause after a RESOURCE_EXHAUSTED that carried no retry delay.
  static constexpr std::chrono::milliseconds kDefaultPause{30000};

 private:
  struct Setting {
    double requests_per_minute;
    Time seen;
  };
  struct Bucket {
    double tokens;
    Time updated;
    double configured;   // requests per minute before shrinks: the flag, or the lowest setting
    double shrunk_rate;  // requests per minute right after the last shrink
    Time shrunk_at;      // Time() = never shrunk
    std::optional<Time> paused_until;
    bool probing = false;  // after an exhaustion, until a call succeeds: burst of one
    std::map<std::string, Setting> settings;  // ClusterSlurmClusters' callBudget, by owner
    double burst = 0;                         // 0: options_.burst
  };
  // mu_ held for all of these.
  Bucket& Refilled(std::map<std::string, Bucket>& buckets, const std::string& key,
                   double configured, Time now, double burst = 0);
  double BurstOf(const Bucket& b) const { return b.burst > 0 ? b.burst : options_.burst; }
  bool AcceptedLocked(const std::string& key, const std::string& caller, Time now);
  void Refill(Bucket& b, Time now) const;
  void Remember(Bucket& b, const BudgetRequest& request, Time now) const;
  double RateLocked(const Bucket& b, Time now) const;  // per minute
  double ReserveOf(const Bucket& b, CallPriority priority) const;
  // Whether `b` is the same as a new bucket would be (see the file comment).
  bool AtRest(const Bucket& b, Time now) const;
  // Forgets the buckets at rest, at most once a minute.
  void PruneLocked(Time now);
  // The wait for a token of `b` for `priority` (zero when one is there).
  std::chrono::nanoseconds WaitFor(const Bucket& b, CallPriority priority, Time now) const;

  const Clock* const clock_;
  const QuotaBudgetOptions options_;
  std::mutex mu_;
  std::map<std::string, Bucket> buckets_;   // per QuotaKey()
  std::map<std::string, Bucket> own_;       // per BudgetRequest::owner with a cap
  std::map<std::string, Bucket> unproven_;  // per QuotaKey() + "\n" + caller
  // Callers accepted per QuotaKey(), with when they last called.
  std::map<std::string, std::map<std::string, Time>> accepted_;
  Time last_prune_{};
};

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_QUOTA_BUDGET_H_
