// File: controller/agentplatform/external_account.h
//
// "external_account" files: workload identity federation
// (google-auth.md §3.6). A subject token read from a file (e.g. a projected
// Kubernetes service-account token) or a URL is exchanged at STS (RFC 8693):
//   POST token_url  grant_type=urn:ietf:params:oauth:grant-type:token-exchange
//     &requested_token_type=urn:ietf:params:oauth:token-type:access_token
//     &audience=..&scope=..&subject_token_type=..&subject_token=..[&options=..]
// If service_account_impersonation_url is set, the STS token is then used to
// impersonate that service account (impersonated.h); the caller composes that.
//
// Contract: ParseExternalAccount() accepts "file" and "url" credential
// sources (format "text" or "json"); aws, executable and certificate sources
// are kUnimplemented. The subject token is read again at every refresh (the
// kubelet rotates projected tokens). Errors follow token_endpoint.h; the
// subject token never appears in a message.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_EXTERNAL_ACCOUNT_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_EXTERNAL_ACCOUNT_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "controller/agentplatform/cached_token_source.h"
#include "controller/agentplatform/credentials.h"
#include "nlohmann/json.hpp"

namespace slurmop::agentplatform {

inline constexpr char kDefaultStsUrl[] = "https://sts.googleapis.com/v1/token";
inline constexpr char kTokenExchangeGrant[] = "urn:ietf:params:oauth:grant-type:token-exchange";
inline constexpr char kAccessTokenType[] = "urn:ietf:params:oauth:token-type:access_token";

struct ExternalAccount {
  std::string audience;
  std::string subject_token_type;
  std::string token_url;  // default https://sts.googleapis.com/v1/token
  // Credential source: exactly one of file / url.
  std::string file;
  std::string url;
  std::map<std::string, std::string> headers;  // for url
  std::string format_type = "text";            // "text" or "json"
  std::string subject_token_field_name;        // for json
  std::string workforce_pool_user_project;
  std::string quota_project_id;
  // Impersonation after the exchange (empty: none).
  std::string service_account_impersonation_url;
  std::chrono::seconds impersonation_lifetime{3600};
};

absl::StatusOr<ExternalAccount> ParseExternalAccount(const nlohmann::json& file);

// The STS exchange alone. `scopes` are requested from STS. `opts` must have a
// transport and a clock.
std::unique_ptr<TokenFetcher> NewStsFetcher(ExternalAccount account,
                                            std::vector<std::string> scopes,
                                            const CredentialsOptions& opts);

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_EXTERNAL_ACCOUNT_H_
