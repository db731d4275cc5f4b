// File: controller/cron/child_index.h
//
// The SlurmJobs that carry a SlurmCronJob's label, indexed by "namespace/SlurmCronJob name", kept
// from the SlurmJob informer's events (the SlurmJob manager's informer: the operator watches
// SlurmJobs once).
//
// Contract:
//  * Apply(type, obj): ADDED/MODIFIED store the object under its label's SlurmCronJob (and drop it
//    from another one's entry if its label changed); DELETED removes it. A SlurmJob without the
//    label is not kept. Returns the keys of the SlurmCronJobs concerned (to enqueue).
//  * Of(ns, cron) lists the objects stored for that SlurmCronJob (ownership is checked by the
//    caller: a label alone does not make a child).
//  * Thread-safe.

#ifndef SLURMOP_CONTROLLER_CRON_CHILD_INDEX_H_
#define SLURMOP_CONTROLLER_CRON_CHILD_INDEX_H_

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace slurmop::cron {

class ChildIndex {
 public:
  std::vector<std::string> Apply(const std::string& type,
                                 const std::shared_ptr<const nlohmann::json>& obj);
  std::vector<std::shared_ptr<const nlohmann::json>> Of(const std::string& ns,
                                                        const std::string& cron) const;

 private:
  mutable std::mutex mu_;
  // "ns/cron" -> SlurmJob name -> object; guarded by mu_.
  std::map<std::string, std::map<std::string, std::shared_ptr<const nlohmann::json>>> by_cron_;
  // "ns/SlurmJob name" -> "ns/cron" it is stored under; guarded by mu_.
  std::map<std::string, std::string> cron_of_;
};

}  // namespace slurmop::cron

#endif  // SLURMOP_CONTROLLER_CRON_CHILD_INDEX_H_
