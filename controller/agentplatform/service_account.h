// File: controller/agentplatform/service_account.h
//
// "service_account" key files: the OAuth2 JWT-bearer grant
// (google-auth.md §3.2). A JWT {iss: client_email, scope, aud: token_uri,
// iat: now, exp: now+3600} signed RS256 with the key (header kid =
// private_key_id) is POSTed to token_uri as
// grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>.
//
// Contract: ParseServiceAccountKey() checks the fields (kInvalidArgument,
// never quoting the key) and loads the key. The fetcher's errors follow
// token_endpoint.h; the assertion never appears in a message.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_SERVICE_ACCOUNT_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_SERVICE_ACCOUNT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/agentplatform/cached_token_source.h"
#include "controller/agentplatform/credentials.h"
#include "controller/agentplatform/jwt.h"
#include "nlohmann/json.hpp"

namespace slurmop::agentplatform {

inline constexpr char kJwtBearerGrant[] = "urn:ietf:params:oauth:grant-type:jwt-bearer";
inline constexpr std::chrono::seconds kJwtLifetime{3600};

struct ServiceAccountKey {
  std::string client_email;
  std::string private_key_id;  // may be empty
  std::string token_uri;       // default https://oauth2.googleapis.com/token
  std::string project_id;
  std::shared_ptr<const RsaSigner> signer;
};

absl::StatusOr<ServiceAccountKey> ParseServiceAccountKey(const nlohmann::json& file);

// The signed assertion for `now` (exposed for tests).
absl::StatusOr<std::string> MakeServiceAccountAssertion(const ServiceAccountKey& key,
                                                        const std::vector<std::string>& scopes,
                                                        Time now);

// `opts` must have a transport and a clock.
std::unique_ptr<TokenFetcher> NewServiceAccountFetcher(ServiceAccountKey key,
                                                       const CredentialsOptions& opts);

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_SERVICE_ACCOUNT_H_
