// File: controller/slurm/submit_rendering.cc
//
// Descriptor validation and the two request layouts (sbatch options for
// v0.0.38, JOB_DESC_MSG for v0.0.39+).

#include "controller/slurm/submit_rendering.h"

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "controller/slurm/array_indexes.h"
#include "controller/slurm/reserved_keys.h"
#include "controller/slurm/text_compat.h"

namespace slurmop::slurm {
namespace {

using nlohmann::json;

template <typename T>
absl::Status CheckAtLeast(const std::optional<T>& value, std::type_identity_t<T> minimum,
                          std::string_view field) {
  if (value.has_value() && *value < minimum) {
    return absl::InvalidArgumentError(
        absl::StrCat("job ", ToAbsl(field), " must be at least ", minimum, ", got ", *value));
  }
  return absl::OkStatus();
}

absl::Status Validate(const JobDescriptor& job) {
  if (job.script.empty()) return absl::InvalidArgumentError("job script is empty");
  if (job.current_working_directory.empty()) {
    return absl::InvalidArgumentError(
        "job current_working_directory is empty (v0.0.38 would silently use slurmrestd's own "
        "directory, and Slurm 23.11+ rejects the job)");
  }
  if (job.environment.empty()) {
    return absl::InvalidArgumentError(
        "job environment is empty; Slurm refuses batch jobs without an environment (set at "
        "least PATH)");
  }
  for (const auto& [name, value] : job.environment) {
    if (name.empty() || name.find('=') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("job environment variable name \"", name, "\" is empty or contains '='"));
    }
  }
  for (absl::Status s :
       {CheckAtLeast(job.nodes, 1, "nodes"), CheckAtLeast(job.minimum_nodes, 1, "minimum_nodes"),
        CheckAtLeast(job.maximum_nodes, 1, "maximum_nodes"), CheckAtLeast(job.tasks, 1, "tasks"),
        CheckAtLeast(job.tasks_per_node, 1, "tasks_per_node"),
        CheckAtLeast(job.cpus_per_task, 1, "cpus_per_task"),
        CheckAtLeast(job.gpus_per_node, 1, "gpus_per_node"),
        CheckAtLeast(job.time_limit_minutes, 1, "time_limit_minutes"),
        CheckAtLeast(job.memory_per_node_mb, 0, "memory_per_node_mb")}) {
    if (!s.ok()) return s;
  }
  if (!job.array.empty()) {
    if (absl::StatusOr<ArrayExpression> a = ParseArrayExpression(job.array); !a.ok()) {
      return a.status();
    }
  }
  if (job.nodes.has_value() && (job.minimum_nodes.has_value() || job.maximum_nodes.has_value())) {
    return absl::InvalidArgumentError(
        "job nodes (an exact count) cannot be combined with minimum_nodes/maximum_nodes (a "
        "range)");
  }
  if (job.minimum_nodes.has_value() && job.maximum_nodes.has_value() &&
      *job.minimum_nodes > *job.maximum_nodes) {
    return absl::InvalidArgumentError(absl::StrCat("job minimum_nodes (", *job.minimum_nodes,
                                                   ") is greater than maximum_nodes (",
                                                   *job.maximum_nodes, ")"));
  }
  if (!job.extra.is_null() && !job.extra.is_object()) {
    return absl::InvalidArgumentError("job extra must be a JSON object");
  }
  return absl::OkStatus();
}

void PutString(json& object, const char* key, const std::string& value) {
  if (!value.empty()) object[key] = value;
}

template <typename T>
void PutInteger(json& object, const char* key, const std::optional<T>& value) {
  if (value.has_value()) object[key] = *value;
}

json SetNumber(int64_t n) { return json{{"set", true}, {"number", n}}; }

// v0.0.38 `nodes`: an int is an exact count (sbatch -N N); "min-max" a range.
// A minimum alone is sent as that count, a maximum alone as "1-max".
void PutSbatchNodes(json& object, const JobDescriptor& job) {
  if (job.nodes.has_value()) {
    object["nodes"] = *job.nodes;
  } else if (job.minimum_nodes.has_value() && job.maximum_nodes.has_value()) {
    if (*job.minimum_nodes == *job.maximum_nodes) {
      object["nodes"] = *job.minimum_nodes;
    } else {
      object["nodes"] = absl::StrCat(*job.minimum_nodes, "-", *job.maximum_nodes);
    }
  } else if (job.minimum_nodes.has_value()) {
    object["nodes"] = *job.minimum_nodes;
  } else if (job.maximum_nodes.has_value()) {
    object["nodes"] = absl::StrCat("1-", *job.maximum_nodes);
  }
}

// The fields both dialects spell alike: the tag (comment), accounting,
// output paths, placement and the hold.
void PutSharedFields(json& out, const JobDescriptor& job) {
  out["comment"] = job.comment;
  PutString(out, "account", job.account);
  PutString(out, "qos", job.qos);
  PutString(out, "standard_output", job.standard_output);
  PutString(out, "standard_error", job.standard_error);
  PutString(out, "constraints", job.constraints);
  PutString(out, "reservation", job.reservation);
  PutString(out, "dependency", job.dependency);
  // sbatch's --array in v0.0.38 (opt.c `array`), job_desc_msg_t's array_inx
  // ("array") in data_parser v0.0.39 ... v0.0.44.
  PutString(out, "array", job.array);
  if (job.hold) out["hold"] = true;
}

json SbatchOptionsJob(const JobDescriptor& job) {
  json out = json::object();
  PutString(out, "name", job.name);
  PutString(out, "partition", job.partition);
  PutString(out, "current_working_directory", job.current_working_directory);
  PutSbatchNodes(out, job);
  PutInteger(out, "tasks", job.tasks);
  PutInteger(out, "tasks_per_node", job.tasks_per_node);
  PutInteger(out, "cpus_per_task", job.cpus_per_task);
  // 22.05's job_properties types gpus_per_node as a string ("[type:]count").
  if (job.gpus_per_node.has_value()) out["gpus_per_node"] = absl::StrCat(*job.gpus_per_node);
  PutInteger(out, "memory_per_node", job.memory_per_node_mb);
  json env = json::object();
  for (const auto& [name, value] : job.environment) env[name] = value;  // later entries win
  out["environment"] = std::move(env);
  PutInteger(out, "time_limit", job.time_limit_minutes);
  // 22.05 reads `deadline` as sbatch's --deadline, with parse_time(): a unix
  // time only as "uts<seconds>" (a bare number is "Invalid deadline time").
  if (job.deadline.has_value()) out["deadline"] = absl::StrCat("uts", *job.deadline);
  PutSharedFields(out, job);
  return out;
}

json JobDescMsgJob(const JobDescriptor& job) {
  json out = json::object();
  PutString(out, "name", job.name);
  PutString(out, "partition", job.partition);
  PutString(out, "current_working_directory", job.current_working_directory);
  if (job.nodes.has_value()) {
    out["minimum_nodes"] = *job.nodes;
    out["maximum_nodes"] = *job.nodes;
  } else {
    PutInteger(out, "minimum_nodes", job.minimum_nodes);
    PutInteger(out, "maximum_nodes", job.maximum_nodes);
  }
  PutInteger(out, "tasks", job.tasks);
  PutInteger(out, "tasks_per_node", job.tasks_per_node);
  PutInteger(out, "cpus_per_task", job.cpus_per_task);
  // What sbatch --gpus-per-node=N sends since 23.02.
  if (job.gpus_per_node.has_value()) {
    out["tres_per_node"] = absl::StrCat("gres/gpu:", *job.gpus_per_node);
  }
  if (job.memory_per_node_mb.has_value()) {
    out["memory_per_node"] = SetNumber(*job.memory_per_node_mb);
  }
  json env = json::array();
  for (const auto& [name, value] : job.environment) env.push_back(absl::StrCat(name, "=", value));
  out["environment"] = std::move(env);
  if (job.time_limit_minutes.has_value()) {
    out["time_limit"] = SetNumber(*job.time_limit_minutes);
  }
  // data_parser v0.0.39+: an integer (UINT64, then TIMESTAMP), a unix time.
  PutInteger(out, "deadline", job.deadline);
  PutSharedFields(out, job);
  return out;
}

}  // namespace

absl::StatusOr<json> RenderSubmitBody(const JobDescriptor& job, SubmitFormat format) {
  if (absl::Status s = Validate(job); !s.ok()) return s;
  json job_object =
      format == SubmitFormat::kSbatchOptions ? SbatchOptionsJob(job) : JobDescMsgJob(job);
  // extra wins over the user's fields, never over the operator's own
  // (reserved_keys.h): validation refuses them first; this is the defence in depth.
  if (job.extra.is_object()) {
    for (const auto& [key, value] : job.extra.items()) {
      if (!IsReservedJobKey(key)) job_object[key] = value;
    }
  }
  json body = {{"job", std::move(job_object)}, {"script", job.script}};
  // nlohmann throws on invalid UTF-8 only when serialising; find out here.
  try {
    (void)body.dump();
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("job cannot be sent as JSON (is the script valid UTF-8?): ", e.what()));
  }
  return body;
}

}  // namespace slurmop::slurm
