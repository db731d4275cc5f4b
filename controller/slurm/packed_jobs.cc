// File: controller/slurm/packed_jobs.cc
//
// The encoding: every field of JobInfo in declaration order. Integers are
// zigzag varints; strings and lists are a varint count followed by their
// elements; an optional is a presence byte followed by its value; times are
// their count of system_clock ticks.

#include "controller/slurm/packed_jobs.h"

#include <utility>

#include "absl/status/status.h"
#include "glog/logging.h"

namespace slurmop::slurm {

// A field added to these types must be packed and unpacked below (and
// checked by packed_jobs_test); then update the size here.
static_assert(sizeof(JobInfo) == 552, "JobInfo changed: update PackJob and UnpackJob");
static_assert(sizeof(ArrayTask) == 128, "ArrayTask changed: update PackJob and UnpackJob");
static_assert(sizeof(ArrayJob) == 56, "ArrayJob changed: update PackJob and UnpackJob");
static_assert(sizeof(Allocation) == 64, "Allocation changed: update PackJob and UnpackJob");

namespace {

class Writer {
 public:
  Writer() { out_.reserve(256); }
  void Int(int64_t v) {
    uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
    while (z >= 0x80) {
      out_.push_back(static_cast<char>(z | 0x80));
      z >>= 7;
    }
    out_.push_back(static_cast<char>(z));
  }
  void Bool(bool b) { out_.push_back(b ? 1 : 0); }
  void Str(std::string_view s) {
    Int(static_cast<int64_t>(s.size()));
    out_.append(s);
  }
  void Strs(const std::vector<std::string>& v) {
    Int(static_cast<int64_t>(v.size()));
    for (const std::string& s : v) Str(s);
  }
  template <typename T>
  void OptInt(const std::optional<T>& v) {
    Bool(v.has_value());
    if (v) Int(*v);
  }
  void OptTime(const std::optional<Time>& t) {
    Bool(t.has_value());
    if (t) Int(t->time_since_epoch().count());
  }
  std::string Take() && { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what Writer wrote; the first failure sticks (ok() turns false) and
// every later read yields zero values.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool AtEnd() const { return pos_ == in_.size(); }

  int64_t Int() {
    uint64_t z = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= in_.size()) return Fail();
      const auto byte = static_cast<unsigned char>(in_[pos_++]);
      z |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (byte < 0x80) return static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1));
    }
    return Fail();
  }
  bool Bool() {
    if (pos_ >= in_.size()) return Fail() != 0;
    const char c = in_[pos_++];
    if (c != 0 && c != 1) return Fail() != 0;
    return c == 1;
  }
  // A count of elements that are at least one byte each.
  size_t Count() {
    const int64_t n = Int();
    if (n < 0 || static_cast<uint64_t>(n) > in_.size() - pos_) return Fail();
    return static_cast<size_t>(n);
  }
  std::string Str() {
    const size_t n = Count();
    if (!ok_) return {};
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  std::vector<std::string> Strs() {
    std::vector<std::string> v(Count());
    for (std::string& s : v) s = Str();
    return v;
  }
  template <typename T>
  std::optional<T> OptInt() {
    if (!Bool()) return std::nullopt;
    return static_cast<T>(Int());
  }
  std::optional<Time> OptTime() {
    if (!Bool()) return std::nullopt;
    return Time(Time::duration(Int()));
  }

 private:
  int64_t Fail() {
    ok_ = false;
    pos_ = in_.size();
    return 0;
  }
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

void PackTask(Writer& w, const ArrayTask& t) {
  w.Int(t.index);
  w.Int(t.job_id);
  w.Int(static_cast<int64_t>(t.state));
  w.Strs(t.flags);
  w.Str(t.state_reason);
  w.OptInt(t.exit_code);
  w.OptInt(t.signal);
  w.OptTime(t.start_time);
  w.OptTime(t.end_time);
}

ArrayTask UnpackTask(Reader& r) {
  ArrayTask t;
  t.index = static_cast<int32_t>(r.Int());
  t.job_id = r.Int();
  t.state = static_cast<BaseState>(r.Int());
  t.flags = r.Strs();
  t.state_reason = r.Str();
  t.exit_code = r.OptInt<int32_t>();
  t.signal = r.OptInt<int32_t>();
  t.start_time = r.OptTime();
  t.end_time = r.OptTime();
  return t;
}

void PackAllocation(Writer& w, const std::optional<Allocation>& a) {
  w.Bool(a.has_value());
  if (!a) return;
  w.Int(static_cast<int64_t>(a->tres.size()));
  for (const auto& [name, count] : a->tres) {
    w.Str(name);
    w.Int(count);
  }
  w.OptInt(a->elapsed_seconds);
}

std::optional<Allocation> UnpackAllocation(Reader& r) {
  if (!r.Bool()) return std::nullopt;
  Allocation a;
  for (size_t n = r.Count(); n > 0 && r.ok(); --n) {
    std::string name = r.Str();
    a.tres[std::move(name)] = r.Int();
  }
  a.elapsed_seconds = r.OptInt<int64_t>();
  return a;
}

void PackArray(Writer& w, const std::optional<ArrayJob>& a) {
  w.Bool(a.has_value());
  if (!a) return;
  w.Int(static_cast<int64_t>(a->tasks.size()));
  for (const ArrayTask& t : a->tasks) PackTask(w, t);
  w.Int(static_cast<int64_t>(a->pending_indexes.size()));
  for (int32_t i : a->pending_indexes) w.Int(i);
  w.Int(a->max_running);
}

std::optional<ArrayJob> UnpackArray(Reader& r) {
  if (!r.Bool()) return std::nullopt;
  ArrayJob a;
  a.tasks.resize(r.Count());
  for (ArrayTask& t : a.tasks) t = UnpackTask(r);
  a.pending_indexes.resize(r.Count());
  for (int32_t& i : a.pending_indexes) i = static_cast<int32_t>(r.Int());
  a.max_running = static_cast<int32_t>(r.Int());
  return a;
}

}  // namespace

std::string PackJob(const JobInfo& job) {
  Writer w;
  w.Int(job.job_id);
  w.Str(job.name);
  w.Str(job.comment);
  w.Str(job.partition);
  w.Int(static_cast<int64_t>(job.state));
  w.Strs(job.flags);
  w.Str(job.state_reason);
  w.Str(job.state_description);
  w.OptInt(job.exit_code);
  w.OptInt(job.signal);
  w.OptTime(job.submit_time);
  w.OptTime(job.start_time);
  w.OptTime(job.end_time);
  w.Str(job.account);
  PackAllocation(w, job.allocation);
  w.Str(job.standard_output);
  w.Str(job.standard_error);
  w.Int(job.array_job_id);
  w.OptInt(job.array_task_id);
  w.Str(job.array_task_string);
  w.Int(job.array_max_tasks);
  PackArray(w, job.array);
  return std::move(w).Take();
}

absl::StatusOr<JobInfo> UnpackJob(std::string_view packed) {
  Reader r(packed);
  JobInfo job;
  job.job_id = r.Int();
  job.name = r.Str();
  job.comment = r.Str();
  job.partition = r.Str();
  job.state = static_cast<BaseState>(r.Int());
  job.flags = r.Strs();
  job.state_reason = r.Str();
  job.state_description = r.Str();
  job.exit_code = r.OptInt<int32_t>();
  job.signal = r.OptInt<int32_t>();
  job.submit_time = r.OptTime();
  job.start_time = r.OptTime();
  job.end_time = r.OptTime();
  job.account = r.Str();
  job.allocation = UnpackAllocation(r);
  job.standard_output = r.Str();
  job.standard_error = r.Str();
  job.array_job_id = r.Int();
  job.array_task_id = r.OptInt<int32_t>();
  job.array_task_string = r.Str();
  job.array_max_tasks = static_cast<int32_t>(r.Int());
  job.array = UnpackArray(r);
  if (!r.ok() || !r.AtEnd()) return absl::DataLossError("packed Slurm job record is malformed");
  return job;
}

PackedJobs::PutOutcome PackedJobs::Put(const JobInfo& job, JobInfo* previous) {
  std::string packed = PackJob(job);
  auto [it, inserted] = jobs_.try_emplace(job.job_id);
  packed.shrink_to_fit();  // the map keeps it: no spare capacity
  if (inserted) {
    it->second = std::move(packed);
    return PutOutcome::kAdded;
  }
  if (it->second == packed) return PutOutcome::kSame;
  if (previous != nullptr) {
    absl::StatusOr<JobInfo> old = UnpackJob(it->second);
    LOG_IF(DFATAL, !old.ok()) << "job " << job.job_id << ": " << old.status();
    *previous = old.ok() ? *std::move(old) : JobInfo{};
  }
  it->second = std::move(packed);
  return PutOutcome::kChanged;
}

std::optional<JobInfo> PackedJobs::Find(int64_t job_id) const {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return std::nullopt;
  absl::StatusOr<JobInfo> job = UnpackJob(it->second);
  LOG_IF(DFATAL, !job.ok()) << "job " << job_id << ": " << job.status();
  if (!job.ok()) return std::nullopt;
  return *std::move(job);
}

void PackedJobs::ForEach(const std::function<void(const JobInfo&)>& visit) const {
  for (const auto& [id, packed] : jobs_) {
    absl::StatusOr<JobInfo> job = UnpackJob(packed);
    LOG_IF(DFATAL, !job.ok()) << "job " << id << ": " << job.status();
    if (job.ok()) visit(*job);
  }
}

void PackedJobs::EraseIf(const std::function<bool(int64_t job_id)>& drop) {
  std::erase_if(jobs_, [&drop](const auto& entry) { return drop(entry.first); });
}

}  // namespace slurmop::slurm
