// File: controller/slurm/job_record_decoding.cc
//
// slurmctld / slurmdb job record -> JobInfo.

#include "controller/slurm/job_record_decoding.h"

#include "controller/common/bounded_text.h"
#include "controller/slurm/allocation_decoding.h"
#include "controller/slurm/exit_code_decoding.h"
#include "controller/slurm/job_state_decoding.h"
#include "controller/slurm/json_fields.h"
#include "controller/slurm/output_paths.h"
#include "controller/slurm/slurm_errors.h"

namespace slurmop::slurm {
namespace {

absl::StatusOr<JobInfo> StartRecord(const nlohmann::json& record) {
  if (!record.is_object()) return MalformedResponse("a job record is not a JSON object");
  std::optional<int64_t> id = IntegerMember(record, "job_id");
  if (!id.has_value()) return MalformedResponse("a job record has no integer job_id");
  JobInfo info;
  info.job_id = *id;
  info.name = StringMember(record, "name");
  // Both become metric labels (executor.cc): bounded like any remote text.
  info.partition = CutText(StringMember(record, "partition"), kMaxRemoteMessageBytes);
  return info;
}

void ApplyState(const nlohmann::json* state, JobInfo* info) {
  if (state == nullptr) return;
  DecodedJobState decoded = DecodeJobState(*state);
  info->state = decoded.state;
  info->flags = std::move(decoded.flags);
}

void ApplyExit(const ProcessExit& exit, JobInfo* info) {
  if (!info->IsFinal()) return;
  info->exit_code = exit.exit_code;
  info->signal = exit.signal;
}

// An array id: nullopt when absent, null, unset or one of Slurm's NO_VAL /
// INFINITE sentinels sent as a plain number.
std::optional<int64_t> ArrayId(const nlohmann::json& record, std::string_view key) {
  std::optional<int64_t> id = IntegerMember(record, key);
  if (!id || *id < 0 || *id >= 0xfffffffe) return std::nullopt;
  return id;
}

// An array task's record (or the pending remainder's): the array's id, the
// task's index, the remainder's expression and the throttle. `record` is the
// live record itself or the accounting record's `array` object (whose keys
// are job_id, task_id, task, limits.max.running.tasks).
void ApplyArray(const nlohmann::json& record, bool accounting, JobInfo* info) {
  std::optional<int64_t> array_job = ArrayId(record, accounting ? "job_id" : "array_job_id");
  if (!array_job || *array_job == 0) return;
  info->array_job_id = *array_job;
  if (std::optional<int64_t> task = ArrayId(record, accounting ? "task_id" : "array_task_id");
      task && *task <= 0x7fffffff) {
    info->array_task_id = static_cast<int32_t>(*task);
  }
  info->array_task_string = StringMember(record, accounting ? "task" : "array_task_string");
  std::optional<int64_t> max = std::nullopt;
  if (accounting) {
    const nlohmann::json* limits = FindMember(record, "limits");
    const nlohmann::json* m = limits ? FindMember(*limits, "max") : nullptr;
    const nlohmann::json* r = m ? FindMember(*m, "running") : nullptr;
    if (r != nullptr) max = ArrayId(*r, "tasks");
  } else {
    max = ArrayId(record, "array_max_tasks");
  }
  if (max && *max <= 0x7fffffff) info->array_max_tasks = static_cast<int32_t>(*max);
}

// Where a live record says the batch script's output and error go.
void ApplyOutputPaths(const nlohmann::json& record, JobInfo* info) {
  BatchOutputContext context;
  context.job_id = info->job_id;
  context.array_task_id = ArrayId(record, "array_task_id");
  if (context.array_task_id) context.array_job_id = ArrayId(record, "array_job_id");
  context.job_name = info->name;
  context.user_name = StringMember(record, "user_name");
  context.working_directory = StringMember(record, "current_working_directory");
  context.batch_host = StringMember(record, "batch_host");
  OutputPaths paths =
      ResolveOutputPaths({.standard_output = StringMember(record, "standard_output"),
                          .standard_error = StringMember(record, "standard_error"),
                          .stdout_expanded = StringMember(record, "stdout_expanded"),
                          .stderr_expanded = StringMember(record, "stderr_expanded")},
                         context);
  info->standard_output = std::move(paths.standard_output);
  info->standard_error = std::move(paths.standard_error);
}

// Accounting records of v0.0.41+ carry Slurm's own expansion; older ones
// say nothing this reader trusts (no batch host, no array task id).
void ApplyAccountedOutputPaths(const nlohmann::json& record, JobInfo* info) {
  auto expanded = [&](std::string_view key) {
    std::string path = StringMember(record, key);
    return path.size() <= kMaxOutputPathBytes ? path : "";
  };
  info->standard_output = expanded("stdout_expanded");
  info->standard_error = expanded("stderr_expanded");
}

}  // namespace

// Keep in step with StartRecord() and DecodeSlurmctldJob(): a key read there
// and missing here would be dropped from the tracker's job lists
// (tests/slurm/job_record_keys_test.cc checks every fixture).
const std::vector<std::string>& SlurmctldJobRecordKeys() {
  static const auto* const kKeys = new std::vector<std::string>{
      "job_id", "name", "partition", "comment", "job_state", "state_reason", "state_description",
      "submit_time", "start_time", "end_time", "exit_code",
      // ApplyOutputPaths()
      "standard_output", "standard_error", "stdout_expanded", "stderr_expanded",
      "current_working_directory", "user_name", "batch_host", "array_job_id", "array_task_id",
      // ApplyArray()
      "array_task_string", "array_max_tasks"};
  return *kKeys;
}

absl::StatusOr<JobInfo> DecodeSlurmctldJob(const nlohmann::json& record) {
  absl::StatusOr<JobInfo> info = StartRecord(record);
  if (!info.ok()) return info;
  info->comment = StringMember(record, "comment");
  ApplyState(FindMember(record, "job_state"), &*info);
  // Both reach the SlurmJob's status and messages: cut like any remote text (bounded_text.h).
  info->state_reason = CutText(StringMember(record, "state_reason"), kMaxRemoteMessageBytes);
  info->state_description =
      CutText(StringMember(record, "state_description"), kMaxRemoteMessageBytes);
  info->submit_time = EpochMember(record, "submit_time");
  info->start_time = EpochMember(record, "start_time");
  info->end_time = EpochMember(record, "end_time");
  if (const nlohmann::json* exit = FindMember(record, "exit_code"); exit != nullptr) {
    ApplyExit(DecodeSlurmctldExitCode(*exit), &*info);
  }
  ApplyOutputPaths(record, &*info);
  ApplyArray(record, /*accounting=*/false, &*info);
  return info;
}

absl::StatusOr<JobInfo> DecodeSlurmdbJob(const nlohmann::json& record,
                                         SlurmdbExitCodes exit_codes) {
  absl::StatusOr<JobInfo> info = StartRecord(record);
  if (!info.ok()) return info;
  if (const nlohmann::json* comment = FindMember(record, "comment"); comment != nullptr) {
    info->comment =
        comment->is_string() ? comment->get<std::string>() : StringMember(*comment, "job");
  }
  if (const nlohmann::json* state = FindMember(record, "state"); state != nullptr) {
    ApplyState(state->is_object() ? FindMember(*state, "current") : state, &*info);
    info->state_reason = CutText(StringMember(*state, "reason"), kMaxRemoteMessageBytes);
  }
  if (const nlohmann::json* time = FindMember(record, "time"); time != nullptr) {
    info->submit_time = EpochMember(*time, "submission");
    info->start_time = EpochMember(*time, "start");
    info->end_time = EpochMember(*time, "end");
  }
  info->account = CutText(StringMember(record, "account"), kMaxRemoteMessageBytes);
  info->allocation = DecodeSlurmdbAllocation(record);
  if (const nlohmann::json* exit = FindMember(record, "exit_code"); exit != nullptr) {
    ApplyExit(exit_codes == SlurmdbExitCodes::kReliable
                  ? DecodeProcessExitCode(*exit)
                  : DecodeUnreliableSlurmdbExitCode(*exit, info->state),
              &*info);
  }
  ApplyAccountedOutputPaths(record, &*info);
  if (const nlohmann::json* array = FindMember(record, "array");
      array != nullptr && array->is_object()) {
    ApplyArray(*array, /*accounting=*/true, &*info);
  }
  return info;
}

}  // namespace slurmop::slurm
