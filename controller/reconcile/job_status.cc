// File: controller/reconcile/job_status.cc

#include "controller/reconcile/job_status.h"

#include "absl/strings/str_cat.h"
#include "controller/reconcile/conditions.h"
#include "controller/reconcile/job_usage.h"
#include "controller/reconcile/runs.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace slurmop::reconcile {
namespace {

using C = ConditionStatus;

void SetTimestamp(google::protobuf::Timestamp* ts, Time t) {
  ts->set_seconds(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
  ts->set_nanos(0);
}

std::string_view PhaseOf(const slurm::JobInfo& info) {
  using slurm::BaseState;
  if (info.IsFinal()) {
    switch (info.state) {
      case BaseState::kCompleted:
        return kPhaseSucceeded;
      case BaseState::kCancelled:
        return kPhaseCancelled;
      default:
        return kPhaseFailed;
    }
  }
  switch (info.state) {
    case BaseState::kPending:
      return kPhasePending;
    case BaseState::kUnknown:
      // A flag shown instead of the state (v0.0.38/39 "COMPLETING") means
      // the job ran and is finishing.
      return info.flags.empty() ? kPhaseUnknown : kPhaseRunning;
    default:
      // RUNNING, SUSPENDED, or a terminal state still COMPLETING.
      return kPhaseRunning;
  }
}

std::string Reason(const slurm::JobInfo& info) {
  if (info.state_reason.empty() || info.state_reason == "None") return "";
  return info.state_reason;
}

std::optional<int32_t> ExitCodeOf(const slurm::JobInfo& info) {
  // Signals are 1..127 in a wait status; a remote's larger number overflowed 128 + signal.
  if (info.signal.has_value() && *info.signal > 0 && *info.signal < 128) {
    return 128 + *info.signal;
  }
  return info.exit_code;
}

std::string FinalMessage(const slurm::JobInfo& info, std::optional<int32_t> exit_code,
                         const v1alpha1::SlurmJobStatus& current) {
  using slurm::BaseState;
  std::string id = absl::StrCat("Slurm job ", info.job_id);
  std::string code = exit_code ? absl::StrCat(" with exit code ", *exit_code) : "";
  switch (info.state) {
    case BaseState::kCompleted:
      return absl::StrCat(id, " completed", code, ".");
    case BaseState::kCancelled:
      return absl::StrCat(id, " was cancelled",
                          info.signal ? absl::StrCat(" (signal ", *info.signal, ")") : "",
                          ". If nobody deleted this SlurmJob, it was cancelled in Slurm directly "
                          "(scancel) or by an administrator.");
    case BaseState::kTimeout:
      return absl::StrCat(id,
                          " reached its time limit and was stopped; raise "
                          "spec.timeLimitMinutes if it needs longer.");
    case BaseState::kOutOfMemory:
      return absl::StrCat(id, " ran out of memory; raise spec.memoryPerNodeMB.");
    case BaseState::kNodeFail:
      return absl::StrCat(id, " failed because a node it ran on failed.");
    case BaseState::kBootFail:
      return absl::StrCat(id, " failed because its nodes did not boot.");
    case BaseState::kPreempted:
      return absl::StrCat(id, " was preempted.");
    case BaseState::kDeadline:
      return absl::StrCat(id, " missed its deadline.");
    default:
      return absl::StrCat(
          id, " ended ", std::string(slurm::BaseStateName(info.state)), code,
          info.state_description.empty() ? "." : absl::StrCat(": ", info.state_description));
  }
}

}  // namespace

std::string OutputHint(const v1alpha1::SlurmJobStatus& s) {
  const std::string& out = s.standard_output();
  const std::string& err = s.standard_error();
  if (out.empty() && err.empty()) return "";
  if (out == err) return absl::StrCat(" Its output is in ", out, " on the cluster.");
  if (err.empty()) return absl::StrCat(" Its standard output is in ", out, " on the cluster.");
  if (out.empty()) return absl::StrCat(" Its standard error is in ", err, " on the cluster.");
  return absl::StrCat(" Its standard output is in ", out, " and its standard error in ", err,
                      " on the cluster.");
}

namespace {

// The paths a record resolved; a record that cannot tell (an accounting
// record, a %N before the start) keeps what an earlier one said.
void SetOutputPaths(v1alpha1::SlurmJobStatus& s, const slurm::JobInfo& info) {
  if (!info.standard_output.empty()) s.set_standard_output(info.standard_output);
  if (!info.standard_error.empty()) s.set_standard_error(info.standard_error);
}

void ClearMilestones(v1alpha1::SlurmJobStatus* s) {
  RemoveCondition(s->mutable_conditions(), kRunning);
  RemoveCondition(s->mutable_conditions(), kSucceeded);
  RemoveCondition(s->mutable_conditions(), kFailed);
}

}  // namespace

bool IsFinalJobState(std::string_view job_state) {
  slurm::BaseState s = slurm::ParseBaseState(job_state);
  return s != slurm::BaseState::kUnknown && slurm::IsTerminalState(s);
}

namespace {

// TIMEOUT -> JobTimeout, NODE_FAIL -> JobNodeFail, ...; CANCELLED -> Cancelled.
std::string FailureReason(const slurm::JobInfo& info, std::string_view phase) {
  if (phase == kPhaseCancelled) return "Cancelled";
  std::string out = "Job";
  bool upper = true;
  for (char c : slurm::BaseStateName(info.state)) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? c : static_cast<char>(std::tolower(c));
    upper = false;
  }
  return out;
}

// jobState, phase, reason and times as Slurm's record gives them.
void SetStateAndTimes(v1alpha1::SlurmJobStatus& s, const slurm::JobInfo& info,
                      std::string_view phase) {
  const bool final = info.IsFinal();
  // jobState records only final states once they are final, so that a
  // terminal base state still COMPLETING does not look finished.
  // A terminal base state that still carries COMPLETING (or v0.0.38/39's bare
  // "COMPLETING") is shown as Slurm's squeue shows it: COMPLETING.
  if (final) {
    s.set_job_state(std::string(slurm::BaseStateName(info.state)));
  } else if (info.HasFlag("COMPLETING") &&
             (slurm::IsTerminalState(info.state) || info.state == slurm::BaseState::kUnknown)) {
    s.set_job_state("COMPLETING");
  } else if (info.state != slurm::BaseState::kUnknown) {
    s.set_job_state(std::string(slurm::BaseStateName(info.state)));
  }
  s.set_phase(std::string(phase));
  s.set_reason(Reason(info));
  if (info.submit_time) SetTimestamp(s.mutable_submit_time(), *info.submit_time);
  if (info.start_time && phase != kPhasePending)
    SetTimestamp(s.mutable_start_time(), *info.start_time);
  if (final && info.end_time) SetTimestamp(s.mutable_end_time(), *info.end_time);
}

// The conditions and message of a job still queued or running.
void SetActive(v1alpha1::SlurmJobStatus& s, const slurm::JobInfo& info, std::string_view phase,
               std::string_view old_phase, int64_t generation, Time now,
               std::vector<EventSpec>* events) {
  auto* conds = s.mutable_conditions();
  s.clear_exit_code();
  std::string waiting =
      phase == kPhasePending
          ? absl::StrCat("Slurm job ", info.job_id, " is queued",
                         s.reason().empty() ? "" : absl::StrCat(" (", s.reason(), ")"), ".")
          : absl::StrCat("Slurm job ", info.job_id, " is running.");
  s.set_message(waiting);
  SetCondition(conds, kReconciling, C::kTrue, phase == kPhasePending ? "JobPending" : "JobRunning",
               waiting, generation, now);
  SetCondition(conds, kReady, C::kFalse, phase == kPhasePending ? "JobPending" : "JobRunning",
               waiting, generation, now);
  SetCondition(conds, kStalled, C::kFalse, "Progressing", "", generation, now);
  if (phase == kPhaseRunning) {
    SetCondition(conds, kRunning, C::kTrue, "JobRunning", waiting, generation, now);
    if (old_phase != kPhaseRunning && events) {
      events->push_back({kNormal, "Started", "Track", waiting});
    }
  }
}

// The exit code, conditions and message of a job that ended.
void SetEnded(v1alpha1::SlurmJobStatus& s, const slurm::JobInfo& info, std::string_view phase,
              const v1alpha1::SlurmJobStatus& current, int64_t generation, Time now,
              std::vector<EventSpec>* events) {
  auto* conds = s.mutable_conditions();
  std::optional<int32_t> exit_code = ExitCodeOf(info);
  if (exit_code) {
    s.set_exit_code(*exit_code);
  } else {
    s.clear_exit_code();
  }
  std::string msg = FinalMessage(info, exit_code, current);
  if (phase == kPhaseFailed) msg += OutputHint(s);
  s.set_message(msg);
  RemoveCondition(conds, kRunning);
  SetCondition(conds, kReconciling, C::kFalse, "JobFinished", msg, generation, now);
  const bool was_final = IsFinalJobState(current.job_state());
  if (phase == kPhaseSucceeded) {
    SetCondition(conds, kReady, C::kTrue, "JobSucceeded", msg, generation, now);
    SetCondition(conds, kStalled, C::kFalse, "JobSucceeded", "", generation, now);
    SetCondition(conds, kSucceeded, C::kTrue, "Completed", msg, generation, now);
    RemoveCondition(conds, kFailed);
    if (!was_final && events) events->push_back({kNormal, "Completed", "Track", msg});
    return;
  }
  const std::string reason = FailureReason(info, phase);
  SetCondition(conds, kReady, C::kFalse, reason, msg, generation, now);
  SetCondition(conds, kStalled, C::kTrue, reason, msg, generation, now);
  SetCondition(conds, kFailed, C::kTrue, reason, msg, generation, now);
  RemoveCondition(conds, kSucceeded);
  if (!was_final && events) {
    events->push_back({phase == kPhaseCancelled ? kNormal : kWarning,
                       phase == kPhaseCancelled ? "Cancelled" : "Failed", "Track", msg});
  }
}

}  // namespace

v1alpha1::SlurmJobStatus StatusFromJobInfo(const v1alpha1::SlurmJobStatus& current,
                                           const slurm::JobInfo& info, int64_t generation, Time now,
                                           std::vector<EventSpec>* events) {
  v1alpha1::SlurmJobStatus s = current;
  s.set_observed_generation(generation);
  const std::string_view phase = PhaseOf(info);
  SetStateAndTimes(s, info, phase);
  SetOutputPaths(s, info);
  if (!info.IsFinal()) {
    SetActive(s, info, phase, current.phase(), generation, now, events);
  } else {
    SetEnded(s, info, phase, current, generation, now, events);
    // The run's usage, once, from the first final record with an allocation (job_usage.h).
    const int32_t run = CurrentRun(current);
    if (!UsageRecorded(current, run)) {
      if (std::optional<v1alpha1::JobUsage> u = UsageFromJobInfo(info, run)) {
        *s.mutable_usage() = *u;
      }
    }
  }
  return s;
}

v1alpha1::SlurmJobStatus StatusAfterSubmit(const v1alpha1::SlurmJobStatus& current, int64_t job_id,
                                           std::string_view cluster, bool adopted,
                                           int64_t generation, Time now,
                                           std::vector<EventSpec>* events) {
  v1alpha1::SlurmJobStatus s = current;
  s.set_observed_generation(generation);
  s.set_job_id(job_id);
  s.set_job_state("PENDING");
  s.set_phase(std::string(kPhasePending));
  s.set_cluster(std::string(cluster));
  s.set_reason("");
  s.clear_exit_code();
  s.clear_start_time();
  s.clear_end_time();
  s.clear_standard_output();  // another job's, if any; the job's first record fills them in
  s.clear_standard_error();
  SetTimestamp(s.mutable_submit_time(), now);
  std::string msg =
      adopted ? absl::StrCat("Found Slurm job ", job_id, " on cluster ", std::string(cluster),
                             " submitted earlier for this SlurmJob; tracking it.")
              : absl::StrCat("Submitted to cluster ", std::string(cluster), " as Slurm job ",
                             job_id, ".");
  s.set_message(msg);
  auto* conds = s.mutable_conditions();
  ClearMilestones(&s);
  SetCondition(conds, kSubmitted, C::kTrue, adopted ? "Adopted" : "Submitted", msg, generation,
               now);
  SetCondition(conds, kReconciling, C::kTrue, "JobPending", msg, generation, now);
  SetCondition(conds, kReady, C::kFalse, "JobPending", msg, generation, now);
  SetCondition(conds, kStalled, C::kFalse, "Progressing", "", generation, now);
  if (events) events->push_back({kNormal, adopted ? "Adopted" : "Submitted", "Submit", msg});
  return s;
}

v1alpha1::SlurmJobStatus StatusJobNotFound(const v1alpha1::SlurmJobStatus& current,
                                           int64_t generation, Time now) {
  v1alpha1::SlurmJobStatus s = current;
  s.set_observed_generation(generation);
  s.set_phase(std::string(kPhaseUnknown));
  std::string msg = absl::StrCat(
      "Slurm job ", current.job_id(),
      " is neither in the live queue nor in accounting yet; still looking (accounting can lag "
      "behind, and nothing is deleted meanwhile).");
  s.set_message(msg);
  SetCondition(s.mutable_conditions(), kReconciling, C::kTrue, "JobNotFound", msg, generation, now);
  SetCondition(s.mutable_conditions(), kReady, C::kUnknown, "JobNotFound", msg, generation, now);
  return s;
}

namespace {

// `current` as seen at `generation`, with `message` as its message.
v1alpha1::SlurmJobStatus Restated(const v1alpha1::SlurmJobStatus& current, std::string_view message,
                                  int64_t generation) {
  v1alpha1::SlurmJobStatus s = current;
  s.set_observed_generation(generation);
  s.set_message(std::string(message));
  return s;
}

}  // namespace

v1alpha1::SlurmJobStatus StatusStalled(const v1alpha1::SlurmJobStatus& current,
                                       std::string_view reason, std::string_view message,
                                       int64_t generation, Time now) {
  v1alpha1::SlurmJobStatus s = Restated(current, message, generation);
  auto* conds = s.mutable_conditions();
  SetCondition(conds, kStalled, C::kTrue, reason, message, generation, now);
  SetCondition(conds, kReady, C::kFalse, reason, message, generation, now);
  SetCondition(conds, kReconciling, C::kFalse, reason, message, generation, now);
  if (s.job_id() == 0) {
    SetCondition(conds, kSubmitted, C::kFalse, reason, message, generation, now);
  }
  return s;
}

v1alpha1::SlurmJobStatus StatusRetrying(const v1alpha1::SlurmJobStatus& current,
                                        std::string_view reason, std::string_view message,
                                        int64_t generation, Time now) {
  v1alpha1::SlurmJobStatus s = Restated(current, message, generation);
  auto* conds = s.mutable_conditions();
  SetCondition(conds, kReconciling, C::kTrue, reason, message, generation, now);
  SetCondition(conds, kStalled, C::kFalse, reason, "", generation, now);
  if (FindCondition(*conds, kReady) == nullptr || s.job_id() == 0) {
    SetCondition(conds, kReady, C::kUnknown, reason, message, generation, now);
  }
  if (s.job_id() == 0) {
    SetCondition(conds, kSubmitted, C::kFalse, reason, message, generation, now);
  }
  return s;
}

namespace {

// The wire form with map entries sorted by key: two statuses have the same
// bytes exactly when every field (and presence of optional ones) is the same.
std::string CanonicalBytes(const v1alpha1::SlurmJobStatus& s) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    s.SerializeToCodedStream(&coded);
  }
  return out;
}

}  // namespace

// Bytes rather than MessageDifferencer::Equals, which walks both messages by
// reflection: half of Decide()'s time in a profile of the operator.
bool SameStatus(const v1alpha1::SlurmJobStatus& a, const v1alpha1::SlurmJobStatus& b) {
  return a.ByteSizeLong() == b.ByteSizeLong() && CanonicalBytes(a) == CanonicalBytes(b);
}

}  // namespace slurmop::reconcile
