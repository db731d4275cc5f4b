// File: controller/agentplatform/authorized_user.cc
//
// User credentials and the refresh-token grant.

#include "controller/agentplatform/authorized_user.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/agentplatform/token_endpoint.h"
#include "controller/common/json_members.h"

namespace slurmop::agentplatform {
namespace {

class AuthorizedUserFetcher final : public TokenFetcher {
 public:
  AuthorizedUserFetcher(AuthorizedUser user, const CredentialsOptions& opts)
      : user_(std::move(user)), opts_(opts) {}

  absl::StatusOr<AccessToken> Fetch() override {
    const Time now = opts_.clock->Now();
    TokenExchange exchange{
        absl::StrCat("the OAuth2 token endpoint ", user_.token_uri),
        "the user's refresh token may have expired or been revoked: run `gcloud auth "
        "application-default login` again, or use a service account",
        {user_.refresh_token, user_.client_secret}};
    std::vector<std::pair<std::string, std::string>> form = {
        {"grant_type", "refresh_token"},
        {"client_id", user_.client_id},
        {"client_secret", user_.client_secret},
        {"refresh_token", user_.refresh_token}};
    if (!opts_.scopes.empty()) form.emplace_back("scope", JoinScopes(opts_.scopes, " "));
    const http::Request request = FormPost(user_.token_uri, FormEncode(form), opts_.timeout);
    return ExchangeForToken(*opts_.transport, request, exchange, now);
  }

  std::string Describe() const override {
    if (!user_.account.empty()) return "user " + user_.account;
    return "user credentials (OAuth client " + user_.client_id + ")";
  }

  std::string QuotaProject() const override { return user_.quota_project_id; }

 private:
  const AuthorizedUser user_;
  const CredentialsOptions opts_;
};

}  // namespace

absl::StatusOr<AuthorizedUser> ParseAuthorizedUser(const nlohmann::json& file) {
  AuthorizedUser user;
  user.client_id = StringMember(file, "client_id");
  user.client_secret = StringMember(file, "client_secret");
  user.refresh_token = StringMember(file, "refresh_token");
  user.token_uri = StringMember(file, "token_uri");
  user.quota_project_id = StringMember(file, "quota_project_id");
  user.account = StringMember(file, "account");
  for (const auto& [name, value] :
       {std::pair{"client_id", &user.client_id}, std::pair{"client_secret", &user.client_secret},
        std::pair{"refresh_token", &user.refresh_token}}) {
    if (value->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("authorized_user credentials: missing ", name,
                       "; run `gcloud auth application-default login` to recreate the file"));
    }
  }
  if (user.token_uri.empty()) user.token_uri = kGoogleTokenUri;
  return user;
}

std::unique_ptr<TokenFetcher> NewAuthorizedUserFetcher(AuthorizedUser user,
                                                       const CredentialsOptions& opts) {
  return std::make_unique<AuthorizedUserFetcher>(std::move(user), opts);
}

}  // namespace slurmop::agentplatform
