// File: controller/reconcile/array_status.cc

#include "controller/reconcile/array_status.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace slurmop::reconcile {
namespace {

slurm::IndexSet IndexesOr(std::string_view text, slurm::IndexSet fallback) {
  if (text.empty()) return fallback;
  absl::StatusOr<slurm::IndexSet> parsed = slurm::ParseIndexList(text);
  return parsed.ok() ? *parsed : fallback;
}

slurm::IndexSet SpecIndexes(const v1alpha1::ArraySpec& spec) {
  absl::StatusOr<slurm::ArrayExpression> parsed = slurm::ParseArrayExpression(spec.indexes());
  return parsed.ok() ? parsed->indexes : slurm::IndexSet{};
}

}  // namespace

std::map<int32_t, int32_t> ParseIndexFailures(std::string_view text) {
  std::map<int32_t, int32_t> out;
  if (text.empty()) return out;
  for (absl::string_view pair : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(pair, ':');
    int32_t index = 0, count = 0;
    if (absl::SimpleAtoi(kv.first, &index) && absl::SimpleAtoi(kv.second, &count) && index >= 0 &&
        count > 0) {
      out[index] = count;
    }
  }
  return out;
}

std::string FormatIndexFailures(const std::map<int32_t, int32_t>& failures) {
  std::string out;
  for (const auto& [index, count] : failures) {
    if (count <= 0) continue;
    absl::StrAppend(&out, out.empty() ? "" : ",", index, ":", count);
  }
  return out;
}

ArrayObservation ObserveArray(const v1alpha1::ArraySpec& spec, const v1alpha1::ArrayStatus& current,
                              const slurm::JobInfo& record) {
  ArrayObservation out{record, current};
  const slurm::IndexSet all = SpecIndexes(spec);
  if (all.empty() || !record.array) return out;
  const slurm::IndexSet run = IndexesOr(current.run_indexes(), all);
  slurm::IndexSet completed = IndexesOr(current.completed_indexes(), {});
  slurm::IndexSet failed = IndexesOr(current.failed_indexes(), {});
  std::map<int32_t, int32_t> failures = ParseIndexFailures(current.index_failures());
  int32_t pending = 0, active = 0;
  slurm::IndexSet seen;
  const slurm::ArrayTask* first_failure = nullptr;
  for (const slurm::ArrayTask& t : record.array->tasks) {
    if (!run.count(t.index) || !seen.insert(t.index).second) continue;
    if (!t.IsFinal()) {
      (t.state == slurm::BaseState::kPending ? pending : active) += 1;
    } else if (t.state == slurm::BaseState::kCompleted) {
      completed.insert(t.index);
    } else {
      if (failed.insert(t.index).second) failures[t.index] += 1;
      if (first_failure == nullptr) first_failure = &t;
    }
  }
  for (int32_t i : record.array->pending_indexes) {
    if (run.count(i) && seen.insert(i).second) pending += 1;
  }
  // Indexes of the run neither listed nor known ended: not yet shown, or
  // their records left the queue before a look saw them.
  int32_t unknown = 0;
  for (int32_t i : run) {
    if (!seen.count(i) && !completed.count(i) && !failed.count(i)) unknown += 1;
  }
  v1alpha1::ArrayStatus& s = out.status;
  s.set_total(static_cast<int32_t>(all.size()));
  s.set_pending(pending + unknown);
  s.set_active(active);
  s.set_succeeded(static_cast<int32_t>(completed.size()));
  s.set_failed(static_cast<int32_t>(failed.size()));
  s.set_completed_indexes(slurm::FormatIndexList(completed));
  s.set_failed_indexes(slurm::FormatIndexList(failed));
  s.set_index_failures(FormatIndexFailures(failures));

  slurm::JobInfo& r = out.record;
  if (!r.IsFinal()) return out;
  if (unknown > 0) {
    // Not provably ended: wait for the queue to drop it and accounting to list every task.
    r.state = slurm::BaseState::kRunning;
    r.flags.clear();
    r.exit_code.reset();
    r.signal.reset();
    r.end_time.reset();
    return out;
  }
  if (!failed.empty() && r.state == slurm::BaseState::kCompleted) {
    r.state = slurm::BaseState::kFailed;
    r.state_reason = "ArrayTaskFailed";
    r.exit_code.reset();
    r.signal.reset();
  }
  return out;
}

IndexRetry RetryIndexes(const v1alpha1::ArraySpec& spec, const v1alpha1::ArrayStatus& status) {
  IndexRetry out;
  const std::map<int32_t, int32_t> failures = ParseIndexFailures(status.index_failures());
  for (int32_t i : IndexesOr(status.failed_indexes(), {})) {
    auto it = failures.find(i);
    const int32_t count = it == failures.end() ? 1 : it->second;
    (count <= spec.backoff_limit_per_index() ? out.retry : out.failed_for_good).insert(i);
  }
  return out;
}

v1alpha1::ArrayStatus ArrayStatusForRetry(const v1alpha1::ArrayStatus& status,
                                          const slurm::IndexSet& retry) {
  v1alpha1::ArrayStatus s = status;
  slurm::IndexSet failed = IndexesOr(status.failed_indexes(), {});
  for (int32_t i : retry) failed.erase(i);
  s.set_failed_indexes(slurm::FormatIndexList(failed));
  s.set_failed(static_cast<int32_t>(failed.size()));
  s.set_run_indexes(slurm::FormatIndexList(retry));
  s.set_pending(static_cast<int32_t>(retry.size()));
  s.set_active(0);
  return s;
}

std::string RunArrayExpression(const v1alpha1::ArraySpec& spec,
                               const v1alpha1::ArrayStatus& status) {
  if (status.run_indexes().empty()) return spec.indexes();
  absl::StatusOr<slurm::ArrayExpression> parsed = slurm::ParseArrayExpression(spec.indexes());
  return slurm::ArrayExpressionText(IndexesOr(status.run_indexes(), {}),
                                    parsed.ok() ? parsed->max_running : std::nullopt);
}

}  // namespace slurmop::reconcile
