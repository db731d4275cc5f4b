// File: controller/reconcile/job_index.cc

#include "controller/reconcile/job_index.h"

#include <algorithm>
#include <chrono>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "controller/api/resources.h"
#include "controller/api/types.h"
#include "controller/common/time_format.h"
#include "controller/kube/watch_event.h"

namespace slurmop::reconcile {

std::vector<std::string> JobIndex::Apply(const std::string& type, const nlohmann::json& obj) {
  const std::string ns = api::MetadataString(obj, "namespace");
  const std::string key = absl::StrCat(ns, "/", api::MetadataString(obj, "name"));
  std::lock_guard<std::mutex> lock(mu_);
  UpdateSummary(type, key, obj);
  return UpdateDependents(type, key, ns, obj);
}

namespace {

// The known phases, indexed by JobIndex::Phase (kOther, last, has no name here).
constexpr std::string_view kPhaseNames[] = {"",       "Pending",   "Running", "Succeeded",
                                            "Failed", "Cancelled", "Unknown"};

// The namespace of "ns/name".
std::string_view NamespaceOf(std::string_view key) { return key.substr(0, key.find('/')); }

}  // namespace

void JobIndex::UpdateSummary(const std::string& type, const std::string& key,
                             const nlohmann::json& obj) {
  if (auto old = summaries_.find(key); old != summaries_.end()) {
    key_by_uid_.erase(old->second.uid);
    if (auto n = status_job_ids_.find(old->second.job_id);
        n != status_job_ids_.end() && --n->second == 0) {
      status_job_ids_.erase(n);
    }
    other_phases_.erase(key);
    if (type == kube::kDeleted) summaries_.erase(old);
  }
  if (type == kube::kDeleted) return;
  auto entry = summaries_.try_emplace(key).first;
  Summary& s = entry->second;
  s = Summary{};
  s.uid = api::MetadataString(obj, "uid");
  if (auto spec = obj.find("spec"); spec != obj.end() && spec->is_object()) {
    if (auto cr = spec->find("clusterRef"); cr != spec->end() && cr->is_object()) {
      if (auto n = cr->find("name"); n != cr->end() && n->is_string()) s.cluster_ref = *n;
      s.cluster_scoped_ref = cr->value("kind", "") == api::kClusterSlurmClusterKind;
    }
  }
  if (auto st = obj.find("status"); st != obj.end() && st->is_object()) {
    if (auto p = st->find("phase"); p != st->end() && p->is_string()) {
      const std::string& phase = p->get_ref<const std::string&>();
      s.phase = PhaseCode(phase);
      if (s.phase == Phase::kOther) other_phases_[key] = phase;
    }
    if (auto r = st->find("run"); r != st->end() && r->is_number_integer()) {
      s.run = r->get<int32_t>();
    }
    if (auto j = st->find("jobId"); j != st->end() && j->is_number_integer()) {
      s.job_id = j->get<int64_t>();
    }
    if (auto t = st->find("submitTime"); t != st->end() && t->is_string()) {
      s.waiting_since = ParseRfc3339(t->get<std::string>());
    }
  }
  if (!s.waiting_since)
    s.waiting_since = ParseRfc3339(api::MetadataString(obj, "creationTimestamp"));
  s.uid.shrink_to_fit();
  s.cluster_ref.shrink_to_fit();
  if (!s.uid.empty()) {
    // Re-inserted, not assigned: the key view must point into this summary's uid.
    key_by_uid_.erase(s.uid);
    key_by_uid_.emplace(s.uid, &entry->first);
  }
  if (s.job_id != 0) ++status_job_ids_[s.job_id];
}

JobIndex::Phase JobIndex::PhaseCode(std::string_view phase) {
  static_assert(std::size(kPhaseNames) == static_cast<size_t>(Phase::kOther),
                "one name per known Phase, in its order");
  for (size_t i = 0; i < std::size(kPhaseNames); ++i) {
    if (kPhaseNames[i] == phase) return static_cast<Phase>(i);
  }
  return Phase::kOther;
}

std::string_view JobIndex::PhaseOf(const Summaries::value_type& entry) const {
  if (entry.second.phase == Phase::kOther) {
    auto it = other_phases_.find(entry.first);
    return it == other_phases_.end() ? std::string_view() : std::string_view(it->second);
  }
  return kPhaseNames[static_cast<size_t>(entry.second.phase)];
}

std::vector<std::string> JobIndex::UpdateDependents(const std::string& type, const std::string& key,
                                                    const std::string& ns,
                                                    const nlohmann::json& obj) {
  // What `key` names now (nothing once deleted), against what it named before: the names an
  // edit drops are forgotten too, or every edit of spec.dependsOn would leave entries behind.
  std::set<std::string> now;
  if (type != kube::kDeleted) {
    if (auto spec = obj.find("spec"); spec != obj.end() && spec->is_object()) {
      if (auto deps = spec->find("dependsOn"); deps != spec->end() && deps->is_array()) {
        for (const auto& dep : *deps) {
          if (!dep.is_object() || !dep.contains("name") || !dep["name"].is_string()) continue;
          now.insert(absl::StrCat(ns, "/", dep["name"].get<std::string>()));
        }
      }
    }
  }
  auto before = depends_on_.find(key);
  if (before != depends_on_.end()) {
    for (const std::string& dep_key : before->second) {
      if (now.contains(dep_key)) continue;
      if (auto it = dependents_.find(dep_key); it != dependents_.end()) {
        it->second.erase(key);
        if (it->second.empty()) dependents_.erase(it);
      }
    }
  }
  for (const std::string& dep_key : now) dependents_[dep_key].insert(key);
  if (now.empty()) {
    if (before != depends_on_.end()) depends_on_.erase(before);
  } else {
    depends_on_[key] = std::move(now);
  }
  auto it = dependents_.find(key);
  if (it == dependents_.end()) return {};
  return std::vector<std::string>(it->second.begin(), it->second.end());
}

TagOwner JobIndex::OwnerOfUid(const std::string& uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = key_by_uid_.find(uid);
  if (it == key_by_uid_.end()) return TagOwner{};
  const Summary& s = summaries_.at(*it->second);
  return TagOwner{true, s.run, s.job_id};
}

bool JobIndex::NamesJobId(int64_t job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_job_ids_.contains(job_id);
}

std::vector<std::string> JobIndex::Naming(const std::string& ns, const std::string& cluster,
                                          const std::string& default_cluster) const {
  std::vector<std::string> naming;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, s] : summaries_) {
    if (NamespaceOf(key) != ns || s.cluster_scoped_ref) continue;
    if ((s.cluster_ref.empty() ? default_cluster : s.cluster_ref) == cluster) naming.push_back(key);
  }
  return naming;
}

std::optional<std::string> JobIndex::NamespacedClusterOf(const std::string& key,
                                                         const std::string& default_cluster) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = summaries_.find(key);
  if (it == summaries_.end() || it->second.cluster_scoped_ref) return std::nullopt;
  const std::string& name =
      it->second.cluster_ref.empty() ? default_cluster : it->second.cluster_ref;
  if (name.empty()) return std::nullopt;
  return absl::StrCat(std::string(NamespaceOf(it->first)), "/", name);
}

std::vector<std::string> JobIndex::NamingClusterScoped(const std::string& cluster) const {
  std::vector<std::string> naming;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, s] : summaries_) {
    if (s.cluster_scoped_ref && s.cluster_ref == cluster) naming.push_back(key);
  }
  return naming;
}

std::vector<std::string> JobIndex::InNamespaceNamingClusterScoped(const std::string& ns) const {
  std::vector<std::string> naming;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, s] : summaries_) {
    if (NamespaceOf(key) == ns && s.cluster_scoped_ref) naming.push_back(key);
  }
  return naming;
}

std::map<std::string, double> JobIndex::CountByPhase() const {
  std::map<std::string, double> by_phase;
  for (std::string_view name : kPhaseNames) by_phase[std::string(name)] = 0;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& entry : summaries_) by_phase[std::string(PhaseOf(entry))] += 1;
  return by_phase;
}

std::map<std::string, double> JobIndex::OldestPendingByNamespace(Time now) const {
  std::map<std::string, double> oldest;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, s] : summaries_) {
    if (s.phase != Phase::kPending || !s.waiting_since) continue;
    const double age = std::max(0.0, std::chrono::duration<double>(now - *s.waiting_since).count());
    double& o = oldest[std::string(NamespaceOf(key))];
    o = std::max(o, age);
  }
  return oldest;
}

LogFields JobIndex::LogFieldsOf(const std::string& key, const std::string& default_cluster) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = summaries_.find(key);
  if (it == summaries_.end()) return {};
  const Summary& s = it->second;
  LogFields fields;
  if (!s.uid.empty()) fields.push_back({"uid", s.uid});
  fields.push_back({"cluster", s.cluster_ref.empty() ? default_cluster : s.cluster_ref});
  if (s.run > 0) fields.push_back({"run", std::to_string(s.run)});
  if (s.job_id > 0) fields.push_back({"jobId", std::to_string(s.job_id)});
  return fields;
}

}  // namespace slurmop::reconcile
