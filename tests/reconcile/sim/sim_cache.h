// File: tests/reconcile/sim/sim_cache.h
//
// One replica's informer cache of one kind over the shared InMemoryKube, as
// the simulation drives it: refreshed between steps (never during a
// reconcile), or frozen (a dropped watch: the cache lags) until the next
// relist (a 410 Gone answered by a new list) catches up at once.

#ifndef SLURMOP_TESTS_RECONCILE_SIM_SIM_CACHE_H_
#define SLURMOP_TESTS_RECONCILE_SIM_SIM_CACHE_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "controller/reconcile/ports.h"
#include "tests/reconcile/fakes/fake_kube.h"

namespace slurmop::reconcile::sim {

class SimCache : public ObjectCache {
 public:
  SimCache(testing::InMemoryKube& kube, const kube::ResourceType& rt) : kube_(kube), rt_(rt) {}

  std::shared_ptr<const nlohmann::json> Get(std::string_view ns,
                                            std::string_view name) const override {
    auto it = objects_.find({std::string(ns), std::string(name)});
    return it == objects_.end() ? nullptr : it->second;
  }

  // One watch event the refresh saw: type ADDED/MODIFIED/DELETED and the object.
  struct Event {
    std::string type;
    std::string key;  // namespace/name
    std::shared_ptr<const nlohmann::json> object;
  };

  // Catches up with the store (unless frozen); returns what changed.
  std::vector<Event> Refresh() {
    std::vector<Event> events;
    if (frozen || kube_.Revision() == revision_) return events;
    revision_ = kube_.Revision();
    absl::StatusOr<nlohmann::json> list = kube_.List(rt_, "", kube::ListOptions());
    if (!list.ok()) return events;
    std::map<std::pair<std::string, std::string>, std::shared_ptr<const nlohmann::json>> fresh;
    for (const nlohmann::json& o : (*list)["items"]) {
      fresh[{testing::Meta(o, "namespace"), testing::Meta(o, "name")}] =
          std::make_shared<const nlohmann::json>(o);
    }
    for (const auto& [k, o] : fresh) {
      auto old = objects_.find(k);
      if (old == objects_.end()) {
        events.push_back({"ADDED", k.first + "/" + k.second, o});
      } else if (testing::Meta(*old->second, "resourceVersion") !=
                 testing::Meta(*o, "resourceVersion")) {
        events.push_back({"MODIFIED", k.first + "/" + k.second, o});
      }
    }
    for (const auto& [k, o] : objects_) {
      if (!fresh.count(k)) events.push_back({"DELETED", k.first + "/" + k.second, o});
    }
    objects_ = std::move(fresh);
    return events;
  }

  std::vector<std::string> Keys() const {
    std::vector<std::string> out;
    for (const auto& [k, o] : objects_) out.push_back(k.first + "/" + k.second);
    return out;
  }

  bool frozen = false;

 private:
  testing::InMemoryKube& kube_;
  const kube::ResourceType& rt_;
  int64_t revision_ = -1;  // of the store when last refreshed
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const nlohmann::json>> objects_;
};

}  // namespace slurmop::reconcile::sim

#endif  // SLURMOP_TESTS_RECONCILE_SIM_SIM_CACHE_H_
