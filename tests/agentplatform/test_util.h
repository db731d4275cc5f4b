// File: tests/agentplatform/test_util.h
//
// Helpers for the credential tests: reading testdata files, setting
// environment variables for one scope, decoding and verifying JWTs with the
// committed test public key, and canned token-endpoint answers.

#ifndef SLURMOP_TESTS_AGENTPLATFORM_TEST_UTIL_H_
#define SLURMOP_TESTS_AGENTPLATFORM_TEST_UTIL_H_

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace slurmop::agentplatform::testing {

inline std::string TestdataPath(const std::string& name) {
  return std::string(SLURMOP_AP_TESTDATA) + "/" + name;
}

inline std::string ReadTestdata(const std::string& name) {
  std::ifstream in(TestdataPath(name), std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Sets (or unsets, with nullopt) an environment variable until destroyed.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value.has_value()) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

inline std::string Base64UrlDecode(std::string_view s) {
  std::string out;
  absl::WebSafeBase64Unescape(absl::string_view(s.data(), s.size()), &out);
  return out;
}

struct DecodedJwt {
  nlohmann::json header;
  nlohmann::json claims;
  std::string signing_input;
  std::string signature;
};

inline DecodedJwt DecodeJwt(const std::string& jwt) {
  std::vector<std::string> parts = absl::StrSplit(jwt, '.');
  DecodedJwt out;
  if (parts.size() != 3) return out;
  out.header = nlohmann::json::parse(Base64UrlDecode(parts[0]), nullptr, false);
  out.claims = nlohmann::json::parse(Base64UrlDecode(parts[1]), nullptr, false);
  out.signing_input = parts[0] + "." + parts[1];
  out.signature = Base64UrlDecode(parts[2]);
  return out;
}

// Verifies an RS256 signature with a PEM public key.
inline bool VerifyRs256(const std::string& public_pem, const std::string& data,
                        const std::string& signature) {
  BIO* bio = BIO_new_mem_buf(public_pem.data(), static_cast<int>(public_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (key == nullptr) return false;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
            EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature.data()),
                             signature.size(), reinterpret_cast<const unsigned char*>(data.data()),
                             data.size()) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(key);
  return ok;
}

inline std::string TokenJson(const std::string& token, int expires_in = 3599) {
  return nlohmann::json(
             {{"access_token", token}, {"expires_in", expires_in}, {"token_type", "Bearer"}})
      .dump();
}

}  // namespace slurmop::agentplatform::testing

#endif  // SLURMOP_TESTS_AGENTPLATFORM_TEST_UTIL_H_
