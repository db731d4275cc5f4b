// File: controller/reconcile/submit_note_key.cc

#include "controller/reconcile/submit_note_key.h"

#include <openssl/rand.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "controller/kube/errors.h"
#include "controller/kube/resource_types.h"
#include "controller/reconcile/submit_target_note.h"

namespace slurmop::reconcile {
namespace {

void TrimTrailingSpace(std::string& key) {
  while (!key.empty() && absl::ascii_isspace(static_cast<unsigned char>(key.back()))) {
    key.pop_back();
  }
}

bool KeySizeOk(const std::string& key) {
  return key.size() >= kMinNoteKeyBytes && key.size() <= kMaxNoteKeyBytes;
}

std::string SecretRef(const SubmitNoteKeySource& s) {
  return absl::StrCat("Secret ", s.secret_namespace, "/", s.secret_name);
}

// data.key of the Secret, checked as a key file is.
absl::StatusOr<std::string> KeyOfSecret(const nlohmann::json& secret,
                                        const SubmitNoteKeySource& source) {
  const std::string fix =
      absl::StrCat(" Put ", kMinNoteKeyBytes, " to ", kMaxNoteKeyBytes,
                   " bytes in data.key (e.g. `openssl rand -hex 32`), or delete the Secret with "
                   "the operator stopped and a new key is generated at its next start.");
  const nlohmann::json* data = nullptr;
  if (secret.is_object()) {
    auto it = secret.find("data");
    if (it != secret.end() && it->is_object()) data = &*it;
  }
  std::string key;
  if (data == nullptr || !data->contains("key") || !(*data)["key"].is_string() ||
      !absl::Base64Unescape((*data)["key"].get<std::string>(), &key)) {
    return absl::FailedPreconditionError(absl::StrCat(
        SecretRef(source), " has no data.key holding the submit-note key (base64).", fix));
  }
  TrimTrailingSpace(key);
  if (!KeySizeOk(key)) {
    return absl::FailedPreconditionError(absl::StrCat(
        SecretRef(source), " holds a submit-note key of ", key.size(), " bytes.", fix));
  }
  return key;
}

nlohmann::json NewKeySecret(const SubmitNoteKeySource& source, const std::string& key) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata",
           {{"name", source.secret_name},
            {"namespace", source.secret_namespace},
            {"labels",
             {{"app.kubernetes.io/name", "slurmjob-operator"},
              {"app.kubernetes.io/component", "submit-note-key"}}}}},
          {"type", "Opaque"},
          // Nobody edits a key that running replicas hold: to change it, delete
          // the Secret with the operator stopped (submit_target_note.h).
          {"immutable", true},
          {"data", {{"key", absl::Base64Escape(key)}}}};
}

// Not allowed, or no such namespace: the key is off, and the log says why.
bool KeyCannotBeUsed(const absl::Status& s) {
  return s.code() == absl::StatusCode::kPermissionDenied || kube::IsNotFound(s);
}

SubmitNoteKey Off(const SubmitNoteKeySource& source, const char* verb, const absl::Status& s) {
  SubmitNoteKey out;
  out.off_reason = absl::StrCat(
      "submit-target notes are off (each new SlurmJob's first submit waits for one more API "
      "write): cannot ",
      verb, " ", SecretRef(source), ": ", s.message(),
      ". Grant the operator get and create on secrets in ", source.secret_namespace,
      " (deploy/rbac.yaml does), or give it a key with --submit-note-key-file, or set "
      "--submit-note-key-secret= to turn this off without this warning.");
  return out;
}

absl::Status Failed(const SubmitNoteKeySource& source, const char* verb, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat("cannot ", verb, " ", SecretRef(source),
                                             " (the submit-note key): ", s.message()));
}

absl::StatusOr<SubmitNoteKey> FromSecret(const nlohmann::json& secret,
                                         const SubmitNoteKeySource& source, const char* how) {
  absl::StatusOr<std::string> key = KeyOfSecret(secret, source);
  if (!key.ok()) return key.status();
  return SubmitNoteKey{*std::move(key), absl::StrCat(SecretRef(source), how), ""};
}

}  // namespace

absl::StatusOr<SubmitNoteKey> ResolveSubmitNoteKey(kube::Client& kube,
                                                   const SubmitNoteKeySource& source,
                                                   const std::function<std::string()>& new_key) {
  if (!source.file.empty()) {
    absl::StatusOr<std::string> key = ReadSubmitNoteKeyFile(source.file);
    if (!key.ok()) return key.status();
    return SubmitNoteKey{*std::move(key), "--submit-note-key-file=" + source.file, ""};
  }
  if (source.secret_name.empty()) return SubmitNoteKey{};
  const kube::ResourceType secrets = kube::Secrets();
  absl::StatusOr<nlohmann::json> got =
      kube.Get(secrets, source.secret_namespace, source.secret_name);
  if (got.ok()) return FromSecret(*got, source, "");
  if (got.status().code() == absl::StatusCode::kPermissionDenied) {
    return Off(source, "read", got.status());
  }
  if (!kube::IsNotFound(got.status())) return Failed(source, "read", got.status());

  const std::string key = new_key();
  if (!KeySizeOk(key)) {
    return absl::InternalError("cannot generate a submit-note key: the random generator failed");
  }
  absl::StatusOr<nlohmann::json> created =
      kube.Create(secrets, source.secret_namespace, NewKeySecret(source, key));
  if (created.ok()) return SubmitNoteKey{key, absl::StrCat(SecretRef(source), " (created)"), ""};
  if (kube::IsAlreadyExists(created.status())) {
    // Another replica created it first: its key is everybody's.
    got = kube.Get(secrets, source.secret_namespace, source.secret_name);
    if (!got.ok()) return Failed(source, "read", got.status());
    return FromSecret(*got, source, " (created by another replica)");
  }
  if (KeyCannotBeUsed(created.status())) return Off(source, "create", created.status());
  return Failed(source, "create", created.status());
}

absl::StatusOr<std::string> ReadSubmitNoteKeyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::FailedPreconditionError(
        absl::StrCat("--submit-note-key-file=", path, " cannot be opened: ", std::strerror(errno)));
  }
  std::string key(kMaxNoteKeyBytes + 1, '\0');
  in.read(key.data(), static_cast<std::streamsize>(key.size()));
  if (in.bad()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--submit-note-key-file=", path, " cannot be read"));
  }
  key.resize(static_cast<std::size_t>(in.gcount()));
  TrimTrailingSpace(key);
  if (!KeySizeOk(key)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--submit-note-key-file=", path, " holds ", key.size(), " bytes; a key has ",
                     kMinNoteKeyBytes, " to ", kMaxNoteKeyBytes, " (e.g. `openssl rand -hex 32`)"));
  }
  return key;
}

std::string NewRandomNoteKey() {
  unsigned char bytes[32];
  // RAND_bytes fails only when the generator cannot be seeded: no key then
  // rather than a predictable one.
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) return std::string();
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

}  // namespace slurmop::reconcile
