// File: controller/slurm/wire_format.h
//
// What differs between Slurm REST API versions in ways the JSON itself does
// not reveal, as data: one WireFormat per version (see dialects.cc). Shapes
// that are self-describing (job_state string vs array, exit_code int vs
// wrapper vs structure, times int vs wrapper, errors[] element layouts,
// DELETE status[]) are recognised by the decoders from the JSON, so a
// version served by a newer slurmrestd (which keeps the shapes but changes
// handler behaviour) is read correctly too.

#ifndef SLURMOP_CONTROLLER_SLURM_WIRE_FORMAT_H_
#define SLURMOP_CONTROLLER_SLURM_WIRE_FORMAT_H_

#include <string_view>

namespace slurmop::slurm {

// How the submit request's `job` object is written.
enum class SubmitFormat {
  // v0.0.38 (22.05): keys are sbatch options. environment is an object,
  // `nodes` an int or "min-max" (`minimum_nodes` is the --use-min-nodes
  // flag), time_limit and memory_per_node plain ints, gpus_per_node a
  // string; unknown keys are rejected (400), so only keys of 22.05's
  // job_properties are sent.
  kSbatchOptions,
  // v0.0.39+ (data_parser JOB_DESC_MSG): environment ["K=V"],
  // minimum_nodes/maximum_nodes ints, time_limit and memory_per_node
  // {set, number}, GPUs as tres_per_node "gres/gpu:N".
  kJobDescMsg,
};

// Whether slurmdb's job exit_code can be believed.
enum class SlurmdbExitCodes {
  // dbv0.0.38 and data_parser v0.0.39: every normal exit reads SUCCESS/0.
  kUnreliable,
  // v0.0.40+ PROCESS_EXIT_CODE.
  kReliable,
};

// How a job update (POST /slurm/vX/job/{id}) carries its fields.
enum class UpdateFormat {
  // The JOB_DESC_MSG fields at the top level: v0.0.38 (22.05-23.11:
  // _parse_job_list(query, ..., update_only=true), unknown keys rejected, so
  // nothing else may be sent) and v0.0.40+ (openapi/slurmctld
  // _job_post_update parses the bare body, 23.11-25.11).
  kBare,
  // v0.0.39: 23.02.0 and 23.02.1 read only {"job": {...}} ("Specifing either
  // \"job\" or \"jobs\" fields are required"); 23.02.2+ (commit e5316891ef
  // "openapi/v0.0.39 - change job updates to expect DATA_PARSER_JOB_DESC_MSG"),
  // 23.11 and 24.05 parse the bare body, and data_parser v0.0.39 ignores
  // unknown keys silently (a wrapped-only body would be a no-op success).
  // Both forms at once satisfy every release that serves v0.0.39.
  kBareAndWrapped,
};

// How several job ids are given to the `step` filter of /slurmdb/.../jobs.
// slurmrestd's url-encoded query parser refuses a raw ',' ("Unable to parse
// query.", serializer_url_encoded.c), so a comma is sent as %2C.
enum class SlurmdbIdList {
  // dbv0.0.38/39 (hand-written openapi/dbv0.0.3x jobs.c): one value, which
  // slurm_addto_step_list() splits on commas (a repeated key would keep only
  // the last value on 22.05 and 23.02).
  kCommaSeparated,
  // v0.0.40+ (data_parser SELECTED_STEP_LIST): one id per value ("5,7" fails
  // unfmt_job_id_string), several as a repeated key, which 23.11+'s parser
  // makes a list (_on_key).
  kRepeatedKey,
};

struct WireFormat {
  std::string_view version;  // "v0.0.42"
  SubmitFormat submit;
  SlurmdbExitCodes slurmdb_exit_codes;
  UpdateFormat update = UpdateFormat::kBare;
  SlurmdbIdList slurmdb_id_list = SlurmdbIdList::kRepeatedKey;
};

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_WIRE_FORMAT_H_
