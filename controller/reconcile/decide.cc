// File: controller/reconcile/decide.cc

#include "controller/reconcile/decide.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "controller/reconcile/conditions.h"
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
      BuildJobDescriptor(job.id, job.spec, cluster.spec, script_text);
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
  // Slurm: look for it first.
  if ((memo.submit_outcome_unknown || !memo.no_earlier_submit) && !out.tag_lookup) {
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

// The steps for a SlurmJob whose Slurm job is known.
Decision DecideTracking(const JobFacts& job, const ClusterFacts& cluster, const Outcomes& out,
                        const Memo& memo, Time now, const DecideOptions& opt) {
  const int64_t gen = job.generation;
  if (IsFinalJobState(job.status.job_state())) {
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
  Decision then = view.job->IsFinal()
                      ? Stop("the Slurm job has ended")
                      : StopAndRequeue(PollInterval(desired, now, opt), "the Slurm job is active");
  return WriteIfChanged(job, std::move(desired), std::move(events), then);
}

}  // namespace

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
                Time now) {
  if (memo->uid != job.id.uid) {
    *memo = Memo{};
    memo->uid = job.id.uid;
  }
  if (out.submit) {
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
    } else {
      memo->no_earlier_submit = true;
    }
    memo->submit_outcome_unknown = false;
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
}

}  // namespace slurmop::reconcile
