// File: bench/job_tracker_bench.cc
//
// What one reconcile's look at its Slurm job costs the batched tracker
// (JobTracker::Get from the cluster's snapshot) and what one tick costs, as a
// function of the jobs tracked on the cluster, and the ratio between 10,000
// and 100 tracked (#16 item 5: at 100,000 SlurmJobs over 4 replicas, each
// Get and each tick walked every tracked job of the cluster under the
// tracker's lock; half of each replica's CPU). No network: the cluster's
// list is scripted. Also: how many lists it takes to answer every job after
// they are all tracked anew one by one (a restart, a shard move).
//
//   build/bench/job_tracker_bench [--gets=20000] [--ticks=2000]

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controller/common/clock.h"
#include "controller/reconcile/job_tracker.h"
#include "nlohmann/json.hpp"

namespace slurmop::reconcile {
namespace {

using nlohmann::json;

struct Figures {
  double ns_per_get = 0;
  double ns_per_tick = 0;
  int64_t lists_to_retrack = 0;
};

// A v0.0.42 list of jobs 1..n, all RUNNING.
json ListOf(int n) {
  json jobs = json::array();
  for (int i = 1; i <= n; ++i) {
    jobs.push_back({{"job_id", i},
                    {"job_state", json::array({"RUNNING"})},
                    {"comment", ""},
                    {"submit_time", {{"set", true}, {"number", 1700000000}}}});
  }
  return {{"jobs", jobs},
          {"errors", json::array()},
          {"last_update", {{"set", true}, {"infinite", false}, {"number", 1000}}}};
}

Figures Measure(int tracked, int gets, int ticks) {
  const json list = ListOf(tracked);
  FakeClock clock;
  TrackerOptions options;
  options.sweep = false;
  JobTracker tracker(
      [&](const ClusterEndpoint&, agentplatform::HttpMethod, const std::string&,
          const agentplatform::CallOptions&) -> absl::StatusOr<agentplatform::SlurmResponse> {
        return agentplatform::SlurmResponse{200, list};
      },
      clock, [](const std::string&) {},
      [](const std::string&, const std::string&) -> std::optional<JobTracker::Owner> {
        return std::nullopt;
      },
      options);
  const ClusterEndpoint cluster{"bench/c0", "v0.0.42", {}, nullptr};
  const auto poll = std::chrono::seconds(30);
  for (int i = 1; i <= tracked; ++i) tracker.Track(cluster, i, absl::StrCat("bench/job-", i), poll);
  clock.Advance(std::chrono::seconds(1));
  if (!tracker.Get(cluster, 1, clock.Now() - poll).ok()) std::abort();

  Figures f;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < gets; ++i) {
    if (!tracker.Get(cluster, 1 + i % tracked, clock.Now() - poll).ok()) std::abort();
  }
  auto t1 = std::chrono::steady_clock::now();
  f.ns_per_get = std::chrono::duration<double, std::nano>(t1 - t0).count() / gets;
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < ticks; ++i) tracker.Tick();  // nothing is due: the snapshot is 1 s old
  t1 = std::chrono::steady_clock::now();
  f.ns_per_tick = std::chrono::duration<double, std::nano>(t1 - t0).count() / ticks;

  // Every job tracked anew, one by one, 10 ms apart (a new holder's workers).
  const int64_t lists_before = tracker.ListCalls();
  for (int i = 1; i <= tracked; ++i) tracker.Untrack(absl::StrCat("bench/job-", i));
  for (int i = 1; i <= tracked; ++i) {
    clock.Advance(std::chrono::milliseconds(10));
    const std::string key = absl::StrCat("bench/job-", i);
    tracker.Track(cluster, i, key, poll);
    if (!tracker.Get(cluster, i, clock.Now() - poll, key).ok()) std::abort();
  }
  f.lists_to_retrack = tracker.ListCalls() - lists_before;
  return f;
}

int Flag(int argc, char** argv, const char* name, int fallback) {
  const std::string prefix = absl::StrCat("--", name, "=");
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) {
      return std::atoi(argv[i] + prefix.size());
    }
  }
  return fallback;
}

}  // namespace
}  // namespace slurmop::reconcile

int main(int argc, char** argv) {
  using slurmop::reconcile::Figures;
  const int gets = slurmop::reconcile::Flag(argc, argv, "gets", 20000);
  const int ticks = slurmop::reconcile::Flag(argc, argv, "ticks", 2000);
  std::printf("%-22s %14s %14s %26s\n", "tracked on the cluster", "ns per Get()", "ns per Tick()",
              "lists to re-track them all");
  Figures small{}, large{};
  for (int n : {100, 1000, 10000}) {
    const Figures f = slurmop::reconcile::Measure(n, gets, ticks);
    std::printf("%-22d %14.0f %14.0f %26lld\n", n, f.ns_per_get, f.ns_per_tick,
                static_cast<long long>(f.lists_to_retrack));
    if (n == 100) small = f;
    if (n == 10000) large = f;
  }
  std::printf("ratio 10,000 / 100 tracked: Get() %.2fx, Tick() %.2fx\n",
              large.ns_per_get / small.ns_per_get, large.ns_per_tick / small.ns_per_tick);
  return 0;
}
