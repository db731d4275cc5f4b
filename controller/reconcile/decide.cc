// File: controller/reconcile/decide.cc

#include "controller/reconcile/decide.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/reconcile/conditions.h"
#include "controller/reconcile/runs.h"
#include "controller/slurm/dialects.h"

namespace slurmop::reconcile {
namespace {

constexpr char kDefaultApiVersion[] = "v0.0.42";

Decision Stop(std::string why) {
  Decision d;
  d.action = Action::kNone;
  d.why = std::move(why);
  return d;
}

Decision StopAndRequeue(Duration after, std::string why) {
  Decision d = Stop(std::move(why));
  d.requeue_after = after;
  return d;
}

Decision StopAndBackoff(std::string why) {
  Decision d = Stop(std::move(why));
  d.retry_with_backoff = true;
  return d;
}

Decision Do(Action a, std::string why) {
  Decision d;
  d.action = a;
  d.why = std::move(why);
  return d;
}

// Writes `desired` if it differs from what is stored; otherwise returns `then`.
Decision WriteIfChanged(const JobFacts& job, v1alpha1::SlurmJobStatus desired,
                        std::vector<EventSpec> events, Decision then) {
  if (SameStatus(desired, job.status)) {
    // The events were announced by an earlier write of this same status.
    return then;
  }
  Decision d = Do(Action::kWriteStatus, "status changed");
  d.status = std::move(desired);
  d.events = std::move(events);
  return d;
}

// `s` without what a pending job's status only adds detail with: Slurm's
// pending reason and submit time, the message, and the conditions' reasons,
// messages and transition times.
v1alpha1::SlurmJobStatus WithoutQueueDetails(v1alpha1::SlurmJobStatus s) {
  s.clear_reason();
  s.clear_submit_time();
  s.clear_message();
  for (v1alpha1::Condition& c : *s.mutable_conditions()) {
    c.clear_reason();
    c.clear_message();
    c.clear_last_transition_time();
  }
  return s;
}

// True when `desired` differs from `current` only in queue details, both
// pending (see DecideOptions::pending_details_delay).
bool OnlyQueueDetailsChange(const v1alpha1::SlurmJobStatus& desired,
                            const v1alpha1::SlurmJobStatus& current) {
  return desired.phase() == kPhasePending && current.phase() == kPhasePending &&
         SameStatus(WithoutQueueDetails(desired), WithoutQueueDetails(current));
}

// True when `desired` only moves a running job to COMPLETING.
bool OnlyCompletingChange(const v1alpha1::SlurmJobStatus& desired,
                          const v1alpha1::SlurmJobStatus& current) {
  if (desired.job_state() != "COMPLETING" || current.job_state() != "RUNNING") return false;
  v1alpha1::SlurmJobStatus probe = desired;
  probe.set_job_state(current.job_state());
  return SameStatus(probe, current);
}

// When the current run was submitted (its Submitted condition), if recorded.
std::optional<Time> SubmittedAt(const v1alpha1::SlurmJobStatus& status) {
  const v1alpha1::Condition* c = FindCondition(status.conditions(), kSubmitted);
  if (c == nullptr || c->status() != "True" || !c->has_last_transition_time()) {
    return std::nullopt;
  }
  return Time(std::chrono::seconds(c->last_transition_time().seconds()));
}

std::string ApiVersionOf(const ClusterFacts& cluster) {
  return cluster.spec.slurm_api_version().empty() ? kDefaultApiVersion
                                                  : cluster.spec.slurm_api_version();
}

std::string ClusterResourceName(const ClusterFacts& c) {
  return absl::StrCat("projects/", c.spec.project_id(), "/locations/", c.spec.region(),
                      "/modelDevelopmentClusters/", c.spec.cluster_id());
}

bool IsTransient(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kCancelled:
      return true;
    default:
      return false;
  }
}

// A user-facing reason and message for a call that Agent Platform or Slurm
// refused for good (the user must change something).
struct Refusal {
  std::string reason;
  std::string message;
  bool retry_later = false;  // access problems can be fixed outside the spec
};

Refusal ExplainRefusal(const absl::Status& s, const ClusterFacts& cluster,
                       const std::string& what) {
  const std::string detail(s.message());
  switch (s.code()) {
    case absl::StatusCode::kPermissionDenied:
      return {"PermissionDenied",
              absl::StrCat(what, " was denied by Agent Platform for cluster ",
                           ClusterResourceName(cluster), ": ", detail,
                           ". Grant the operator's identity (or the SlurmCluster's "
                           "credentialsSecretRef) roles/aiplatform.user, permission "
                           "aiplatform.googleapis.com/modelDevelopmentClusters.run, on project ",
                           cluster.spec.project_id(), "."),
              true};
    case absl::StatusCode::kNotFound:
      return {"ClusterNotFound",
              absl::StrCat("Agent Platform has no cluster ", ClusterResourceName(cluster), ": ",
                           detail, ". Check projectId, region and clusterId of SlurmCluster \"",
                           cluster.name, "\"."),
              true};
    case absl::StatusCode::kUnauthenticated:
      return {"CredentialsInvalid",
              absl::StrCat(what, " could not authenticate to Agent Platform: ", detail,
                           ". Check the operator's Application Default Credentials or the "
                           "SlurmCluster's credentialsSecretRef."),
              true};
    default:
      return {"SubmitRejected",
              absl::StrCat(what, " was rejected: ", detail,
                           ". Fix the SlurmJob's spec; it is submitted again when the spec "
                           "changes."),
              false};
  }
}

// The steps for a SlurmJob being deleted.
Decision DecideDeletion(const JobFacts& job, const ClusterFacts& cluster, const Outcomes& out,
                        const Memo& memo, Time now, const DecideOptions& opt) {
  if (!job.has_finalizer) return Stop("being deleted; our finalizer is gone");

  int64_t job_id = job.status.job_id();
  if (job_id == 0 && memo.submitted_job_id) job_id = *memo.submitted_job_id;
  if (job_id == 0 && out.tag_lookup && out.tag_lookup->ok() && out.tag_lookup->value()) {
    job_id = *out.tag_lookup->value();
  }
  if (job_id == 0) {
    const bool maybe_submitted = memo.submit_outcome_unknown || !memo.no_earlier_submit;
    if (maybe_submitted && cluster.kind == ClusterFacts::Kind::kFound) {
      if (!out.tag_lookup) {
        Decision d = Do(Action::kFindByTag, "deleting after a submit with unknown outcome");
        d.api_version = ApiVersionOf(cluster);
        return d;
      }
      if (!out.tag_lookup->ok()) {
        return StopAndBackoff(
            absl::StrCat("cannot search for the job's tag: ", out.tag_lookup->status().message()));
      }
    }
    return Do(Action::kRemoveFinalizer, "deleting; no Slurm job was submitted");
  }

  if (job.spec.deletion_policy() == "Orphan") {
    // Replace the tag first, so that the orphan sweep does not cancel the
    // job once its SlurmJob is gone.
    if (!memo.disowned && !IsFinalJobState(job.status.job_state()) &&
        cluster.kind == ClusterFacts::Kind::kFound) {
      if (!out.update) {
        Decision d = Do(Action::kUpdateJob, "deletionPolicy Orphan: disown the Slurm job");
        d.api_version = ApiVersionOf(cluster);
        d.job_id = job_id;
        d.update.comment = DisownedTag(job.id, CurrentRun(job.status));
        return d;
      }
      if (!out.update->ok() && !IsTransient(out.update->status().code())) {
        // Slurm refused the new comment for good: leave the job running anyway
        // (what the user asked for), and say what that means.
        Decision d = Do(Action::kRemoveFinalizer, "deletionPolicy Orphan; re-tagging refused");
        d.events.push_back(
            {"Warning", "OrphanNotRetagged", "Delete",
             absl::StrCat("Slurm job ", job_id,
                          " is left running (deletionPolicy Orphan), but "
                          "Slurm refused to change its comment (",
                          out.update->status().message(),
                          "); start operators with --orphan-sweep=false to be sure it is never "
                          "cancelled as an orphan.")});
        return d;
      }
      if (!out.update->ok()) {
        Decision d = StopAndBackoff(
            absl::StrCat("cannot disown Slurm job ", job_id, ": ", out.update->status().message()));
        d.events.push_back(
            {"Warning", "OrphanFailed", "Delete",
             absl::StrCat("Leaving Slurm job ", job_id, " running failed to mark it as orphaned: ",
                          out.update->status().message(), "; retrying.")});
        return d;
      }
    }
    Decision d = Do(Action::kRemoveFinalizer, "deletionPolicy Orphan");
    d.events.push_back(
        {"Normal", "Orphaned", "Delete",
         absl::StrCat("Slurm job ", job_id, " is left running: deletionPolicy is Orphan.")});
    return d;
  }
  if (IsFinalJobState(job.status.job_state())) {
    return Do(Action::kRemoveFinalizer, "deleting; the Slurm job already ended");
  }
  if (cluster.kind != ClusterFacts::Kind::kFound) {
    // Without the cluster the job cannot be cancelled: keep the finalizer so
    // nothing is lost, and say how to proceed.
    Decision d = StopAndRequeue(std::chrono::seconds(30),
                                absl::StrCat("cannot cancel Slurm job ", job_id,
                                             ": SlurmCluster \"", cluster.name, "\" not found"));
    d.events.push_back(
        {"Warning", "CancelBlocked", "Cancel",
         absl::StrCat("Cannot cancel Slurm job ", job_id, ": SlurmCluster \"", cluster.name,
                      "\" does not exist. Recreate it, or remove the finalizer "
                      "hpc.slurmoperator.dev/slurm-job to delete this SlurmJob without "
                      "cancelling the job.")});
    return d;
  }

  if (!out.query) {
    Decision d = Do(Action::kQuery, "deleting; is the Slurm job still active?");
    d.api_version = ApiVersionOf(cluster);
    d.job_id = job_id;
    d.max_age = memo.cancel_requested_at ? opt.cancel_wait_poll : Duration::zero();
    return d;
  }
  if (!out.query->ok()) {
    return StopAndBackoff(
        absl::StrCat("deleting; cannot read Slurm job: ", out.query->status().message()));
  }
  const SlurmView& view = out.query->value();
  if (!view.job || view.job->IsFinal()) {
    Decision d = Do(Action::kRemoveFinalizer, "deleting; the Slurm job has ended");
    if (memo.cancel_requested_at || out.cancel) {
      d.events.push_back(
          {"Normal", "Cancelled", "Cancel", absl::StrCat("Slurm job ", job_id, " was cancelled.")});
    }
    return d;
  }
  const bool cancel_due =
      !memo.cancel_requested_at || now - *memo.cancel_requested_at >= opt.cancel_resend;
  if (!out.cancel && cancel_due) {
    Decision d = Do(Action::kCancel, "deleting; cancel the Slurm job");
    d.api_version = ApiVersionOf(cluster);
    d.job_id = job_id;
    d.events.push_back({"Normal", "CancelRequested", "Cancel",
                        absl::StrCat("Cancelling Slurm job ", job_id,
                                     "; the SlurmJob is removed once Slurm reports it ended.")});
    return d;
  }
  if (out.cancel && !out.cancel->ok()) {
    Decision d = StopAndBackoff(
        absl::StrCat("cancel of Slurm job ", job_id, " failed: ", out.cancel->status().message()));
    d.events.push_back({"Warning", "CancelFailed", "Cancel",
                        absl::StrCat("Cancelling Slurm job ", job_id,
                                     " failed: ", out.cancel->status().message(), "; retrying.")});
    return d;
  }
  return StopAndRequeue(opt.cancel_wait_poll, "waiting for the cancelled job to end");
}

// The steps for a SlurmJob that has no Slurm job yet.
Decision DecideSubmission(const JobFacts& job, const ClusterFacts& cluster,
                          const ScriptFacts& script, const Outcomes& out, const Memo& memo,
                          Time now, const DecideOptions& opt) {
  const int64_t gen = job.generation;
  const auto stalled = [&](std::string_view reason, const std::string& message,
                           std::optional<Duration> requeue) {
    Decision then = requeue ? StopAndRequeue(*requeue, message) : Stop(message);
    std::vector<EventSpec> events = {{"Warning", std::string(reason), "Submit", message}};
    return WriteIfChanged(job, StatusStalled(job.status, reason, message, gen, now),
                          std::move(events), then);
  };

  // A submit that returned an id, or an earlier job found by its tag: record it.
  std::optional<int64_t> known_id = memo.submitted_job_id;
  bool adopted = memo.submitted_job_id.has_value() && memo.submitted_job_adopted;
  if (out.submit && out.submit->ok()) known_id = out.submit->value();
  if (!known_id && out.tag_lookup && out.tag_lookup->ok() && out.tag_lookup->value()) {
    known_id = *out.tag_lookup->value();
    adopted = true;
  }
  if (known_id) {
    std::vector<EventSpec> events;
    v1alpha1::SlurmJobStatus s =
        StatusAfterSubmit(job.status, *known_id, cluster.name, adopted, gen, now, &events);
    s.set_run(CurrentRun(job.status));
    s.set_run_id(job.spec.run_id());
    Decision d = Do(Action::kWriteStatus, "record the submitted job");
    d.status = std::move(s);
    d.events = std::move(events);
    return d;
  }

  switch (cluster.kind) {
    case ClusterFacts::Kind::kUnspecified:
      return stalled("ClusterNotSpecified",
                     "spec.clusterRef.name is empty and the operator runs without "
                     "--default-cluster; name a SlurmCluster of this namespace in "
                     "spec.clusterRef.name. Nothing was submitted.",
                     std::nullopt);
    case ClusterFacts::Kind::kNotFound:
      return stalled("ClusterNotFound",
                     absl::StrCat("SlurmCluster \"", cluster.name,
                                  "\" does not exist in namespace \"", job.id.ns,
                                  "\"; create it or fix spec.clusterRef.name. Nothing was "
                                  "submitted."),
                     std::nullopt);
    case ClusterFacts::Kind::kFound:
      break;
  }
  if (absl::Status s = ValidateClusterSpec(cluster.spec); !s.ok()) {
    return stalled("InvalidCluster", absl::StrCat(s.message(), ". Nothing was submitted."),
                   std::nullopt);
  }
  if (absl::Status s = ValidateJobSpec(job.spec); !s.ok()) {
    return stalled("InvalidSpec", absl::StrCat(s.message(), ". Nothing was submitted."),
                   std::nullopt);
  }
  std::string script_text = job.spec.script();
  if (job.spec.has_script_from()) {
    switch (script.kind) {
      case ScriptFacts::Kind::kNotLoaded:
        return Do(Action::kLoadScript, "read the script from its ConfigMap");
      case ScriptFacts::Kind::kMissing:
        return stalled(
            "ScriptNotFound",
            absl::StrCat(
                script.error, ". Nothing was submitted; retrying every ",
                std::chrono::duration_cast<std::chrono::seconds>(opt.missing_script_retry).count(),
                " s."),
            opt.missing_script_retry);
      case ScriptFacts::Kind::kLoaded:
        script_text = script.text;
        break;
    }
  }
  absl::StatusOr<slurm::JobDescriptor> descriptor =
      BuildJobDescriptor(job.id, job.spec, cluster.spec, script_text, CurrentRun(job.status));
  if (!descriptor.ok()) {
    return stalled("InvalidSpec",
                   absl::StrCat(descriptor.status().message(), ". Nothing was submitted."),
                   std::nullopt);
  }
  const std::string api_version = ApiVersionOf(cluster);
  absl::StatusOr<const slurm::Dialect*> dialect = slurm::DialectFor(api_version);
  if (!dialect.ok()) {
    return stalled("InvalidCluster", std::string(dialect.status().message()), std::nullopt);
  }
  if (absl::StatusOr<nlohmann::json> body = (*dialect)->RenderSubmit(*descriptor); !body.ok()) {
    return stalled("InvalidSpec",
                   absl::StrCat("the job cannot be expressed in Slurm REST ", api_version, ": ",
                                body.status().message(), ". Nothing was submitted."),
                   std::nullopt);
  }

  if (!job.has_finalizer) {
    return Do(Action::kAddFinalizer, "protect the job before submitting it");
  }

  // A submit refused for this spec is not sent again until the spec (or the
  // cluster) changes; the status already says why. Refusals that access
  // changes can fix are retried after a while.
  if (!out.submit) {
    const v1alpha1::Condition* stalled = FindCondition(job.status.conditions(), kStalled);
    const bool rejected_this_generation = stalled != nullptr && stalled->status() == "True" &&
                                          stalled->reason() == "SubmitRejected" &&
                                          stalled->observed_generation() == job.generation;
    const bool cluster_changed =
        memo.refused_cluster_generation && *memo.refused_cluster_generation != cluster.generation;
    if (rejected_this_generation && !cluster_changed) {
      return Stop("the submit was rejected for this spec; waiting for a change");
    }
    const bool refused_this_generation =
        memo.submit_refused_at && memo.refused_generation == job.generation;
    if (!rejected_this_generation && refused_this_generation && !cluster_changed &&
        now - *memo.submit_refused_at < opt.permission_retry) {
      return StopAndRequeue(opt.permission_retry - (now - *memo.submit_refused_at),
                            "the last submit was refused; retrying later");
    }
  }

  // A previous submit (by this process or one before it) may have reached
  // Slurm: look for it first. A search that finds nothing proves nothing
  // while such a submit may still be in flight (memo.settle_until): then wait
  // and look again, never submit.
  const bool maybe_submitted =
      memo.submit_outcome_unknown || (!memo.no_earlier_submit && !memo.started_run);
  const bool inconclusive = out.tag_lookup && out.tag_lookup->ok() && !out.tag_lookup->value();
  if (maybe_submitted && memo.settle_until && *memo.settle_until > now &&
      (!out.tag_lookup || inconclusive)) {
    const Duration wait = *memo.settle_until - now;
    std::string msg = absl::StrCat(
        out.submit && !out.submit->ok()
            ? absl::StrCat("The submit's outcome is unknown (", out.submit->status().message(),
                           "). ")
            : std::string("An earlier submit of this job may still be in flight. "),
        "The operator looks for the job by its tag again once no submit can still be in flight (",
        std::chrono::duration_cast<std::chrono::seconds>(opt.submit_settle).count(),
        " s after it was sent), and submits only if it is not found, so that the job never runs "
        "twice.");
    std::vector<EventSpec> events;
    if (out.submit && !out.submit->ok()) {
      events.push_back({"Warning", "SubmitOutcomeUnknown", "Submit", msg});
    }
    Decision then = StopAndRequeue(wait + std::chrono::seconds(1), msg);
    const v1alpha1::Condition* reconciling = FindCondition(job.status.conditions(), kReconciling);
    if (!out.submit && reconciling != nullptr && reconciling->reason() == "SubmitOutcomeUnknown" &&
        job.status.observed_generation() == gen) {
      return then;  // already said; the wording may differ only in the error
    }
    return WriteIfChanged(job, StatusRetrying(job.status, "SubmitOutcomeUnknown", msg, gen, now),
                          std::move(events), then);
  }
  if (maybe_submitted && !out.tag_lookup) {
    Decision d = Do(Action::kFindByTag, memo.submit_outcome_unknown
                                            ? "the last submit's outcome is unknown"
                                            : "an earlier process may have submitted");
    d.api_version = api_version;
    return d;
  }
  if (out.tag_lookup && !out.tag_lookup->ok()) {
    std::string msg =
        absl::StrCat("The last submit's outcome is unknown and the search for the job failed: ",
                     out.tag_lookup->status().message(), ". Retrying; nothing is submitted twice.");
    return WriteIfChanged(job, StatusRetrying(job.status, "SubmitOutcomeUnknown", msg, gen, now),
                          {}, StopAndBackoff(msg));
  }

  if (!out.submit && job.spec.suspend()) {
    std::string msg = "spec.suspend is true: the job is not submitted until it is cleared.";
    v1alpha1::SlurmJobStatus s = StatusRetrying(job.status, "Suspended", msg, gen, now);
    SetCondition(s.mutable_conditions(), kReconciling, ConditionStatus::kFalse, "Suspended", msg,
                 gen, now);
    SetCondition(s.mutable_conditions(), kReady, ConditionStatus::kFalse, "Suspended", msg, gen,
                 now);
    s.set_phase(std::string(kPhasePending));
    s.set_reason("Suspended");
    return WriteIfChanged(job, std::move(s), {{"Normal", "Suspended", "Submit", msg}},
                          Stop("suspended"));
  }
  if (!out.submit && job.spec.depends_on_size() > 0) {
    DependencyPlan plan = PlanDependencies(job.dependencies);
    if (!plan.impossible.empty()) {
      return stalled("DependencyNeverSatisfied",
                     absl::StrCat(plan.impossible, ". Nothing was submitted."), std::nullopt);
    }
    if (!plan.waiting_for.empty()) {
      std::string msg =
          absl::StrCat("Waiting for ", plan.waiting_for, " before submitting (spec.dependsOn).");
      v1alpha1::SlurmJobStatus s =
          StatusRetrying(job.status, "WaitingForDependencies", msg, gen, now);
      s.set_phase(std::string(kPhasePending));
      s.set_reason("WaitingForDependencies");
      return WriteIfChanged(job, std::move(s), {}, Stop("waiting for dependencies"));
    }
    descriptor->dependency = plan.expression;
  }

  if (!out.submit) {
    Decision d = Do(Action::kSubmit, "submit the job");
    d.descriptor = std::move(*descriptor);
    d.api_version = api_version;
    return d;
  }

  // The submit failed.
  const absl::Status& err = out.submit->status();
  if (out.submit_may_have_been_delivered) {
    std::string msg =
        absl::StrCat("The submit's outcome is unknown (", err.message(),
                     "); the operator looks for the job by its tag before submitting again.");
    return WriteIfChanged(job, StatusRetrying(job.status, "SubmitOutcomeUnknown", msg, gen, now),
                          {{"Warning", "SubmitOutcomeUnknown", "Submit", msg}},
                          StopAndBackoff(msg));
  }
  if (IsTransient(err.code())) {
    std::string msg =
        absl::StrCat("Submitting failed for now: ", err.message(), ". Retrying with backoff.");
    return WriteIfChanged(job, StatusRetrying(job.status, "SubmitRetrying", msg, gen, now),
                          {{"Warning", "SubmitRetrying", "Submit", msg}}, StopAndBackoff(msg));
  }
  Refusal r = ExplainRefusal(err, cluster, "The submit");
  return stalled(r.reason, r.message,
                 r.retry_later ? std::optional<Duration>(opt.permission_retry) : std::nullopt);
}

// observedGeneration brought up to date everywhere, nothing else changed.
v1alpha1::SlurmJobStatus WithGeneration(const v1alpha1::SlurmJobStatus& s, int64_t gen) {
  v1alpha1::SlurmJobStatus out = s;
  out.set_observed_generation(gen);
  for (auto& c : *out.mutable_conditions()) c.set_observed_generation(gen);
  return out;
}

// Starts the run that spec.runId asks for, recording the finished one
// (`ended`: its final status when just learned, else job.status).
Decision StartSupersedingRun(const JobFacts& job, int64_t gen, Time now,
                             const v1alpha1::SlurmJobStatus* ended = nullptr) {
  const v1alpha1::SlurmJobStatus& finished = ended ? *ended : job.status;
  std::string msg = absl::StrCat("spec.runId changed to \"", job.spec.run_id(), "\": starting run ",
                                 CurrentRun(finished) + 1, ".");
  Decision d = Do(Action::kWriteStatus, "spec.runId changed: start a new run");
  d.status = StatusForNewRun(finished, job.spec.run_id(), 0,
                             absl::StrCat("Superseded by runId \"", job.spec.run_id(), "\""),
                             "NewRun", msg, gen, now);
  d.events.push_back({"Normal", "NewRun", "Rerun", msg});
  return d;
}

// The steps for a SlurmJob whose Slurm job is known.
Decision DecideTracking(const JobFacts& job, const ClusterFacts& cluster, const Outcomes& out,
                        const Memo& memo, Time now, const DecideOptions& opt) {
  const int64_t gen = job.generation;
  const bool superseded = job.spec.run_id() != job.status.run_id();
  if (IsFinalJobState(job.status.job_state())) {
    if (superseded) return StartSupersedingRun(job, gen, now);
    return WriteIfChanged(job, WithGeneration(job.status, gen), {},
                          Stop("the Slurm job has ended"));
  }
  if (cluster.kind != ClusterFacts::Kind::kFound) {
    std::string msg =
        absl::StrCat("SlurmCluster \"", cluster.name, "\" is gone; cannot follow Slurm job ",
                     job.status.job_id(), ". Recreate the SlurmCluster to resume tracking.");
    return WriteIfChanged(job, StatusRetrying(job.status, "ClusterNotFound", msg, gen, now), {},
                          StopAndRequeue(std::chrono::seconds(30), msg));
  }
  const Duration poll = PollInterval(job.status, now, opt);
  if (superseded && cluster.kind == ClusterFacts::Kind::kFound) {
    // spec.runId changed while this run is active: cancel it, then start the
    // new run once Slurm reports it ended.
    const bool cancel_due =
        !memo.cancel_requested_at || now - *memo.cancel_requested_at >= opt.cancel_resend;
    if (!out.cancel && cancel_due) {
      Decision d = Do(Action::kCancel, "spec.runId changed: cancel the current run");
      d.api_version = ApiVersionOf(cluster);
      d.job_id = job.status.job_id();
      d.events.push_back({"Normal", "CancelRequested", "Rerun",
                          absl::StrCat("spec.runId changed to \"", job.spec.run_id(),
                                       "\": cancelling Slurm job ", job.status.job_id(), " of run ",
                                       CurrentRun(job.status), " before starting the next run.")});
      return d;
    }
    if (out.cancel && !out.cancel->ok()) {
      return StopAndBackoff(absl::StrCat("cancel of Slurm job ", job.status.job_id(),
                                         " failed: ", out.cancel->status().message()));
    }
  }
  if (!out.query) {
    if (memo.last_query_at && now - *memo.last_query_at < poll) {
      // Woken by our own status write or an unrelated change: the last look
      // is recent enough.
      return WriteIfChanged(job, WithGeneration(job.status, gen), {},
                            StopAndRequeue(poll - (now - *memo.last_query_at), "polled recently"));
    }
    Decision d = Do(Action::kQuery, "follow the Slurm job");
    d.api_version = ApiVersionOf(cluster);
    d.job_id = job.status.job_id();
    d.max_age = memo.cancel_requested_at ? opt.cancel_wait_poll : poll;
    return d;
  }
  if (!out.query->ok()) {
    const absl::Status& err = out.query->status();
    if (IsTransient(err.code())) {
      return StopAndBackoff(absl::StrCat("reading the Slurm job failed: ", err.message()));
    }
    Refusal r = ExplainRefusal(err, cluster, "Reading the job's state");
    return WriteIfChanged(job, StatusRetrying(job.status, r.reason, r.message, gen, now),
                          {{"Warning", r.reason, "Track", r.message}},
                          StopAndRequeue(opt.permission_retry, r.message));
  }
  const SlurmView& view = out.query->value();
  if (!view.job) {
    return WriteIfChanged(job, StatusJobNotFound(job.status, gen, now), {},
                          StopAndRequeue(std::max<Duration>(poll, std::chrono::seconds(5)),
                                         "the Slurm job is not found (yet)"));
  }
  std::vector<EventSpec> events;
  v1alpha1::SlurmJobStatus desired = StatusFromJobInfo(job.status, *view.job, gen, now, &events);
  if (view.job->IsFinal()) {
    if (superseded) return StartSupersedingRun(job, gen, now, &desired);
    FailureVerdict verdict = EvaluateFailurePolicy(job.spec, desired);
    using K = FailureVerdict::Kind;
    if (verdict.kind == K::kRetry || verdict.kind == K::kRetryUncounted) {
      const int32_t retries = desired.retries() + (verdict.kind == K::kRetry ? 1 : 0);
      std::string msg = absl::StrCat(desired.message(), " Retrying as run ",
                                     CurrentRun(desired) + 1, ": ", verdict.why, ".");
      v1alpha1::SlurmJobStatus next =
          StatusForNewRun(desired, desired.run_id(), retries,
                          absl::StrCat("Retried: ", verdict.why), "Retrying", msg, gen, now);
      Decision d = Do(Action::kWriteStatus, "the run failed; the failure policy retries it");
      d.status = std::move(next);
      d.events.push_back({"Warning", "Retrying", "Track", msg});
      return d;
    }
    if (verdict.kind == K::kFail && !verdict.why.empty()) {
      desired.set_message(absl::StrCat(desired.message(), " Not retried: ", verdict.why, "."));
    }
    return WriteIfChanged(job, std::move(desired), std::move(events),
                          Stop("the Slurm job has ended"));
  }

  // spec.suspend holds a pending job in Slurm (priority 0) and releases it
  // when cleared; a job that started is no longer held.
  if (view.job->state != slurm::BaseState::kPending) {
    desired.set_held(false);
  } else if (job.spec.suspend() != job.status.held()) {
    if (!out.update) {
      Decision d = Do(Action::kUpdateJob,
                      job.spec.suspend() ? "hold the pending job" : "release the held job");
      d.api_version = ApiVersionOf(cluster);
      d.job_id = job.status.job_id();
      d.update.hold = job.spec.suspend();
      return d;
    }
    if (!out.update->ok()) {
      std::string msg = absl::StrCat(job.spec.suspend() ? "Holding" : "Releasing", " Slurm job ",
                                     job.status.job_id(),
                                     " failed: ", out.update->status().message(), "; retrying.");
      return WriteIfChanged(job, StatusRetrying(desired, "HoldFailed", msg, gen, now),
                            {{"Warning", "HoldFailed", "Suspend", msg}}, StopAndBackoff(msg));
    }
    desired.set_held(job.spec.suspend());
    events.push_back(
        {"Normal", job.spec.suspend() ? "Held" : "Released", "Suspend",
         absl::StrCat("Slurm job ", job.status.job_id(),
                      job.spec.suspend() ? " is held (spec.suspend)." : " is released.")});
  }
  Decision then = StopAndRequeue(PollInterval(desired, now, opt), "the Slurm job is active");
  if (opt.pending_details_delay > Duration::zero() && events.empty() &&
      OnlyQueueDetailsChange(desired, job.status)) {
    if (std::optional<Time> submitted = SubmittedAt(job.status)) {
      const Time due = *submitted + opt.pending_details_delay;
      if (now < due) {
        // Looked at again by then (the tracker also wakes it on any change).
        return StopAndRequeue(std::min<Duration>(*then.requeue_after, due - now),
                              "pending; queue details are written with the next change");
      }
    }
  }
  if (opt.completing_write_delay > Duration::zero() && events.empty() && view.job->end_time &&
      OnlyCompletingChange(desired, job.status)) {
    const Time due = *view.job->end_time + opt.completing_write_delay;
    if (now < due) {
      return StopAndRequeue(std::min<Duration>(*then.requeue_after, due - now),
                            "completing; written with the final state");
    }
  }
  return WriteIfChanged(job, std::move(desired), std::move(events), then);
}

}  // namespace

DependencyPlan PlanDependencies(const std::vector<DependencyFacts>& deps) {
  DependencyPlan plan;
  std::vector<std::string> waiting, impossible;
  std::vector<std::pair<std::string, std::vector<int64_t>>> groups;  // condition -> ids, in order
  for (const DependencyFacts& dep : deps) {
    const std::string condition = dep.condition.empty() ? "afterok" : dep.condition;
    if (!dep.found) {
      waiting.push_back(absl::StrCat("SlurmJob \"", dep.name, "\" (it does not exist yet)"));
      continue;
    }
    if (dep.job_id == 0) {
      waiting.push_back(absl::StrCat("SlurmJob \"", dep.name, "\" (not submitted yet)"));
      continue;
    }
    if (IsFinalJobState(dep.job_state)) {
      const bool ok = dep.job_state == "COMPLETED";
      if ((condition == "afterok" && !ok) || (condition == "afternotok" && ok)) {
        impossible.push_back(absl::StrCat("SlurmJob \"", dep.name, "\" ended ", dep.job_state,
                                          ", so ", condition, " can never be met"));
      }
      continue;  // met (or never met): nothing for Slurm to wait for
    }
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == condition; });
    if (it == groups.end()) {
      groups.push_back({condition, {}});
      it = std::prev(groups.end());
    }
    it->second.push_back(dep.job_id);
  }
  plan.waiting_for = absl::StrJoin(waiting, ", ");
  plan.impossible = absl::StrJoin(impossible, "; ");
  std::vector<std::string> parts;
  for (const auto& [condition, ids] : groups) {
    parts.push_back(absl::StrCat(condition, ":", absl::StrJoin(ids, ":")));
  }
  plan.expression = absl::StrJoin(parts, ",");
  return plan;
}

Duration PollInterval(const v1alpha1::SlurmJobStatus& status, Time now,
                      const DecideOptions& options) {
  // Poll fast right after submit (short jobs finish in seconds) and back off
  // to max_poll for long-running jobs: one tenth of the job's age so far.
  Time since = Time(std::chrono::seconds(status.submit_time().seconds()));
  if (status.has_start_time()) since = Time(std::chrono::seconds(status.start_time().seconds()));
  Duration age = now > since ? now - since : Duration::zero();
  Duration interval = age / 10;
  return std::clamp<Duration>(interval, options.min_poll, options.max_poll);
}

Decision Decide(const JobFacts& job, const ClusterFacts& cluster, const ScriptFacts& script,
                const Outcomes& outcomes, const Memo& memo, Time now,
                const DecideOptions& options) {
  if (job.deleting) return DecideDeletion(job, cluster, outcomes, memo, now, options);
  if (job.status.job_id() == 0) {
    return DecideSubmission(job, cluster, script, outcomes, memo, now, options);
  }
  return DecideTracking(job, cluster, outcomes, memo, now, options);
}

bool SubmitMayHaveReachedSlurm(const absl::Status& error, bool transport_says_delivered) {
  if (!transport_says_delivered) return false;
  switch (error.code()) {
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kAlreadyExists:
      return false;
    default:
      return true;
  }
}

void UpdateMemo(Memo* memo, const Outcomes& out, const JobFacts& job, const ClusterFacts& cluster,
                Time now, const DecideOptions& opt) {
  // A new incarnation, or a newer run: start afresh. A status showing an
  // older run than the memo is a stale cache; the memo stays.
  if (memo->uid != job.id.uid || CurrentRun(job.status) > memo->run) {
    *memo = Memo{};
    memo->uid = job.id.uid;
    memo->run = CurrentRun(job.status);
    if (out.started_run) {
      memo->started_run = true;
      memo->no_earlier_submit = true;
    }
  }
  if (out.submit) {
    if (!memo->submit_attempt_at || out.submit_sent_at > *memo->submit_attempt_at) {
      memo->submit_attempt_at = out.submit_sent_at;
    }
    if (out.submit->ok()) {
      memo->submitted_job_id = out.submit->value();
      memo->submitted_job_adopted = false;
      memo->submit_outcome_unknown = false;
      // Just submitted: Slurm would only say PENDING; the first look can wait
      // one poll interval.
      memo->last_query_at = now;
    } else if (out.submit_may_have_been_delivered) {
      memo->submit_outcome_unknown = true;
    } else if (!IsTransient(out.submit->status().code()) &&
               (!memo->submit_refused_at || memo->refused_generation != job.generation ||
                memo->refused_cluster_generation != cluster.generation)) {
      memo->submit_refused_at = now;
      memo->refused_generation = job.generation;
      memo->refused_cluster_generation = cluster.generation;
    }
  }
  if (out.tag_lookup && out.tag_lookup->ok()) {
    if (out.tag_lookup->value()) {
      memo->submitted_job_id = *out.tag_lookup->value();
      memo->submitted_job_adopted = true;
      memo->submit_outcome_unknown = false;
      memo->settle_until.reset();
    } else {
      // Nothing found proves no earlier submit only once a submit that may
      // still be in flight (ours, or an earlier process's) would have landed.
      const Time settle_until =
          (memo->submit_outcome_unknown && memo->submit_attempt_at ? *memo->submit_attempt_at
                                                                   : opt.process_start) +
          opt.submit_settle;
      if (out.tag_lookup_at >= settle_until) {
        memo->no_earlier_submit = true;
        memo->submit_outcome_unknown = false;
        memo->settle_until.reset();
      } else {
        memo->settle_until = settle_until;
      }
    }
  }
  if (out.added_finalizer) memo->no_earlier_submit = true;
  if (out.query && out.query->ok()) {
    memo->last_query_at = now;
    if (out.query->value().job) {
      memo->not_found_since.reset();
    } else if (!memo->not_found_since) {
      memo->not_found_since = now;
    }
  }
  if (out.cancel && out.cancel->ok()) memo->cancel_requested_at = now;
  if (out.update && out.update->ok() && job.deleting) memo->disowned = true;
}

}  // namespace slurmop::reconcile
