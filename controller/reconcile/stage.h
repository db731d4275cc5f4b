// File: controller/reconcile/stage.h
//
// The lifecycle of one SlurmJob as a named state machine.
//
// A Stage is not stored anywhere: it is computed, at every step of a
// reconcile, from what is known (the object, its cluster and script, the
// memo carried between reconciles and this reconcile's outcomes). Decide()
// (decide.h) computes the stage and then does what the stage's row below
// says; the executor performs that action, records its outcome, and the next
// step computes the stage again. The group is chosen first (being deleted;
// no Slurm job in the status; one recorded), then the stages of that group
// are tried top to bottom: the first whose guard holds is the stage. "Next
// stage" is where the job goes once the action's outcome is as expected.
//
// clang-format off
// Stage               Guard (first true wins)      Action (-> on its outcome)   Next stage
// ------------------- ---------------------------- ---------------------------- ----------------
// BEING DELETED (BeingDeleted)
// kReleased           FinalizerGone                none                         (object is gone)
// kDeletionSettling  KnownJobId == 0 and          none, Event SubmitMayLand    kDeletingUnsubmitted
//                     EarlierSubmitPossible and    (once), requeue at the       (window closed)
//                     ClusterFound and             window's end
//                     SettleWindowOpen
// kDeletingUnsubmitted KnownJobId == 0             EarlierSubmitPossible and    found: kDisowning
//                                                  ClusterFound: FindByTag at   or kCancelling;
//                                                  SearchLocation (failed:      empty too early:
//                                                  backoff, unless it could not kDeletionSettling;
//                                                  be sent and NoSubmitRecorded: else kReleased
//                                                  Event, RemoveFinalizer);
//                                                  else RemoveFinalizer
// kDeletingEnded      JobEnded                     RemoveFinalizer              kReleased
// kDisowning          OrphanPolicy                 UpdateJob comment :=         kReleased
//                                                  DisownedTag (unless Disowned
//                                                  or !ClusterFound; transient
//                                                  failure: WriteStatus(Orphan-
//                                                  Failed), backoff), then
//                                                  RemoveFinalizer
// kCancelBlocked      !ClusterFound                WriteStatus(CancelBlocked),  kCancelling
//                                                  requeue 30 s                 (cluster back)
// kDeletionClusterMoved ClusterMovedSinceSubmit    WriteStatus(CancelBlocked:   kCancelling
//                                                  where it runs, where the     (pointed back)
//                                                  cluster points), requeue 30 s
// kDeletionNotOurs    RecordNotOurs (the look of   WriteStatus(CancelBlocked),  kReleased (the
//                     kCancelling)                 requeue permission_retry     user removes the
//                                                                               finalizer)
// kCancelling         otherwise                    Query (failed: backoff;      kReleased
//                                                  LooksFailingLong or refused:
//                                                  WriteStatus(Deletion-
//                                                  Retrying or the refusal));
//                                                  ended: RemoveFinalizer;
//                                                  CancelDue: Cancel; Cancel-
//                                                  Failed: WriteStatus(Cancel-
//                                                  Failed), backoff; else
//                                                  requeue cancel_wait_poll
//                     (each WriteStatus of the deletion stages carries its Warning Event: a
//                     namespace being deleted refuses new Events but takes status writes)
// NOT SUBMITTED (!HasSlurmJob)
// kRecordingSubmit    SubmittedJobKnown (memo,     WriteStatus(jobId)           kFollowing
//                     SubmitReturnedId or
//                     TagSearchFoundJob)
// kBlocked            a Blocker: cluster unnamed,  WriteStatus(Stalled), stop   kUnprotected once
//                     missing, being deleted or    (script missing: requeue)    the spec, cluster
//                     invalid; spec invalid;                                    or ConfigMap is
//                     script missing; not                                       fixed
//                     expressible in the version
// kLoadingScript      ScriptNotLoaded, or the      LoadScript, or LoadSecrets   kBlocked or
//                     environment's Secrets        (spec.environment[].         kUnprotected
//                     not read yet                 valueFrom.secretKeyRef)
// kUnprotected        !has_finalizer               AddFinalizer (this process   kReadyToSubmit
//                                                  now knows no earlier submit);
//                                                  with a note key, when the
//                                                  next stage would be
//                                                  kRecordingTarget, the same
//                                                  patch records the target
//                                                  (TargetRidesWithFinalizer,
//                                                  submit_target_note.h)
// kConfirmingWrite    WriteOutcomeUnknown (a       Reread (from the API server, the stage the
//                     write of this SlurmJob got   not the cache; failed:       stored object
//                     no answer: it may have       backoff)                     shows
//                     landed unseen)
// kRefused            !SubmitTried and (Rejected-  stop (RefusedRecently:       kReadyToSubmit
//                     ForThisGeneration or         requeue at permission_retry) on a spec or
//                     RefusedRecently)                                          cluster change
// kSettling           EarlierSubmitPossible and    WriteStatus(SubmitOutcome-   kSearching
//                     SettleWindowOpen             Unknown), requeue at its end
// kSearching          EarlierSubmitPossible and    FindByTag at SearchLocation  kRecordingSubmit,
//                     !TagSearchDone               (status.submitTarget: where  kSettling or
//                                                  an earlier submit went)      kReadyToSubmit
// kSearchFailed       TagSearchFailed              WriteStatus(SubmitOutcome-   kSearching
//                                                  Unknown), backoff
// kSubmitFailed       SubmitTried (and failed; an  WriteStatus: unknown outcome kSearching,
//                     unknown outcome meets        or transient: backoff;       kReadyToSubmit
//                     kSearching first)            refused: Stalled             or kRefused
// kSuspended          spec.suspend                 WriteStatus(Suspended), stop kReadyToSubmit
// kWaitingForDeps     DependenciesUnmet            WriteStatus(Pending, or      kReadyToSubmit
//                                                  Stalled if never met), stop
// kClusterUnprotected ClusterUnprotected (its      none, requeue 1 s (the       kReadyToSubmit
//                     SlurmCluster does not carry  protector adds it; the
//                     cluster-in-use yet)          cluster's change wakes us);
//                                                  the protector refused:
//                                                  WriteStatus(ClusterProtection-
//                                                  Failed), requeue permission_retry
// kRecordingTarget    !SubmitTargetRecorded        WriteStatus(submitTarget :=  kReadyToSubmit
//                     (status.submitTarget, or     where the cluster points,
//                     without it the verified      and a StatusSaysRejected
//                     note, is not where the       taken out: Stalled False),
//                     cluster points), or          so a crash or repoint after
//                     StatusSaysRejected (a retry  the submit knows where to look
//                     after a cluster change)
// kReadyToSubmit      otherwise                    Submit (descriptor and body  kRecordingSubmit
//                                                  rendered here, once)         or kSubmitFailed
// SUBMITTED (HasSlurmJob)
// kTtlExpired         JobEnded and DecideTtl:      DeleteJob (uid precondition, kDeletingEnded
//                     kExpired (job_lifetime.h)    Background), Event TTLExpired
// kAwaitingUsage      JobEnded and UsageAwaited    Query at NextUsageLook       kEnded (usage
//                     (the run started and ended,  (job_usage.h; requeue until  recorded, or the
//                     its usage is not recorded:   then); usage shown: Write-   window passed)
//                     accounting lagged; within    Status(status.usage only)
//                     usage_window of its end)
// kKeptForGitOps      JobEnded and DecideTtl:      WriteStatus(TTLSkipped),     (kept)
//                     kKeptForGitOps (a GitOps     Event TTLSkippedGitOps-
//                     tool manages it)             Managed (once), stop
// kTtlWaiting         JobEnded and DecideTtl:      WriteStatus if changed,      kTtlExpired
//                     kWaiting                     requeue at the expiry
// kEnded              JobEnded                     RunIdChanged: WriteStatus    kReadyToSubmit
//                                                  (next run); else stop        (next run)
// kClusterGone        !ClusterFound                WriteStatus(Retrying),       kFollowing
//                                                  requeue 30 s                 (cluster back)
// kClusterMoved       ClusterMovedSinceSubmit      WriteStatus(Retrying:        kFollowing
//                     (status.submittedTo is not   ClusterChanged), Event,      (pointed back)
//                     where the cluster points)    requeue permission_retry
// kFollowing          !QueryDone                   PolledRecently (since the    kQueryFailed,
//                                                  spec's last change, its      kJobMissing,
//                                                  status written) and not      kNotOurs,
//                                                  DeadlinePassed: stop until   kJobEnded, ...
//                                                  the poll (or the deadline)
//                                                  is due; else Query
// kQueryFailed        QueryFailed                  transient: backoff (Looks-   kFollowing
//                                                  FailingLong: WriteStatus(
//                                                  TrackingRetrying) first);
//                                                  else WriteStatus(Retrying)
// kJobMissing         SlurmKnowsNoJob              WriteStatus(Unknown),        kFollowing
//                                                  requeue
// kNotOurs            RecordNotOurs (its comment   WriteStatus(Unknown,         kFollowing
//                     is not the job's tag)        JobNotOurs), Event, requeue
//                                                  permission_retry
// kDeadlineExceeded   !SlurmSaysEnded and          CancelDue: Cancel, Event     kFollowing, then
//                     DeadlinePassed (spec.active- DeadlineExceeded; Cancel-   kJobEnded
//                     DeadlineSeconds from         Failed: backoff; else
//                     status.firstSubmitTime)      requeue cancel_wait_poll
// kTooManyFailed-     !SlurmSaysEnded and an       CancelDue: Cancel, Event     kFollowing, then
//   Indexes           array's indexes failed for   MaxFailedIndexesExceeded;    kJobEnded
//                     good (array_status.h) are    CancelFailed: backoff; else  (Failed, reason
//                     more than spec.array.max-    requeue cancel_wait_poll     MaxFailedIndexes-
//                     FailedIndexes                                             Exceeded)
// kJobEnded           SlurmSaysEnded and not       WriteStatus(final; or the    kEnded, or
//                     ArrayIndexesUnseen (an       next run: RunIdChanged, or   kReadyToSubmit
//                     array: every index of the    the failure policy retries,  (next run)
//                     run seen ended)              not past the deadline; one
//                                                  it ended: Failed, reason
//                                                  DeadlineExceeded)
// kSuperseded         RunIdChanged and (CancelDue  Cancel (CancelFailed:        kFollowing
//                     or CancelFailed)             backoff)
// kHolding            HoldOutOfDate and            UpdateJob(hold) (failed:     kActive
//                     !HoldUpdated                 WriteStatus(HoldFailed),
//                                                  backoff)
// kActive             otherwise (also an array     WriteStatus if changed       kFollowing
//                     whose record is final but    (young queue details and
//                     ArrayIndexesUnseen: still    COMPLETING wait a little),
//                     running as far as we know,   requeue PollInterval (at
//                     until the queue drops it     most until the deadline)
//                     and accounting lists every
//                     task)
// clang-format on
//
// The guards are the small functions in namespace `guards` below; each reads
// one fact. The promises of decide.h (at most one submit, nothing lost) are
// kept by the order of the rows: no row before kReadyToSubmit submits, and
// kReadyToSubmit is reached only when no earlier submit can exist. No row
// cancels, holds or releases a Slurm job before a look at it in this
// reconcile found it ours (ownership.h): the rows that do come after
// kClusterMoved / kNotOurs and their deletion counterparts.

#ifndef SLURMOP_CONTROLLER_RECONCILE_STAGE_H_
#define SLURMOP_CONTROLLER_RECONCILE_STAGE_H_

#include <optional>
#include <string>

#include "controller/reconcile/decide.h"

namespace slurmop::reconcile {

enum class Stage {
  // Being deleted.
  kReleased,
  kDeletionSettling,
  kDeletingUnsubmitted,
  kDeletingEnded,
  kDisowning,
  kCancelBlocked,
  kDeletionClusterMoved,
  kDeletionNotOurs,
  kCancelling,
  // No Slurm job recorded yet.
  kRecordingSubmit,
  kBlocked,
  kLoadingScript,
  kUnprotected,
  kConfirmingWrite,
  kRefused,
  kSettling,
  kSearching,
  kSearchFailed,
  kSuspended,
  kWaitingForDeps,
  kClusterUnprotected,
  kRecordingTarget,
  kReadyToSubmit,
  kSubmitFailed,
  // A Slurm job recorded in the status.
  kTtlExpired,
  kAwaitingUsage,
  kKeptForGitOps,
  kTtlWaiting,
  kEnded,
  kClusterGone,
  kClusterMoved,
  kFollowing,
  kQueryFailed,
  kJobMissing,
  kNotOurs,
  kDeadlineExceeded,
  kTooManyFailedIndexes,
  kJobEnded,
  kSuperseded,
  kHolding,
  kActive,
};

// "kReadyToSubmit" -> "ReadyToSubmit", for logs and tests.
const char* StageName(Stage s);

// Everything Decide() reads, by reference.
struct Known {
  const JobFacts& job;
  const ClusterFacts& cluster;
  const ScriptFacts& script;
  const Outcomes& out;
  const Memo& memo;
  Time now;
  const DecideOptions& opt;
};

// Why a submit cannot be made as the spec stands (kBlocked): the Stalled
// condition's reason and message, and when to look again (nullopt: on a
// change only).
struct Blocker {
  std::string reason;
  std::string message;
  std::optional<Duration> requeue;
};

// What the submission stages need: the job as Slurm would get it, or why not.
struct SubmitPlan {
  bool needs_script = false;        // kLoadingScript
  bool needs_secrets = false;       // kLoadingScript (after the script)
  std::optional<Blocker> blocker;   // kBlocked
  slurm::JobDescriptor descriptor;  // otherwise: with the dependency expression
  nlohmann::json body;              // ... and rendered in the cluster's REST version
  std::string api_version;
  DependencyPlan dependencies;
};

// The plan for a job without a Slurm job (pure; renders the submit body).
SubmitPlan PlanSubmit(const Known& k);

// The stage, and (for the submission stages past kRecordingSubmit) the plan
// it was computed with.
struct Assessment {
  Stage stage = Stage::kReleased;
  std::optional<SubmitPlan> plan;
};
Assessment Assess(const Known& k);

inline Stage StageOf(const Known& k) { return Assess(k).stage; }

// In kUnprotected, with a note key (DecideOptions::note_target_with_finalizer):
// once the finalizer is on (and this process so knows no earlier submit), the
// next stage would be kRecordingTarget. The finalizer patch then records the
// target too (submit_target_note.h), and the submit follows it directly.
bool TargetRidesWithFinalizer(const Known& k, const SubmitPlan& plan);

// The guards of the table, one fact each.
namespace guards {
bool BeingDeleted(const JobFacts& job);
// A submit returned an id, the memo has one, or a tag search found one.
bool SubmittedJobKnown(const Known& k);
// spec.scriptFrom names a ConfigMap that was not read yet.
bool ScriptNotLoaded(const Known& k);
// spec.dependsOn names a SlurmJob without a Slurm job yet, or one that can
// never satisfy its condition.
bool DependenciesUnmet(const Known& k, const DependencyPlan& plan);
bool FinalizerGone(const JobFacts& job);
bool HasSlurmJob(const JobFacts& job);
// The Slurm job of the current run, from the status, the memo, or a tag
// search of this reconcile (0: none known).
int64_t KnownJobId(const Known& k);
bool OrphanPolicy(const JobFacts& job);
bool Disowned(const Memo& memo);
bool JobEnded(const JobFacts& job);
bool ClusterFound(const ClusterFacts& cluster);
// A SlurmCluster (not a ClusterSlurmCluster) the protector has not kept yet
// (cluster_protection.h): deleting its namespace now would delete it at
// once, and a job submitted to it could never be cancelled.
bool ClusterUnprotected(const ClusterFacts& cluster);
// KnownLocation is not where the SlurmCluster points now (ownership.h).
bool ClusterMovedSinceSubmit(const Known& k);
// Where the job KnownJobId names was submitted: status.submittedTo, or (no
// job in the status yet: its status write failed) the memo's; nullopt when
// neither says (a status of the previous version).
std::optional<v1alpha1::SlurmJobLocation> KnownLocation(const Known& k);
// status.submitTarget (without one: the verified note of
// submit_target_note.h, JobFacts::noted_target) is where the SlurmCluster
// points now: a submit sent now is recorded where it goes before it is sent.
bool SubmitTargetRecorded(const Known& k);
// Where an earlier submit of this run may have gone, and so where a tag
// search looks: this process's own submit with an unknown outcome (the
// memo), else status.submitTarget, else the verified note, else (nothing
// recorded: a status of an earlier version, or no submit sent) where the
// SlurmCluster points now.
v1alpha1::SlurmJobLocation SearchLocation(const Known& k);
// No submit of this run is recorded anywhere: this process sent none, and
// neither the status nor a verified note names a submitTarget. Only an
// operator version from before submitTarget could have sent one.
bool NoSubmitRecorded(const Known& k);
// This reconcile's tag search failed, for good, before anything was sent
// (the SlurmCluster's credentials Secret is gone, or its dialect unknown; a
// transient failure to read the Secret does not count).
bool TagSearchUnsent(const Outcomes& out);
// This reconcile's look found a record that is not the job's own.
bool RecordNotOurs(const Known& k);
// An earlier submit of this run (ours with an unknown outcome, or one by an
// earlier process) may have reached Slurm.
bool EarlierSubmitPossible(const Memo& memo);
// The status says Slurm rejected this generation's submit (Stalled, reason SubmitRejected).
bool StatusSaysRejected(const Known& k);
// A write of this SlurmJob may have landed without this process seeing it.
bool WriteOutcomeUnknown(const Memo& memo);
bool SubmitTried(const Outcomes& out);
bool SubmitReturnedId(const Outcomes& out);
bool TagSearchDone(const Outcomes& out);
bool TagSearchFailed(const Outcomes& out);
bool TagSearchFoundJob(const Outcomes& out);
bool TagSearchFoundNothing(const Outcomes& out);
// A search that finds nothing proves nothing yet (memo.settle_until): the
// window is still open, or this reconcile's search read a list sent before
// it closed (a list shared with other searches, JobTracker::FindLive).
bool SettleWindowOpen(const Known& k);
// The last submit of this spec was refused and nothing changed since (or an
// access refusal is not due for a retry yet).
bool RejectedForThisGeneration(const Known& k);
bool RefusedRecently(const Known& k);
bool RunIdChanged(const JobFacts& job);
bool CancelDue(const Known& k);
bool CancelFailed(const Outcomes& out);
bool QueryDone(const Outcomes& out);
bool QueryFailed(const Outcomes& out);
// Looks at the job have kept failing for now (Memo::looks_failing_since) for at least
// DecideOptions::tracking_failure_grace: the status is to say so.
bool LooksFailingLong(const Known& k);
// A look younger than `poll`, since the spec's last change, whose status
// was written (Memo::look_unrecorded).
bool PolledRecently(const Known& k, Duration poll);
bool SlurmKnowsNoJob(const Outcomes& out);
bool SlurmSaysEnded(const Outcomes& out);
// Slurm's record of an array job is final, but indexes of the current run were
// never seen ended (their records left the queue before a look): their outcome
// is unknown until accounting lists every task (array_status.h).
bool ArrayIndexesUnseen(const Known& k);
bool HoldOutOfDate(const Known& k);
bool HoldUpdated(const Outcomes& out);
// spec.activeDeadlineSeconds passed and the status is not final (job_lifetime.h).
bool DeadlinePassed(const Known& k);
// The array job's record shows more indexes failed for good (beyond spec.array's
// backoffLimitPerIndex) than spec.array.maxFailedIndexes allows (array_status.h).
bool TooManyFailedIndexes(const Known& k);
// The current run started and ended, accounting did not show its usage when
// its end was recorded, its runId still stands, its cluster is where it ran,
// and its end is less than usage_window ago: its usage is looked for again.
bool UsageAwaited(const Known& k);
}  // namespace guards

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_STAGE_H_
