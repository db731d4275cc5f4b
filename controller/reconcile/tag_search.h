// File: controller/reconcile/tag_search.h
//
// How the executor looks for the Slurm job of a run by its tag
// (SubmissionTag in job_descriptor.h), when a submit's outcome is unknown or
// an earlier process may have submitted (Action::kFindByTag). Pure: the
// executor makes the calls, this says where to look and what the answer is.
//
// Contract:
//  * The live queue is searched first; only if it shows no job with the tag
//    is accounting (/slurmdb) searched: a job that ended and was purged from
//    the queue while no operator watched is still there (with its comment,
//    given AccountingStoreFlags=job_comment).
//  * Accounting is searched by the job's name (spec.name, else the SlurmJob's
//    name), which Slurm indexes, and filtered by tag here.
//  * A job of the run carries its tag (SubmissionTag), or the legacy tag that
//    the previous version gave it (a submit in flight across the upgrade):
//    both name this SlurmJob's uid, so both are its own.
//  * A search is as of when its list was sent (Outcomes::tag_lookup_at): the
//    live queue may come from the tracker's shared list of the cluster, sent
//    no earlier than Decision::search_not_before (SearchNotBefore, decide.h).
//  * When several jobs carry the tag (a submit that landed twice), the one
//    with the highest id, the latest, is adopted; the orphan sweep cancels
//    the others (tracking_policy.h).

#ifndef SLURMOP_CONTROLLER_RECONCILE_TAG_SEARCH_H_
#define SLURMOP_CONTROLLER_RECONCILE_TAG_SEARCH_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "controller/reconcile/decide.h"
#include "controller/slurm/job_model.h"

namespace slurmop::reconcile {

enum class TagSource { kLiveQueue, kAccounting };

// Where to look, in order; the search stops at the first source that has it.
inline constexpr std::array<TagSource, 2> kTagSearchOrder = {TagSource::kLiveQueue,
                                                             TagSource::kAccounting};

// The tag the current run's job carries.
std::string RunTag(const JobFacts& job);

// The name accounting is asked for.
std::string AccountingSearchName(const JobFacts& job);

// The tags a job of the current run may carry: RunTag first, then the
// legacy tag if it differs.
std::vector<std::string> RunTags(const JobFacts& job);

// `job` carries one of `tags`.
bool IsTagged(const slurm::JobInfo& job, const std::vector<std::string>& tags);

// The job to adopt among `jobs`: the highest id carrying one of `tags`, if any.
std::optional<int64_t> PickTaggedJob(const std::vector<slurm::JobInfo>& jobs,
                                     const std::vector<std::string>& tags);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_TAG_SEARCH_H_
