// File: controller/cron/cron_controller.h
//
// The SlurmCronJob controller: an informer of SlurmCronJobs, an informer of the SlurmJobs that
// carry a SlurmCronJob's label (kCronJobNameLabel), a rate-limited work queue keyed
// "namespace/name" of SlurmCronJobs, and one worker that hands keys to the CronExecutor.
//
// Contract:
//  * A SlurmCronJob event enqueues its key; a child's event enqueues its SlurmCronJob's key (the
//    label names it), so a child that finishes or goes away updates status.active at once.
//  * After a reconcile: requeue_after -> AddAfter (the next scheduled time), retry_with_backoff
//    -> AddRateLimited (5 ms doubling to 1000 s), otherwise Forget.
//  * main.cc starts it only once this replica leads (the operator's leader election), like the
//    SlurmJob manager, so only the leader ever creates or deletes a child.

#ifndef SLURMOP_CONTROLLER_CRON_CRON_CONTROLLER_H_
#define SLURMOP_CONTROLLER_CRON_CRON_CONTROLLER_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "controller/cron/cron_executor.h"
#include "controller/kube/informer.h"
#include "controller/kube/workqueue.h"

namespace slurmop::cron {

class CronController {
 public:
  CronController(kube::Client& kube, reconcile::EventSink& events, const Clock& clock,
                 std::string watch_namespace);
  ~CronController();

  void Start();
  bool Synced() const;
  void Stop();

 private:
  class CacheView : public reconcile::ObjectCache {
   public:
    explicit CacheView(const std::unique_ptr<kube::Informer>& informer) : informer_(informer) {}
    std::shared_ptr<const nlohmann::json> Get(std::string_view ns,
                                              std::string_view name) const override;

   private:
    const std::unique_ptr<kube::Informer>& informer_;
  };

  std::vector<std::shared_ptr<const nlohmann::json>> ChildrenOf(const std::string& ns,
                                                                const std::string& name) const;
  void OnChildEvent(const std::shared_ptr<const nlohmann::json>& obj);
  void Work();

  kube::WorkQueue queue_;
  std::unique_ptr<kube::Informer> crons_;
  std::unique_ptr<kube::Informer> children_;
  CacheView crons_view_;
  CronExecutor executor_;
  std::thread worker_;
  std::atomic<bool> started_{false};
};

}  // namespace slurmop::cron

#endif  // SLURMOP_CONTROLLER_CRON_CRON_CONTROLLER_H_
