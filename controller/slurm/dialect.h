// File: controller/slurm/dialect.h
//
// One Slurm REST API version's wire format behind one interface: the paths
// to send through callSlurmRestApi, the submit body to render, and the
// parsers that turn (HTTP status, JSON body) into the neutral job model
// (controller/slurm/job_model.h). Get an instance from DialectFor()
// (controller/slurm/dialects.h); instances are immutable and thread-safe.
//
// Error contract of every Parse*() method (Slurm-level rejection: HTTP >= 400,
// or errors[] without the expected result; exception: a submit answer that
// carries a job id is a success, see ParseSubmit): a non-OK Status whose message is
// the Slurm error text (all errors joined with "; "), ready to show a user,
// and whose code is
//   kUnauthenticated     HTTP 401 or 511, or error 1007 (authentication);
//   kUnavailable         HTTP 502/503/504, or errors 1001-1004, 1800-1804,
//                        7000 (controller or database unreachable);
//   kInvalidArgument     HTTP 400 or 422, or a request error (9000-9002,
//                        9200-9299, 2009 script missing, 2063 working
//                        directory missing, 2127 environment missing);
//   kFailedPrecondition  any other rejection (bad partition, permission, an
//                        unsupported path, ...);
//   kInternal            a 2xx body Slurm would never send (not an object, no
//                        job id, a job record without job_id).
// The first matching row wins. No method throws.

#ifndef SLURMOP_CONTROLLER_SLURM_DIALECT_H_
#define SLURMOP_CONTROLLER_SLURM_DIALECT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/slurm/job_list_decoder.h"
#include "controller/slurm/job_model.h"
#include "controller/slurm/packed_jobs.h"
#include "nlohmann/json.hpp"

namespace slurmop::slurm {

class Dialect {
 public:
  virtual ~Dialect() = default;
  virtual std::string_view version() const = 0;  // "v0.0.42"

  // Paths (with the version), for callSlurmRestApi's `path`.
  virtual std::string SubmitPath() const = 0;             // /slurm/v0.0.42/job/submit
  virtual std::string JobPath(int64_t job_id) const = 0;  // /slurm/v0.0.42/job/42
  // /slurm/v0.0.42/jobs/ or /slurm/v0.0.42/jobs/?update_time=N
  virtual std::string JobsPath(std::optional<int64_t> update_time) const = 0;
  // Accounting records of jobs named `job_name` active since `start_time`
  // (epoch seconds): /slurmdb/v0.0.42/jobs?job_name=NAME&start_time=uts<N>
  // (NAME percent-encoded). Used to find a job by its tag once it has left
  // the live queue. Without start_time slurmdbd looks only from midnight.
  // "uts<epoch>" is parse_time()'s UTC form, read by every version: dbv0.0.38
  // and dbv0.0.39 parse start_time with parse_time() only (a bare epoch is
  // "Unable to parse time format"), data_parser v0.0.40+ TIMESTAMP hands
  // strings to parse_time() (SchedMD/slurm src/common/parse_time.c;
  // src/plugins/openapi/dbv0.0.38/jobs.c @ slurm-22-05-8-1,
  // dbv0.0.39/jobs.c @ slurm-23-02-7-1, data_parser/v0.0.40..44/parsers.c
  // _parse_timestamp @ slurm-23-11-11-1 .. slurm-25-11-7-1).
  virtual std::string DbJobsPath(std::string_view job_name, int64_t start_time) const = 0;
  virtual std::string CancelPath(int64_t job_id) const = 0;  // /slurm/v0.0.42/job/42 (DELETE)
  virtual std::string DbJobPath(int64_t job_id) const = 0;   // /slurmdb/v0.0.42/job/42
  // The accounting records of several jobs in one call, ids in the given
  // order: /slurmdb/v0.0.38/jobs?step=42%2C43 (dbv0.0.38/39), else
  // /slurmdb/v0.0.42/jobs?step=42&step=43 (wire_format.h SlurmdbIdList).
  // `step` is the job id list that GET .../job/{id} fills with its one id
  // (job_cond's step_list; with it slurmdbd looks from epoch 0, not
  // midnight: slurmdb_job_cond_def_start_end), so the answer is the union of
  // those GETs' (SchedMD/slurm src/plugins/openapi/dbv0.0.38/jobs.c @
  // slurm-22-05-8-1; data_parser/v0.0.42/parsers.c JOB_CONDITION "step" @
  // slurm-24-11-6-1).
  virtual std::string DbJobsByIdPath(const std::vector<int64_t>& job_ids) const = 0;
  virtual std::string PingPath() const = 0;                  // /slurm/v0.0.42/ping/
  virtual std::string UpdatePath(int64_t job_id) const = 0;  // /slurm/v0.0.42/job/42 (POST)

  // Renders the body of a job update: {"comment": ...} and/or {"hold": b}
  // (true holds with priority 0, false releases; the same in every version,
  // checked against 22.05.8's v0.0.38), for v0.0.39 also wrapped as
  // {"job": {...}} (wire_format.h UpdateFormat). InvalidArgument when it sets
  // nothing.
  virtual absl::StatusOr<nlohmann::json> RenderUpdate(const JobUpdate& update) const = 0;

  // Renders the submit body {"job": {...}, "script": "..."} for this version.
  // InvalidArgument when the descriptor cannot be expressed: empty script,
  // empty current_working_directory, empty environment (Slurm requires one),
  // an environment name that is empty or contains '=', a count < 1 (nodes,
  // minimum/maximum_nodes, tasks, tasks_per_node, cpus_per_task,
  // gpus_per_node, time_limit_minutes), memory_per_node_mb < 0, `nodes`
  // together with minimum/maximum_nodes, minimum > maximum, or `extra` that
  // is neither an object nor null. `extra` is merged into the job object last
  // (top-level keys replace rendered ones), except the operator's own keys
  // (reserved_keys.h), which it never replaces.
  virtual absl::StatusOr<nlohmann::json> RenderSubmit(const JobDescriptor& job) const = 0;

  // Parsers take Slurm's HTTP status and body (a JSON object, or null when
  // Slurm sent no body, e.g. 304; a JSON string holds a text/plain body).
  // On success, `warnings` holds Slurm's warnings[] and any errors[] that did
  // not make the call fail, except the messages that are the answer itself
  // (2017 "unknown job", 9003 / "found nothing", 2021 / "already ...").

  // A positive job_id (top level, or result.job_id) means the job was queued:
  // OK, with errors[] (e.g. v0.0.38's 200 + 2015) appended to the warnings,
  // even on HTTP >= 400 (v0.0.39 on 23.02 answered some queued submits with
  // 500), so that the caller never submits the job twice.
  virtual absl::StatusOr<SubmitResponse> ParseSubmit(int http_status,
                                                     const nlohmann::json& body) const = 0;
  // "Unknown job" forms (404, any status + error 2017, 200 with empty jobs)
  // -> OK with job == nullopt. A 404 whose text body is slurmrestd's
  // "Unable find requested URL" (the version is not served) is a rejection.
  // An array job's records are folded into one (array_folding.h); of
  // several records the one whose job_id matches, else the first.
  virtual absl::StatusOr<JobLookup> ParseJob(int http_status, const nlohmann::json& body,
                                             int64_t job_id) const = 0;
  // 304, or a "No job changes since update_time" message -> unchanged. Each
  // array job's records are folded into one record (array_folding.h).
  virtual absl::StatusOr<JobList> ParseJobs(int http_status, const nlohmann::json& body) const = 0;
  // The same for an answer whose records streamed into `records` (each
  // added as it arrived; job_list_decoder.h), taken from it, each record
  // packed (packed_jobs.h): a list of thousands is never a vector of JobInfo.
  virtual absl::StatusOr<PackedJobList> ParseJobs(int http_status, const nlohmann::json& body,
                                                  JobListDecoder& records) const = 0;
  // The top-level keys of a /slurm job record (an element of jobs[]) that
  // ParseJob and ParseJobs read: a record reduced to them parses the same.
  // A caller of a long list may have the rest dropped while the answer is
  // decoded (agentplatform::CallOptions::job_fields).
  virtual const std::vector<std::string>& JobRecordKeys() const = 0;
  // Every record of a /slurmdb/.../jobs answer, each array's folded into one;
  // "nothing found" is an empty list.
  virtual absl::StatusOr<JobList> ParseDbJobs(int http_status,
                                              const nlohmann::json& body) const = 0;
  // The records of the array whose id is `job_id` -> their folded record
  // (array_folding.h); else several records -> the latest submission (of
  // those whose job_id matches, if any does); "Nothing found" (9003) / warning "found nothing" /
  // empty / 404 -> job == nullopt.
  virtual absl::StatusOr<JobLookup> ParseDbJob(int http_status, const nlohmann::json& body,
                                               int64_t job_id) const = 0;
  // A DbJobsByIdPath answer -> each job's record, picked as ParseDbJob picks
  // it; a job of `job_ids` without a record of its own is absent.
  virtual absl::StatusOr<DbRecordsById> ParseDbJobsById(
      int http_status, const nlohmann::json& body, const std::vector<int64_t>& job_ids) const = 0;
  // 2017 (404, 500 or inside a 200 status[]) -> unknown_job; 2021 or a
  // message containing "already" -> already_finished.
  // 2017 (any status) -> unknown_job; 2084 "Job has already finished" ->
  // already_finished; other errors -> the error contract.
  virtual absl::StatusOr<UpdateResponse> ParseUpdate(int http_status,
                                                     const nlohmann::json& body) const = 0;
  virtual absl::StatusOr<CancelResponse> ParseCancel(int http_status, const nlohmann::json& body,
                                                     int64_t job_id) const = 0;
};

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_DIALECT_H_
