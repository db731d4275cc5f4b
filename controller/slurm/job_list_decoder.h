// File: controller/slurm/job_list_decoder.h
//
// JobListDecoder: a /slurm/<v>/jobs/ answer decoded record by record, as
// the records stream in (agentplatform::JobSink), so that a list of 10,000
// jobs is never held as a tree, nor as a vector of JobInfo: each record is
// packed (PackListedJob) as soon as it is decoded (issue #16: at 10,000 jobs
// ~3 MB instead of ~15 MB while the list is applied).
//
// Contract:
//  * Add(record): decodes one element of jobs[] (DecodeSlurmctldJob), in
//    the answer's order. The first record that fails to decode is kept as
//    first_error(); later records are only counted. Never throws.
//  * An array job's records (array_folding.h) are kept decoded until
//    TakeJobs(), which folds each array's records into one record at the
//    place of its first, as FoldArrayRecords does.
//  * Restart(): forgets every record added.
//  * Dialect::ParseJobs(status, body, decoder) then answers exactly as
//    ParseJobs(status, body') would, its records packed, where body' is
//    `body` with the added records in front of whatever its jobs[] still
//    holds (the rules of ParseJobsResponse: 304 / "No job changes" ->
//    unchanged, errors with no record -> rejection, a missing jobs[] ->
//    malformed).

#ifndef SLURMOP_CONTROLLER_SLURM_JOB_LIST_DECODER_H_
#define SLURMOP_CONTROLLER_SLURM_JOB_LIST_DECODER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "controller/slurm/job_model.h"
#include "controller/slurm/packed_jobs.h"
#include "nlohmann/json.hpp"

namespace slurmop::slurm {

class JobListDecoder {
 public:
  void Add(const nlohmann::json& record);
  void Restart() { *this = JobListDecoder(); }
  // Records added, failed ones included.
  size_t records() const { return records_; }
  // The first record that failed to decode (OK while none has).
  const absl::Status& first_error() const { return first_error_; }
  // The records decoded (until the first failure), in order, each array
  // folded into one record, with the store they view (the list's other
  // fields are left empty); the decoder is empty afterwards.
  PackedJobList TakeJobs();

 private:
  PackedBytes store_;            // the bytes jobs_ view
  std::vector<PackedJob> jobs_;  // an array's place is empty until TakeJobs()
  std::vector<std::pair<size_t, int64_t>> array_places_;  // (index in jobs_, array id)
  std::map<int64_t, std::vector<JobInfo>> arrays_;        // array id -> its records
  absl::Status first_error_;
  size_t records_ = 0;
};

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_JOB_LIST_DECODER_H_
