// File: tests/reconcile/simulation_test.cc
//
// The deterministic simulation of issue #13 (the way FoundationDB tests
// itself): the REAL decision core, Executor, JobTracker (in half of the
// schedules) and Agent Platform client, two replicas sharing one in-memory
// Kubernetes API, a simulated Slurm behind Agent Platform, a fake clock,
// and thousands of seeded schedules of crashes, lost / failed / delayed
// answers, leadership changes, watch drops and re-runs and deletions
// (tests/reconcile/sim/schedule.h); the invariants of
// tests/reconcile/sim/invariants.h are checked after every step.
//
// Flags (or environment): --schedules=N (SIM_SCHEDULES; default 10000, 1000
// under a sanitizer), --seed=S (SIM_SEED: the first seed; with
// --schedules=1 one schedule is replayed with its trace and the operator's
// logs), --fault-steps=N (SIM_FAULT_STEPS, default 20), --threads=N
// (SIM_THREADS, default 2: schedules run side by side, each decided by its
// seed alone). A failure prints the seed and the trace that replay it.
// scripts/simulate.sh runs more.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "tests/reconcile/sim/schedule.h"
#include "tests/testing/sanitizers.h"

namespace slurmop::reconcile::sim {
namespace {

constexpr uint64_t kDefaultSchedules =
    slurmop::testing::kAddressSanitizer || slurmop::testing::kThreadSanitizer ? 1000 : 10000;

struct Settings {
  uint64_t schedules = kDefaultSchedules;
  uint64_t first_seed = 1;
  int fault_steps = 20;
  int threads = 2;
};
Settings g_settings;

// --name=value, else the environment variable, else the default.
void ReadSetting(int argc, char** argv, const std::string& flag, const char* env, uint64_t* out) {
  if (const char* v = std::getenv(env)) (void)absl::SimpleAtoi(v, out);
  const std::string prefix = absl::StrCat("--", flag, "=");
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind(prefix, 0) == 0) (void)absl::SimpleAtoi(a.substr(prefix.size()), out);
  }
}

// What the schedules of one run add up to.
struct Totals {
  std::map<std::string, int64_t> faults;
  int64_t steps = 0, batched = 0, notes = 0;
  std::map<uint64_t, ScheduleResult> failures;  // by seed, the first few kept whole
  int64_t failed = 0;

  void Add(ScheduleResult r) {
    steps += r.steps;
    batched += r.batched;
    notes += r.notes;
    for (const auto& [k, n] : r.faults) faults[k] += n;
    if (r.violations.empty()) return;
    ++failed;
    failures.emplace(r.seed, std::move(r));
    if (failures.size() > 3) failures.erase(std::prev(failures.end()));
  }
};

// Runs the schedules of seeds [first, first + count) on `threads` threads
// (each schedule is a world of its own: the seed alone decides it).
Totals RunSchedules(uint64_t first, uint64_t count, int threads, const ScheduleOptions& options) {
  std::atomic<uint64_t> next{0};
  std::mutex mu;
  Totals totals;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (uint64_t i = next++; i < count; i = next++) {
        ScheduleResult r = RunSchedule(first + i, options);
        std::lock_guard<std::mutex> lock(mu);
        totals.Add(std::move(r));
      }
    });
  }
  for (std::thread& t : pool) t.join();
  return totals;
}

std::string Summary(const Settings& s, const Totals& t, double seconds) {
  int64_t injected = 0;
  std::vector<std::string> kinds;
  for (const auto& [k, n] : t.faults) {
    injected += n;
    kinds.push_back(absl::StrCat(k, "=", n));
  }
  return absl::StrCat("simulation: ", s.schedules, " schedules (seeds ", s.first_seed, "..",
                      s.first_seed + s.schedules - 1, ", ", t.batched, " batched, ", t.notes,
                      " with a note key, ", s.fault_steps, " fault steps each), ", t.steps,
                      " steps, ", injected, " faults [", absl::StrJoin(kinds, " "), "], ", t.failed,
                      " with violations, ", absl::SixDigits(seconds), " s on ", s.threads,
                      " threads");
}

TEST(Simulation, SeededSchedulesKeepEveryInvariant) {
  const Settings s = g_settings;
  const bool replay = s.schedules == 1;
  // The operator's logs (with the executor's decisions) only when replaying one seed.
  if (replay) FLAGS_v = 1;
  if (!replay) FLAGS_minloglevel = 3;
  ScheduleOptions options;
  options.fault_steps = s.fault_steps;
  options.verbose = replay;
  const auto started = std::chrono::steady_clock::now();
  const Totals totals = RunSchedules(s.first_seed, s.schedules, replay ? 1 : s.threads, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (const auto& [seed, r] : totals.failures) {
    ADD_FAILURE() << "seed " << seed << " (" << (r.batched ? "batched" : "unbatched")
                  << "): " << absl::StrJoin(r.violations, "; ") << "\nreplay: "
                  << "simulation_test --seed=" << seed
                  << " --schedules=1 --fault-steps=" << s.fault_steps << "\ntrace:\n"
                  << absl::StrJoin(r.trace, "\n");
  }
  std::cout << Summary(s, totals, seconds) << std::endl;
  EXPECT_EQ(totals.failed, 0);
}

}  // namespace
}  // namespace slurmop::reconcile::sim

int main(int argc, char** argv) {
  using slurmop::reconcile::sim::g_settings;
  uint64_t fault_steps = g_settings.fault_steps;
  uint64_t threads = g_settings.threads;
  slurmop::reconcile::sim::ReadSetting(argc, argv, "schedules", "SIM_SCHEDULES",
                                       &g_settings.schedules);
  slurmop::reconcile::sim::ReadSetting(argc, argv, "seed", "SIM_SEED", &g_settings.first_seed);
  slurmop::reconcile::sim::ReadSetting(argc, argv, "fault-steps", "SIM_FAULT_STEPS", &fault_steps);
  slurmop::reconcile::sim::ReadSetting(argc, argv, "threads", "SIM_THREADS", &threads);
  g_settings.fault_steps = static_cast<int>(fault_steps);
  g_settings.threads = static_cast<int>(std::max<uint64_t>(1, threads));
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
