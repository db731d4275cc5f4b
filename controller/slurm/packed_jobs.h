// File: controller/slurm/packed_jobs.h
//
// A cluster's live job list kept compact (issue #16): each JobInfo is stored
// as one byte string (PackJob) rather than as a 552-byte struct with a heap
// block per long string, and decoded back (UnpackJob) only when read. At
// 10,000 tracked jobs the tracker's snapshot is most of the operator's heap
// otherwise.
//
// Contract:
//  * UnpackJob(PackJob(j)) == j for every field of JobInfo, its array tasks
//    and allocation included (packed_jobs_test). The encoding is private to
//    this process (never stored or sent): it may change with any release.
//  * Two records pack to the same bytes exactly when every field is equal,
//    so an unchanged record is told without decoding the stored one.
//  * UnpackJob rejects truncated or malformed input with kDataLoss (it only
//    ever reads PackJob's output; a failure is a bug, not bad input).
//
// Thread-safety: PackedJobs is a plain value (no internal locking).

#ifndef SLURMOP_CONTROLLER_SLURM_PACKED_JOBS_H_
#define SLURMOP_CONTROLLER_SLURM_PACKED_JOBS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/slurm/job_model.h"

namespace slurmop::slurm {

std::string PackJob(const JobInfo& job);
absl::StatusOr<JobInfo> UnpackJob(std::string_view packed);

// Where a list's packed records live until the list is applied: bytes
// appended in 64 KB blocks that never move (a record larger than a quarter
// block gets a block of its own). A list of 10,000 records is then ~35
// large blocks instead of 10,000 small ones: those, alive beside the
// snapshot's records of the same size and freed once the list was applied,
// left the allocator's slabs of that size half empty (issue #16: 2.25 MB of
// the 224-byte class at 10,000 tracked jobs, jemalloc's statistics).
// Move-only: a move keeps every view Append() gave valid.
class PackedBytes {
 public:
  PackedBytes() = default;
  // The moved-from store is empty (its next Append() takes a new block).
  PackedBytes(PackedBytes&& other) noexcept { *this = std::move(other); }
  PackedBytes& operator=(PackedBytes&& other) noexcept;
  PackedBytes(const PackedBytes&) = delete;
  PackedBytes& operator=(const PackedBytes&) = delete;

  // A copy of `bytes`, valid until this store (or the one it moved into)
  // is destroyed or assigned to.
  std::string_view Append(std::string_view bytes);
  size_t blocks() const { return blocks_.size(); }

  static constexpr size_t kBlock = 64 * 1024;

 private:
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* free_ = nullptr;  // the unused rest of the current block
  size_t free_size_ = 0;
};

// One record of a job list, packed as it was read, with the two facts the
// tracker reads of every record before it stores it (so that neither needs
// the record decoded again).
struct PackedJob {
  int64_t job_id = 0;
  bool final = false;      // JobInfo::IsFinal()
  std::string_view bytes;  // PackJob(record), in a PackedBytes
};
// Packs `job` into `store`; the result views `store`.
PackedJob PackListedJob(const JobInfo& job, PackedBytes& store);

// A /slurm/<v>/jobs/ answer as the tracker keeps it while it is applied:
// JobList's fields, each record packed into `store`. At 10,000 jobs the
// records take ~3 MB instead of the ~15 MB of a vector of JobInfo (issue
// #16). Move-only (the records view `store`).
struct PackedJobList {
  bool unchanged = false;
  std::vector<PackedJob> jobs;
  std::vector<SlurmMessage> warnings;
  std::optional<int64_t> last_update;
  PackedBytes store;
};
// The same list decoded (tests, and anything that wants JobList's form).
absl::StatusOr<JobList> UnpackJobList(const PackedJobList& list);

class PackedJobs {
 public:
  enum class PutOutcome { kAdded, kSame, kChanged };
  // Stores `job` under its job_id: kAdded (no record of that id), kSame (the
  // same bytes: nothing is decoded), or kChanged, when `previous` (if not
  // null) receives the record replaced.
  PutOutcome Put(const JobInfo& job, JobInfo* previous = nullptr);
  // The same for a record packed already: its bytes are compared, and
  // copied in only when they differ (an unchanged record allocates nothing).
  PutOutcome Put(const PackedJob& job, JobInfo* previous = nullptr);
  std::optional<JobInfo> Find(int64_t job_id) const;
  bool contains(int64_t job_id) const { return jobs_.contains(job_id); }
  size_t size() const { return jobs_.size(); }
  bool empty() const { return jobs_.empty(); }
  void clear() { jobs_.clear(); }
  void erase(int64_t job_id) { jobs_.erase(job_id); }
  // Calls `visit` with every job, decoded one at a time (in no set order).
  void ForEach(const std::function<void(const JobInfo&)>& visit) const;
  // Removes the jobs whose id `drop` answers true for.
  void EraseIf(const std::function<bool(int64_t job_id)>& drop);

 private:
  PutOutcome Store(int64_t job_id, std::string_view bytes, JobInfo* previous);

  std::unordered_map<int64_t, std::string> jobs_;
};

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_PACKED_JOBS_H_
