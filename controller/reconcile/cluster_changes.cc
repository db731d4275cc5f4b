// File: controller/reconcile/cluster_changes.cc

#include "controller/reconcile/cluster_changes.h"

#include "controller/reconcile/cluster_protection.h"
#include "controller/reconcile/cluster_protector.h"

namespace slurmop::reconcile {
namespace {

// True if status.conditions has type Ready with status "True".
bool ReadyConditionTrue(const nlohmann::json& obj) {
  auto st = obj.find("status");
  if (st == obj.end() || !st->is_object()) return false;
  auto conditions = st->find("conditions");
  if (conditions == st->end() || !conditions->is_array()) return false;
  for (const nlohmann::json& c : *conditions) {
    if (c.is_object() && c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

int64_t Generation(const nlohmann::json& obj) {
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return 0;
  auto g = md->find("generation");
  return g != md->end() && g->is_number_integer() ? g->get<int64_t>() : 0;
}

}  // namespace

ClusterChanges::Wake ClusterChanges::Observe(const std::string& key, bool deleted, bool namespaced,
                                             const nlohmann::json& obj) {
  std::lock_guard<std::mutex> lock(mu_);
  if (deleted) {
    seen_.erase(key);
    return {.cluster = false, .jobs = true};
  }
  const Seen now{.generation = Generation(obj),
                 .kept = namespaced && KeptWhileInUse(ProtectionFactsOf(obj, true)),
                 .ready = ReadyConditionTrue(obj)};
  auto [it, first] = seen_.try_emplace(key, now);
  const Seen before = it->second;
  it->second = now;
  if (first || before.generation != now.generation) return {.cluster = true, .jobs = true};
  return {.cluster = false, .jobs = before.kept != now.kept};
}

std::map<std::string, bool> ClusterChanges::Readiness() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, bool> out;
  for (const auto& [key, seen] : seen_) out.emplace(key, seen.ready);
  return out;
}

}  // namespace slurmop::reconcile
