// File: controller/slurm/job_list_decoder.h
//
// JobListDecoder: a /slurm/<v>/jobs/ answer decoded record by record, as
// the records stream in (agentplatform::JobSink), so that a list of 10,000
// jobs is never held as a tree: only each record's JobInfo is kept.
//
// Contract:
//  * Add(record): decodes one element of jobs[] (DecodeSlurmctldJob), in
//    the answer's order. The first record that fails to decode is kept as
//    the answer's failure; later records are only counted. Never throws.
//  * Restart(): forgets every record added.
//  * Dialect::ParseJobs(status, body, decoder) then answers exactly as
//    ParseJobs(status, body') would, where body' is `body` with the added
//    records in front of whatever its jobs[] still holds (the rules of
//    ParseJobsResponse: 304 / "No job changes" -> unchanged, errors with
//    no record -> rejection, a missing jobs[] -> malformed).

#ifndef SLURMOP_CONTROLLER_SLURM_JOB_LIST_DECODER_H_
#define SLURMOP_CONTROLLER_SLURM_JOB_LIST_DECODER_H_

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "controller/slurm/job_model.h"
#include "nlohmann/json.hpp"

namespace slurmop::slurm {

// What a JobListDecoder gathered.
struct StreamedJobs {
  std::vector<JobInfo> jobs;  // the records decoded, until the first failure
  absl::Status first_error;   // the first record that failed to decode
  size_t records = 0;         // records added, failed ones included
};

class JobListDecoder {
 public:
  void Add(const nlohmann::json& record);
  void Restart() { streamed_ = StreamedJobs(); }
  size_t records() const { return streamed_.records; }
  // Hands over what was gathered (the decoder is empty afterwards).
  StreamedJobs Take() {
    StreamedJobs out = std::move(streamed_);
    streamed_ = StreamedJobs();
    return out;
  }

 private:
  StreamedJobs streamed_;
};

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_JOB_LIST_DECODER_H_
