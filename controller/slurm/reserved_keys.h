// File: controller/slurm/reserved_keys.h
//
// The keys of a Slurm job description that the operator owns: `spec.extra`
// may not set them (issue #13, E4). They carry
//  * the job's identity for the operator: `comment` (the submission tag the
//    tag search and the orphan sweep rely on) and `name` / its v0.0.38 alias
//    `job_name` (the accounting search looks the job up by name);
//  * what the operator decides: `dependency` (spec.dependsOn), `deadline`
//    (spec.activeDeadlineSeconds, counted from the first submit: a `deadline`
//    from extra would let Slurm end the job at another time than the one the
//    operator enforces, or hide the limit while the operator is down), `hold` and
//    `priority` (hold is priority 0 in every version: data_parser
//    `add_parse_overload(HOLD, priority, ...)`), `script` and v0.0.38's
//    `wrap` (the batch script);
//  * who the job runs as: `user_id`, `group_id` (JOB_DESC_MSG in
//    data_parser v0.0.40+, sbatch options in v0.0.38).
// Sources: SchedMD/slurm src/plugins/data_parser/v0.0.42/parsers.c
// PARSER_ARRAY(JOB_DESC_MSG) @ slurm-24-11-7-1, and
// src/plugins/openapi/v0.0.38/jobs.c job_params[] @ slurm-22-05-8-1.

#ifndef SLURMOP_CONTROLLER_SLURM_RESERVED_KEYS_H_
#define SLURMOP_CONTROLLER_SLURM_RESERVED_KEYS_H_

#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"

namespace slurmop::slurm {

bool IsReservedJobKey(std::string_view key);

// The reserved keys among `extra`'s top-level keys, sorted; {} when `extra`
// is not an object.
std::vector<std::string> ReservedKeysIn(const nlohmann::json& extra);

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_RESERVED_KEYS_H_
