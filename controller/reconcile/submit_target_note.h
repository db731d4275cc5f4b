// File: controller/reconcile/submit_target_note.h
//
// The first submit's target, written with the finalizer (issue #16 item 2).
//
// Before any submit the operator makes durable where it goes, so that a
// crash, a lost reply or a repoint afterwards knows where to look (stage.h,
// kRecordingTarget: status.submitTarget). A new SlurmJob needs two writes
// before its first submit: the finalizer (metadata) and that record (the
// status subresource, which ignores metadata). With a key (submit_note_key.h:
// by default from a Secret the operator creates), the finalizer patch carries the record itself,
// as the annotation kSubmitTargetAnnotation, when the submit is the very
// next step: one round trip less for every new SlurmJob. The status write
// that records the job id then copies it into status.submitTarget.
//
// Contract:
//  * The annotation names the SlurmJob's uid, its run and the location, and
//    carries an HMAC-SHA256 of them under the key. Anyone who may edit the
//    SlurmJob may edit its annotations, so only a note whose HMAC verifies
//    counts: a tenant cannot forge one to choose where a search goes, with
//    whose credentials. It counts only for that uid and the current run
//    (CurrentRun): a copy in another object (kubectl get -o yaml | kubectl
//    create) or one left from an earlier run is ignored, as is one that does
//    not parse within kMaxNoteBytes.
//  * A verified note means what status.submitTarget means; the status, which
//    only the operator writes, takes precedence when both exist.
//  * Without a key no note is written or believed: every submit's target goes
//    through the status, as before. A key change (or loss) makes existing
//    notes unverifiable, which is safe only when no first submit is in flight
//    at that moment: change it with the operator stopped.
//  * Pure; no I/O.

#ifndef SLURMOP_CONTROLLER_RECONCILE_SUBMIT_TARGET_NOTE_H_
#define SLURMOP_CONTROLLER_RECONCILE_SUBMIT_TARGET_NOTE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "controller/reconcile/decide.h"

namespace slurmop::reconcile {

inline constexpr std::string_view kSubmitTargetAnnotation = "hpc.slurmoperator.dev/submit-target";
// An annotation longer than this is not read (a real one is ~250 bytes).
inline constexpr std::size_t kMaxNoteBytes = 1024;
// Keys shorter than this are refused (submit_note_key.h: a key file or Secret).
inline constexpr std::size_t kMinNoteKeyBytes = 32;

// The annotation's value: {"uid","run","projectId","region","clusterId","hmac"}.
std::string EncodeSubmitTargetNote(std::string_view key, std::string_view uid, int32_t run,
                                   const v1alpha1::SlurmJobLocation& where);

// The location the job's annotation records for its uid and current run,
// when its HMAC verifies under `key`; nullopt otherwise (no key, no note, a
// note for another object or run, or one that does not parse or verify).
std::optional<v1alpha1::SlurmJobLocation> VerifiedSubmitTarget(std::string_view key,
                                                               const JobFacts& job);

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_SUBMIT_TARGET_NOTE_H_
