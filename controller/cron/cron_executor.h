// File: controller/cron/cron_executor.h
//
// Carries out DecideCron's plan for one SlurmCronJob with the Kubernetes API: the thin "doing"
// half of the SlurmCronJob controller (decide.h is the deciding half).
//
// Contract (Reconcile, one key "namespace/name"):
//  1. Reads the SlurmCronJob and its children from the informer caches (absent: nothing to do).
//  2. Deletes the children Replace replaces (uid precondition, background propagation; NotFound
//     is done), creates the new child (AlreadyExists counts as created: its name is its
//     scheduled time, so it is this time's child), writes the status when it changed (PUT with
//     resourceVersion), then deletes the children beyond the history limits, and records the
//     plan's Events plus one per create and delete.
//  3. Any failed request stops there with retry_with_backoff: what was done is found again by
//     the next reconcile (a created child by its name, a recorded time in the status).
//  4. The last schedule time it recorded per SlurmCronJob (key and uid) is remembered until the
//     SlurmCronJob is gone, so a reconcile that reads the SlurmCronJob from a cache older than
//     its own status write still never starts that time again.

#ifndef SLURMOP_CONTROLLER_CRON_CRON_EXECUTOR_H_
#define SLURMOP_CONTROLLER_CRON_CRON_EXECUTOR_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "controller/common/clock.h"
#include "controller/cron/decide.h"
#include "controller/kube/client.h"
#include "controller/reconcile/ports.h"

namespace slurmop::cron {

// The cached SlurmJobs that carry a SlurmCronJob's label, in a namespace.
using ChildLister = std::function<std::vector<std::shared_ptr<const nlohmann::json>>(
    const std::string& ns, const std::string& cron_name)>;

class CronExecutor {
 public:
  CronExecutor(kube::Client& kube, const reconcile::ObjectCache& crons, ChildLister children,
               reconcile::EventSink& events, const Clock& clock);

  reconcile::ReconcileResult Reconcile(const std::string& key);

 private:
  CronFacts ReadFacts(const nlohmann::json& cron) const;
  absl::Status DeleteChildren(const nlohmann::json& cron,
                              const std::vector<ChildToDelete>& deletes);
  // Creates the child; fills its uid into the status's active reference when known.
  absl::Status CreateChild(const nlohmann::json& cron, const CronFacts& facts,
                           const ChildToCreate& child, v1alpha1::SlurmCronJobStatus* status);
  // PUT of `status` unless it equals `current` (the cached object's).
  absl::Status WriteStatus(const nlohmann::json& cron, const std::string& key,
                           const v1alpha1::SlurmCronJobStatus& current,
                           const v1alpha1::SlurmCronJobStatus& status);
  // The last schedule time this process wrote for SlurmCronJob `key` (with `uid`), and its use
  // when the cache shows an older one.
  void Remember(const std::string& key, const std::string& uid,
                const v1alpha1::SlurmCronJobStatus& status);
  void ApplyRecorded(const std::string& key, CronFacts* facts);
  // A Warning Event WriteRefused on the SlurmCronJob when the API server refused `what` for good
  // (write_refusal.h); nothing for a failure that clears up by itself.
  void TellRefusal(const nlohmann::json& cron, std::string_view what, const absl::Status& s);

  kube::Client& kube_;
  const reconcile::ObjectCache& crons_;
  const ChildLister children_;
  reconcile::EventSink& events_;
  const Clock& clock_;
  std::mutex mu_;
  struct Recorded {
    std::string uid;
    google::protobuf::Timestamp last_schedule_time;
  };
  std::map<std::string, Recorded> recorded_;  // "ns/name" -> ours; guarded by mu_
};

}  // namespace slurmop::cron

#endif  // SLURMOP_CONTROLLER_CRON_CRON_EXECUTOR_H_
