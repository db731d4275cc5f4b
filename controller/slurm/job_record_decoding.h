// File: controller/slurm/job_record_decoding.h
//
// One job record -> JobInfo: a slurmctld job_info element of jobs[]
// (GET /slurm/vX/job/{id}, /jobs/) or a slurmdb job element
// (GET /slurmdb/vX/job/{id}), in any version's shape.

#ifndef SLURMOP_CONTROLLER_SLURM_JOB_RECORD_DECODING_H_
#define SLURMOP_CONTROLLER_SLURM_JOB_RECORD_DECODING_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/slurm/job_model.h"
#include "controller/slurm/wire_format.h"
#include "nlohmann/json.hpp"

namespace slurmop::slurm {

// kInternal when the record is not an object or has no integer job_id.
// exit_code/signal are filled only when the decoded job IsFinal().
absl::StatusOr<JobInfo> DecodeSlurmctldJob(const nlohmann::json& record);

// Every top-level key of a slurmctld record that DecodeSlurmctldJob (and the
// record selection of ParseJobResponse) reads, in every version's shape: a
// record reduced to these keys decodes to the same JobInfo.
const std::vector<std::string>& SlurmctldJobRecordKeys();

// slurmdb: state.current (string or array), state.reason -> state_reason,
// comment.job (or a plain string comment), time.submission/start/end,
// account, and tres.allocated / time.elapsed (allocation_decoding.h).
absl::StatusOr<JobInfo> DecodeSlurmdbJob(const nlohmann::json& record, SlurmdbExitCodes exit_codes);

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_JOB_RECORD_DECODING_H_
