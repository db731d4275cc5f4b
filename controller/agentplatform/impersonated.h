// File: controller/agentplatform/impersonated.h
//
// Service-account impersonation through the IAM Credentials API
// (google-auth.md §3.7), used by "impersonated_service_account" files and by
// "external_account" files with service_account_impersonation_url:
//   POST https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/SA:generateAccessToken
//   Authorization: Bearer <source token>
//   {"delegates":[...],"scope":[...],"lifetime":"3600s"}
//   -> {"accessToken":"...","expireTime":"<RFC 3339>"}
//
// Contract: a 401 from IAM invalidates the source token and retries once.
// Errors follow token_endpoint.h; a 403 says that the source identity needs
// roles/iam.serviceAccountTokenCreator on the target. Neither the source
// token nor the new token appears in a message.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_IMPERSONATED_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_IMPERSONATED_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/agentplatform/cached_token_source.h"
#include "controller/agentplatform/credentials.h"
#include "nlohmann/json.hpp"

namespace slurmop::agentplatform {

struct Impersonation {
  std::string url;  // ...:generateAccessToken
  std::vector<std::string> delegates;
  std::chrono::seconds lifetime{3600};
};

// The target's email from the generateAccessToken URL, or "" if it has none.
std::string ImpersonationTarget(const std::string& url);

// Parses an "impersonated_service_account" file; `source` receives the
// embedded source_credentials object.
absl::StatusOr<Impersonation> ParseImpersonatedServiceAccount(const nlohmann::json& file,
                                                              nlohmann::json* source);

// `opts` must have a transport and a clock.
std::unique_ptr<TokenFetcher> NewImpersonationFetcher(std::shared_ptr<TokenSource> source,
                                                      Impersonation impersonation,
                                                      const CredentialsOptions& opts);

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_IMPERSONATED_H_
