// File: controller/reconcile/shards.cc
//
// See shards.h.

#include "controller/reconcile/shards.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/api/resources.h"

namespace slurmop::reconcile {
namespace {

std::string StringAt(const nlohmann::json& obj, const char* a, const char* b) {
  auto i = obj.find(a);
  if (i == obj.end() || !i->is_object()) return "";
  auto j = i->find(b);
  return j != i->end() && j->is_string() ? j->get<std::string>() : "";
}

// Rendezvous (highest random weight) order of shard k for `who`.
uint32_t Preference(const std::string& who, int k) { return Fnv1a32(absl::StrCat(who, "#", k)); }

}  // namespace

uint32_t Fnv1a32(std::string_view s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

int ShardOfCluster(std::string_view ns, std::string_view name, int shards) {
  if (shards <= 1) return 0;
  return static_cast<int>(Fnv1a32(std::string(ns) + "/" + std::string(name)) %
                          static_cast<uint32_t>(shards));
}

int ShardOfJob(const nlohmann::json& job, const std::string& default_cluster, int shards) {
  const std::string ns = StringAt(job, "metadata", "namespace");
  std::string name;
  bool cluster_scoped = false;
  if (auto spec = job.find("spec"); spec != job.end() && spec->is_object()) {
    if (auto ref = spec->find("clusterRef"); ref != spec->end() && ref->is_object()) {
      if (auto n = ref->find("name"); n != ref->end() && n->is_string()) name = *n;
      cluster_scoped = ref->value("kind", "") == api::kClusterSlurmClusterKind;
    }
  }
  if (name.empty()) name = default_cluster;
  return ShardOfCluster(cluster_scoped ? "" : ns, name, shards);
}

int ShardOfObject(std::string_view kind, const nlohmann::json& obj,
                  const std::string& default_cluster, int shards) {
  if (kind == api::kSlurmJobKind) return ShardOfJob(obj, default_cluster, shards);
  const std::string ns =
      kind == api::kClusterSlurmClusterKind ? "" : StringAt(obj, "metadata", "namespace");
  return ShardOfCluster(ns, StringAt(obj, "metadata", "name"), shards);
}

std::optional<std::string> ShardLabelOf(const nlohmann::json& obj) {
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return std::nullopt;
  auto labels = md->find("labels");
  if (labels == md->end() || !labels->is_object()) return std::nullopt;
  auto v = labels->find(std::string(kShardLabel));
  if (v == labels->end() || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

std::optional<nlohmann::json> ShardLabelPatch(const nlohmann::json& obj, int shard) {
  const std::string want = std::to_string(shard);
  if (ShardLabelOf(obj) == want) return std::nullopt;
  nlohmann::json patch;
  patch["metadata"]["labels"][std::string(kShardLabel)] = want;
  // The object as read: a concurrent change (a clusterRef edited meanwhile) makes it a 409,
  // and the labeller reads it again.
  const std::string rv = StringAt(obj, "metadata", "resourceVersion");
  if (!rv.empty()) patch["metadata"]["resourceVersion"] = rv;
  return patch;
}

std::string ShardSelector(int shard) { return absl::StrCat(std::string(kShardLabel), "=", shard); }

std::string UnlabelledSelector(int shards) {
  std::vector<int> all;
  for (int k = 0; k < shards; ++k) all.push_back(k);
  return absl::StrCat(std::string(kShardLabel), " notin (", absl::StrJoin(all, ","), ")");
}

std::string ShardLeaseName(const std::string& base, int shard) {
  return absl::StrCat(base, "-shard-", shard);
}

std::string MemberLeaseName(const std::string& base, const std::string& identity) {
  std::string id;
  for (char c : identity) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    id += (std::isalnum(static_cast<unsigned char>(l)) || l == '.' || l == '-') ? l : '-';
  }
  std::string name = absl::StrCat(base, "-member-", id);
  if (name.size() > 253) name.resize(253);
  while (!name.empty() && !std::isalnum(static_cast<unsigned char>(name.back()))) name.pop_back();
  return name;
}

bool IsMemberLeaseName(const std::string& base, const std::string& name) {
  return name.rfind(absl::StrCat(base, "-member-"), 0) == 0;
}

std::optional<int> ShardOfLeaseName(const std::string& base, const std::string& name) {
  const std::string prefix = absl::StrCat(base, "-shard-");
  if (name.rfind(prefix, 0) != 0) return std::nullopt;
  int k = 0;
  if (!absl::SimpleAtoi(name.substr(prefix.size()), &k) || k < 0) return std::nullopt;
  if (std::to_string(k) != name.substr(prefix.size())) return std::nullopt;
  return k;
}

LeaseObservation Observe(const std::optional<LeaseObservation>& before, const std::string& holder,
                         const std::string& renew_time, Duration lease_duration, Time now) {
  LeaseObservation o{holder, renew_time, lease_duration, now};
  if (before && before->holder == holder && before->renew_time == renew_time &&
      before->lease_duration == lease_duration) {
    o.changed_at = before->changed_at;
  }
  return o;
}

bool IsLive(const LeaseObservation& o, Time now) {
  return !o.holder.empty() && o.changed_at + o.lease_duration > now;
}

ShardPlan PlanShards(const ShardView& view) {
  ShardPlan plan;
  const int s = std::max(1, view.shards);
  std::set<std::string> members = view.live_members;
  members.insert(view.me);
  std::map<std::string, std::vector<int>> held;
  for (const auto& [k, who] : view.holders) {
    if (k >= 0 && k < s && members.contains(who)) held[who].push_back(k);
  }
  // Quotas: S / n each; S % n one more, to those holding most (fewest moves), then by identity.
  std::vector<std::string> order(members.begin(), members.end());
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    return held[a].size() > held[b].size();
  });
  const int n = static_cast<int>(order.size());
  const int base = s / n;
  const int extra = s % n;
  for (int i = 0; i < n; ++i) {
    if (order[i] == view.me) plan.quota = base + (i < extra ? 1 : 0);
  }
  const std::string& me = view.me;
  auto by_preference = [&](std::vector<int>& shards) {
    std::sort(shards.begin(), shards.end(), [&](int a, int b) {
      const uint32_t pa = Preference(me, a), pb = Preference(me, b);
      return pa != pb ? pa > pb : a < b;
    });
  };
  std::vector<int> mine = held[me];
  const int have = static_cast<int>(mine.size());
  if (have > plan.quota) {
    by_preference(mine);
    plan.release.assign(mine.begin() + plan.quota, mine.end());
    std::sort(plan.release.begin(), plan.release.end());
  } else if (have < plan.quota) {
    std::vector<int> free;
    for (int k = 0; k < s; ++k) {
      auto it = view.holders.find(k);
      if (it == view.holders.end() || !members.contains(it->second)) free.push_back(k);
    }
    by_preference(free);
    if (static_cast<int>(free.size()) > plan.quota - have) free.resize(plan.quota - have);
    plan.acquire = std::move(free);
  }
  return plan;
}

}  // namespace slurmop::reconcile
