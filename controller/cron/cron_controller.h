// File: controller/cron/cron_controller.h
//
// The SlurmCronJob controller: an informer of SlurmCronJobs, an index of the SlurmJobs that carry
// a SlurmCronJob's label (kCronJobNameLabel) fed by the SlurmJob manager's informer (OnJobEvent:
// SlurmJobs are watched once), a rate-limited work queue keyed "namespace/name" of SlurmCronJobs,
// and one worker that hands keys to the CronExecutor.
//
// Contract:
//  * A SlurmCronJob event enqueues its key; a child's event enqueues its SlurmCronJob's key (the
//    label names it), so a child that finishes or goes away updates status.active at once.
//  * Nothing is reconciled before the SlurmCronJob informer and the SlurmJob informer
//    (`jobs_synced`) delivered their first complete list: a child not listed yet must not look
//    missing.
//  * After a reconcile: requeue_after -> AddAfter (the next scheduled time), retry_with_backoff
//    -> AddRateLimited (5 ms doubling to 1000 s), otherwise Forget.
//  * main.cc starts it only once this replica leads (the operator's leader election), like the
//    SlurmJob manager, so only the leader ever creates or deletes a child.

#ifndef SLURMOP_CONTROLLER_CRON_CRON_CONTROLLER_H_
#define SLURMOP_CONTROLLER_CRON_CRON_CONTROLLER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "controller/cron/child_index.h"
#include "controller/cron/cron_executor.h"
#include "controller/kube/informer.h"
#include "controller/kube/workqueue.h"

namespace slurmop::cron {

class CronController {
 public:
  CronController(kube::Client& kube, reconcile::EventSink& events, const Clock& clock,
                 std::string watch_namespace, std::function<bool()> jobs_synced);
  ~CronController();

  void Start();
  bool Synced() const;
  void Stop();
  // A SlurmJob informer event (called on the informer's thread).
  void OnJobEvent(const std::string& type, const std::shared_ptr<const nlohmann::json>& obj);

 private:
  class CacheView : public reconcile::ObjectCache {
   public:
    explicit CacheView(const std::unique_ptr<kube::Informer>& informer) : informer_(informer) {}
    std::shared_ptr<const nlohmann::json> Get(std::string_view ns,
                                              std::string_view name) const override;

   private:
    const std::unique_ptr<kube::Informer>& informer_;
  };

  void Work();

  kube::WorkQueue queue_;
  const std::function<bool()> jobs_synced_;
  ChildIndex children_;
  std::unique_ptr<kube::Informer> crons_;
  CacheView crons_view_;
  CronExecutor executor_;
  std::thread worker_;
  std::atomic<bool> started_{false};
};

}  // namespace slurmop::cron

#endif  // SLURMOP_CONTROLLER_CRON_CRON_CONTROLLER_H_
