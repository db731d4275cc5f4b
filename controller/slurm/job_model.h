// File: controller/slurm/job_model.h
//
// The version-neutral job model: what the operator asks Slurm to run
// (JobDescriptor), what Slurm says about a job (JobInfo), Slurm's error and
// warning elements (SlurmMessage), and the neutral results of each REST call.
// Dialects (controller/slurm/dialect.h) translate between these types and
// one Slurm REST API version's JSON; nothing here knows any wire format.
//
// Contract:
//  * BaseState covers Slurm's base job states; flags (COMPLETING, REQUEUED,
//    ...) are kept as text in JobInfo::flags.
//  * JobInfo::exit_code / signal are only filled once the job IsFinal():
//    Slurm reports 0 ("SUCCESS") for jobs that have not ended, which means
//    nothing.

#ifndef SLURMOP_CONTROLLER_SLURM_JOB_MODEL_H_
#define SLURMOP_CONTROLLER_SLURM_JOB_MODEL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "controller/common/clock.h"
#include "nlohmann/json.hpp"

namespace slurmop::slurm {

// Slurm's base job states (JOB_STATE_BASE). kUnknown: absent, unrecognised,
// or hidden behind a flag (v0.0.38/39 show e.g. "COMPLETING" instead).
enum class BaseState {
  kUnknown,
  kPending,
  kRunning,
  kSuspended,
  kCompleted,
  kCancelled,
  kFailed,
  kTimeout,
  kNodeFail,
  kPreempted,
  kBootFail,
  kDeadline,
  kOutOfMemory
};

// Slurm's spelling: "PENDING", "NODE_FAIL", ...; kUnknown -> "UNKNOWN".
std::string_view BaseStateName(BaseState s);
// Inverse of BaseStateName (ASCII case-insensitive). Anything else,
// including flag names such as "COMPLETING", -> kUnknown.
BaseState ParseBaseState(std::string_view name);
// COMPLETED CANCELLED FAILED TIMEOUT NODE_FAIL PREEMPTED BOOT_FAIL DEADLINE
// OUT_OF_MEMORY.
bool IsTerminalState(BaseState s);
// Every BaseState except kUnknown, in declaration order.
const std::vector<BaseState>& AllKnownBaseStates();

// What the operator wants to run, version-neutral. Empty strings and nullopt
// mean "not requested" (the field is not sent), except `comment`, which is
// always sent. Dialect::RenderSubmit validates; see its contract.
struct JobDescriptor {
  std::string script;  // script text (not a path); required
  std::string name, partition;
  std::string current_working_directory;  // required (see RenderSubmit)
  // `nodes` is an exact node count; minimum_nodes/maximum_nodes a range.
  // `nodes` and the range are mutually exclusive.
  std::optional<int32_t> nodes, minimum_nodes, maximum_nodes, tasks, tasks_per_node, cpus_per_task,
      gpus_per_node;
  std::optional<int64_t> memory_per_node_mb;
  std::vector<std::pair<std::string, std::string>> environment;  // in order; NAME, value
  std::optional<int32_t> time_limit_minutes;                     // >= 1
  std::string account, qos, standard_output, standard_error, constraints, reservation;
  std::string comment;  // the operator's tag; every dialect sends it
  // Slurm's --dependency expression, e.g. "afterok:12:13,afterany:14" ("" = none).
  std::string dependency;
  bool hold = false;  // submit held (priority 0)
  // Slurm's --deadline as a unix time: Slurm ends the job there (spec.activeDeadlineSeconds).
  std::optional<int64_t> deadline;
  // Slurm's --array expression, e.g. "0-31%4" ("" = not an array job).
  std::string array;
  nlohmann::json extra = nlohmann::json::object();  // merged into the job object last, as given
};

// What accounting (slurmdbd) says a job was allocated: its TRES by Slurm's
// name ("cpu", "mem" in MB, "node", "billing", "gres/gpu", "gres/gpu:a100",
// ...) and its elapsed wall-clock seconds.
struct Allocation {
  std::map<std::string, int64_t> tres;
  std::optional<int64_t> elapsed_seconds;
  bool operator==(const Allocation&) const = default;
};

// One task of an array job, from its own record.
struct ArrayTask {
  int32_t index = 0;   // array_task_id
  int64_t job_id = 0;  // the task's own job id
  BaseState state = BaseState::kUnknown;
  std::vector<std::string> flags;
  std::string state_reason;
  std::optional<int32_t> exit_code, signal;  // only when final
  std::optional<Time> start_time, end_time;
  // Final: the base state is terminal and no COMPLETING flag.
  bool IsFinal() const;
  bool operator==(const ArrayTask&) const = default;
};

// What Slurm's records say of an array job (FoldArrayRecords): one task per
// record that names its index, and the indexes of the pending remainder
// record (array_task_id unset, array_task_string e.g. "4-7%2").
struct ArrayJob {
  std::vector<ArrayTask> tasks;          // by index
  std::vector<int32_t> pending_indexes;  // ascending
  int32_t max_running = 0;               // array_max_tasks; 0 = no limit
  bool operator==(const ArrayJob&) const = default;
};

// What Slurm says about one job, version-neutral.
struct JobInfo {
  int64_t job_id = 0;
  std::string name, comment, partition;
  BaseState state = BaseState::kUnknown;
  // State flags as Slurm spells them, e.g. "COMPLETING", "REQUEUED". For
  // v0.0.38/39, whose job_state is one string where a flag replaces the base
  // state, that flag lands here and `state` stays kUnknown unless the flag
  // implies the base state (CONFIGURING, RESIZING -> kRunning).
  std::vector<std::string> flags;
  std::string state_reason, state_description;
  std::optional<int32_t> exit_code;  // WEXITSTATUS when exited normally; only when IsFinal()
  std::optional<int32_t> signal;     // terminating signal number; only when IsFinal()
  std::optional<Time> submit_time, start_time, end_time;  // Slurm's 0/unset -> nullopt
  // Accounting records only (DecodeSlurmdbJob): the account charged and what
  // the job was allocated (nullopt when the record shows neither).
  std::string account;
  std::optional<Allocation> allocation;
  // Where the batch script's standard output and error go on the cluster,
  // Slurm's patterns filled in (output_paths.h); "" while not known (a %N
  // before the job started) or when the record does not say (accounting
  // records before v0.0.41).
  std::string standard_output, standard_error;
  // Array records: the array's job id (0 = not an array task), the task's
  // index (nullopt on the pending remainder record), the remainder's index
  // expression and the array's throttle (0 = none).
  int64_t array_job_id = 0;
  std::optional<int32_t> array_task_id;
  std::string array_task_string;
  int32_t array_max_tasks = 0;
  // Set on the one record FoldArrayRecords makes of an array job's records
  // (job_id = array_job_id): what each task's record says.
  std::optional<ArrayJob> array;

  bool HasFlag(std::string_view f) const;
  // Final: the base state is terminal and no COMPLETING flag.
  bool IsFinal() const;
  bool operator==(const JobInfo&) const = default;
};

// One element of errors[] or warnings[], any version's shape (v0.0.38 mixes
// {error_code, error} with {description, error_number, error, source}; the
// DELETE status[] elements of v0.0.40+ are {error: {code, string, message}}).
struct SlurmMessage {
  std::optional<int> error_number;  // error_number or error_code
  std::string error, description, source;
  // Human text, e.g. "Invalid partition name specified (error 2000): Batch
  // job submission failed"; parts that are empty (or a description equal to
  // the error) are left out.
  std::string ToString() const;
};

struct SubmitResponse {
  int64_t job_id = 0;
  // warnings[] and, when Slurm accepted the job anyway, errors[] (v0.0.38
  // answers 200 + a job id + errors[] e.g. 2015 "Requested partition
  // configuration not available now").
  std::vector<SlurmMessage> warnings;
};

struct JobLookup {
  std::optional<JobInfo> job;  // nullopt = this endpoint does not know the job
  std::vector<SlurmMessage> warnings;
};

struct JobList {
  bool unchanged = false;  // 304 or "No job changes since update_time" warning
  std::vector<JobInfo> jobs;
  std::vector<SlurmMessage> warnings;
  // slurmctld's time of the last job change (v0.0.40+ `last_update`), in
  // Slurm's own clock: the next list's `update_time` is this + 1.
  std::optional<int64_t> last_update;
};

// Accounting records by job id, from one query of several jobs.
struct DbRecordsById {
  std::map<int64_t, JobInfo> jobs;
  std::vector<SlurmMessage> warnings;
};

// A change to a queued job (POST /slurm/vX/job/{id}); unset fields are not sent.
struct JobUpdate {
  std::optional<std::string> comment;
  std::optional<bool> hold;  // true: hold (priority 0); false: release
};

struct UpdateResponse {
  bool unknown_job = false;       // 2017: Slurm no longer knows the job
  bool already_finished = false;  // 2084: nothing left to change
  std::vector<SlurmMessage> warnings;
};

struct CancelResponse {
  bool already_finished = false;
  bool unknown_job = false;
  std::vector<SlurmMessage> warnings;
};

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_JOB_MODEL_H_
