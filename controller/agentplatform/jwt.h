// File: controller/agentplatform/jwt.h
//
// RS256 JSON Web Tokens for the OAuth2 JWT-bearer grant (RFC 7515/7519):
// unpadded base64url, an RSA private key loaded from PEM, and
// RSASSA-PKCS1-v1_5-SHA256 signatures through OpenSSL's EVP_DigestSign.
//
// Contract:
//  * RsaSigner::FromPem() accepts PKCS#8 ("BEGIN PRIVATE KEY") and PKCS#1
//    ("BEGIN RSA PRIVATE KEY") PEM; errors are kInvalidArgument and never
//    quote the key.
//  * Sign() is deterministic (PKCS#1 v1.5) and thread-safe.
//  * MakeJwt() serializes header and claims with sorted keys, so the result
//    is reproducible in tests.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_JWT_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_JWT_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace slurmop::agentplatform {

// Unpadded base64url (RFC 4648 §5).
std::string Base64UrlEncode(std::string_view data);

class RsaSigner {
 public:
  static absl::StatusOr<std::unique_ptr<RsaSigner>> FromPem(std::string_view pem);
  ~RsaSigner();
  RsaSigner(const RsaSigner&) = delete;
  RsaSigner& operator=(const RsaSigner&) = delete;

  // RSASSA-PKCS1-v1_5 over SHA-256 of `data`; the raw signature bytes.
  absl::StatusOr<std::string> Sign(std::string_view data) const;

 private:
  struct Key;
  explicit RsaSigner(std::unique_ptr<Key> key);
  std::unique_ptr<Key> key_;
};

// b64url(header) "." b64url(claims) "." b64url(RS256 signature).
absl::StatusOr<std::string> MakeJwt(const nlohmann::json& header, const nlohmann::json& claims,
                                    const RsaSigner& signer);

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_JWT_H_
