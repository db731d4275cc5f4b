// File: controller/slurm/response_parsing.h
//
// (HTTP status, JSON body) of each job endpoint -> the neutral results of
// controller/slurm/job_model.h, for every version: the shapes are recognised
// from the JSON, and the handler behaviours of every slurmrestd release
// (22.05 ... 25.11) are accepted, since a version's shapes outlive the
// release that introduced them. Semantics and the error contract are those
// of Dialect (controller/slurm/dialect.h). Nothing here throws on any JSON
// value.

#ifndef SLURMOP_CONTROLLER_SLURM_RESPONSE_PARSING_H_
#define SLURMOP_CONTROLLER_SLURM_RESPONSE_PARSING_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "controller/slurm/job_list_decoder.h"
#include "controller/slurm/job_model.h"
#include "controller/slurm/packed_jobs.h"
#include "controller/slurm/wire_format.h"
#include "nlohmann/json.hpp"

namespace slurmop::slurm {

absl::StatusOr<SubmitResponse> ParseSubmitResponse(int http_status, const nlohmann::json& body);

absl::StatusOr<JobLookup> ParseJobResponse(int http_status, const nlohmann::json& body,
                                           int64_t job_id);

absl::StatusOr<JobList> ParseJobsResponse(int http_status, const nlohmann::json& body);
// The same, each record packed: `records` holds those decoded as they
// arrived (job_list_decoder.h), in front of body.jobs, and is emptied.
absl::StatusOr<PackedJobList> ParseJobsResponse(int http_status, const nlohmann::json& body,
                                                JobListDecoder& records);

absl::StatusOr<JobLookup> ParseSlurmdbJobResponse(int http_status, const nlohmann::json& body,
                                                  int64_t job_id, SlurmdbExitCodes exit_codes);

// Every record of a /slurmdb/.../jobs answer ("nothing found" -> empty list).
absl::StatusOr<JobList> ParseSlurmdbJobsResponse(int http_status, const nlohmann::json& body,
                                                 SlurmdbExitCodes exit_codes);

// The accounting records of the jobs `job_ids` from one /slurmdb/.../jobs?step=
// answer, each picked as ParseSlurmdbJobResponse picks that job's (an array's
// tasks folded; else the latest submission of the records of its job id); a
// job without a record of its own id is absent ("nothing found" -> none).
absl::StatusOr<DbRecordsById> ParseSlurmdbJobsByIdResponse(int http_status,
                                                           const nlohmann::json& body,
                                                           const std::vector<int64_t>& job_ids,
                                                           SlurmdbExitCodes exit_codes);

absl::StatusOr<UpdateResponse> ParseUpdateResponse(int http_status, const nlohmann::json& body);
absl::StatusOr<CancelResponse> ParseCancelResponse(int http_status, const nlohmann::json& body,
                                                   int64_t job_id);

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_RESPONSE_PARSING_H_
