// File: controller/slurm/job_state_decoding.cc
//
// job_state string/array -> base state + flags.

#include "controller/slurm/job_state_decoding.h"

#include "controller/slurm/json_fields.h"

namespace slurmop::slurm {
namespace {

// The base state implied by a flag shown on its own (v0.0.38/39 strings).
// JOB_CONFIGURING (nodes booting) and JOB_RESIZING are only ever set together
// with JOB_RUNNING; every other flag can sit on several base states.
BaseState StateImpliedByLoneFlag(const std::string& flag) {
  if (flag == "CONFIGURING" || flag == "RESIZING") return BaseState::kRunning;
  return BaseState::kUnknown;
}

}  // namespace

DecodedJobState DecodeJobState(const nlohmann::json& value) {
  DecodedJobState out;
  for (const std::string& name : StringOrStringArray(value)) {
    if (name.empty()) continue;
    BaseState s = ParseBaseState(name);
    if (s != BaseState::kUnknown && out.state == BaseState::kUnknown) {
      out.state = s;
    } else if (s == BaseState::kUnknown) {
      out.flags.push_back(name);
    }
  }
  if (value.is_string() && out.state == BaseState::kUnknown && out.flags.size() == 1) {
    out.state = StateImpliedByLoneFlag(out.flags.front());
  }
  return out;
}

}  // namespace slurmop::slurm
