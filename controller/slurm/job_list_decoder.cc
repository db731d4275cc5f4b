// File: controller/slurm/job_list_decoder.cc
//
// JobListDecoder (job_list_decoder.h).

#include "controller/slurm/job_list_decoder.h"

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/slurm/array_folding.h"
#include "controller/slurm/job_record_decoding.h"

namespace slurmop::slurm {

void JobListDecoder::Add(const nlohmann::json& record) {
  ++records_;
  if (!first_error_.ok()) return;
  try {
    absl::StatusOr<JobInfo> info = DecodeSlurmctldJob(record);
    if (!info.ok()) {
      first_error_ = info.status();
      return;
    }
    if (info->array_job_id == 0) {
      jobs_.push_back(PackListedJob(*info, store_));
      return;
    }
    auto [it, first] = arrays_.try_emplace(info->array_job_id);
    if (first) {
      array_places_.emplace_back(jobs_.size(), info->array_job_id);
      jobs_.emplace_back();
    }
    it->second.push_back(*std::move(info));
  } catch (const std::exception& e) {
    first_error_ = absl::InternalError(absl::StrCat("reading the jobs response: ", e.what()));
  }
}

PackedJobList JobListDecoder::TakeJobs() {
  for (const auto& [index, array_id] : array_places_) {
    std::vector<JobInfo> folded = FoldArrayRecords(std::move(arrays_[array_id]));
    jobs_[index] = PackListedJob(folded.front(), store_);
  }
  PackedJobList out;
  out.jobs = std::move(jobs_);
  out.store = std::move(store_);
  Restart();
  return out;
}

}  // namespace slurmop::slurm
