// File: controller/reconcile/tag_search.cc

#include "controller/reconcile/tag_search.h"

#include "controller/reconcile/job_descriptor.h"
#include "controller/reconcile/runs.h"

namespace slurmop::reconcile {

std::string RunTag(const JobFacts& job) { return SubmissionTag(job.id, CurrentRun(job.status)); }

std::string AccountingSearchName(const JobFacts& job) {
  return job.spec.name().empty() ? job.id.name : job.spec.name();
}

std::optional<int64_t> PickTaggedJob(const std::vector<slurm::JobInfo>& jobs,
                                     std::string_view tag) {
  std::optional<int64_t> found;
  for (const slurm::JobInfo& j : jobs) {
    if (j.comment == tag && (!found || j.job_id > *found)) found = j.job_id;
  }
  return found;
}

}  // namespace slurmop::reconcile
