// File: controller/cron/children.cc

#include "controller/cron/children.h"

#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "controller/api/cron_resources.h"
#include "controller/api/json_codec.h"
#include "controller/api/resources.h"
#include "controller/api/types.h"
#include "controller/common/time_format.h"

namespace slurmop::cron {
namespace {

const nlohmann::json& Member(const nlohmann::json& obj, const char* key) {
  static const nlohmann::json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::string StringAt(const nlohmann::json& obj, const char* key) {
  const nlohmann::json& v = Member(obj, key);
  return v.is_string() ? v.get<std::string>() : "";
}

std::optional<Time> ScheduledTime(const nlohmann::json& metadata, const std::string& cron_name) {
  const std::string annotated =
      StringAt(Member(metadata, "annotations"), std::string(api::kScheduledTimeAnnotation).c_str());
  if (std::optional<Time> t = ParseRfc3339(annotated)) return t;
  const std::string name = StringAt(metadata, "name");
  const std::string prefix = cron_name + "-";
  int64_t minutes = 0;
  // Unix minutes up to year 2160: beyond, a Time (int64 nanoseconds) overflows, and the name is
  // a SlurmJob's own choice, not a scheduled time.
  constexpr int64_t kMaxMinutes = 100'000'000;
  if (absl::StartsWith(name, prefix) &&
      absl::SimpleAtoi(absl::string_view(name).substr(prefix.size()), &minutes) && minutes > 0 &&
      minutes <= kMaxMinutes) {
    return Time(std::chrono::minutes(minutes));
  }
  return std::nullopt;
}

}  // namespace

bool OwnedBy(const nlohmann::json& slurm_job, const std::string& cron_uid) {
  const nlohmann::json& refs = Member(Member(slurm_job, "metadata"), "ownerReferences");
  if (!refs.is_array() || cron_uid.empty()) return false;
  for (const nlohmann::json& ref : refs) {
    if (StringAt(ref, "uid") == cron_uid && StringAt(ref, "kind") == api::kSlurmCronJobKind &&
        Member(ref, "controller") == true) {
      return true;
    }
  }
  return false;
}

Child ChildFromObject(const nlohmann::json& slurm_job, const std::string& cron_name) {
  const nlohmann::json& metadata = Member(slurm_job, "metadata");
  const nlohmann::json& status = Member(slurm_job, "status");
  Child c;
  c.name = StringAt(metadata, "name");
  c.uid = StringAt(metadata, "uid");
  c.scheduled_time = ScheduledTime(metadata, cron_name);
  c.phase = StringAt(status, "phase");
  c.end_time = ParseRfc3339(StringAt(status, "endTime"));
  c.being_deleted = !StringAt(metadata, "deletionTimestamp").empty();
  return c;
}

nlohmann::json NewChildObject(const nlohmann::json& cron,
                              const v1alpha1::SlurmJobTemplateSpec& job_template,
                              const ChildToCreate& child) {
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [k, v] : job_template.metadata().labels()) labels[k] = v;
  labels[std::string(api::kCronJobNameLabel)] = api::MetadataString(cron, "name");
  nlohmann::json annotations = nlohmann::json::object();
  for (const auto& [k, v] : job_template.metadata().annotations()) annotations[k] = v;
  annotations[std::string(api::kScheduledTimeAnnotation)] = FormatRfc3339(child.scheduled_time);
  nlohmann::json owner = {{"apiVersion", std::string(api::kApiVersion)},
                          {"kind", std::string(api::kSlurmCronJobKind)},
                          {"name", api::MetadataString(cron, "name")},
                          {"uid", api::MetadataString(cron, "uid")},
                          {"controller", true},
                          {"blockOwnerDeletion", true}};
  return {{"apiVersion", std::string(api::kApiVersion)},
          {"kind", std::string(api::kSlurmJobKind)},
          {"metadata",
           {{"name", child.name},
            {"namespace", api::MetadataString(cron, "namespace")},
            {"labels", labels},
            {"annotations", annotations},
            {"ownerReferences", nlohmann::json::array({owner})}}},
          {"spec", api::ToJson(job_template.spec())}};
}

}  // namespace slurmop::cron
