// File: controller/slurm/allocation_decoding.h
//
// What a slurmdb job record says the job was allocated: `tres.allocated` and
// `time.elapsed`, in every REST version's shape. The shapes, read from
// SchedMD/slurm at the release tags:
//  * dbv0.0.38 (22.05, src/plugins/openapi/dbv0.0.38/parse.c parse_job[]
//    "tres/allocated", parse_tres[], _dump_tres_list): a list of
//    {type, name, id, count}; `name` is null for cpu/mem/node/billing, `count`
//    null for NO_VAL64/INFINITE64; an empty TRES string leaves `allocated`
//    null.
//  * data_parser v0.0.39 .. v0.0.44 (23.02 .. 25.11, parsers.c
//    PARSER_ARRAY(JOB) "tres/allocated" of TRES_STR, PARSER_ARRAY(TRES)):
//    the same elements, `name` "" when unnamed, `count` the raw value as a
//    signed integer (DUMP_FUNC(INT64): NO_VAL64 reads -2); an empty TRES
//    string is [].
//  * `count` is slurmdbd's own unit: `mem` in megabytes; GPUs are type
//    "gres", name "gpu" (typed ones "gpu:<type>" when AccountingStorageTRES
//    lists them, in addition to or instead of the untyped one).
//  * `time.elapsed` is a plain integer in every version (UINT32; null for
//    NO_VAL in dbv0.0.38).

#ifndef SLURMOP_CONTROLLER_SLURM_ALLOCATION_DECODING_H_
#define SLURMOP_CONTROLLER_SLURM_ALLOCATION_DECODING_H_

#include <optional>

#include "controller/slurm/job_model.h"
#include "nlohmann/json.hpp"

namespace slurmop::slurm {

// nullopt when the record has neither an allocated TRES nor an elapsed time.
// TRES elements without a type or with a null or negative count are skipped;
// a TRES listed twice keeps its first count.
std::optional<Allocation> DecodeSlurmdbAllocation(const nlohmann::json& record);

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_ALLOCATION_DECODING_H_
