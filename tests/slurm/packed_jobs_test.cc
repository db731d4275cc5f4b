// File: tests/slurm/packed_jobs_test.cc
//
// PackJob/UnpackJob round-trip every field; PackedJobs stores, compares and
// visits records as the tracker's snapshot does.

#include "controller/slurm/packed_jobs.h"

#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slurmop::slurm {
namespace {

using ::testing::UnorderedElementsAre;

Time At(int64_t seconds) { return Time(std::chrono::seconds(seconds)); }

// Every field set, none to its default.
JobInfo FullJob() {
  JobInfo j;
  j.job_id = 4'000'000'123;
  j.name = "train-llm";
  j.comment = "slurmop.io/v1 installation=prod uid=0a3b5c7d-1234-4321-abcd-0123456789ab run=2";
  j.partition = "a100";
  j.state = BaseState::kFailed;
  j.flags = {"REQUEUED", "CRASHED"};
  j.state_reason = "NonZeroExitCode";
  j.state_description = "exited with 3";
  j.exit_code = 3;
  j.signal = -9;
  j.submit_time = At(1'700'000'000);
  j.start_time = Time(std::chrono::nanoseconds(1'700'000'100'123'456'789));
  j.end_time = At(-5);
  j.account = "ml-team";
  j.allocation = Allocation{{{"cpu", 64}, {"gres/gpu:a100", 8}, {"mem", 512'000}}, 3600};
  j.standard_output = "/home/ml/slurm-4000000123.out";
  j.standard_error = std::string("/home/ml/err\0with-nul", 21);
  j.array_job_id = 4'000'000'100;
  j.array_task_id = 23;
  j.array_task_string = "24-31%4";
  j.array_max_tasks = 4;
  ArrayTask t;
  t.index = 7;
  t.job_id = 4'000'000'107;
  t.state = BaseState::kCompleted;
  t.flags = {"COMPLETING"};
  t.state_reason = "None";
  t.exit_code = 0;
  t.signal = 15;
  t.start_time = At(10);
  t.end_time = At(20);
  j.array = ArrayJob{{t, ArrayTask{}}, {8, 9, 1'000'000}, 4};
  return j;
}

TEST(PackedJobsTest, EveryFieldRoundTrips) {
  const JobInfo full = FullJob();
  absl::StatusOr<JobInfo> back = UnpackJob(PackJob(full));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, full);
  // A record with every field at its default, and extreme integers.
  JobInfo empty;
  empty.job_id = std::numeric_limits<int64_t>::min();
  empty.array_job_id = std::numeric_limits<int64_t>::max();
  back = UnpackJob(PackJob(empty));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, empty);
}

TEST(PackedJobsTest, EachFieldChangesTheBytes) {
  // Two records pack alike only when equal: a change to any one field shows.
  const JobInfo full = FullJob();
  std::vector<JobInfo> changed(8, full);
  changed[0].comment += "x";
  changed[1].flags.pop_back();
  changed[2].exit_code.reset();
  changed[3].end_time = At(-4);
  changed[4].allocation->tres["cpu"] = 65;
  changed[5].array->tasks[0].state_reason = "";
  changed[6].array->pending_indexes.push_back(10);
  changed[7].standard_error = "/home/ml/err";
  for (const JobInfo& c : changed) EXPECT_NE(PackJob(c), PackJob(full));
}

TEST(PackedJobsTest, MalformedInputIsDataLoss) {
  const std::string packed = PackJob(FullJob());
  for (size_t cut : {size_t{0}, size_t{1}, packed.size() / 2, packed.size() - 1}) {
    EXPECT_EQ(UnpackJob(packed.substr(0, cut)).status().code(), absl::StatusCode::kDataLoss) << cut;
  }
  EXPECT_EQ(UnpackJob(packed + "x").status().code(), absl::StatusCode::kDataLoss);
  // A string length past the end.
  EXPECT_EQ(UnpackJob(std::string("\x02\x7f", 2)).status().code(), absl::StatusCode::kDataLoss);
}

TEST(PackedJobsTest, PutTellsAddedSameAndChanged) {
  PackedJobs jobs;
  JobInfo j = FullJob();
  EXPECT_EQ(jobs.Put(j), PackedJobs::PutOutcome::kAdded);
  EXPECT_EQ(jobs.Put(j), PackedJobs::PutOutcome::kSame);
  JobInfo previous;
  JobInfo next = j;
  next.state = BaseState::kCompleted;
  EXPECT_EQ(jobs.Put(next, &previous), PackedJobs::PutOutcome::kChanged);
  EXPECT_EQ(previous, j);
  EXPECT_EQ(jobs.Find(j.job_id), next);
  EXPECT_EQ(jobs.Find(1), std::nullopt);
  EXPECT_EQ(jobs.size(), 1u);
}

// A record packed as a list was read goes in by its bytes: the same bytes
// are kSame, other bytes kChanged with the record they replace. The
// snapshot keeps copies: the list's store may go once it was applied.
TEST(PackedJobsTest, APackedRecordIsPutByItsBytes) {
  JobInfo j = FullJob();
  PackedJobs jobs;
  {
    PackedBytes store;
    PackedJob packed = PackListedJob(j, store);
    EXPECT_EQ(packed.job_id, j.job_id);
    EXPECT_EQ(packed.final, j.IsFinal());
    EXPECT_EQ(packed.bytes, PackJob(j));
    EXPECT_EQ(jobs.Put(packed), PackedJobs::PutOutcome::kAdded);
    EXPECT_EQ(jobs.Put(PackListedJob(j, store)), PackedJobs::PutOutcome::kSame);
  }
  JobInfo next = j;
  next.state = BaseState::kCompleted;
  next.flags.clear();
  {
    PackedBytes store;
    PackedJob changed = PackListedJob(next, store);
    EXPECT_TRUE(changed.final);
    JobInfo previous;
    EXPECT_EQ(jobs.Put(changed, &previous), PackedJobs::PutOutcome::kChanged);
    EXPECT_EQ(previous, j);
  }
  EXPECT_EQ(jobs.Find(j.job_id), next);  // ASan: no view of a store gone
  PackedJobList list;
  list.jobs = {PackListedJob(j, list.store), PackListedJob(next, list.store)};
  list.last_update = 7;
  PackedJobList moved = std::move(list);  // the records still view the store
  absl::StatusOr<JobList> unpacked = UnpackJobList(moved);
  ASSERT_TRUE(unpacked.ok()) << unpacked.status();
  EXPECT_EQ(unpacked->jobs, (std::vector<JobInfo>{j, next}));
  EXPECT_EQ(unpacked->last_update, 7);
  moved.jobs[1].bytes = "\x02";
  EXPECT_EQ(UnpackJobList(moved).status().code(), absl::StatusCode::kDataLoss);
}

// A list's records go into a few large blocks, not one small block each;
// a record larger than a quarter block gets its own. Every view stays
// valid and unchanged across appends and a move of the store.
TEST(PackedBytesTest, RecordsShareLargeBlocksThatNeverMove) {
  PackedBytes store;
  std::vector<std::string> written;
  std::vector<std::string_view> views;
  for (int i = 0; i < 10000; ++i) {
    written.push_back(std::string(200 + i % 40, static_cast<char>('a' + i % 26)));
    views.push_back(store.Append(written.back()));
  }
  // 10,000 records of 200-239 bytes: ~2.2 MB in 64 KB blocks.
  EXPECT_LE(store.blocks(), 2200000 / PackedBytes::kBlock + 2);
  const size_t before = store.blocks();
  const std::string big(PackedBytes::kBlock / 4 + 1, 'z');
  std::string_view big_view = store.Append(big);
  EXPECT_EQ(store.blocks(), before + 1);
  // The block that was current still takes the next small record.
  views.push_back(store.Append("after the big one"));
  written.push_back("after the big one");
  EXPECT_EQ(store.blocks(), before + 1);
  PackedBytes moved = std::move(store);
  for (size_t i = 0; i < views.size(); ++i) ASSERT_EQ(views[i], written[i]) << i;
  EXPECT_EQ(big_view, big);
  EXPECT_EQ(moved.Append(""), std::string_view());
  // The store moved from is empty: what it takes next goes to a block of its own.
  EXPECT_EQ(store.blocks(), 0u);
  EXPECT_EQ(store.Append("next"), "next");
  EXPECT_EQ(store.blocks(), 1u);
  for (size_t i = 0; i < views.size(); ++i) ASSERT_EQ(views[i], written[i]) << i;
}

TEST(PackedJobsTest, ForEachAndEraseIf) {
  PackedJobs jobs;
  for (int64_t id : {1, 2, 3, 4}) {
    JobInfo j;
    j.job_id = id;
    j.name = "job-" + std::to_string(id);
    jobs.Put(j);
  }
  jobs.EraseIf([](int64_t id) { return id % 2 == 0; });
  std::vector<std::string> names;
  jobs.ForEach([&names](const JobInfo& j) { names.push_back(j.name); });
  EXPECT_THAT(names, UnorderedElementsAre("job-1", "job-3"));
  EXPECT_TRUE(jobs.contains(3));
  EXPECT_FALSE(jobs.contains(2));
}

}  // namespace
}  // namespace slurmop::slurm
