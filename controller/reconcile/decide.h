// File: controller/reconcile/decide.h
//
// The SlurmJob reconciler's decisions, as a pure function.
//
// Decide() looks at everything known about one SlurmJob (the object, its
// cluster, its script, what the operator did and learned so far in this
// reconcile, and a small memo carried between reconciles) and returns the ONE
// next step. The executor performs that step, records its outcome in
// `Outcomes`, and asks again, until a step says to stop. Decide() is the
// state machine of stage.h: it computes the job's Stage from these facts and
// does what that stage's row of the table says. No I/O and no clock
// reads happen here: `now` is an input. This keeps every branch testable
// with plain values.
//
// Promises the decisions keep:
//  * A job is submitted at most once per SlurmJob: once a submit returned an
//    id it is kept in the memo until the status records it, and a submit whose
//    outcome is unknown is followed by a search for the job's tag, never by a
//    blind second submit.
//  * Nothing is cancelled, failed or deleted because a job briefly cannot be
//    found: it is Unknown until Slurm says otherwise.
//  * The finalizer is added before the submit and removed only once the
//    Slurm job is final (or never existed, or deletionPolicy is Orphan).
//  * A status is written only when it would change.

#ifndef SLURMOP_CONTROLLER_RECONCILE_DECIDE_H_
#define SLURMOP_CONTROLLER_RECONCILE_DECIDE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/common/clock.h"
#include "controller/reconcile/cluster_access.h"
#include "controller/reconcile/job_descriptor.h"
#include "controller/reconcile/job_status.h"
#include "controller/reconcile/memo_location.h"
#include "controller/slurm/job_model.h"
#include "slurmoperator/v1alpha1/slurmcluster.pb.h"
#include "slurmoperator/v1alpha1/slurmjob.pb.h"

namespace slurmop::reconcile {

namespace v1alpha1 = ::slurmoperator::v1alpha1;

// A SlurmJob named in spec.dependsOn, as the cache shows it.
struct DependencyFacts {
  std::string name;
  std::string condition;  // afterok | afterany | afternotok
  bool found = false;
  int64_t job_id = 0;     // its current run's Slurm job (0: not submitted yet)
  std::string job_state;  // its status.jobState
};

// The SlurmJob as last read (informer cache or the response of our last write).
struct JobFacts {
  JobIdentity id;
  int64_t generation = 0;
  bool deleting = false;                           // metadata.deletionTimestamp is set
  bool has_finalizer = false;                      // our finalizer is in metadata.finalizers
  std::map<std::string, std::string> labels;       // metadata.labels
  std::map<std::string, std::string> annotations;  // metadata.annotations
  // The current run's submit target as the annotation records it, when its
  // HMAC verified (submit_target_note.h); the executor fills it in.
  std::optional<v1alpha1::SlurmJobLocation> noted_target;
  v1alpha1::SlurmJobSpec spec;
  v1alpha1::SlurmJobStatus status;
  std::vector<DependencyFacts> dependencies;  // one per spec.dependsOn entry, in order
};

// The SlurmCluster or ClusterSlurmCluster the job names (or the operator's default cluster).
struct ClusterFacts {
  // kRefused: the cluster exists but this job may not use it (cluster_access.h); nothing may be
  // sent to it for this job.
  enum class Kind { kUnspecified, kNotFound, kFound, kRefused };
  Kind kind = Kind::kUnspecified;
  std::string name;
  bool cluster_scoped = false;  // a ClusterSlurmCluster
  // "namespace/name" of a SlurmCluster, "/name" of a ClusterSlurmCluster (tracker and probe key).
  std::string key;
  int64_t generation = 0;  // the cluster's metadata.generation
  // kFound: metadata.deletionTimestamp is set. Its jobs are still followed and cancelled (it is
  // kept while SlurmJobs name it, cluster_protection.h), but no new job is submitted to it.
  bool deleting = false;
  // kFound, a SlurmCluster: it does not carry kClusterInUseFinalizer yet, or its annotation does
  // not name its credentials Secret yet (cluster_protection.h), so deleting its namespace would
  // delete it (or the Secret) at once; nothing is submitted to it until the protector kept both.
  bool unprotected = false;
  // With `unprotected`: why the protector's last try to keep it was refused ("" while none was,
  // e.g. before its first try), from ProtectionProblems.
  std::string protection_problem;
  v1alpha1::SlurmClusterSpec spec;
  ClusterIdentity identity;  // kFound: whose credentials the calls carry
  ClusterAccess access;      // kRefused: why (reason, message, transient)
};

// The script text, when it comes from a ConfigMap.
struct ScriptFacts {
  enum class Kind { kNotLoaded, kLoaded, kMissing };
  Kind kind = Kind::kNotLoaded;
  std::string text;   // kLoaded
  std::string error;  // kMissing: what is missing or may not be read, for the user
};

// What Slurm said about the job: found (live queue or accounting) or unknown to both.
struct SlurmView {
  std::optional<slurm::JobInfo> job;
  bool from_accounting = false;  // the record is /slurmdb's (the job left the live queue)
};

// Results of the steps taken during this reconcile (start empty).
struct Outcomes {
  std::optional<absl::StatusOr<int64_t>> submit;  // job id
  bool submit_may_have_been_delivered = false;    // with a failed submit
  // With a failed submit that was never sent because the project's call
  // budget had no room (agentplatform::HeldBackByBudget): when to try again.
  std::optional<Duration> submit_held_back;
  // With submit_held_back: why, when it was not the budget but the cluster
  // (it did not answer; agentplatform::HeldBackWhileSilent), else "".
  std::string submit_held_back_why;
  std::optional<absl::StatusOr<std::optional<int64_t>>> tag_lookup;  // id of a job with our tag
  Time tag_lookup_at{};                                              // when the search started
  // With tag_lookup: where the search looked (Decision::search_at), and
  // whether it failed before anything was sent (no credentials or dialect).
  std::optional<v1alpha1::SlurmJobLocation> tag_lookup_where;
  bool tag_lookup_unsent = false;
  // With a failed tag_lookup that was never sent because the project's call
  // budget had no room: when to try again. Nothing failed, so the status
  // stays as it was (a write per retry was a watch event and a reconcile).
  std::optional<Duration> tag_lookup_held_back;
  Time submit_sent_at{};  // when the submit was sent (with `submit`)
  std::optional<absl::StatusOr<SlurmView>> query;
  // With a failed query: it was never sent, because the project's call budget had no room.
  bool query_held_back = false;
  std::optional<absl::StatusOr<slurm::CancelResponse>> cancel;
  std::optional<absl::StatusOr<slurm::UpdateResponse>> update;
  // The values of spec.environment[].valueFrom.secretKeyRef, by variable name (kLoadSecrets).
  // Only ever copied into the submit's descriptor: never into status, Events or logs.
  std::optional<absl::StatusOr<SecretEnv>> secret_env;
  bool added_finalizer = false;  // this reconcile added our finalizer
  bool started_run = false;      // this reconcile wrote the status that started the current run
};

// Carried between reconciles of one SlurmJob, in the executor's memory only
// (issue #5 makes the tag search cover a restart, where this memo is empty).
struct Memo {
  std::string uid;  // the memo belongs to this incarnation
  int32_t run = 1;  // ... and to this run (status.run)
  // The Slurm job this process submitted (or adopted) for this incarnation.
  // Kept after the status records it: the informer cache can lag behind our
  // own writes, and a stale object without jobId must never cause a second
  // submit (the write based on it fails with a conflict instead).
  std::optional<int64_t> submitted_job_id;
  bool submitted_job_adopted = false;  // ... found by its tag rather than submitted now
  // ... where (the SlurmCluster's spec when it was submitted or found).
  MemoLocation submitted_to;
  bool submit_outcome_unknown = false;  // look for the tag before submitting again
  // Where this process last sent a submit for this run: with
  // submit_outcome_unknown, where the tag search looks (even while the
  // informer cache still shows a status without status.submitTarget).
  MemoLocation submit_target;
  // When this process last sent a submit for this run.
  std::optional<Time> submit_attempt_at;
  // A search that found nothing proves no earlier submit only if it started
  // after any such submit could still be in flight: after this time.
  std::optional<Time> settle_until;
  // This process knows that no earlier submit happened for this SlurmJob (it
  // added the finalizer itself, or searched for the tag and found nothing).
  // Without it, a finalizer with no jobId means an earlier process may have
  // submitted and died before recording the id: search before submitting.
  bool no_earlier_submit = false;
  // A submit refused for good (not transient, not ambiguous): when, and the
  // SlurmCluster generation it was refused under (a cluster edit may fix it).
  std::optional<Time> submit_refused_at;
  std::optional<int64_t> refused_generation;
  std::optional<int64_t> refused_cluster_generation;
  std::optional<Time> cancel_requested_at;
  std::optional<Time> last_query_at;
  // The status the last look led to was not written (the status write
  // failed): that look does not count as recent, so the next reconcile looks
  // again and writes what Slurm says, however soon it comes (#13 item 9).
  // Set by the executor when a status write fails after a look; cleared by
  // the next look. A write that carries no look (the one recording a submit)
  // leaves it alone.
  bool look_unrecorded = false;
  std::optional<Time> not_found_since;
  // Since when this process's looks at the job (kQuery) have kept failing for now (a transient
  // error that was sent, not held back by the call budget); cleared by a look that succeeds.
  // Past DecideOptions::tracking_failure_grace the status says so (TrackingRetrying, or
  // DeletionRetrying while the SlurmJob is deleted), where before it only kept its last phase.
  std::optional<Time> looks_failing_since;
  // deletionPolicy Orphan: the job's tag was replaced by DisownedTag, so the
  // orphan sweep leaves it running.
  bool disowned = false;
  // This process wrote the status that started this run: no submit of it
  // happened before.
  bool started_run = false;
  // A write of this SlurmJob (status write, finalizer patch) got no answer that says it was not
  // applied (no answer at all, or a 5xx): it may have landed. The stored object may then differ
  // from both this process's last view and the cache, which need not ever show that write (a
  // watch can lag or drop events), so where the stored status says a submit goes is unknown.
  // No submission stage acts on it until a fresh read or another write's answer shows the stored
  // object (stage kConfirmingWrite). Set and cleared by the executor; kept across runs.
  bool write_outcome_unknown = false;
};

// Tunables, with the defaults used in production.
struct DecideOptions {
  Duration min_poll = std::chrono::seconds(1);   // right after submit
  Duration max_poll = std::chrono::seconds(30);  // long-running jobs
  Duration cancel_resend = std::chrono::seconds(30);
  Duration cancel_wait_poll = std::chrono::seconds(1);
  Duration missing_script_retry = std::chrono::seconds(30);
  Duration permission_retry = std::chrono::minutes(5);
  // How long a submit may still be in flight (in Agent Platform or Slurm)
  // after it was sent, or after a restart for a submit an earlier process
  // may have sent: a tag search that finds nothing before then proves nothing.
  Duration submit_settle = std::chrono::seconds(60);
  // While a job is still pending this soon after its submit, a change that
  // only adds queue details (Slurm's pending reason and submit time, and the
  // messages quoting them) is not written on its own: most jobs start within
  // it, and the write that records RUNNING carries them. A job still pending
  // after it gets them written. Keeps a plain life at one status write per
  // visible state (submitted, running, finished); 0 writes them at once.
  Duration pending_details_delay = std::chrono::seconds(10);
  // Likewise a running job that ended but is still COMPLETING (epilog, I/O
  // flush; usually well under a second): the COMPLETING state gets a write
  // of its own only once the job ended this long ago.
  Duration completing_write_delay = std::chrono::seconds(10);
  // How long after a run's end its usage is still looked for when accounting
  // did not show it at the first look (stage kAwaitingUsage; the looks are
  // NextUsageLook's, the last 300 s after the end).
  Duration usage_window = std::chrono::minutes(6);
  // How long looks at a job may keep failing for now (retried with backoff, the status showing
  // its last known state) before the status says they fail (Memo::looks_failing_since). Short
  // outages of Agent Platform or slurmrestd pass unseen; a cluster whose job list cannot be read
  // (a malformed answer, one record past the size bound) does not freeze its SlurmJobs silently.
  Duration tracking_failure_grace = std::chrono::minutes(2);
  // When this process started (the executor sets it).
  Time process_start{};
  // Looks are answered from the cluster's shared list (job_tracker.h).
  bool batched = false;
  // The executor has a note key: a first submit's target may ride with the
  // finalizer (stage.h, TargetRidesWithFinalizer; submit_target_note.h).
  bool note_target_with_finalizer = false;
};

enum class Action {
  kNone,  // stop: see requeue_after / retry_with_backoff
  kAddFinalizer,
  kRemoveFinalizer,
  kLoadScript,   // read spec.scriptFrom's ConfigMap key into ScriptFacts
  kLoadSecrets,  // read spec.environment[].valueFrom.secretKeyRef into Outcomes::secret_env
  kSubmit,       // descriptor + dialect version
  kFindByTag,    // look for a live job carrying SubmissionTag(id)
  kQuery,        // job_id: live queue, then accounting
  kCancel,       // job_id
  kUpdateJob,    // job_id + update (hold, release, disown)
  kWriteStatus,  // status
  kDeleteJob,    // the SlurmJob itself, uid as precondition (spec.ttlSecondsAfterFinished)
  kReread,       // the SlurmJob from the API server, not the cache (Memo::write_outcome_unknown)
};

struct Decision {
  Action action = Action::kNone;
  slurm::JobDescriptor descriptor;  // kSubmit
  nlohmann::json submit_body;       // kSubmit: the descriptor in api_version's dialect
  std::string api_version;          // kSubmit, kQuery, kCancel, kFindByTag
  int64_t job_id = 0;               // kQuery, kCancel, kUpdateJob
  slurm::JobUpdate update;          // kUpdateJob
  // kQuery: how old an answer may be (the batched tracker serves it from its
  // latest list of the cluster's jobs when that is recent enough).
  Duration max_age = Duration::zero();
  // kQuery: read accounting's record only (GET /slurmdb/<v>/job/<id>), not
  // the live queue: the run's end is known, its usage is what is looked for
  // (stage kAwaitingUsage). The answer is a SlurmView from_accounting.
  bool accounting_only = false;
  // kFindByTag: the live queue may be read from a list of the cluster's jobs
  // sent no earlier than this (SearchNotBefore), shared with other searches.
  Time search_not_before{};
  // kFindByTag: where to look (guards::SearchLocation). Where the SlurmCluster
  // points now, the tracker's shared list answers; elsewhere (an earlier
  // submit went there before a repoint) the executor asks that cluster
  // directly, with the SlurmCluster's credentials.
  std::optional<v1alpha1::SlurmJobLocation> search_at;
  v1alpha1::SlurmJobStatus status;  // kWriteStatus
  // kAddFinalizer: the submit that follows goes here; the patch records it
  // too (submit_target_note.h), so no status write is needed before it.
  std::optional<v1alpha1::SlurmJobLocation> note_target;
  std::string uid;  // kDeleteJob: preconditions.uid
  // Recorded once the action succeeded (for kNone: right away).
  std::vector<EventSpec> events;
  // kNone: when to look again (nullopt: only when something changes).
  std::optional<Duration> requeue_after;
  // kNone: something transient failed; requeue with the per-key backoff.
  bool retry_with_backoff = false;
  // Why, for the log.
  std::string why;
};

Decision Decide(const JobFacts& job, const ClusterFacts& cluster, const ScriptFacts& script,
                const Outcomes& outcomes, const Memo& memo, Time now,
                const DecideOptions& options = {});

// When a tag search that finds nothing starts to prove that no earlier
// submit happened: once a submit that may still be in flight (this
// process's with an unknown outcome, else an earlier process's, before
// options.process_start) would have landed.
Time SettleEnd(const Memo& memo, const DecideOptions& options);

// The earliest a list of the live queue may have been sent to answer a tag
// search now (Decision::search_not_before). After SettleEnd, a list sent
// after it proves as much as one sent now, so searches share it (and one
// that started before it would never prove anything: the search would not
// end). Before SettleEnd, our own submit with an unknown outcome is looked
// for in a list sent now (it has most likely landed: adopt it at once); an
// earlier process's in any list since this process's window began.
Time SearchNotBefore(const Memo& memo, const DecideOptions& options, Time now);

// Folds this reconcile's outcomes into the memo (after each step).
void UpdateMemo(Memo* memo, const Outcomes& outcomes, const JobFacts& job,
                const ClusterFacts& cluster, Time now, const DecideOptions& options = {});

// True when a failed submit may have reached Slurm: a transport failure after
// the request was written, or an answer that does not prove a refusal.
// Agent Platform's own refusals (PERMISSION_DENIED, NOT_FOUND,
// INVALID_ARGUMENT, UNAUTHENTICATED, RESOURCE_EXHAUSTED, ...) happen before
// anything reaches Slurm.
bool SubmitMayHaveReachedSlurm(const absl::Status& error, bool transport_says_delivered);

// A failure that may pass by itself (unavailable, timed out, internal,
// resource exhausted, aborted, cancelled): retried with backoff, never a
// refusal.
bool IsTransient(absl::StatusCode code);

// Slurm's dependency expression for the job's dependsOn, e.g.
// "afterok:12:13,afterany:14", leaving out dependencies already met.
// `waiting_for` (non-empty) names what has no Slurm job yet; `impossible`
// (non-empty) explains a dependency that can never be met.
struct DependencyPlan {
  std::string expression;
  std::string waiting_for;
  std::string impossible;
};
DependencyPlan PlanDependencies(const std::vector<DependencyFacts>& deps);

// How long to wait before asking Slurm again about an active job.
Duration PollInterval(const v1alpha1::SlurmJobStatus& status, Time now,
                      const DecideOptions& options);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_DECIDE_H_
