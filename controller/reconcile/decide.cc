// File: controller/reconcile/decide.cc

#include "controller/reconcile/decide.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/api/resources.h"
#include "controller/common/condition_reason.h"
#include "controller/common/time_format.h"
#include "controller/reconcile/array_status.h"
#include "controller/reconcile/cluster_status.h"
#include "controller/reconcile/conditions.h"
#include "controller/reconcile/job_lifetime.h"
#include "controller/reconcile/job_usage.h"
#include "controller/reconcile/ownership.h"
#include "controller/reconcile/runs.h"
#include "controller/reconcile/stage.h"
#include "controller/reconcile/tag_search.h"
#include "controller/slurm/dialects.h"

namespace slurmop::reconcile {
namespace {

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
// pending reason and submit time, the message, the conditions' reasons,
// messages and transition times, and the output paths (the job's first record
// fills them in, and nothing is written there before the job starts).
v1alpha1::SlurmJobStatus WithoutQueueDetails(v1alpha1::SlurmJobStatus s) {
  s.clear_reason();
  s.clear_submit_time();
  s.clear_message();
  s.clear_standard_output();
  s.clear_standard_error();
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
  return slurm::VersionOrDefault(cluster.spec.slurm_api_version());
}

const char* KindName(const ClusterFacts& c) {
  return c.cluster_scoped ? "ClusterSlurmCluster" : "SlurmCluster";
}

// Why nothing can be sent to the job's cluster (kNotFound, kRefused), for messages.
std::string ClusterUnusable(const ClusterFacts& c) {
  if (c.kind == ClusterFacts::Kind::kRefused) return c.access.message;
  return absl::StrCat(KindName(c), " \"", c.name, "\" does not exist");
}

}  // namespace

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

namespace {

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
  // A layer below named the reason (e.g. EndpointNotAllowed): its message
  // says what to change; retried as access problems are.
  if (std::optional<std::string> reason = ConditionReason(s)) {
    return {*reason, absl::StrCat(what, " was not sent: ", detail, "."), true};
  }
  switch (s.code()) {
    case absl::StatusCode::kPermissionDenied:
      return {"PermissionDenied",
              absl::StrCat(what, " was denied by Agent Platform for cluster ",
                           ClusterResourceName(cluster.spec), ": ", detail,
                           ". Grant the operator's identity (or the SlurmCluster's "
                           "credentialsSecretRef) roles/aiplatform.user, permission "
                           "aiplatform.googleapis.com/modelDevelopmentClusters.run, on project ",
                           cluster.spec.project_id(), "."),
              true};
    case absl::StatusCode::kNotFound:
      return {
          "ClusterNotFound",
          absl::StrCat("Agent Platform has no cluster ", ClusterResourceName(cluster.spec), ": ",
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

// ---- Being deleted ---------------------------------------------------------

// A cancel the operator sent (`why`: for the deletion, a new runId, the deadline, too many failed
// indexes) failed: retried with backoff, with a Warning Event each time, so that a job that keeps
// running against the user's wish is never silent.
Decision RetryFailedCancel(const Known& k, int64_t job_id, const std::string& why,
                           const std::string& action) {
  const std::string detail(k.out.cancel->status().message());
  Decision d =
      StopAndBackoff(absl::StrCat("cancel of Slurm job ", job_id, " (", why, ") failed: ", detail));
  d.events.push_back({kWarning, "CancelFailed", action,
                      absl::StrCat("Cancelling Slurm job ", job_id, " (", why, ") failed: ", detail,
                                   "; retrying.")});
  return d;
}

// Deleting, and the deletion cannot go on for now (`reason`, `msg`; `then`: when to try again).
// The status says why as well as a Warning Event (recorded with the status write, so once per
// change): a namespace being deleted refuses new Events, but the status writes of the objects
// in it still land, so there the condition is all the user sees.
// A job known from the memo only (submitted, its id not recorded yet) is not said to be
// unsubmitted: its Submitted condition stays as it was.
Decision DeletionHeldUp(const Known& k, const std::string& reason, const std::string& msg,
                        Decision then) {
  v1alpha1::SlurmJobStatus s = StatusRetrying(k.job.status, reason, msg, k.job.generation, k.now);
  if (k.job.status.job_id() == 0 && guards::KnownJobId(k) != 0) {
    RemoveCondition(s.mutable_conditions(), kSubmitted);
    if (const v1alpha1::Condition* was = FindCondition(k.job.status.conditions(), kSubmitted)) {
      *s.add_conditions() = *was;
    }
  }
  return WriteIfChanged(k.job, std::move(s), {{kWarning, reason, "Cancel", msg}}, std::move(then));
}

// Deleting, and a call the deletion needs (`what`: reading the job's state, searching for its
// tag) failed with `err`. A transient failure is retried with backoff; a lasting refusal (the
// credentials Secret gone or wrong, permission denied, no such cluster) is told as a condition and
// a Warning Event, with how to finish the deletion without the cancel. Before, the deletion just
// waited, and `kubectl delete` hung with nothing saying why.
//
// A transient failure that has lasted (`failing_since`, past tracking_failure_grace) is told the
// same way, as DeletionRetrying, so that a deletion that keeps waiting on a cluster whose
// answers fail says why.
Decision DeletionCallFailed(const Known& k, const absl::Status& err, const std::string& what,
                            std::optional<Time> failing_since = std::nullopt) {
  const std::string how_to_finish = absl::StrCat(
      " The SlurmJob is deleted once its Slurm job is known to be cancelled or gone; to "
      "delete it without that, remove the finalizer ",
      std::string(api::kSlurmJobFinalizer), ".");
  if (IsTransient(err.code())) {
    Decision retry = StopAndBackoff(absl::StrCat("deleting; ", what, " failed: ", err.message()));
    if (!failing_since) return retry;
    const std::string msg =
        absl::StrCat(what, " has failed since ", FormatRfc3339(*failing_since), ": ", err.message(),
                     ". Retrying with backoff.", how_to_finish);
    return DeletionHeldUp(k, "DeletionRetrying", msg, std::move(retry));
  }
  Refusal r = ExplainRefusal(err, k.cluster, what);
  if (!r.retry_later) {  // its "fix the spec; it is submitted again" is about submits
    r = {"DeletionBlocked", absl::StrCat(what, " failed: ", err.message(), "."), true};
  }
  const std::string msg = absl::StrCat(r.message, how_to_finish);
  return DeletionHeldUp(k, r.reason, msg, StopAndRequeue(k.opt.permission_retry, msg));
}

Decision DeletingUnsubmitted(const Known& k) {
  if (guards::EarlierSubmitPossible(k.memo) && guards::ClusterFound(k.cluster)) {
    if (!guards::TagSearchDone(k.out)) {
      Decision d = Do(Action::kFindByTag, "deleting after a submit with unknown outcome");
      d.api_version = ApiVersionOf(k.cluster);
      d.search_not_before = SearchNotBefore(k.memo, k.opt, k.now);
      d.search_at = guards::SearchLocation(k);
      return d;
    }
    // Nothing records a submit of this run, and the search cannot even be
    // sent (the namespace's deletion took the credentials Secret before any
    // submit needed it kept): this version sends no submit before recording
    // its target, so there is nothing to find; waiting would keep the
    // namespace Terminating for good (#13, namespace deletion).
    if (guards::TagSearchUnsent(k.out) && guards::NoSubmitRecorded(k)) {
      Decision d = Do(Action::kRemoveFinalizer, "deleting; no submit of this run was recorded");
      d.events.push_back(
          {kNormal, "ReleasedUnsubmitted", "Delete",
           absl::StrCat("No submit of run ", CurrentRun(k.job.status),
                        " was recorded (status.submitTarget is unset), and its tag cannot be "
                        "looked for (",
                        k.out.tag_lookup->status().message(),
                        "): the finalizer is removed. Only an operator version from before "
                        "status.submitTarget could have sent a submit without recording it.")});
      return d;
    }
    if (guards::TagSearchFailed(k.out)) {
      return DeletionCallFailed(k, k.out.tag_lookup->status(), "Searching for the job's tag");
    }
  }
  return Do(Action::kRemoveFinalizer, "deleting; no Slurm job was submitted");
}

// Being deleted while an earlier submit may still land: wait for the settle
// window's end, then search again (kDeletingUnsubmitted); the Event is
// recorded when the search that found nothing too early was just made.
Decision DeletionSettling(const Known& k) {
  const Duration wait = std::max(Duration::zero(), *k.memo.settle_until - k.now);
  std::string msg = absl::StrCat(
      "Deleting: the job's last submit has an unknown outcome and may still reach Slurm; the "
      "operator looks for it by its tag again in ",
      std::chrono::duration_cast<std::chrono::seconds>(wait).count() + 1,
      " s and cancels it if it landed. The finalizer stays until then; removing it by hand "
      "may leave that job running with no SlurmJob.");
  Decision d = StopAndRequeue(wait + std::chrono::seconds(1), msg);
  if (guards::TagSearchFoundNothing(k.out)) {
    d.events.push_back({kNormal, "WaitingForSubmitOutcome", "Delete", msg});
  }
  return d;
}

Decision Disowning(const Known& k) {
  const int64_t job_id = guards::KnownJobId(k);
  // Replace the tag first, so that the orphan sweep does not cancel the job
  // once its SlurmJob is gone.
  if (guards::ClusterMovedSinceSubmit(k)) {
    Decision d = Do(Action::kRemoveFinalizer, "deletionPolicy Orphan; the cluster moved");
    d.events.push_back(
        {kWarning, "OrphanNotRetagged", "Delete",
         absl::StrCat("Slurm job ", job_id, " is left running (deletionPolicy Orphan) on ",
                      DescribeLocation(*guards::KnownLocation(k)),
                      "; it was not re-tagged, since SlurmCluster \"", k.cluster.name,
                      "\" now points elsewhere.")});
    return d;
  }
  if (!guards::Disowned(k.memo) && !guards::JobEnded(k.job) && guards::ClusterFound(k.cluster)) {
    const auto& update = k.out.update;
    if (!update) {
      Decision d = Do(Action::kUpdateJob, "deletionPolicy Orphan: disown the Slurm job");
      d.api_version = ApiVersionOf(k.cluster);
      d.job_id = job_id;
      d.update.comment = DisownedTag(k.job.id, CurrentRun(k.job.status));
      return d;
    }
    if (!update->ok() && !IsTransient(update->status().code())) {
      // Slurm refused the new comment for good: leave the job running anyway
      // (what the user asked for), and say what that means.
      Decision d = Do(Action::kRemoveFinalizer, "deletionPolicy Orphan; re-tagging refused");
      d.events.push_back(
          {kWarning, "OrphanNotRetagged", "Delete",
           absl::StrCat("Slurm job ", job_id,
                        " is left running (deletionPolicy Orphan), but "
                        "Slurm refused to change its comment (",
                        update->status().message(),
                        "); start operators with --orphan-sweep=false to be sure it is never "
                        "cancelled as an orphan.")});
      return d;
    }
    if (!update->ok()) {
      return DeletionHeldUp(
          k, "OrphanFailed",
          absl::StrCat("Leaving Slurm job ", job_id, " running failed to mark it as orphaned: ",
                       update->status().message(), "; retrying with backoff."),
          StopAndBackoff(
              absl::StrCat("cannot disown Slurm job ", job_id, ": ", update->status().message())));
    }
  }
  Decision d = Do(Action::kRemoveFinalizer, "deletionPolicy Orphan");
  d.events.push_back(
      {kNormal, "Orphaned", "Delete",
       absl::StrCat("Slurm job ", job_id, " is left running: deletionPolicy is Orphan.")});
  return d;
}

Decision CancelBlocked(const Known& k) {
  const int64_t job_id = guards::KnownJobId(k);
  // Without the cluster the job cannot be cancelled: keep the finalizer so
  // nothing is lost, and say how to proceed.
  return DeletionHeldUp(
      k, "CancelBlocked",
      absl::StrCat("Cannot cancel Slurm job ", job_id, ": ", ClusterUnusable(k.cluster),
                   ". Recreate (or allow) it, or remove the finalizer "
                   "hpc.slurmoperator.dev/slurm-job to delete this SlurmJob "
                   "without cancelling the job."),
      StopAndRequeue(std::chrono::seconds(30), absl::StrCat("cannot cancel Slurm job ", job_id,
                                                            ": ", ClusterUnusable(k.cluster))));
}

// The job was submitted where the SlurmCluster no longer points: a cancel by
// its id there would hit whatever job has that id now.
Decision DeletionClusterMoved(const Known& k) {
  const int64_t job_id = guards::KnownJobId(k);
  const std::string msg = absl::StrCat(
      "Cannot cancel Slurm job ", job_id, ": it was submitted to ",
      DescribeLocation(*guards::KnownLocation(k)), ", but SlurmCluster \"", k.cluster.name,
      "\" now points at ", DescribeLocation(LocationOf(k.cluster.spec)),
      ". Point the SlurmCluster back to cancel the job, or remove the finalizer "
      "hpc.slurmoperator.dev/slurm-job to delete this SlurmJob without cancelling it (the job "
      "then runs on).");
  return DeletionHeldUp(k, "CancelBlocked", msg, StopAndRequeue(std::chrono::seconds(30), msg));
}

// The record under the job's id is another job's: never cancelled.
Decision DeletionNotOurs(const Known& k) {
  const int64_t job_id = guards::KnownJobId(k);
  const std::string msg = absl::StrCat(
      "Not cancelling Slurm job ", job_id, " on ", DescribeLocation(LocationOf(k.cluster.spec)),
      ": its comment is not this SlurmJob's tag, so it is another job (the cluster's job ids "
      "may have started again). This SlurmJob's own job is not found under that id; remove the "
      "finalizer hpc.slurmoperator.dev/slurm-job to delete the SlurmJob.");
  return DeletionHeldUp(k, "CancelBlocked", msg, StopAndRequeue(k.opt.permission_retry, msg));
}

Decision Cancelling(const Known& k) {
  const int64_t job_id = guards::KnownJobId(k);
  if (!guards::QueryDone(k.out)) {
    Decision d = Do(Action::kQuery, "deleting; is the Slurm job still active?");
    d.api_version = ApiVersionOf(k.cluster);
    d.job_id = job_id;
    d.max_age = k.memo.cancel_requested_at ? k.opt.cancel_wait_poll : Duration::zero();
    return d;
  }
  if (guards::QueryFailed(k.out)) {
    return DeletionCallFailed(
        k, k.out.query->status(), "Reading the job's state",
        guards::LooksFailingLong(k) ? k.memo.looks_failing_since : std::nullopt);
  }
  if (guards::SlurmKnowsNoJob(k.out) || guards::SlurmSaysEnded(k.out)) {
    Decision d = Do(Action::kRemoveFinalizer, "deleting; the Slurm job has ended");
    if (k.memo.cancel_requested_at || k.out.cancel) {
      d.events.push_back(
          {kNormal, "Cancelled", "Cancel", absl::StrCat("Slurm job ", job_id, " was cancelled.")});
    }
    return d;
  }
  if (guards::CancelDue(k)) {
    Decision d = Do(Action::kCancel, "deleting; cancel the Slurm job");
    d.api_version = ApiVersionOf(k.cluster);
    d.job_id = job_id;
    d.events.push_back({kNormal, "CancelRequested", "Cancel",
                        absl::StrCat("Cancelling Slurm job ", job_id,
                                     "; the SlurmJob is removed once Slurm reports it ended.")});
    return d;
  }
  if (guards::CancelFailed(k.out)) {
    const std::string detail(k.out.cancel->status().message());
    return DeletionHeldUp(
        k, "CancelFailed",
        absl::StrCat("Cancelling Slurm job ", job_id, " for the deletion failed: ", detail,
                     "; retrying with backoff."),
        StopAndBackoff(absl::StrCat("cancel of Slurm job ", job_id, " failed: ", detail)));
  }
  return StopAndRequeue(k.opt.cancel_wait_poll, "waiting for the cancelled job to end");
}

// ---- Not submitted yet -----------------------------------------------------

// Writes the Stalled condition (reason, message) with a Warning Event.
Decision Stalled(const Known& k, std::string_view reason, const std::string& message,
                 std::optional<Duration> requeue) {
  Decision then = requeue ? StopAndRequeue(*requeue, message) : Stop(message);
  std::vector<EventSpec> events = {{kWarning, std::string(reason), "Submit", message}};
  return WriteIfChanged(k.job,
                        StatusStalled(k.job.status, reason, message, k.job.generation, k.now),
                        std::move(events), then);
}

// A submit that returned an id, or an earlier job found by its tag.
Decision RecordingSubmit(const Known& k) {
  std::optional<int64_t> known_id = k.memo.submitted_job_id;
  bool adopted = k.memo.submitted_job_id.has_value() && k.memo.submitted_job_adopted;
  if (guards::SubmitReturnedId(k.out)) known_id = k.out.submit->value();
  if (!known_id && guards::TagSearchFoundJob(k.out)) {
    known_id = *k.out.tag_lookup->value();
    adopted = true;
  }
  std::vector<EventSpec> events;
  v1alpha1::SlurmJobStatus s = StatusAfterSubmit(k.job.status, *known_id, k.cluster.name, adopted,
                                                 k.job.generation, k.now, &events);
  // Where it runs, and (when submitted now) the tag it carries; an adopted
  // job's tag is recorded by its first look (Observed).
  *s.mutable_submitted_to() = k.memo.submitted_to.value_or(LocationOf(k.cluster.spec));
  // A first submit whose target rode with the finalizer (Protecting): the
  // status records it now, where only the operator writes.
  if (!s.has_submit_target()) *s.mutable_submit_target() = s.submitted_to();
  s.clear_job_tag();
  if (!adopted) s.set_job_tag(RunTag(k.job));
  s.set_run(CurrentRun(k.job.status));
  s.set_run_id(k.job.spec.run_id());
  // spec.activeDeadlineSeconds counts from here (job_lifetime.h).
  if (!s.has_first_submit_time()) {
    const Time sent = k.out.submit_sent_at != Time{} ? k.out.submit_sent_at : k.now;
    s.mutable_first_submit_time()->set_seconds(
        std::chrono::duration_cast<std::chrono::seconds>(sent.time_since_epoch()).count());
  }
  Decision d = Do(Action::kWriteStatus, "record the submitted job");
  d.status = std::move(s);
  d.events = std::move(events);
  return d;
}

// A submit refused for this spec is not sent again until the spec (or the
// cluster) changes; the status already says why. Refusals that access
// changes can fix are retried after a while.
Decision Refused(const Known& k) {
  if (guards::RejectedForThisGeneration(k)) {
    return Stop("the submit was rejected for this spec; waiting for a change");
  }
  return StopAndRequeue(k.opt.permission_retry - (k.now - *k.memo.submit_refused_at),
                        "the last submit was refused; retrying later");
}

// A previous submit (by this process or one before it) may have reached
// Slurm, and a search that finds nothing proves nothing while it may still be
// in flight: wait and look again, never submit.
Decision Settling(const Known& k) {
  const Outcomes& out = k.out;
  const Duration wait = std::max(Duration::zero(), *k.memo.settle_until - k.now);
  const bool failed_now = out.submit && !out.submit->ok();
  std::string msg = absl::StrCat(
      failed_now
          ? absl::StrCat("The submit's outcome is unknown (", out.submit->status().message(), "). ")
          : std::string("An earlier submit of this job may still be in flight. "),
      "The operator looks for the job by its tag again once no submit can still be in flight (",
      std::chrono::duration_cast<std::chrono::seconds>(k.opt.submit_settle).count(),
      " s after it was sent), and submits only if it is not found, so that the job never runs "
      "twice.");
  std::vector<EventSpec> events;
  if (failed_now) events.push_back({kWarning, "SubmitOutcomeUnknown", "Submit", msg});
  Decision then = StopAndRequeue(wait + std::chrono::seconds(1), msg);
  const v1alpha1::Condition* reconciling = FindCondition(k.job.status.conditions(), kReconciling);
  if (!out.submit && reconciling != nullptr && reconciling->reason() == "SubmitOutcomeUnknown" &&
      k.job.status.observed_generation() == k.job.generation) {
    return then;  // already said; the wording may differ only in the error
  }
  return WriteIfChanged(
      k.job, StatusRetrying(k.job.status, "SubmitOutcomeUnknown", msg, k.job.generation, k.now),
      std::move(events), then);
}

Decision Searching(const Known& k, const SubmitPlan& plan) {
  Decision d = Do(Action::kFindByTag, k.memo.submit_outcome_unknown
                                          ? "the last submit's outcome is unknown"
                                          : "an earlier process may have submitted");
  d.api_version = plan.api_version;
  d.search_not_before = SearchNotBefore(k.memo, k.opt, k.now);
  d.search_at = guards::SearchLocation(k);
  return d;
}

// The target of an earlier submit, when the SlurmCluster no longer points there: " on <where>,
// where ... went (SlurmCluster "c" now points at <there>)"; else "".
std::string ElsewhereNote(const Known& k) {
  const v1alpha1::SlurmJobLocation where = guards::SearchLocation(k);
  if (SameLocation(where, LocationOf(k.cluster.spec))) return "";
  return absl::StrCat(" on ", DescribeLocation(where),
                      ", where that submit was sent (SlurmCluster \"", k.cluster.name,
                      "\" now points at ", DescribeLocation(LocationOf(k.cluster.spec)), ")");
}

Decision SearchFailed(const Known& k) {
  if (k.out.tag_lookup_held_back.has_value()) {
    return StopAndRequeue(
        std::max(*k.out.tag_lookup_held_back, Duration(std::chrono::milliseconds(10))),
        "the tag search waits for room in the call budget");
  }
  const std::string elsewhere = ElsewhereNote(k);
  std::string msg = absl::StrCat(
      "The last submit's outcome is unknown and the search for the job", elsewhere,
      " failed: ", k.out.tag_lookup->status().message(), ". Retrying; nothing is submitted twice",
      elsewhere.empty() ? "."
                        : ", nor anywhere else until that search answers (pointing the "
                          "SlurmCluster back lets it answer).");
  return WriteIfChanged(
      k.job, StatusRetrying(k.job.status, "SubmitOutcomeUnknown", msg, k.job.generation, k.now), {},
      StopAndBackoff(msg));
}

Decision Suspended(const Known& k) {
  const int64_t gen = k.job.generation;
  std::string msg = "spec.suspend is true: the job is not submitted until it is cleared.";
  v1alpha1::SlurmJobStatus s = StatusRetrying(k.job.status, "Suspended", msg, gen, k.now);
  SetCondition(s.mutable_conditions(), kReconciling, ConditionStatus::kFalse, "Suspended", msg, gen,
               k.now);
  SetCondition(s.mutable_conditions(), kReady, ConditionStatus::kFalse, "Suspended", msg, gen,
               k.now);
  s.set_phase(std::string(kPhasePending));
  s.set_reason("Suspended");
  return WriteIfChanged(k.job, std::move(s), {{kNormal, "Suspended", "Submit", msg}},
                        Stop("suspended"));
}

Decision WaitingForDeps(const Known& k, const SubmitPlan& plan) {
  if (!plan.dependencies.impossible.empty()) {
    return Stalled(k, "DependencyNeverSatisfied",
                   absl::StrCat(plan.dependencies.impossible, ". Nothing was submitted."),
                   std::nullopt);
  }
  std::string msg = absl::StrCat("Waiting for ", plan.dependencies.waiting_for,
                                 " before submitting (spec.dependsOn).");
  v1alpha1::SlurmJobStatus s =
      StatusRetrying(k.job.status, "WaitingForDependencies", msg, k.job.generation, k.now);
  s.set_phase(std::string(kPhasePending));
  s.set_reason("WaitingForDependencies");
  return WriteIfChanged(k.job, std::move(s), {}, Stop("waiting for dependencies"));
}

// Nothing is submitted to a SlurmCluster until it is kept while SlurmJobs name it. That takes
// one patch or two, so the job only waits, woken by the SlurmCluster's change; once the protector
// was refused (RBAC, an admission policy), the status says so and the job waits for that change.
Decision ClusterUnprotected(const Known& k) {
  const std::string& problem = k.cluster.protection_problem;
  if (problem.empty()) {
    return StopAndRequeue(std::chrono::seconds(1),
                          "waiting for the SlurmCluster to be kept while SlurmJobs name it");
  }
  const std::string msg = absl::StrCat(
      "SlurmCluster \"", k.cluster.name, "\" cannot be kept while SlurmJobs name it (", problem,
      "), so nothing is submitted to it: deleting its namespace could otherwise leave the job "
      "running. Let the operator patch SlurmClusters and Secrets in this namespace (or exempt "
      "its finalizers from the admission policy that refuses them); the job is submitted once "
      "the SlurmCluster is kept.");
  const std::string reason = "ClusterProtectionFailed";
  v1alpha1::SlurmJobStatus s = StatusRetrying(k.job.status, reason, msg, k.job.generation, k.now);
  s.set_phase(std::string(kPhasePending));
  s.set_reason(reason);
  return WriteIfChanged(k.job, std::move(s), {{kWarning, reason, "Submit", msg}},
                        StopAndRequeue(k.opt.permission_retry, msg));
}

// The finalizer first; when the submit is the step after it (and a note key
// is set), the same patch records where the submit goes
// (submit_target_note.h), which spares the status write of RecordingTarget.
Decision Protecting(const Known& k, const SubmitPlan& plan) {
  if (!TargetRidesWithFinalizer(k, plan)) {
    return Do(Action::kAddFinalizer, "protect the job before submitting it");
  }
  Decision d = Do(Action::kAddFinalizer,
                  "protect the job and record where the submit goes before sending it");
  d.note_target = LocationOf(k.cluster.spec);
  return d;
}

// Before a submit is sent, the status says where it goes (status.submitTarget):
// a crash, a lost reply or a repoint afterwards then looks for the job there.
Decision RecordingTarget(const Known& k) {
  v1alpha1::SlurmJobStatus s = k.job.status;
  *s.mutable_submit_target() = LocationOf(k.cluster.spec);
  if (guards::StatusSaysRejected(k)) {
    SetCondition(s.mutable_conditions(), kStalled, ConditionStatus::kFalse, "Resubmitting",
                 "The SlurmCluster changed since Slurm rejected the submit: it is sent again.",
                 k.job.generation, k.now);
  }
  Decision d = Do(Action::kWriteStatus, "record where the submit goes before sending it");
  d.status = std::move(s);
  return d;
}

Decision ReadyToSubmit(SubmitPlan plan) {
  Decision d = Do(Action::kSubmit, "submit the job");
  d.descriptor = std::move(plan.descriptor);
  d.submit_body = std::move(plan.body);
  d.api_version = std::move(plan.api_version);
  return d;
}

Decision SubmitFailed(const Known& k) {
  const absl::Status& err = k.out.submit->status();
  const int64_t gen = k.job.generation;
  if (k.out.submit_may_have_been_delivered) {
    std::string msg =
        absl::StrCat("The submit's outcome is unknown (", err.message(),
                     "); the operator looks for the job by its tag before submitting again.");
    return WriteIfChanged(k.job,
                          StatusRetrying(k.job.status, "SubmitOutcomeUnknown", msg, gen, k.now),
                          {{kWarning, "SubmitOutcomeUnknown", "Submit", msg}}, StopAndBackoff(msg));
  }
  if (k.out.submit_held_back.has_value() && !k.out.submit_held_back_why.empty()) {
    // Not sent: the cluster did not answer lately, and its calls are held
    // back (silent_clusters.h). The message is stable, as below.
    std::string msg = absl::StrCat("Waiting to submit: ", k.out.submit_held_back_why, ".");
    return WriteIfChanged(
        k.job, StatusRetrying(k.job.status, "ClusterNotAnswering", msg, gen, k.now),
        {{kWarning, "ClusterNotAnswering", "Submit", msg}},
        StopAndRequeue(std::max(*k.out.submit_held_back, Duration(std::chrono::milliseconds(10))),
                       msg));
  }
  if (k.out.submit_held_back.has_value()) {
    // Nothing was sent: no failure, no growing backoff, one stable message
    // (not one write and Event per retry).
    std::string msg =
        "Waiting for room in the Agent Platform call budget of this cluster's project and "
        "region, which all its SlurmClusters share (--agent-platform-requests-per-minute); "
        "submits go ahead of tracking and probes.";
    return WriteIfChanged(
        k.job, StatusRetrying(k.job.status, "WaitingForCallBudget", msg, gen, k.now),
        {{kNormal, "WaitingForCallBudget", "Submit", msg}},
        StopAndRequeue(std::max(*k.out.submit_held_back, Duration(std::chrono::milliseconds(10))),
                       msg));
  }
  if (IsTransient(err.code())) {
    std::string msg =
        absl::StrCat("Submitting failed for now: ", err.message(), ". Retrying with backoff.");
    return WriteIfChanged(k.job, StatusRetrying(k.job.status, "SubmitRetrying", msg, gen, k.now),
                          {{kWarning, "SubmitRetrying", "Submit", msg}}, StopAndBackoff(msg));
  }
  Refusal r = ExplainRefusal(err, k.cluster, "The submit");
  return Stalled(k, r.reason, r.message,
                 r.retry_later ? std::optional<Duration>(k.opt.permission_retry) : std::nullopt);
}

// ---- Submitted -------------------------------------------------------------

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
  d.events.push_back({kNormal, "NewRun", "Rerun", msg});
  return d;
}

Decision Ended(const Known& k) {
  if (guards::RunIdChanged(k.job)) return StartSupersedingRun(k.job, k.job.generation, k.now);
  return WriteIfChanged(k.job, WithGeneration(k.job.status, k.job.generation), {},
                        Stop("the Slurm job has ended"));
}

// The usage this reconcile's look shows for the current run: a final record
// of the job's own, with an allocation.
std::optional<v1alpha1::JobUsage> UsageOfLook(const Known& k) {
  if (!guards::SlurmSaysEnded(k.out) || guards::RecordNotOurs(k)) return std::nullopt;
  return UsageFromJobInfo(*k.out.query->value().job, CurrentRun(k.job.status));
}

// A run that ended before accounting showed its end (slurmdbd learns it
// asynchronously): looked at again at NextUsageLook's moments; once a look
// shows the usage, only status.usage is written (the counters count it
// then, once: job_usage.h).
Decision AwaitingUsage(const Known& k) {
  const Time ended(std::chrono::seconds(k.job.status.end_time().seconds()));
  if (guards::QueryDone(k.out)) {
    if (std::optional<v1alpha1::JobUsage> usage = UsageOfLook(k)) {
      v1alpha1::SlurmJobStatus s = WithGeneration(k.job.status, k.job.generation);
      *s.mutable_usage() = *std::move(usage);
      return WriteIfChanged(k.job, std::move(s), {}, Stop("the run's usage is recorded"));
    }
    const std::optional<Time> next = NextUsageLook(ended, k.now);
    if (!next) return Stop("accounting did not show the run's usage in time");
    return StopAndRequeue(*next - k.now, "accounting does not show the run's usage yet");
  }
  const std::optional<Time> next = NextUsageLook(ended, k.memo.last_query_at);
  if (!next) return Stop("accounting did not show the run's usage in time");
  if (*next > k.now) return StopAndRequeue(*next - k.now, "looking for the run's usage later");
  Decision d = Do(Action::kQuery, "look for the ended run's usage in accounting");
  d.api_version = ApiVersionOf(k.cluster);
  d.job_id = k.job.status.job_id();
  d.accounting_only = true;
  return d;
}

// A finished SlurmJob that a GitOps tool manages is kept whatever its TTL:
// said once, by the condition TTLSkipped and its Event.
Decision KeptForGitOps(const Known& k, const TtlVerdict& ttl) {
  const GitOpsMarker& m = *ttl.gitops;
  const std::string msg = absl::StrCat(
      "spec.ttlSecondsAfterFinished is ", k.job.spec.ttl_seconds_after_finished(),
      ", but this SlurmJob is not deleted: ", m.tool, " manages it (", m.kind, " ", m.key, "=",
      m.value,
      ") and would create it again under a new uid, so Slurm would run the job again. "
      "Remove it from the ",
      m.tool, " source and let ", m.tool, " prune it, or remove spec.ttlSecondsAfterFinished.");
  v1alpha1::SlurmJobStatus s = WithGeneration(k.job.status, k.job.generation);
  SetCondition(s.mutable_conditions(), kTtlSkipped, ConditionStatus::kTrue, "GitOpsManaged", msg,
               k.job.generation, k.now);
  return WriteIfChanged(k.job, std::move(s), {{kNormal, "TTLSkippedGitOpsManaged", "Delete", msg}},
                        Stop("finished; kept: a GitOps tool manages it"));
}

// Finished, its TTL not passed yet: looked at again exactly at the expiry.
Decision TtlWaiting(const Known& k, const TtlVerdict& ttl) {
  return WriteIfChanged(k.job, WithGeneration(k.job.status, k.job.generation), {},
                        StopAndRequeue(ttl.wait, "finished; deleted once its TTL passed"));
}

// The TTL passed: the SlurmJob is deleted, this incarnation only; the
// finalizer then comes off without a cancel (kDeletingEnded).
Decision TtlExpired(const Known& k) {
  Decision d = Do(Action::kDeleteJob, "spec.ttlSecondsAfterFinished passed");
  d.uid = k.job.id.uid;
  d.events.push_back(
      {kNormal, "TTLExpired", "Delete",
       absl::StrCat("Deleting the SlurmJob: it finished at ",
                    FormatRfc3339(Time(std::chrono::seconds(k.job.status.end_time().seconds()))),
                    " and spec.ttlSecondsAfterFinished (", k.job.spec.ttl_seconds_after_finished(),
                    " s) has passed.")});
  return d;
}

// The cluster is gone, or this job may not use it any more (cluster_access.h).
Decision ClusterGone(const Known& k) {
  const bool refused = k.cluster.kind == ClusterFacts::Kind::kRefused;
  if (refused && k.cluster.access.transient) return StopAndBackoff(k.cluster.access.message);
  std::string msg =
      absl::StrCat(ClusterUnusable(k.cluster), "; cannot follow Slurm job ", k.job.status.job_id(),
                   ". Recreate (or allow) the ", KindName(k.cluster), " to resume tracking.");
  return WriteIfChanged(
      k.job,
      StatusRetrying(k.job.status, refused ? k.cluster.access.reason : "ClusterNotFound", msg,
                     k.job.generation, k.now),
      {}, StopAndRequeue(std::chrono::seconds(30), msg));
}

// spec.runId changed while this run is active: cancel it, then start the new
// run once Slurm reports it ended.
Decision Superseded(const Known& k) {
  const auto& job = k.job;
  if (guards::CancelFailed(k.out)) {
    return RetryFailedCancel(k, job.status.job_id(), "spec.runId changed", "Rerun");
  }
  Decision d = Do(Action::kCancel, "spec.runId changed: cancel the current run");
  d.api_version = ApiVersionOf(k.cluster);
  d.job_id = job.status.job_id();
  d.events.push_back({kNormal, "CancelRequested", "Rerun",
                      absl::StrCat("spec.runId changed to \"", job.spec.run_id(),
                                   "\": cancelling Slurm job ", job.status.job_id(), " of run ",
                                   CurrentRun(job.status), " before starting the next run.")});
  return d;
}

// The job runs where the SlurmCluster no longer points (#13 L1): its id
// there names another job or none. Reported; nothing is done there.
Decision ClusterMovedAway(const Known& k) {
  const std::string msg = absl::StrCat(
      "Slurm job ", k.job.status.job_id(), " was submitted to ",
      DescribeLocation(k.job.status.submitted_to()), ", but SlurmCluster \"", k.cluster.name,
      "\" now points at ", DescribeLocation(LocationOf(k.cluster.spec)),
      ": the operator neither follows nor cancels a job by that id there. Point the "
      "SlurmCluster back to follow the job.");
  return WriteIfChanged(
      k.job, StatusRetrying(k.job.status, "ClusterChanged", msg, k.job.generation, k.now),
      {{kWarning, "ClusterChanged", "Track", msg}}, StopAndRequeue(k.opt.permission_retry, msg));
}

// The record under the job's id is not the job's own (#13 L1): reported,
// never followed, held or cancelled.
Decision NotOurJob(const Known& k) {
  const std::string msg = absl::StrCat(
      "Slurm job ", k.job.status.job_id(), " on ", DescribeLocation(LocationOf(k.cluster.spec)),
      " is another job: its comment is not this SlurmJob's tag (the cluster's job ids may have "
      "started again, or the SlurmCluster points at another cluster than the one the job was "
      "submitted to). The operator neither follows nor cancels it.");
  v1alpha1::SlurmJobStatus s =
      StatusRetrying(k.job.status, "JobNotOurs", msg, k.job.generation, k.now);
  s.set_phase(std::string(kPhaseUnknown));
  return WriteIfChanged(k.job, std::move(s), {{kWarning, "JobNotOurs", "Track", msg}},
                        StopAndRequeue(k.opt.permission_retry, msg));
}

// `d`, or less: a job is looked at again when spec.activeDeadlineSeconds passes.
Duration AtMostUntilDeadline(const Known& k, Duration d) {
  const std::optional<Time> deadline = ActiveDeadline(k.job);
  if (!deadline || *deadline <= k.now) return d;
  return std::min<Duration>(d, *deadline - k.now);
}

Decision Following(const Known& k) {
  // The interval as it was at the last look: it grows with the job's age, so
  // one taken at `now` would move the due time on at every wake-up (a
  // requeue ten times shorter each time, never reaching the poll).
  const Duration poll = PollInterval(k.job.status, k.memo.last_query_at.value_or(k.now), k.opt);
  if (guards::PolledRecently(k, poll) && !guards::DeadlinePassed(k)) {
    // Woken by our own status write or an unrelated change: the last look is
    // recent enough.
    return WriteIfChanged(
        k.job, WithGeneration(k.job.status, k.job.generation), {},
        StopAndRequeue(AtMostUntilDeadline(k, poll - (k.now - *k.memo.last_query_at)),
                       "polled recently"));
  }
  Decision d = Do(Action::kQuery, "follow the Slurm job");
  d.api_version = ApiVersionOf(k.cluster);
  d.job_id = k.job.status.job_id();
  d.max_age = k.memo.cancel_requested_at ? k.opt.cancel_wait_poll : poll;
  return d;
}

Decision QueryFailed(const Known& k) {
  const absl::Status& err = k.out.query->status();
  if (IsTransient(err.code())) {
    Decision retry = StopAndBackoff(absl::StrCat("reading the Slurm job failed: ", err.message()));
    if (!guards::LooksFailingLong(k)) return retry;
    const std::string msg =
        absl::StrCat("Reading the state of Slurm job ", k.job.status.job_id(), " has failed since ",
                     FormatRfc3339(*k.memo.looks_failing_since), ": ", err.message(),
                     ". Retrying with backoff; the status shows the job's last known state.");
    return WriteIfChanged(
        k.job, StatusRetrying(k.job.status, "TrackingRetrying", msg, k.job.generation, k.now),
        {{kWarning, "TrackingRetrying", "Track", msg}}, std::move(retry));
  }
  Refusal r = ExplainRefusal(err, k.cluster, "Reading the job's state");
  return WriteIfChanged(k.job,
                        StatusRetrying(k.job.status, r.reason, r.message, k.job.generation, k.now),
                        {{kWarning, r.reason, "Track", r.message}},
                        StopAndRequeue(k.opt.permission_retry, r.message));
}

Decision JobMissing(const Known& k) {
  const Duration poll = PollInterval(k.job.status, k.now, k.opt);
  return WriteIfChanged(k.job, StatusJobNotFound(k.job.status, k.job.generation, k.now), {},
                        StopAndRequeue(std::max<Duration>(poll, std::chrono::seconds(5)),
                                       "the Slurm job is not found (yet)"));
}

// The status Slurm's record of the job asks for (with its Events).
// Only for a record found ours (the stages after kNotOurs). A status from
// before submittedTo (the previous version's) learns where its job runs and
// the tag it carries from this first record found ours (ownership.h).
v1alpha1::SlurmJobStatus Observed(const Known& k, std::vector<EventSpec>* events) {
  const slurm::JobInfo& live = *k.out.query->value().job;
  if (k.job.spec.has_array() && live.array) {
    // An array's record is final only once every index of the run is known to have ended
    // (array_status.h); status.array accumulates what each look saw.
    ArrayObservation a = ObserveArray(k.job.spec.array(), k.job.status.array(), live);
    v1alpha1::SlurmJobStatus s =
        StatusFromJobInfo(k.job.status, a.record, k.job.generation, k.now, events);
    *s.mutable_array() = std::move(a.status);
    if (!s.has_submitted_to()) *s.mutable_submitted_to() = LocationOf(k.cluster.spec);
    if (s.job_tag().empty() && !live.comment.empty()) s.set_job_tag(live.comment);
    return s;
  }
  const slurm::JobInfo& record = live;
  v1alpha1::SlurmJobStatus s =
      StatusFromJobInfo(k.job.status, record, k.job.generation, k.now, events);
  if (!s.has_submitted_to()) *s.mutable_submitted_to() = LocationOf(k.cluster.spec);
  if (s.job_tag().empty() && !record.comment.empty()) s.set_job_tag(record.comment);
  return s;
}

// spec.activeDeadlineSeconds passed while the job is queued or running: it
// is cancelled (a look found it ours), and ends Failed (JobEnded).
Decision DeadlineExceeded(const Known& k) {
  const int64_t job_id = k.job.status.job_id();
  if (guards::CancelDue(k)) {
    Decision d = Do(Action::kCancel, "spec.activeDeadlineSeconds passed: cancel the job");
    d.api_version = ApiVersionOf(k.cluster);
    d.job_id = job_id;
    d.events.push_back(
        {kWarning, "DeadlineExceeded", "Cancel",
         absl::StrCat("spec.activeDeadlineSeconds (", k.job.spec.active_deadline_seconds(),
                      " s from the first submit) passed: cancelling Slurm job ", job_id, ".")});
    return d;
  }
  if (guards::CancelFailed(k.out)) {
    return RetryFailedCancel(k, job_id, "spec.activeDeadlineSeconds passed", "Cancel");
  }
  return StopAndRequeue(k.opt.cancel_wait_poll, "waiting for the job cancelled at its deadline");
}

// More indexes of the array failed for good than spec.array.maxFailedIndexes allows while
// tasks still run or wait: the array is cancelled (a look found it ours), and the run ends
// Failed with reason MaxFailedIndexesExceeded (ArrayEnded), as batch/v1 Job does.
Decision TooManyFailedIndexes(const Known& k) {
  const int64_t job_id = k.job.status.job_id();
  if (guards::CancelDue(k)) {
    Decision d = Do(Action::kCancel, "more indexes failed than spec.array.maxFailedIndexes");
    d.api_version = ApiVersionOf(k.cluster);
    d.job_id = job_id;
    d.events.push_back({kWarning, "MaxFailedIndexesExceeded", "Cancel",
                        absl::StrCat("More indexes failed than spec.array.maxFailedIndexes (",
                                     k.job.spec.array().max_failed_indexes(),
                                     "): cancelling Slurm array job ", job_id, ".")});
    return d;
  }
  if (guards::CancelFailed(k.out)) {
    return RetryFailedCancel(k, job_id, "more indexes failed than spec.array.maxFailedIndexes",
                             "Cancel");
  }
  return StopAndRequeue(k.opt.cancel_wait_poll,
                        "waiting for the array cancelled after too many failed indexes");
}

// A run the deadline ended (Slurm's DEADLINE, or our cancel): Failed, never retried.
Decision EndedAtDeadline(const Known& k, v1alpha1::SlurmJobStatus desired) {
  v1alpha1::SlurmJobStatus s = StatusDeadlineExceeded(k.job, std::move(desired), k.now);
  std::string msg = s.message();
  return WriteIfChanged(k.job, std::move(s), {{kWarning, "DeadlineExceeded", "Track", msg}},
                        Stop("the Slurm job ended at its deadline"));
}

// A run of an array job ended (every index of it known ended): its failed indexes within
// spec.array.backoffLimitPerIndex are retried as a new run of those indexes only; more failed
// indexes than spec.array.maxFailedIndexes, or failures beyond the per-index limit, fail it.
Decision ArrayEnded(const Known& k, v1alpha1::SlurmJobStatus desired) {
  const int64_t gen = k.job.generation;
  const v1alpha1::ArraySpec& spec = k.job.spec.array();
  IndexRetry r = RetryIndexes(spec, desired.array());
  const size_t failed = r.retry.size() + r.failed_for_good.size();
  const std::optional<Time> deadline = ActiveDeadline(k.job);
  const bool past_deadline = deadline && k.now >= *deadline;
  if (failed == 0) {
    return WriteIfChanged(k.job, std::move(desired), {}, Stop("the array job has ended"));
  }
  const bool too_many = spec.has_max_failed_indexes() &&
                        static_cast<int64_t>(r.failed_for_good.size()) > spec.max_failed_indexes();
  if (!r.retry.empty() && !too_many && !past_deadline) {
    const std::string indexes = slurm::FormatIndexList(r.retry);
    std::string msg =
        absl::StrCat(desired.message(), " Retrying index", r.retry.size() == 1 ? " " : "es ",
                     indexes, " as run ", CurrentRun(desired) + 1,
                     " (spec.array.backoffLimitPerIndex ", spec.backoff_limit_per_index(), ").");
    Decision d = Do(Action::kWriteStatus, "indexes of the array failed; retrying them");
    v1alpha1::SlurmJobStatus next = desired;
    *next.mutable_array() = ArrayStatusForRetry(desired.array(), r.retry);
    d.status =
        StatusForNewRun(next, desired.run_id(), desired.retries() + 1,
                        absl::StrCat("Retried indexes ", indexes), "Retrying", msg, gen, k.now);
    d.events.push_back({kWarning, "Retrying", "Track", msg});
    return d;
  }
  std::string why = too_many        ? absl::StrCat(r.failed_for_good.size(), " indexes failed (",
                                                   slurm::FormatIndexList(r.failed_for_good),
                                                   "), more than spec.array.maxFailedIndexes ",
                                                   spec.max_failed_indexes())
                    : past_deadline ? std::string("spec.activeDeadlineSeconds passed")
                                    : absl::StrCat("index", failed == 1 ? " " : "es ",
                                                   desired.array().failed_indexes(),
                                                   " failed after ", spec.backoff_limit_per_index(),
                                                   " retries (spec.array.backoffLimitPerIndex)");
  desired.set_message(absl::StrCat(desired.message(), " Not retried: ", why, "."));
  if (too_many) desired.set_reason("MaxFailedIndexesExceeded");
  return WriteIfChanged(k.job, std::move(desired), {}, Stop("the array job has ended"));
}

Decision JobEnded(const Known& k) {
  const int64_t gen = k.job.generation;
  std::vector<EventSpec> events;
  v1alpha1::SlurmJobStatus desired = Observed(k, &events);
  if (guards::RunIdChanged(k.job)) return StartSupersedingRun(k.job, gen, k.now, &desired);
  if (EndedByDeadline(k.job, *k.out.query->value().job, k.now)) {
    return EndedAtDeadline(k, std::move(desired));
  }
  if (k.job.spec.has_array() && desired.has_array()) return ArrayEnded(k, std::move(desired));
  FailureVerdict verdict = EvaluateFailurePolicy(k.job.spec, desired);
  if (const std::optional<Time> deadline = ActiveDeadline(k.job);
      deadline && k.now >= *deadline && verdict.kind != FailureVerdict::Kind::kSucceeded) {
    verdict = {FailureVerdict::Kind::kFail, "spec.activeDeadlineSeconds passed"};
  }
  using K = FailureVerdict::Kind;
  if (verdict.kind == K::kRetry || verdict.kind == K::kRetryUncounted) {
    const int32_t retries = desired.retries() + (verdict.kind == K::kRetry ? 1 : 0);
    std::string msg = absl::StrCat(desired.message(), " Retrying as run ", CurrentRun(desired) + 1,
                                   ": ", verdict.why, ".");
    Decision d = Do(Action::kWriteStatus, "the run failed; the failure policy retries it");
    d.status = StatusForNewRun(desired, desired.run_id(), retries,
                               absl::StrCat("Retried: ", verdict.why), "Retrying", msg, gen, k.now);
    d.events.push_back({kWarning, "Retrying", "Track", msg});
    return d;
  }
  if (verdict.kind == K::kFail && !verdict.why.empty()) {
    desired.set_message(absl::StrCat(desired.message(), " Not retried: ", verdict.why, "."));
  }
  return WriteIfChanged(k.job, std::move(desired), std::move(events),
                        Stop("the Slurm job has ended"));
}

// spec.suspend holds a pending job in Slurm (priority 0) and releases it when
// cleared.
Decision Holding(const Known& k) {
  const auto& job = k.job;
  if (!k.out.update) {
    Decision d = Do(Action::kUpdateJob,
                    job.spec.suspend() ? "hold the pending job" : "release the held job");
    d.api_version = ApiVersionOf(k.cluster);
    d.job_id = job.status.job_id();
    d.update.hold = job.spec.suspend();
    return d;
  }
  std::vector<EventSpec> events;
  v1alpha1::SlurmJobStatus desired = Observed(k, &events);
  std::string msg =
      absl::StrCat(job.spec.suspend() ? "Holding" : "Releasing", " Slurm job ", job.status.job_id(),
                   " failed: ", k.out.update->status().message(), "; retrying.");
  return WriteIfChanged(job, StatusRetrying(desired, "HoldFailed", msg, job.generation, k.now),
                        {{kWarning, "HoldFailed", "Suspend", msg}}, StopAndBackoff(msg));
}

// A write that only adds detail to a young pending job, or only moves a job
// that just ended to COMPLETING, waits a little (DecideOptions): the next
// look at it until then.
std::optional<Decision> DeferredWrite(const Known& k, const v1alpha1::SlurmJobStatus& desired,
                                      const std::vector<EventSpec>& events, Duration requeue) {
  if (!events.empty()) return std::nullopt;
  if (k.opt.pending_details_delay > Duration::zero() &&
      OnlyQueueDetailsChange(desired, k.job.status)) {
    if (std::optional<Time> submitted = SubmittedAt(k.job.status)) {
      const Time due = *submitted + k.opt.pending_details_delay;
      if (k.now < due) {
        // Looked at again by then (the tracker also wakes it on any change).
        return StopAndRequeue(std::min<Duration>(requeue, due - k.now),
                              "pending; queue details are written with the next change");
      }
    }
  }
  const std::optional<Time>& ended = k.out.query->value().job->end_time;
  if (k.opt.completing_write_delay > Duration::zero() && ended &&
      OnlyCompletingChange(desired, k.job.status)) {
    const Time due = *ended + k.opt.completing_write_delay;
    if (k.now < due) {
      return StopAndRequeue(std::min<Duration>(requeue, due - k.now),
                            "completing; written with the final state");
    }
  }
  return std::nullopt;
}

Decision Active(const Known& k) {
  const auto& job = k.job;
  std::vector<EventSpec> events;
  v1alpha1::SlurmJobStatus desired = Observed(k, &events);
  // A job that started is no longer held; a hold or release that Slurm
  // accepted in this reconcile is recorded.
  if (k.out.query->value().job->state != slurm::BaseState::kPending) {
    desired.set_held(false);
  } else if (guards::HoldOutOfDate(k)) {
    desired.set_held(job.spec.suspend());
    events.push_back(
        {kNormal, job.spec.suspend() ? "Held" : "Released", "Suspend",
         absl::StrCat("Slurm job ", job.status.job_id(),
                      job.spec.suspend() ? " is held (spec.suspend)." : " is released.")});
  }
  Decision then = StopAndRequeue(AtMostUntilDeadline(k, PollInterval(desired, k.now, k.opt)),
                                 "the Slurm job is active");
  if (std::optional<Decision> later = DeferredWrite(k, desired, events, *then.requeue_after)) {
    return *later;
  }
  return WriteIfChanged(job, std::move(desired), std::move(events), then);
}

// One row of the table in stage.h each.
Decision DecideStage(const Known& k, Assessment a) {
  switch (a.stage) {
    case Stage::kReleased:
      return Stop("being deleted; our finalizer is gone");
    case Stage::kDeletionSettling:
      return DeletionSettling(k);
    case Stage::kDeletingUnsubmitted:
      return DeletingUnsubmitted(k);
    case Stage::kDisowning:
      return Disowning(k);
    case Stage::kDeletingEnded:
      return Do(Action::kRemoveFinalizer, "deleting; the Slurm job already ended");
    case Stage::kCancelBlocked:
      return CancelBlocked(k);
    case Stage::kDeletionClusterMoved:
      return DeletionClusterMoved(k);
    case Stage::kDeletionNotOurs:
      return DeletionNotOurs(k);
    case Stage::kCancelling:
      return Cancelling(k);
    case Stage::kRecordingSubmit:
      return RecordingSubmit(k);
    case Stage::kBlocked:
      return Stalled(k, a.plan->blocker->reason, a.plan->blocker->message,
                     a.plan->blocker->requeue);
    case Stage::kLoadingScript:
      if (!a.plan->needs_script) {
        return Do(Action::kLoadSecrets, "read spec.environment's Secret values");
      }
      return Do(Action::kLoadScript, "read the script from its ConfigMap");
    case Stage::kUnprotected:
      return Protecting(k, *a.plan);
    case Stage::kConfirmingWrite:
      return Do(Action::kReread,
                "a write of this SlurmJob got no answer: read what is stored before submitting");
    case Stage::kRefused:
      return Refused(k);
    case Stage::kSettling:
      return Settling(k);
    case Stage::kSearching:
      return Searching(k, *a.plan);
    case Stage::kSearchFailed:
      return SearchFailed(k);
    case Stage::kSuspended:
      return Suspended(k);
    case Stage::kWaitingForDeps:
      return WaitingForDeps(k, *a.plan);
    case Stage::kClusterUnprotected:
      return ClusterUnprotected(k);
    case Stage::kRecordingTarget:
      return RecordingTarget(k);
    case Stage::kReadyToSubmit:
      return ReadyToSubmit(std::move(*a.plan));
    case Stage::kSubmitFailed:
      return SubmitFailed(k);
    case Stage::kKeptForGitOps:
      return KeptForGitOps(k, DecideTtl(k.job, k.now));
    case Stage::kTtlWaiting:
      return TtlWaiting(k, DecideTtl(k.job, k.now));
    case Stage::kTtlExpired:
      return TtlExpired(k);
    case Stage::kAwaitingUsage:
      return AwaitingUsage(k);
    case Stage::kEnded:
      return Ended(k);
    case Stage::kClusterGone:
      return ClusterGone(k);
    case Stage::kSuperseded:
      return Superseded(k);
    case Stage::kClusterMoved:
      return ClusterMovedAway(k);
    case Stage::kNotOurs:
      return NotOurJob(k);
    case Stage::kFollowing:
      return Following(k);
    case Stage::kQueryFailed:
      return QueryFailed(k);
    case Stage::kJobMissing:
      return JobMissing(k);
    case Stage::kDeadlineExceeded:
      return DeadlineExceeded(k);
    case Stage::kTooManyFailedIndexes:
      return TooManyFailedIndexes(k);
    case Stage::kJobEnded:
      return JobEnded(k);
    case Stage::kHolding:
      return Holding(k);
    case Stage::kActive:
      return Active(k);
  }
  return Stop("unknown stage");
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
  const Known k{job, cluster, script, outcomes, memo, now, options};
  return DecideStage(k, Assess(k));
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

Time SettleEnd(const Memo& memo, const DecideOptions& options) {
  const bool ours = memo.submit_outcome_unknown && memo.submit_attempt_at;
  return (ours ? *memo.submit_attempt_at : options.process_start) + options.submit_settle;
}

Time SearchNotBefore(const Memo& memo, const DecideOptions& options, Time now) {
  const Time end = SettleEnd(memo, options);
  if (end <= now) return end;
  if (memo.submit_outcome_unknown && memo.submit_attempt_at) return now;
  return options.process_start;
}

namespace {

// What a submit's outcome proves: the id it got, that it may have landed unseen, or that
// Slurm refused this generation of the SlurmJob on this generation of the cluster.
void RememberSubmit(Memo* memo, const Outcomes& out, const JobFacts& job,
                    const ClusterFacts& cluster, Time now) {
  if (!memo->submit_attempt_at || out.submit_sent_at > *memo->submit_attempt_at) {
    memo->submit_attempt_at = out.submit_sent_at;
  }
  memo->submit_target = LocationOf(cluster.spec);  // where Submit sent it
  if (out.submit->ok()) {
    memo->submitted_job_id = out.submit->value();
    memo->submitted_to = LocationOf(cluster.spec);
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

// What a completed search for the tag proves: the job it found is ours (adopted), or,
// once every submit that may still be in flight would have landed, that there was none.
void RememberTagLookup(Memo* memo, const Outcomes& out, const ClusterFacts& cluster,
                       const DecideOptions& opt) {
  if (out.tag_lookup->value()) {
    memo->submitted_job_id = *out.tag_lookup->value();
    memo->submitted_to = out.tag_lookup_where.value_or(LocationOf(cluster.spec));
    memo->submitted_job_adopted = true;
    memo->submit_outcome_unknown = false;
    memo->settle_until.reset();
    return;
  }
  const Time settle_until = SettleEnd(*memo, opt);
  if (out.tag_lookup_at >= settle_until) {
    memo->no_earlier_submit = true;
    memo->submit_outcome_unknown = false;
    memo->settle_until.reset();
  } else {
    memo->settle_until = settle_until;
  }
}

// A successful look at the job: when, and since when Slurm has not known it.
void RememberQuery(Memo* memo, const Outcomes& out, Time now) {
  memo->last_query_at = now;
  memo->look_unrecorded = false;
  memo->looks_failing_since.reset();
  if (out.query->value().job) {
    memo->not_found_since.reset();
  } else if (!memo->not_found_since) {
    memo->not_found_since = now;
  }
}

}  // namespace

void UpdateMemo(Memo* memo, const Outcomes& out, const JobFacts& job, const ClusterFacts& cluster,
                Time now, const DecideOptions& opt) {
  // A new incarnation, or a newer run: start afresh. A status showing an
  // older run than the memo is a stale cache; the memo stays.
  if (memo->uid != job.id.uid || CurrentRun(job.status) > memo->run) {
    // What this process knows of the stored object is not the run's: it stays with the
    // incarnation.
    const bool write_outcome_unknown = memo->uid == job.id.uid && memo->write_outcome_unknown;
    *memo = Memo{};
    memo->write_outcome_unknown = write_outcome_unknown;
    memo->uid = job.id.uid;
    memo->run = CurrentRun(job.status);
    if (out.started_run) {
      memo->started_run = true;
      memo->no_earlier_submit = true;
    }
  }
  if (out.submit) RememberSubmit(memo, out, job, cluster, now);
  if (out.tag_lookup && out.tag_lookup->ok()) RememberTagLookup(memo, out, cluster, opt);
  if (out.added_finalizer) memo->no_earlier_submit = true;
  if (out.query && out.query->ok()) RememberQuery(memo, out, now);
  if (out.query && !out.query->ok() && IsTransient(out.query->status().code()) &&
      !out.query_held_back && !memo->looks_failing_since) {
    memo->looks_failing_since = now;
  }
  if (out.cancel && out.cancel->ok()) memo->cancel_requested_at = now;
  if (out.update && out.update->ok() && job.deleting) memo->disowned = true;
}

}  // namespace slurmop::reconcile
