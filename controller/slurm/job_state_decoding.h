// File: controller/slurm/job_state_decoding.h
//
// Slurm's job state, in either wire shape, as base state + flags:
//  * one string (slurmctld v0.0.38/39, slurmdb v0.0.38/39 state.current),
//    from job_state_string(), which returns the first set flag (COMPLETING,
//    STAGE_OUT, CONFIGURING, RESIZING, REQUEUED, ...) instead of the base
//    state;
//  * an array of the base state plus flags (v0.0.40+), e.g.
//    ["FAILED", "COMPLETING"].

#ifndef SLURMOP_CONTROLLER_SLURM_JOB_STATE_DECODING_H_
#define SLURMOP_CONTROLLER_SLURM_JOB_STATE_DECODING_H_

#include <string>
#include <vector>

#include "controller/slurm/job_model.h"
#include "nlohmann/json.hpp"

namespace slurmop::slurm {

struct DecodedJobState {
  BaseState state = BaseState::kUnknown;
  std::vector<std::string> flags;  // everything that is not a base state, in order
};

// A string or an array of strings; anything else -> kUnknown, no flags.
// A lone flag string leaves the state kUnknown, except flags that Slurm only
// sets on running jobs (CONFIGURING, RESIZING), which imply kRunning.
DecodedJobState DecodeJobState(const nlohmann::json& value);

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_JOB_STATE_DECODING_H_
