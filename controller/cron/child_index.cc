// File: controller/cron/child_index.cc

#include "controller/cron/child_index.h"

#include "absl/strings/str_cat.h"
#include "controller/api/cron_resources.h"
#include "controller/api/types.h"
#include "controller/kube/watch_event.h"

namespace slurmop::cron {
namespace {

std::string CronLabel(const nlohmann::json& obj) {
  const nlohmann::json labels =
      obj.value("metadata", nlohmann::json::object()).value("labels", nlohmann::json::object());
  auto it = labels.find(std::string(api::kCronJobNameLabel));
  return it != labels.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::vector<std::string> ChildIndex::Apply(const std::string& type,
                                           const std::shared_ptr<const nlohmann::json>& obj) {
  if (!obj) return {};
  const std::string ns = api::MetadataString(*obj, "namespace");
  const std::string name = api::MetadataString(*obj, "name");
  const std::string job_key = absl::StrCat(ns, "/", name);
  const std::string label = CronLabel(*obj);
  const std::string cron_key = label.empty() ? "" : absl::StrCat(ns, "/", label);
  std::vector<std::string> touched;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = cron_of_.find(job_key); it != cron_of_.end()) {
    if (type == kube::kDeleted || it->second != cron_key) {
      touched.push_back(it->second);
      by_cron_[it->second].erase(name);
      if (by_cron_[it->second].empty()) by_cron_.erase(it->second);
      cron_of_.erase(it);
    }
  }
  if (type != kube::kDeleted && !cron_key.empty()) {
    by_cron_[cron_key][name] = obj;
    cron_of_[job_key] = cron_key;
    if (touched.empty() || touched.back() != cron_key) touched.push_back(cron_key);
  } else if (type == kube::kDeleted && !cron_key.empty() && touched.empty()) {
    touched.push_back(cron_key);
  }
  return touched;
}

std::vector<std::shared_ptr<const nlohmann::json>> ChildIndex::Of(const std::string& ns,
                                                                  const std::string& cron) const {
  std::vector<std::shared_ptr<const nlohmann::json>> out;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_cron_.find(absl::StrCat(ns, "/", cron));
  if (it == by_cron_.end()) return out;
  for (const auto& [name, obj] : it->second) out.push_back(obj);
  return out;
}

}  // namespace slurmop::cron
