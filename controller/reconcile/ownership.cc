// File: controller/reconcile/ownership.cc

#include "controller/reconcile/ownership.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "controller/reconcile/job_descriptor.h"
#include "controller/reconcile/runs.h"
#include "controller/reconcile/tag_search.h"

namespace slurmop::reconcile {

v1alpha1::SlurmJobLocation LocationOf(const v1alpha1::SlurmClusterSpec& spec) {
  v1alpha1::SlurmJobLocation where;
  where.set_project_id(spec.project_id());
  where.set_region(spec.region());
  where.set_cluster_id(spec.cluster_id());
  return where;
}

bool SameLocation(const v1alpha1::SlurmJobLocation& a, const v1alpha1::SlurmJobLocation& b) {
  return a.project_id() == b.project_id() && a.region() == b.region() &&
         a.cluster_id() == b.cluster_id();
}

std::string DescribeLocation(const v1alpha1::SlurmJobLocation& where) {
  return absl::StrCat("projects/", where.project_id(), "/locations/", where.region(),
                      "/modelDevelopmentClusters/", where.cluster_id());
}

bool ClusterMoved(const JobFacts& job, const ClusterFacts& cluster) {
  return job.status.has_submitted_to() && cluster.kind == ClusterFacts::Kind::kFound &&
         !SameLocation(job.status.submitted_to(), LocationOf(cluster.spec));
}

std::vector<std::string> ExpectedTags(const JobFacts& job) {
  std::vector<std::string> tags =
      job.status.job_tag().empty() ? RunTags(job) : std::vector<std::string>{job.status.job_tag()};
  tags.push_back(DisownedTag(job.id, CurrentRun(job.status)));
  return tags;
}

bool IsOurRecord(const JobFacts& job, const slurm::JobInfo& record, bool from_accounting) {
  if (from_accounting && record.comment.empty()) return true;  // cannot be told
  const std::vector<std::string> tags = ExpectedTags(job);
  return std::find(tags.begin(), tags.end(), record.comment) != tags.end();
}

}  // namespace slurmop::reconcile
