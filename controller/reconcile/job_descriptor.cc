// File: controller/reconcile/job_descriptor.cc

#include "controller/reconcile/job_descriptor.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "controller/api/json_codec.h"
#include "controller/slurm/array_indexes.h"
#include "controller/slurm/dialects.h"
#include "controller/slurm/reserved_keys.h"

namespace slurmop::reconcile {
namespace {

bool IsValidEnvName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// Works for the cluster's EnvVar list and the job's JobEnvVar list.
template <typename Var>
absl::Status CheckEnvironment(const google::protobuf::RepeatedPtrField<Var>& env,
                              const std::string& field) {
  std::set<std::string> seen;
  for (int i = 0; i < env.size(); ++i) {
    const auto& e = env.Get(i);
    if (!IsValidEnvName(e.name())) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, "[", i, "].name: \"", e.name(),
          "\" is not a valid environment variable name (letters, digits and '_', not starting "
          "with a digit)"));
    }
    if (!seen.insert(e.name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": variable \"", e.name(), "\" is listed twice; keep one entry"));
    }
  }
  return absl::OkStatus();
}

// spec.extra may not set the keys the operator owns (slurm/reserved_keys.h):
// the tag in `comment` above all, whose loss or forgery breaks exactly-once.
absl::Status CheckExtra(const v1alpha1::SlurmJobSpec& spec) {
  if (!spec.has_extra()) return absl::OkStatus();
  std::vector<std::string> reserved = slurm::ReservedKeysIn(api::ToJson(spec.extra()));
  if (reserved.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "spec.extra sets ", absl::StrJoin(reserved, ", "),
      ", which the operator sets itself (the job's tag, name, dependencies, deadline, hold, "
      "array, script and identity); remove ",
      reserved.size() == 1 ? "it" : "them",
      " from spec.extra (use spec.name, spec.dependsOn, spec.activeDeadlineSeconds, spec.suspend, "
      "spec.array instead)"));
}

// Slurm starts a job that has a deadline only when its time limit ends before
// it (slurmctld's deadline_ok()); otherwise the job ends DEADLINE unstarted.
// spec.activeDeadlineSeconds is that deadline from the first submit, so a
// time limit longer than it can never run.
absl::Status CheckDeadlineFitsTimeLimit(const v1alpha1::SlurmJobSpec& spec) {
  if (!spec.has_active_deadline_seconds() || spec.time_limit_minutes() == 0) {
    return absl::OkStatus();
  }
  if (int64_t{spec.time_limit_minutes()} * 60 <= spec.active_deadline_seconds()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "spec.timeLimitMinutes (", spec.time_limit_minutes(),
      " min) is longer than spec.activeDeadlineSeconds (", spec.active_deadline_seconds(),
      " s): Slurm starts a job with a deadline only when its time limit ends before the "
      "deadline, so this job would never start; lower spec.timeLimitMinutes or raise "
      "spec.activeDeadlineSeconds (without spec.timeLimitMinutes, Slurm cuts the job's time "
      "limit to end at the deadline)"));
}

// spec.array: Slurm's --array expression, parsed as slurmctld does and capped
// (slurm/array_indexes.h), so that what is submitted is what status.array counts.
absl::Status CheckArray(const v1alpha1::SlurmJobSpec& spec) {
  if (!spec.has_array()) return absl::OkStatus();
  absl::StatusOr<slurm::ArrayExpression> parsed =
      slurm::ParseArrayExpression(spec.array().indexes());
  if (!parsed.ok()) return parsed.status();
  if (spec.array().backoff_limit_per_index() < 0 || spec.array().backoff_limit_per_index() > 100) {
    return absl::InvalidArgumentError("spec.array.backoffLimitPerIndex must be 0 to 100");
  }
  if (spec.array().has_max_failed_indexes() &&
      (spec.array().max_failed_indexes() < 0 ||
       spec.array().max_failed_indexes() > slurm::kMaxArrayIndexes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.array.maxFailedIndexes must be 0 to ", slurm::kMaxArrayIndexes));
  }
  return absl::OkStatus();
}

// Every job variable has exactly one source: a literal value or a Secret key.
absl::Status CheckEnvValueSources(const v1alpha1::SlurmJobSpec& spec) {
  std::set<std::string> secrets;
  for (int i = 0; i < spec.environment_size(); ++i) {
    const v1alpha1::JobEnvVar& e = spec.environment(i);
    if (e.has_value() == e.has_value_from()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.environment[", i, "] (", e.name(),
          "): set exactly one of value and valueFrom (an empty value is value: \"\")"));
    }
    const auto& ref = e.value_from().secret_key_ref();
    if (e.has_value_from() && (ref.name().empty() || ref.key().empty())) {
      return absl::InvalidArgumentError(absl::StrCat("spec.environment[", i, "] (", e.name(),
                                                     "): valueFrom.secretKeyRef needs both name "
                                                     "and key"));
    }
    // Each Secret is one GET of the whole object (up to etcd's 1.5 MiB), made again every
    // 30 s while one of them is missing: 1,000 of them (the CRD's maxItems) were 1 GB a pass.
    if (e.has_value_from() && secrets.insert(ref.name()).second &&
        secrets.size() > kMaxSecretsPerSlurmJob) {
      return absl::InvalidArgumentError(absl::StrCat("spec.environment[", i, "] (", e.name(),
                                                     "): spec.environment names more "
                                                     "than ",
                                                     kMaxSecretsPerSlurmJob,
                                                     " Secrets; gather the values in fewer"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

namespace {
constexpr char kTagPrefix[] = "slurmjob-operator:";
constexpr size_t kTagPrefixLen = sizeof(kTagPrefix) - 1;
}  // namespace

std::string LegacySubmissionTag(const JobIdentity& id, int32_t run) {
  return absl::StrCat(kTagPrefix, id.ns, "/", id.uid, "/", run);
}

std::string SubmissionTag(const JobIdentity& id, int32_t run) {
  if (id.installation.empty()) return LegacySubmissionTag(id, run);
  return absl::StrCat(LegacySubmissionTag(id, run), "@", id.installation);
}

std::string DisownedTag(const JobIdentity& id, int32_t run) {
  return absl::StrCat("slurmjob-operator-orphaned:", id.ns, "/", id.uid, "/", run);
}

absl::Status ValidateInstallationId(std::string_view installation) {
  if (installation.empty() || installation.size() > 63) {
    return absl::InvalidArgumentError("an installation id has 1 to 63 characters");
  }
  for (char c : installation) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("installation id \"", std::string(installation),
                       "\" may only have letters, digits, '.', '_', '-'"));
    }
  }
  return absl::OkStatus();
}

std::optional<ParsedTag> ParseSubmissionTag(std::string_view comment) {
  if (comment.substr(0, kTagPrefixLen) != std::string_view(kTagPrefix)) return std::nullopt;
  comment.remove_prefix(kTagPrefixLen);
  ParsedTag t;
  if (const size_t at = comment.rfind('@'); at != std::string_view::npos) {
    t.installation = std::string(comment.substr(at + 1));
    if (!ValidateInstallationId(t.installation).ok()) return std::nullopt;
    comment = comment.substr(0, at);
  }
  const size_t a = comment.find('/');
  if (a == std::string_view::npos || a == 0) return std::nullopt;
  const size_t b = comment.find('/', a + 1);
  if (b == std::string_view::npos || b == a + 1 || b + 1 >= comment.size()) return std::nullopt;
  t.ns = std::string(comment.substr(0, a));
  t.uid = std::string(comment.substr(a + 1, b - a - 1));
  int64_t run = 0;
  for (char c : comment.substr(b + 1)) {
    if (c < '0' || c > '9' || run > 1'000'000) return std::nullopt;
    run = run * 10 + (c - '0');
  }
  if (run < 1) return std::nullopt;
  t.run = static_cast<int32_t>(run);
  return t;
}

absl::Status ValidateJobSpec(const v1alpha1::SlurmJobSpec& spec) {
  const bool has_inline = !spec.script().empty();
  const bool has_ref = spec.has_script_from();
  if (has_inline && has_ref) {
    return absl::InvalidArgumentError(
        "spec.script and spec.scriptFrom are both set; keep exactly one of them");
  }
  if (!has_inline && !has_ref) {
    return absl::InvalidArgumentError(
        "spec.script is empty and spec.scriptFrom is not set; give the batch script's text in "
        "spec.script (starting with a #! line) or point spec.scriptFrom.configMapKeyRef at it");
  }
  if (has_ref && (spec.script_from().config_map_key_ref().name().empty() ||
                  spec.script_from().config_map_key_ref().key().empty())) {
    return absl::InvalidArgumentError("spec.scriptFrom.configMapKeyRef needs both name and key");
  }
  if (spec.nodes() < 0 || spec.minimum_nodes() < 0 || spec.maximum_nodes() < 0 ||
      spec.tasks() < 0 || spec.tasks_per_node() < 0 || spec.cpus_per_task() < 0 ||
      spec.gpus_per_node() < 0 || spec.memory_per_node_mb() < 0 || spec.time_limit_minutes() < 0) {
    return absl::InvalidArgumentError(
        "counts and limits in spec (nodes, minimumNodes, maximumNodes, tasks, tasksPerNode, "
        "cpusPerTask, gpusPerNode, memoryPerNodeMB, timeLimitMinutes) must be positive");
  }
  if (spec.nodes() > 0 && (spec.minimum_nodes() > 0 || spec.maximum_nodes() > 0)) {
    return absl::InvalidArgumentError(
        "spec.nodes cannot be combined with spec.minimumNodes or spec.maximumNodes; use nodes "
        "for an exact count or minimumNodes/maximumNodes for a range");
  }
  if (spec.minimum_nodes() > 0 && spec.maximum_nodes() > 0 &&
      spec.minimum_nodes() > spec.maximum_nodes()) {
    return absl::InvalidArgumentError(absl::StrCat("spec.minimumNodes (", spec.minimum_nodes(),
                                                   ") is greater than spec.maximumNodes (",
                                                   spec.maximum_nodes(), ")"));
  }
  if (!spec.deletion_policy().empty() && spec.deletion_policy() != "Cancel" &&
      spec.deletion_policy() != "Orphan") {
    return absl::InvalidArgumentError(absl::StrCat("spec.deletionPolicy \"", spec.deletion_policy(),
                                                   "\" is not one of Cancel, Orphan"));
  }
  if (absl::Status s = CheckExtra(spec); !s.ok()) return s;
  if (absl::Status s = CheckDeadlineFitsTimeLimit(spec); !s.ok()) return s;
  if (absl::Status s = CheckArray(spec); !s.ok()) return s;
  if (absl::Status s = CheckEnvironment(spec.environment(), "spec.environment"); !s.ok()) {
    return s;
  }
  return CheckEnvValueSources(spec);
}

bool NeedsSecretEnv(const v1alpha1::SlurmJobSpec& spec) {
  for (const auto& e : spec.environment()) {
    if (e.has_value_from()) return true;
  }
  return false;
}

absl::Status ValidateClusterSpec(const v1alpha1::SlurmClusterSpec& spec) {
  if (spec.project_id().empty() || spec.region().empty() || spec.cluster_id().empty()) {
    return absl::InvalidArgumentError(
        "SlurmCluster spec.projectId, spec.region and spec.clusterId are all required");
  }
  if (!spec.slurm_api_version().empty()) {
    absl::StatusOr<const slurm::Dialect*> dialect = slurm::DialectFor(spec.slurm_api_version());
    if (!dialect.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("SlurmCluster spec.slurmApiVersion: ", dialect.status().message()));
    }
  }
  return CheckEnvironment(spec.default_environment(), "SlurmCluster spec.defaultEnvironment");
}

namespace {

// Slurm refuses a script without an interpreter line; an empty one is a
// mistake in the SlurmJob. Both are refused here with what to write instead.
absl::Status CheckScript(const std::string& script) {
  if (absl::StripLeadingAsciiWhitespace(script).empty()) {
    return absl::InvalidArgumentError(
        "the batch script is empty; give its text in spec.script or spec.scriptFrom");
  }
  if (!absl::StartsWith(script, "#!")) {
    return absl::InvalidArgumentError(
        "the batch script must start with a #! line naming its interpreter, e.g. "
        "\"#!/bin/bash\" (Slurm refuses scripts without one)");
  }
  return absl::OkStatus();
}

// The job's environment: the cluster's defaults, overridden by the job's own
// variables (secretKeyRef values from `secret_env`), in a stable order
// (cluster's first, then the job's new ones), with PATH added when unset.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> JobEnvironment(
    const v1alpha1::SlurmJobSpec& spec, const v1alpha1::SlurmClusterSpec& cluster,
    const SecretEnv* secret_env) {
  std::vector<std::pair<std::string, std::string>> env;
  auto upsert = [&env](const std::string& name, const std::string& value) {
    for (auto& [n, v] : env) {
      if (n == name) {
        v = value;
        return;
      }
    }
    env.emplace_back(name, value);
  };
  for (const auto& e : cluster.default_environment()) upsert(e.name(), e.value());
  for (const auto& e : spec.environment()) {
    if (!e.has_value_from()) {
      upsert(e.name(), e.value());
      continue;
    }
    auto it = secret_env == nullptr ? SecretEnv::const_iterator() : secret_env->find(e.name());
    if (secret_env == nullptr || it == secret_env->end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the value of spec.environment variable ", e.name(), " (Secret \"",
          e.value_from().secret_key_ref().name(), "\") was not read before the submit"));
    }
    upsert(e.name(), it->second);
  }
  bool has_path = false;
  for (const auto& [n, v] : env) has_path |= (n == "PATH");
  if (!has_path) env.insert(env.begin(), {"PATH", kDefaultPath});
  return env;
}

}  // namespace

absl::StatusOr<slurm::JobDescriptor> BuildJobDescriptor(const JobIdentity& id,
                                                        const v1alpha1::SlurmJobSpec& spec,
                                                        const v1alpha1::SlurmClusterSpec& cluster,
                                                        const std::string& script, int32_t run,
                                                        const std::string& dependency,
                                                        const SecretEnv* secret_env) {
  if (absl::Status s = ValidateJobSpec(spec); !s.ok()) return s;
  if (absl::Status s = CheckScript(script); !s.ok()) return s;
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> env =
      JobEnvironment(spec, cluster, secret_env);
  if (!env.ok()) return env.status();

  slurm::JobDescriptor d;
  d.script = script;
  d.name = spec.name().empty() ? id.name : spec.name();
  d.partition = spec.partition().empty() ? cluster.default_partition() : spec.partition();
  d.current_working_directory = spec.current_working_directory().empty()
                                    ? kDefaultWorkingDirectory
                                    : spec.current_working_directory();
  auto positive = [](auto v) -> std::optional<decltype(v)> {
    if (v > 0) return v;
    return std::nullopt;
  };
  d.nodes = positive(spec.nodes());
  d.minimum_nodes = positive(spec.minimum_nodes());
  d.maximum_nodes = positive(spec.maximum_nodes());
  d.tasks = positive(spec.tasks());
  d.tasks_per_node = positive(spec.tasks_per_node());
  d.cpus_per_task = positive(spec.cpus_per_task());
  d.gpus_per_node = positive(spec.gpus_per_node());
  d.memory_per_node_mb = positive(spec.memory_per_node_mb());
  d.time_limit_minutes = positive(spec.time_limit_minutes());
  d.account = spec.account();
  d.qos = spec.qos();
  d.standard_output = spec.standard_output();
  d.standard_error = spec.standard_error();
  d.constraints = spec.constraints();
  d.reservation = spec.reservation();
  d.comment = SubmissionTag(id, run);
  if (spec.has_array()) d.array = spec.array().indexes();
  d.dependency = dependency;

  d.environment = *std::move(env);

  if (spec.has_extra()) {
    d.extra = api::ToJson(spec.extra());
    if (!d.extra.is_object()) d.extra = nlohmann::json::object();
  }
  return d;
}

}  // namespace slurmop::reconcile
