// File: controller/reconcile/runs.cc

#include "controller/reconcile/runs.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/reconcile/conditions.h"
#include "controller/reconcile/job_status.h"
#include "controller/reconcile/job_usage.h"

namespace slurmop::reconcile {
namespace {

using C = ConditionStatus;

bool RuleMatches(const v1alpha1::FailurePolicyRule& rule, const v1alpha1::SlurmJobStatus& s) {
  if (rule.on_job_states_size() == 0 && !rule.has_on_exit_codes()) return false;
  if (rule.on_job_states_size() > 0 &&
      std::find(rule.on_job_states().begin(), rule.on_job_states().end(), s.job_state()) ==
          rule.on_job_states().end()) {
    return false;
  }
  if (rule.has_on_exit_codes()) {
    if (!s.has_exit_code()) return false;
    const auto& values = rule.on_exit_codes().values();
    const bool in = std::find(values.begin(), values.end(), s.exit_code()) != values.end();
    if (rule.on_exit_codes().operator_() == "NotIn" ? in : !in) return false;
  }
  return true;
}

std::string Describe(const v1alpha1::FailurePolicyRule& rule) {
  std::vector<std::string> parts;
  if (rule.on_job_states_size() > 0) parts.push_back(absl::StrJoin(rule.on_job_states(), "|"));
  if (rule.has_on_exit_codes()) {
    parts.push_back(absl::StrCat("exit code ", rule.on_exit_codes().operator_(), " [",
                                 absl::StrJoin(rule.on_exit_codes().values(), ","), "]"));
  }
  return absl::StrCat(rule.action(), " on ", absl::StrJoin(parts, " and "));
}

}  // namespace

int32_t CurrentRun(const v1alpha1::SlurmJobStatus& status) { return std::max(1, status.run()); }

FailureVerdict EvaluateFailurePolicy(const v1alpha1::SlurmJobSpec& spec,
                                     const v1alpha1::SlurmJobStatus& status) {
  using K = FailureVerdict::Kind;
  if (status.job_state() == "COMPLETED") return {K::kSucceeded, ""};
  std::string action = "FailJob";
  std::string why;
  if (spec.has_failure_policy() && spec.failure_policy().rules_size() > 0) {
    why = "no failurePolicy rule matched";
    for (int i = 0; i < spec.failure_policy().rules_size(); ++i) {
      const auto& rule = spec.failure_policy().rules(i);
      if (RuleMatches(rule, status)) {
        action = rule.action();
        why = absl::StrCat("failurePolicy rule ", i, " (", Describe(rule), ")");
        break;
      }
    }
  } else {
    const std::string& st = status.job_state();
    if (st == "NODE_FAIL" || st == "BOOT_FAIL" || st == "PREEMPTED") {
      action = "Retry";
      why = absl::StrCat("the default failure policy retries ", st);
    } else {
      why = absl::StrCat("the default failure policy does not retry ", st);
    }
  }
  if (action == "Ignore") return {K::kRetryUncounted, why};
  if (action == "Retry") {
    if (status.retries() >= spec.backoff_limit()) {
      return {K::kFail,
              absl::StrCat(why, ", but backoffLimit ", spec.backoff_limit(), " is reached")};
    }
    return {K::kRetry, why};
  }
  return {K::kFail, why};
}

v1alpha1::SlurmJobStatus StatusForNewRun(const v1alpha1::SlurmJobStatus& finished,
                                         std::string_view run_id, int32_t retries,
                                         std::string_view record_message, std::string_view reason,
                                         std::string_view message, int64_t generation, Time now) {
  v1alpha1::SlurmJobStatus s = finished;
  v1alpha1::RunRecord* rec = s.add_runs();
  rec->set_run(CurrentRun(finished));
  rec->set_run_id(finished.run_id());
  rec->set_job_id(finished.job_id());
  rec->set_job_state(finished.job_state());
  rec->set_phase(finished.phase());
  if (finished.has_exit_code()) rec->set_exit_code(finished.exit_code());
  rec->set_reason(finished.reason());
  if (finished.has_submit_time()) *rec->mutable_submit_time() = finished.submit_time();
  if (finished.has_start_time()) *rec->mutable_start_time() = finished.start_time();
  if (finished.has_end_time()) *rec->mutable_end_time() = finished.end_time();
  rec->set_message(std::string(record_message));
  if (UsageRecorded(finished, CurrentRun(finished))) *rec->mutable_usage() = finished.usage();
  rec->set_standard_output(finished.standard_output());
  rec->set_standard_error(finished.standard_error());
  if (s.runs_size() > kMaxRunHistory) {
    s.mutable_runs()->DeleteSubrange(0, s.runs_size() - kMaxRunHistory);
  }
  s.set_run(CurrentRun(finished) + 1);
  // A retry keeps the first submit's time (spec.activeDeadlineSeconds); a new runId starts afresh.
  if (run_id != finished.run_id()) s.clear_first_submit_time();
  // status.array counts over the runs of one runId (array_status.h).
  if (run_id != finished.run_id()) s.clear_array();
  s.set_run_id(std::string(run_id));
  s.set_retries(retries);
  s.set_job_id(0);
  s.clear_submitted_to();
  s.clear_submit_target();  // the next run records its own before its first submit
  s.clear_job_tag();
  s.clear_job_state();
  s.set_phase(std::string(kPhasePending));
  s.clear_exit_code();
  s.clear_submit_time();
  s.clear_start_time();
  s.clear_end_time();
  s.clear_usage();  // the finished run's is in its record now, and so are its output paths
  s.clear_standard_output();
  s.clear_standard_error();
  s.clear_reason();
  s.set_held(false);
  s.set_observed_generation(generation);
  s.set_message(std::string(message));
  auto* conds = s.mutable_conditions();
  RemoveCondition(conds, kRunning);
  RemoveCondition(conds, kSucceeded);
  RemoveCondition(conds, kFailed);
  SetCondition(conds, kSubmitted, C::kFalse, reason, message, generation, now);
  SetCondition(conds, kReconciling, C::kTrue, reason, message, generation, now);
  SetCondition(conds, kReady, C::kFalse, reason, message, generation, now);
  SetCondition(conds, kStalled, C::kFalse, reason, "", generation, now);
  return s;
}

}  // namespace slurmop::reconcile
