// File: controller/agentplatform/authorized_user.h
//
// "authorized_user" files (gcloud user ADC, google-auth.md §3.4): the OAuth2
// refresh-token grant, POSTed to token_uri (default
// https://oauth2.googleapis.com/token) as
// grant_type=refresh_token&client_id&client_secret&refresh_token&scope.
//
// Contract: ParseAuthorizedUser() requires client_id, client_secret and
// refresh_token (kInvalidArgument otherwise, never quoting a secret). The
// fetcher's errors follow token_endpoint.h; neither the refresh token nor
// the client secret appears in a message. quota_project_id (or
// $GOOGLE_CLOUD_QUOTA_PROJECT, applied by the caller) becomes QuotaProject().

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_AUTHORIZED_USER_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_AUTHORIZED_USER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "controller/agentplatform/cached_token_source.h"
#include "controller/agentplatform/credentials.h"
#include "nlohmann/json.hpp"

namespace slurmop::agentplatform {

struct AuthorizedUser {
  std::string client_id;
  std::string client_secret;
  std::string refresh_token;
  std::string token_uri;  // default https://oauth2.googleapis.com/token
  std::string quota_project_id;
  std::string account;  // optional, for Describe()
};

absl::StatusOr<AuthorizedUser> ParseAuthorizedUser(const nlohmann::json& file);

// `opts` must have a transport and a clock.
std::unique_ptr<TokenFetcher> NewAuthorizedUserFetcher(AuthorizedUser user,
                                                       const CredentialsOptions& opts);

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_AUTHORIZED_USER_H_
