// File: controller/reconcile/accounting_search.h
//
// Where the accounting tag search (GET /slurmdb/<v>/jobs?job_name=...) starts
// looking. Without `start_time` slurmdbd starts at MIDNIGHT (today, its local
// time): slurmdb_job_cond_def_start_end() sets usage_start when neither job
// ids nor states are given (SchedMD/slurm src/common/slurmdb_defs.c;
// src/slurmrestd/plugins/openapi/slurmdbd/jobs.c calls it @ slurm-24-11-7-1,
// as_mysql's setup_job_cond_limits likewise), so a job that ended before
// midnight would be missed and submitted a second time (#13, E5).

#ifndef SLURMOP_CONTROLLER_RECONCILE_ACCOUNTING_SEARCH_H_
#define SLURMOP_CONTROLLER_RECONCILE_ACCOUNTING_SEARCH_H_

#include <cstdint>

#include "controller/common/clock.h"
#include "nlohmann/json.hpp"

namespace slurmop::reconcile {

// How far before the SlurmJob's creation the search looks: covers a clock
// skew between the API server and slurmdbd (no job of the SlurmJob can have
// been submitted before it existed).
inline constexpr std::chrono::hours kAccountingSearchMargin{1};
// Without a readable creationTimestamp (never from a real API server).
inline constexpr std::chrono::hours kAccountingSearchFallback{24 * 400};

// Epoch seconds: the object's metadata.creationTimestamp minus the margin, or
// `now` minus the fallback.
int64_t AccountingSearchStart(const nlohmann::json& object, Time now);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_ACCOUNTING_SEARCH_H_
