// File: controller/slurm/submit_rendering.h
//
// JobDescriptor -> the body of POST /slurm/vX/job/submit:
// {"job": {...}, "script": "..."}, with the script at top level (the only
// place v0.0.38 accepts it, and accepted by every later version). The
// validation and the field mapping per SubmitFormat are documented in
// controller/slurm/dialect.h (RenderSubmit) and wire_format.h.

#ifndef SLURMOP_CONTROLLER_SLURM_SUBMIT_RENDERING_H_
#define SLURMOP_CONTROLLER_SLURM_SUBMIT_RENDERING_H_

#include "absl/status/statusor.h"
#include "controller/slurm/job_model.h"
#include "controller/slurm/wire_format.h"
#include "nlohmann/json.hpp"

namespace slurmop::slurm {

absl::StatusOr<nlohmann::json> RenderSubmitBody(const JobDescriptor& job, SubmitFormat format);

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_SUBMIT_RENDERING_H_
