// File: controller/slurm/output_paths.h
//
// Where a batch job's standard output and error go on the cluster: Slurm's
// filename patterns (`--output` / `--error`, e.g. "train-%x-%j.out") filled
// in the way slurmstepd fills them for the batch step, so a user reading the
// SlurmJob's status knows which file to open.
//
// The rules are slurmstepd's (src/slurmd/common/fname.c, fname_create() and
// _create_batch_fname() at 22.05.8), which later releases keep (their
// expand_stdio_fields() says it matches them):
//  * a path not starting with '/' is relative to the job's working directory;
//  * %j the job id, %J the job id (the batch step has no step number),
//    %A the array's master job id (the job id outside an array), %a the
//    array task id (4294967294, Slurm's NO_VAL, outside an array), %u the
//    user name, %x the job name, %N the node running the batch script,
//    %n and %t 0 (the batch step's first node and task), %s "batch",
//    %% a '%'; a width between '%' and the letter zero-pads numbers (at most
//    10); any other letter is left as written;
//  * a path with a backslash is not expanded at all: single backslashes are
//    dropped and "\\" stands for one (remove_path_slashes()); a relative one
//    is appended to the working directory without a separating '/';
//  * a path made only of digits names a task whose output is kept: for the
//    batch step (task 0) any number but 0 is /dev/null;
//  * no `--output`: "slurm-%J.out", or "slurm-%A_%a.out" for an array task;
//    no `--error`: the output's path.
// Differences from slurmstepd, stated where they apply: %N is the node's name
// in Slurm's records (batch_host), where slurmstepd uses the host's own name;
// the two differ only on nodes whose NodeName is not their hostname.
// Pure: no I/O.

#ifndef SLURMOP_CONTROLLER_SLURM_OUTPUT_PATHS_H_
#define SLURMOP_CONTROLLER_SLURM_OUTPUT_PATHS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace slurmop::slurm {

// A resolved path longer than this is not reported (Slurm's own buffers for
// these paths are PATH_MAX).
inline constexpr std::size_t kMaxOutputPathBytes = 4096;

// What Slurm's job record says that the patterns draw on.
struct BatchOutputContext {
  int64_t job_id = 0;
  // Set for a task of an array job only.
  std::optional<int64_t> array_job_id, array_task_id;
  std::string job_name, user_name, working_directory;
  // The node running the batch script; empty until the job started.
  std::string batch_host;
};

// `pattern` filled in for the batch step, as an absolute path when the
// working directory is. nullopt when a part it needs is not known yet (%N
// before the job started, %u without a user name), when the pattern is
// relative and the working directory unknown, or when the result is longer
// than kMaxOutputPathBytes.
std::optional<std::string> ExpandBatchOutputPath(std::string_view pattern,
                                                 const BatchOutputContext& context);

// The paths as a job record gives them: the requested patterns ("" = not
// requested), and Slurm's own expansion where the record carries one
// (v0.0.43+ `stdout_expanded`; "" = none).
struct RecordedOutput {
  std::string standard_output, standard_error;
  std::string stdout_expanded, stderr_expanded;
};

struct OutputPaths {
  // "" while not known (see ExpandBatchOutputPath).
  std::string standard_output, standard_error;
};

// The requested pattern (or Slurm's default) expanded with
// ExpandBatchOutputPath; where the record has Slurm's own expansion, that one
// instead, once every part the pattern needs is known (Slurm writes
// "(null)" for a node not chosen yet). A run of '/' is shown as one (the same
// file; REST v0.0.39-v0.0.42 records double the '/' after a working directory
// that ends in one).
OutputPaths ResolveOutputPaths(const RecordedOutput& recorded, const BatchOutputContext& context);

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_OUTPUT_PATHS_H_
