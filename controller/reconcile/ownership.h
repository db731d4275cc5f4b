// File: controller/reconcile/ownership.h
//
// Whether a Slurm job record is this SlurmJob's own (#13 L1). Tracking,
// cancel, hold and adoption act only on a record that is: a job id alone
// says nothing once the SlurmCluster is repointed or the Agent Platform
// cluster is recreated (its job ids start again). Pure.
//
// Contract:
//  * status.submittedTo records where the run's job was submitted (the
//    SlurmCluster's projectId, region and clusterId then). While it differs
//    from where the SlurmCluster points now, the job is neither followed nor
//    cancelled there (ClusterMoved).
//  * A record is ours when its comment is one of ExpectedTags: status.jobTag
//    (the tag the job was given, which a SlurmJob restored from a backup
//    keeps under its new uid), else the run's tag or the legacy tag of the
//    previous version; or the DisownedTag of the run (deletionPolicy Orphan).
//    An accounting record without comment (a cluster without
//    AccountingStoreFlags=job_comment) cannot be told and counts as ours.
//  * Upgrade rule: a status without submittedTo (written by the previous
//    version) is not refused; its first record found ours records
//    submittedTo and jobTag (JobFacts' cluster is where it was found).

#ifndef SLURMOP_CONTROLLER_RECONCILE_OWNERSHIP_H_
#define SLURMOP_CONTROLLER_RECONCILE_OWNERSHIP_H_

#include <string>
#include <vector>

#include "controller/reconcile/decide.h"

namespace slurmop::reconcile {

// Where a SlurmCluster spec points.
v1alpha1::SlurmJobLocation LocationOf(const v1alpha1::SlurmClusterSpec& spec);
bool SameLocation(const v1alpha1::SlurmJobLocation& a, const v1alpha1::SlurmJobLocation& b);
// "projects/P/locations/R/modelDevelopmentClusters/C", for messages.
std::string DescribeLocation(const v1alpha1::SlurmJobLocation& where);

// The status names where its job was submitted, and the cluster (found)
// now points elsewhere.
bool ClusterMoved(const JobFacts& job, const ClusterFacts& cluster);

// The comments the current run's job may carry.
std::vector<std::string> ExpectedTags(const JobFacts& job);

// Whether `record` (from the live queue, or accounting) is the job's own.
bool IsOurRecord(const JobFacts& job, const slurm::JobInfo& record, bool from_accounting);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_OWNERSHIP_H_
