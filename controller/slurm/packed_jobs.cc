// File: controller/slurm/packed_jobs.cc
//
// The encoding: every field of JobInfo in declaration order. Integers are
// zigzag varints; strings and lists are a varint count followed by their
// elements; an optional is a presence byte followed by its value; times are
// their count of system_clock ticks.

#include "controller/slurm/packed_jobs.h"

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "glog/logging.h"

namespace slurmop::slurm {

// A field added to these types must be added to their Fields() below (and
// to packed_jobs_test's FullJob); then update the size here.
static_assert(sizeof(JobInfo) == 552, "JobInfo changed: update Fields(JobInfo)");
static_assert(sizeof(ArrayTask) == 128, "ArrayTask changed: update Fields(ArrayTask)");
static_assert(sizeof(ArrayJob) == 56, "ArrayJob changed: update Fields(ArrayJob)");
static_assert(sizeof(Allocation) == 64, "Allocation changed: update Fields(Allocation)");

namespace {

// Writes the fields it is shown (Field overloads below).
class Writer {
 public:
  // Writes into `out`, emptied first (its capacity is kept).
  explicit Writer(std::string& out) : out_(out) { out_.clear(); }
  void Int(int64_t v) {
    uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
    while (z >= 0x80) {
      out_.push_back(static_cast<char>(z | 0x80));
      z >>= 7;
    }
    out_.push_back(static_cast<char>(z));
  }
  void Bool(bool b) { out_.push_back(b ? 1 : 0); }
  void Bytes(std::string_view s) {
    Int(static_cast<int64_t>(s.size()));
    out_.append(s);
  }

 private:
  std::string& out_;
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
  std::string Bytes() {
    const size_t n = Count();
    if (!ok_) return {};
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
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

// One Field() per kind of value, for Writer (const values) and Reader (values
// to fill); Fields() lists each type's fields once for both directions.
template <typename T>
requires std::is_integral_v<T> || std::is_enum_v<T>
void Field(Writer& w, const T& v) { w.Int(static_cast<int64_t>(v)); }
template <typename T>
requires std::is_integral_v<T> || std::is_enum_v<T>
void Field(Reader& r, T& v) { v = static_cast<T>(r.Int()); }
void Field(Writer& w, const std::string& s) { w.Bytes(s); }
void Field(Reader& r, std::string& s) { s = r.Bytes(); }
void Field(Writer& w, const Time& t) { w.Int(t.time_since_epoch().count()); }
void Field(Reader& r, Time& t) { t = Time(Time::duration(r.Int())); }

template <typename T>
void Field(Writer& w, const std::optional<T>& v) {
  w.Bool(v.has_value());
  if (v) Field(w, *v);
}
template <typename T>
void Field(Reader& r, std::optional<T>& v) {
  v.reset();
  if (r.Bool()) Field(r, v.emplace());
}
template <typename T>
void Field(Writer& w, const std::vector<T>& v) {
  w.Int(static_cast<int64_t>(v.size()));
  for (const T& e : v) Field(w, e);
}
template <typename T>
void Field(Reader& r, std::vector<T>& v) {
  v.resize(r.Count());
  for (T& e : v) Field(r, e);
}
template <typename K, typename V>
void Field(Writer& w, const std::map<K, V>& m) {
  w.Int(static_cast<int64_t>(m.size()));
  for (const auto& [k, v] : m) {
    Field(w, k);
    Field(w, v);
  }
}
template <typename K, typename V>
void Field(Reader& r, std::map<K, V>& m) {
  m.clear();
  for (size_t n = r.Count(); n > 0 && r.ok(); --n) {
    K k;
    Field(r, k);
    Field(r, m[std::move(k)]);
  }
}

// The fields of each record type, in declaration order. `Io` is Writer or
// Reader; `R` the type, const when writing.
template <typename Io, typename R>
void Fields(Io& io, R& t) requires std::is_same_v<std::remove_const_t<R>, ArrayTask> {
  Field(io, t.index);
  Field(io, t.job_id);
  Field(io, t.state);
  Field(io, t.flags);
  Field(io, t.state_reason);
  Field(io, t.exit_code);
  Field(io, t.signal);
  Field(io, t.start_time);
  Field(io, t.end_time);
}
template <typename Io, typename R>
void Fields(Io& io, R& a) requires std::is_same_v<std::remove_const_t<R>, ArrayJob> {
  Field(io, a.tasks);
  Field(io, a.pending_indexes);
  Field(io, a.max_running);
}
template <typename Io, typename R>
void Fields(Io& io, R& a) requires std::is_same_v<std::remove_const_t<R>, Allocation> {
  Field(io, a.tres);
  Field(io, a.elapsed_seconds);
}
template <typename Io, typename R>
void Fields(Io& io, R& j) requires std::is_same_v<std::remove_const_t<R>, JobInfo> {
  Field(io, j.job_id);
  Field(io, j.name);
  Field(io, j.comment);
  Field(io, j.partition);
  Field(io, j.state);
  Field(io, j.flags);
  Field(io, j.state_reason);
  Field(io, j.state_description);
  Field(io, j.exit_code);
  Field(io, j.signal);
  Field(io, j.submit_time);
  Field(io, j.start_time);
  Field(io, j.end_time);
  Field(io, j.account);
  Field(io, j.allocation);
  Field(io, j.standard_output);
  Field(io, j.standard_error);
  Field(io, j.array_job_id);
  Field(io, j.array_task_id);
  Field(io, j.array_task_string);
  Field(io, j.array_max_tasks);
  Field(io, j.array);
}

// Records nested in a JobInfo go through their Fields().
template <typename R>
requires requires(Writer& w, const R& r) { Fields(w, r); }
void Field(Writer& w, const R& r) { Fields(w, r); }
template <typename R>
requires requires(Reader& rd, R& r) { Fields(rd, r); }
void Field(Reader& rd, R& r) { Fields(rd, r); }

}  // namespace

std::string PackJob(const JobInfo& job) {
  std::string out;
  out.reserve(256);
  Writer w(out);
  Fields(w, job);
  return out;
}

absl::StatusOr<JobInfo> UnpackJob(std::string_view packed) {
  Reader r(packed);
  JobInfo job;
  Fields(r, job);
  if (!r.ok() || !r.AtEnd()) return absl::DataLossError("packed Slurm job record is malformed");
  return job;
}

PackedBytes& PackedBytes::operator=(PackedBytes&& other) noexcept {
  if (this == &other) return *this;
  blocks_ = std::exchange(other.blocks_, {});
  free_ = std::exchange(other.free_, nullptr);
  free_size_ = std::exchange(other.free_size_, 0);
  return *this;
}

std::string_view PackedBytes::Append(std::string_view bytes) {
  if (bytes.empty()) return {};
  if (bytes.size() > kBlock / 4) {
    // A block of its own; the current block (free_) stays current.
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(bytes.size()));
    std::memcpy(blocks_.back().get(), bytes.data(), bytes.size());
    return {blocks_.back().get(), bytes.size()};
  }
  if (bytes.size() > free_size_) {
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(kBlock));
    free_ = blocks_.back().get();
    free_size_ = kBlock;
  }
  char* at = free_;
  std::memcpy(at, bytes.data(), bytes.size());
  free_ += bytes.size();
  free_size_ -= bytes.size();
  return {at, bytes.size()};
}

PackedJob PackListedJob(const JobInfo& job, PackedBytes& store) {
  // One scratch buffer per thread: a record is packed, copied into the
  // store's block and the buffer reused, so no small block per record.
  thread_local std::string scratch;
  Writer w(scratch);
  Fields(w, job);
  return PackedJob{job.job_id, job.IsFinal(), store.Append(scratch)};
}

absl::StatusOr<JobList> UnpackJobList(const PackedJobList& list) {
  JobList out{list.unchanged, {}, list.warnings, list.last_update};
  out.jobs.reserve(list.jobs.size());
  for (const PackedJob& j : list.jobs) {
    absl::StatusOr<JobInfo> job = UnpackJob(j.bytes);
    if (!job.ok()) return job.status();
    out.jobs.push_back(*std::move(job));
  }
  return out;
}

PackedJobs::PutOutcome PackedJobs::Put(const JobInfo& job, JobInfo* previous) {
  return Store(job.job_id, PackJob(job), previous);
}

PackedJobs::PutOutcome PackedJobs::Put(const PackedJob& job, JobInfo* previous) {
  return Store(job.job_id, job.bytes, previous);
}

PackedJobs::PutOutcome PackedJobs::Store(int64_t job_id, std::string_view bytes,
                                         JobInfo* previous) {
  auto [it, inserted] = jobs_.try_emplace(job_id);
  if (inserted) {
    it->second = std::string(bytes);  // exactly its size: no spare capacity
    return PutOutcome::kAdded;
  }
  if (it->second == bytes) return PutOutcome::kSame;
  if (previous != nullptr) {
    absl::StatusOr<JobInfo> old = UnpackJob(it->second);
    LOG_IF(DFATAL, !old.ok()) << "job " << job_id << ": " << old.status();
    *previous = old.ok() ? *std::move(old) : JobInfo{};
  }
  it->second = std::string(bytes);
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
