// File: tests/slurm/output_paths_test.cc
//
// ExpandBatchOutputPath and ResolveOutputPaths against the rules of
// slurmstepd's fname_create() for a batch job (src/slurmd/common/fname.c at
// 22.05.8). Each expectation is what that code makes of the pattern; the
// real-Slurm suite (tests/e2e/real_slurm_test.cc) checks that the file
// Slurm 22.05 writes is where the status says.

#include "controller/slurm/output_paths.h"

#include <string>

#include "gtest/gtest.h"

namespace slurmop::slurm {
namespace {

BatchOutputContext Job() {
  BatchOutputContext c;
  c.job_id = 4242;
  c.job_name = "train";
  c.user_name = "alice";
  c.working_directory = "/home/alice/runs";
  c.batch_host = "gpu-7";
  return c;
}

BatchOutputContext ArrayTask() {
  BatchOutputContext c = Job();
  c.job_id = 4250;
  c.array_job_id = 4242;
  c.array_task_id = 8;
  return c;
}

// A record's output fields: what was asked for, and Slurm's expansion (v0.0.43+).
RecordedOutput Recorded(std::string out, std::string err = "", std::string out_expanded = "",
                        std::string err_expanded = "") {
  RecordedOutput r;
  r.standard_output = std::move(out);
  r.standard_error = std::move(err);
  r.stdout_expanded = std::move(out_expanded);
  r.stderr_expanded = std::move(err_expanded);
  return r;
}

std::string Expand(std::string_view pattern, const BatchOutputContext& c = Job()) {
  return ExpandBatchOutputPath(pattern, c).value_or("<unknown>");
}

TEST(ExpandBatchOutputPathTest, FillsEveryLetterSlurmKnowsForTheBatchStep) {
  EXPECT_EQ(Expand("/o/%j.out"), "/o/4242.out");
  EXPECT_EQ(Expand("/o/%J.out"), "/o/4242.out");  // the batch step: no ".<step>"
  EXPECT_EQ(Expand("/o/%x-%u.out"), "/o/train-alice.out");
  EXPECT_EQ(Expand("/o/%N.out"), "/o/gpu-7.out");
  EXPECT_EQ(Expand("/o/%n-%t.out"), "/o/0-0.out");
  EXPECT_EQ(Expand("/o/%s.out"), "/o/batch.out");
  EXPECT_EQ(Expand("/o/100%%-%j"), "/o/100%-4242");
}

TEST(ExpandBatchOutputPathTest, OutsideAnArrayPercentAIsTheJobAndPercentASmallIsNoVal) {
  EXPECT_EQ(Expand("/o/%A_%a.out"), "/o/4242_4294967294.out");
  EXPECT_EQ(Expand("/o/%A_%a.out", ArrayTask()), "/o/4242_8.out");
  EXPECT_EQ(Expand("/o/%j.out", ArrayTask()), "/o/4250.out");
}

TEST(ExpandBatchOutputPathTest, AWidthZeroPadsNumbersUpToTenDigits) {
  EXPECT_EQ(Expand("/o/%8j"), "/o/00004242");
  EXPECT_EQ(Expand("/o/%3a", ArrayTask()), "/o/008");
  EXPECT_EQ(Expand("/o/%99j"), "/o/0000004242");  // at most 10
  EXPECT_EQ(Expand("/o/%5x"), "/o/train");        // not a number: no padding
  EXPECT_EQ(Expand("/o/%5s"), "/o/batch");
}

TEST(ExpandBatchOutputPathTest, OtherLettersStayAsWrittenTheWaySlurmstepdLeavesThem) {
  EXPECT_EQ(Expand("/o/%q-%j"), "/o/%q-4242");
  EXPECT_EQ(Expand("/o/a%"), "/o/a%");
  // A width before a letter slurmstepd does not know keeps only its last digit.
  EXPECT_EQ(Expand("/o/%12q"), "/o/2q");
  EXPECT_EQ(Expand("/o/x%12"), "/o/x2");
  // A third '%' after "%%" starts a pattern of its own.
  EXPECT_EQ(Expand("/o/%%%j"), "/o/%4242");
}

TEST(ExpandBatchOutputPathTest, RelativePathsAreUnderTheWorkingDirectory) {
  EXPECT_EQ(Expand("out/%j.log"), "/home/alice/runs/out/4242.log");
  BatchOutputContext slash = Job();
  slash.working_directory = "/scratch/";
  EXPECT_EQ(Expand("%j.log", slash), "/scratch/4242.log");
  BatchOutputContext nowhere = Job();
  nowhere.working_directory = "";
  EXPECT_FALSE(ExpandBatchOutputPath("%j.log", nowhere).has_value());
  EXPECT_EQ(Expand("/abs/%j.log", nowhere), "/abs/4242.log");
}

TEST(ExpandBatchOutputPathTest, ABackslashTurnsExpansionOffAndJoinsWithoutASlash) {
  EXPECT_EQ(Expand("/o/\\%j.out"), "/o/%j.out");
  EXPECT_EQ(Expand("/o/a\\\\b%j"), "/o/a\\b%j");  // "\\" is one backslash
  // fname_create() appends an escaped relative path to the working directory as it is.
  EXPECT_EQ(Expand("x\\%j"), "/home/alice/runsx%j");
}

TEST(ExpandBatchOutputPathTest, ADigitsOnlyPatternNamesATaskAndTheBatchStepIsTaskZero) {
  EXPECT_EQ(Expand("3"), "/dev/null");
  EXPECT_EQ(Expand("0"), "/home/alice/runs/0");
}

TEST(ExpandBatchOutputPathTest, UnknownWhileAPartIsMissing) {
  BatchOutputContext queued = Job();
  queued.batch_host = "";  // not started yet
  EXPECT_FALSE(ExpandBatchOutputPath("/o/%N.out", queued).has_value());
  EXPECT_EQ(Expand("/o/%j.out", queued), "/o/4242.out");
  BatchOutputContext anonymous = Job();
  anonymous.user_name = "";
  EXPECT_FALSE(ExpandBatchOutputPath("/o/%u", anonymous).has_value());
}

TEST(ExpandBatchOutputPathTest, APathLongerThanPathMaxIsNotReported) {
  BatchOutputContext c = Job();
  c.job_name = std::string(kMaxOutputPathBytes, 'n');
  EXPECT_FALSE(ExpandBatchOutputPath("/o/%x", c).has_value());
  EXPECT_EQ(Expand(std::string(kMaxOutputPathBytes - 1, '/')).size(), kMaxOutputPathBytes - 1);
}

TEST(ResolveOutputPathsTest, DefaultsAreSlurmsAndErrorFollowsOutput) {
  OutputPaths none = ResolveOutputPaths({}, Job());
  EXPECT_EQ(none.standard_output, "/home/alice/runs/slurm-4242.out");
  EXPECT_EQ(none.standard_error, "/home/alice/runs/slurm-4242.out");
  OutputPaths array = ResolveOutputPaths({}, ArrayTask());
  EXPECT_EQ(array.standard_output, "/home/alice/runs/slurm-4242_8.out");
  OutputPaths out_only = ResolveOutputPaths(Recorded("%x-%j.txt"), Job());
  EXPECT_EQ(out_only.standard_output, "/home/alice/runs/train-4242.txt");
  EXPECT_EQ(out_only.standard_error, "/home/alice/runs/train-4242.txt");
  OutputPaths both = ResolveOutputPaths(Recorded("o-%j", "/e/%u-%j"), Job());
  EXPECT_EQ(both.standard_output, "/home/alice/runs/o-4242");
  EXPECT_EQ(both.standard_error, "/e/alice-4242");
}

TEST(ResolveOutputPathsTest, SlurmsOwnExpansionWinsWhereTheRecordHasOne) {
  OutputPaths p = ResolveOutputPaths(Recorded("o-%j", "e-%j", "/slurm/said/o"), Job());
  EXPECT_EQ(p.standard_output, "/slurm/said/o");
  EXPECT_EQ(p.standard_error, "/home/alice/runs/e-4242");
  OutputPaths huge =
      ResolveOutputPaths(Recorded("", "", "/" + std::string(kMaxOutputPathBytes, 'x')), Job());
  EXPECT_EQ(huge.standard_output, "");
}

TEST(ResolveOutputPathsTest, RepeatedSlashesAreShownAsOne) {
  // v0.0.39-v0.0.42 show "<cwd>/<path>" even when the working directory ends in '/'.
  BatchOutputContext slash = Job();
  slash.working_directory = "/scratch/";
  EXPECT_EQ(ResolveOutputPaths(Recorded("/scratch//o-%j"), slash).standard_output,
            "/scratch/o-4242");
  EXPECT_EQ(ResolveOutputPaths(Recorded("o//%j", "", "/s//o//4242"), slash).standard_output,
            "/s/o/4242");
}

TEST(ResolveOutputPathsTest, UnknownPartsLeaveThePathEmpty) {
  BatchOutputContext queued = Job();
  queued.batch_host = "";
  OutputPaths p = ResolveOutputPaths(Recorded("%N.out", "e"), queued);
  EXPECT_EQ(p.standard_output, "");
  EXPECT_EQ(p.standard_error, "/home/alice/runs/e");
  // Slurm 25.05 expands a %N it does not know yet as "(null)": not believed.
  OutputPaths slurm_said =
      ResolveOutputPaths(Recorded("%N.out", "", "/home/alice/runs/(null).out"), queued);
  EXPECT_EQ(slurm_said.standard_output, "");
}

}  // namespace
}  // namespace slurmop::slurm
