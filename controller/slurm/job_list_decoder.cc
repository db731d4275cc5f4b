// File: controller/slurm/job_list_decoder.cc
//
// JobListDecoder (job_list_decoder.h).

#include "controller/slurm/job_list_decoder.h"

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/slurm/job_record_decoding.h"

namespace slurmop::slurm {

void JobListDecoder::Add(const nlohmann::json& record) {
  ++streamed_.records;
  if (!streamed_.first_error.ok()) return;
  try {
    absl::StatusOr<JobInfo> info = DecodeSlurmctldJob(record);
    if (!info.ok()) {
      streamed_.first_error = info.status();
      return;
    }
    streamed_.jobs.push_back(*std::move(info));
  } catch (const std::exception& e) {
    streamed_.first_error =
        absl::InternalError(absl::StrCat("reading the jobs response: ", e.what()));
  }
}

}  // namespace slurmop::slurm
