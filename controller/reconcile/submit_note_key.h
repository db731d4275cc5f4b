// File: controller/reconcile/submit_note_key.h
//
// Where the key of the submit-target notes (submit_target_note.h) comes from.
// With a key, a new SlurmJob's first submit follows one API write instead of
// two; every replica needs the same key, and it must stay the same across
// restarts.
//
// Contract (ResolveSubmitNoteKey):
//  * `file` set (--submit-note-key-file): the key is that file's
//    (ReadSubmitNoteKeyFile); the Secret is not read.
//  * Else `secret_name` set (--submit-note-key-secret, on by default): the
//    key is data.key of that Secret in `secret_namespace` (the operator's
//    own). When the Secret does not exist, it is created with `new_key()`
//    (immutable, so that no edit changes the key under running replicas),
//    and when another replica created it first (409 AlreadyExists), that
//    one is read: every replica ends up with the same key. This is how Argo
//    CD keeps its server.secretkey.
//  * A Secret whose data.key is missing, not base64, or shorter than
//    kMinNoteKeyBytes (or longer than kMaxNoteKeyBytes) is an error that
//    names the Secret and the fix: the operator never runs with a weaker key
//    than the installer gave it.
//  * Not allowed (403 on the read or the create) or no such namespace (404
//    on the create): the key is off, with `off_reason` saying why and what to
//    grant. All replicas share one ServiceAccount, so they agree on that.
//  * Any other failure (the API server unreachable, 5xx, 429) is an error
//    with that failure's code: main.cc waits it out for a while
//    (startup_retry.h), then exits to be restarted, rather than run without
//    the key while other replicas have it.
//  * Both empty: off, no reason (the installer turned it off).

#ifndef SLURMOP_CONTROLLER_RECONCILE_SUBMIT_NOTE_KEY_H_
#define SLURMOP_CONTROLLER_RECONCILE_SUBMIT_NOTE_KEY_H_

#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "controller/kube/client.h"

namespace slurmop::reconcile {

// Keys longer than this are refused (a file or a Secret's data.key).
inline constexpr std::size_t kMaxNoteKeyBytes = 4096;
// The Secret's default name (--submit-note-key-secret).
inline constexpr char kDefaultNoteKeySecret[] = "slurmjob-operator-submit-note-key";

struct SubmitNoteKeySource {
  std::string file;              // --submit-note-key-file; takes precedence
  std::string secret_namespace;  // the operator's namespace
  std::string secret_name;       // --submit-note-key-secret; "": no Secret
};

struct SubmitNoteKey {
  std::string key;         // empty: off
  std::string origin;      // where it came from, for the log ("" when off)
  std::string off_reason;  // set when a Secret was asked for but cannot be used
};

absl::StatusOr<SubmitNoteKey> ResolveSubmitNoteKey(kube::Client& kube,
                                                   const SubmitNoteKeySource& source,
                                                   const std::function<std::string()>& new_key);

// A key file's bytes without trailing whitespace (`openssl rand -hex 32 > f`
// ends in a newline); an unreadable file or a key of the wrong length is an
// error.
absl::StatusOr<std::string> ReadSubmitNoteKeyFile(const std::string& path);

// 32 random bytes from OpenSSL's generator, as 64 hex digits (what
// `openssl rand -hex 32` prints).
std::string NewRandomNoteKey();

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_SUBMIT_NOTE_KEY_H_
