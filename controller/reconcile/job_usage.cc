// File: controller/reconcile/job_usage.cc

#include "controller/reconcile/job_usage.h"

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace slurmop::reconcile {
namespace {

constexpr std::string_view kGpu = "gres/gpu";

// a * b, saturating at INT64_MAX (both are >= 0).
int64_t SaturatingProduct(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a > INT64_MAX / b) return INT64_MAX;
  return a * b;
}

int64_t TresCount(const slurm::Allocation& a, std::string_view name) {
  auto it = a.tres.find(std::string(name));
  return it == a.tres.end() ? 0 : it->second;
}

std::set<int32_t> RunsWithUsage(const v1alpha1::SlurmJobStatus& s) {
  std::set<int32_t> runs;
  if (s.has_usage()) runs.insert(s.usage().run());
  for (const v1alpha1::RunRecord& r : s.runs()) {
    if (r.has_usage()) runs.insert(r.usage().run());
  }
  return runs;
}

}  // namespace

int64_t AllocatedGpus(const slurm::Allocation& allocation) {
  if (allocation.tres.count(std::string(kGpu)) > 0) return TresCount(allocation, kGpu);
  int64_t typed = 0;
  for (const auto& [name, count] : allocation.tres) {
    if (name.size() > kGpu.size() && name.compare(0, kGpu.size(), kGpu) == 0 &&
        name[kGpu.size()] == ':' && count <= INT64_MAX - typed) {
      typed += count;
    }
  }
  return typed;
}

std::optional<v1alpha1::JobUsage> UsageFromJobInfo(const slurm::JobInfo& info, int32_t run) {
  if (!info.IsFinal() || !info.allocation.has_value()) return std::nullopt;
  const slurm::Allocation& a = *info.allocation;
  int64_t elapsed = 0;
  if (a.elapsed_seconds.has_value()) {
    elapsed = *a.elapsed_seconds;
  } else if (info.start_time && info.end_time && *info.end_time > *info.start_time) {
    elapsed =
        std::chrono::duration_cast<std::chrono::seconds>(*info.end_time - *info.start_time).count();
  }
  v1alpha1::JobUsage u;
  u.set_run(run);
  u.set_elapsed_seconds(elapsed);
  for (const auto& [name, count] : a.tres) (*u.mutable_allocated_tres())[name] = count;
  u.set_cpu_seconds(SaturatingProduct(TresCount(a, "cpu"), elapsed));
  u.set_gpu_seconds(SaturatingProduct(AllocatedGpus(a), elapsed));
  u.set_account(info.account);
  u.set_partition(info.partition);
  return u;
}

bool UsageRecorded(const v1alpha1::SlurmJobStatus& status, int32_t run) {
  return status.has_usage() && status.usage().run() == run;
}

std::vector<v1alpha1::JobUsage> NewlyRecordedUsage(const v1alpha1::SlurmJobStatus& before,
                                                   const v1alpha1::SlurmJobStatus& after) {
  const std::set<int32_t> known = RunsWithUsage(before);
  std::vector<v1alpha1::JobUsage> out;
  std::set<int32_t> seen;
  auto consider = [&](const v1alpha1::JobUsage& u) {
    if (known.count(u.run()) == 0 && seen.insert(u.run()).second) out.push_back(u);
  };
  for (const v1alpha1::RunRecord& r : after.runs()) {
    if (r.has_usage()) consider(r.usage());
  }
  if (after.has_usage()) consider(after.usage());
  return out;
}

std::optional<Time> NextUsageLook(Time ended, std::optional<Time> last_look) {
  static constexpr int kSecondsAfterTheEnd[] = {2, 5, 10, 20, 40, 80, 160, 300};
  for (int s : kSecondsAfterTheEnd) {
    const Time at = ended + std::chrono::seconds(s);
    if (!last_look || at > *last_look) return at;
  }
  return std::nullopt;
}

}  // namespace slurmop::reconcile
