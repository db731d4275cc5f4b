// File: controller/reconcile/submit_target_note.cc
//
// See submit_target_note.h.

#include "controller/reconcile/submit_target_note.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "controller/common/bounded_json.h"
#include "controller/reconcile/runs.h"

namespace slurmop::reconcile {
namespace {

// Each field is a short identifier; longer ones are not ours.
constexpr std::size_t kMaxFieldBytes = 256;

// Every field length-prefixed, so that no two notes sign the same text.
std::string SignedText(std::string_view uid, int64_t run, const v1alpha1::SlurmJobLocation& where) {
  std::string text = "slurmjob-operator submit-target v1";
  for (const std::string& field :
       {std::string(uid), where.project_id(), where.region(), where.cluster_id()}) {
    absl::StrAppend(&text, "\n", field.size(), ":", field);
  }
  absl::StrAppend(&text, "\nrun:", run);
  return text;
}

// An HMAC-SHA256 context per thread, keyed once. OpenSSL's one-shot HMAC()
// looks the algorithm up in the provider store and sets the key on every
// call: in a profile of the operator, most of what reading a note cost.
class HmacSha256 {
 public:
  HmacSha256() : mac_(EVP_MAC_fetch(nullptr, "HMAC", nullptr)) {
    if (mac_ != nullptr) ctx_ = EVP_MAC_CTX_new(mac_);
  }
  ~HmacSha256() {
    OPENSSL_cleanse(key_.data(), key_.size());
    EVP_MAC_CTX_free(ctx_);
    EVP_MAC_free(mac_);
  }
  HmacSha256(const HmacSha256&) = delete;
  HmacSha256& operator=(const HmacSha256&) = delete;

  // The MAC of `text` under `key`; "" if OpenSSL fails (no note then verifies).
  std::string Sign(std::string_view key, std::string_view text) {
    if (ctx_ == nullptr || !Init(key)) return "";
    unsigned char mac[EVP_MAX_MD_SIZE];
    std::size_t len = 0;
    if (EVP_MAC_update(ctx_, reinterpret_cast<const unsigned char*>(text.data()), text.size()) !=
            1 ||
        EVP_MAC_final(ctx_, mac, &len, sizeof(mac)) != 1) {
      key_set_ = false;
      return "";
    }
    return std::string(reinterpret_cast<const char*>(mac), len);
  }

 private:
  // Starts a MAC; the key is set again only when it differs from the last one.
  bool Init(std::string_view key) {
    if (key_set_ && key == key_) return EVP_MAC_init(ctx_, nullptr, 0, nullptr) == 1;
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_END};
    key_set_ = EVP_MAC_init(ctx_, reinterpret_cast<const unsigned char*>(key.data()), key.size(),
                            params) == 1;
    key_.assign(key.data(), key.size());
    return key_set_;
  }

  EVP_MAC* mac_ = nullptr;
  EVP_MAC_CTX* ctx_ = nullptr;
  bool key_set_ = false;
  std::string key_;
};

std::string Hmac(std::string_view key, std::string_view text) {
  thread_local HmacSha256 hmac;
  return hmac.Sign(key, text);
}

std::optional<std::string> ShortString(const nlohmann::json& note, const char* key) {
  auto it = note.find(key);
  if (it == note.end() || !it->is_string()) return std::nullopt;
  const std::string& s = it->get_ref<const std::string&>();
  if (s.empty() || s.size() > kMaxFieldBytes) return std::nullopt;
  return s;
}

}  // namespace

std::string EncodeSubmitTargetNote(std::string_view key, std::string_view uid, int32_t run,
                                   const v1alpha1::SlurmJobLocation& where) {
  const nlohmann::json note = {
      {"uid", std::string(uid)},
      {"run", run},
      {"projectId", where.project_id()},
      {"region", where.region()},
      {"clusterId", where.cluster_id()},
      {"hmac", absl::BytesToHexString(Hmac(key, SignedText(uid, run, where)))}};
  return note.dump();
}

std::optional<v1alpha1::SlurmJobLocation> VerifiedSubmitTarget(std::string_view key,
                                                               const JobFacts& job) {
  if (key.empty()) return std::nullopt;
  auto it = job.annotations.find(std::string(kSubmitTargetAnnotation));
  if (it == job.annotations.end() || it->second.size() > kMaxNoteBytes) return std::nullopt;
  const nlohmann::json note = ParseBoundedJson(it->second, /*max_depth=*/1);
  if (!note.is_object()) return std::nullopt;
  auto run = note.find("run");
  if (run == note.end() || !run->is_number_integer() ||
      run->get<int64_t>() != CurrentRun(job.status)) {
    return std::nullopt;
  }
  const std::optional<std::string> uid = ShortString(note, "uid");
  if (!uid || job.id.uid.empty() || *uid != job.id.uid) return std::nullopt;
  const std::optional<std::string> project = ShortString(note, "projectId");
  const std::optional<std::string> region = ShortString(note, "region");
  const std::optional<std::string> cluster = ShortString(note, "clusterId");
  const std::optional<std::string> mac_hex = ShortString(note, "hmac");
  if (!project || !region || !cluster || !mac_hex) return std::nullopt;
  v1alpha1::SlurmJobLocation where;
  where.set_project_id(*project);
  where.set_region(*region);
  where.set_cluster_id(*cluster);
  const std::string want = Hmac(key, SignedText(*uid, run->get<int64_t>(), where));
  if (want.empty() || mac_hex->size() != 2 * want.size() ||
      !std::all_of(mac_hex->begin(), mac_hex->end(), absl::ascii_isxdigit)) {
    return std::nullopt;
  }
  const std::string got = absl::HexStringToBytes(*mac_hex);
  if (CRYPTO_memcmp(got.data(), want.data(), want.size()) != 0) return std::nullopt;
  return where;
}

}  // namespace slurmop::reconcile
