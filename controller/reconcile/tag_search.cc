// File: controller/reconcile/tag_search.cc

#include "controller/reconcile/tag_search.h"

#include <algorithm>

#include "controller/reconcile/job_descriptor.h"
#include "controller/reconcile/runs.h"

namespace slurmop::reconcile {

std::string RunTag(const JobFacts& job) { return SubmissionTag(job.id, CurrentRun(job.status)); }

std::string AccountingSearchName(const JobFacts& job) {
  return job.spec.name().empty() ? job.id.name : job.spec.name();
}

std::vector<std::string> RunTags(const JobFacts& job) {
  std::vector<std::string> tags = {RunTag(job)};
  std::string legacy = LegacySubmissionTag(job.id, CurrentRun(job.status));
  if (legacy != tags[0]) tags.push_back(std::move(legacy));
  return tags;
}

bool IsTagged(const slurm::JobInfo& job, const std::vector<std::string>& tags) {
  return std::find(tags.begin(), tags.end(), job.comment) != tags.end();
}

std::optional<int64_t> PickTaggedJob(const std::vector<slurm::JobInfo>& jobs,
                                     const std::vector<std::string>& tags) {
  std::optional<int64_t> found;
  for (const slurm::JobInfo& j : jobs) {
    if (IsTagged(j, tags) && (!found || j.job_id > *found)) found = j.job_id;
  }
  return found;
}

}  // namespace slurmop::reconcile
