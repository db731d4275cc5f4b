// File: controller/agentplatform/service_account.cc
//
// Service-account key files and the JWT-bearer token exchange.

#include "controller/agentplatform/service_account.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/agentplatform/token_endpoint.h"
#include "controller/common/json_members.h"

namespace slurmop::agentplatform {
namespace {

class ServiceAccountFetcher final : public TokenFetcher {
 public:
  ServiceAccountFetcher(ServiceAccountKey key, const CredentialsOptions& opts)
      : key_(std::move(key)), opts_(opts) {}

  absl::StatusOr<AccessToken> Fetch() override {
    const Time now = opts_.clock->Now();
    absl::StatusOr<std::string> assertion = MakeServiceAccountAssertion(key_, opts_.scopes, now);
    if (!assertion.ok()) return assertion.status();
    TokenExchange exchange{
        absl::StrCat("the OAuth2 token endpoint ", key_.token_uri),
        absl::StrCat("check that the key of service account ", key_.client_email,
                     " exists and is enabled (not deleted or rotated away), that the account is "
                     "enabled, and that this machine's clock is correct"),
        {*assertion}};
    const http::Request request = FormPost(
        key_.token_uri, FormEncode({{"grant_type", kJwtBearerGrant}, {"assertion", *assertion}}),
        opts_.timeout);
    return ExchangeForToken(*opts_.transport, request, exchange, now);
  }

  std::string Describe() const override { return "service account " + key_.client_email; }

 private:
  const ServiceAccountKey key_;
  const CredentialsOptions opts_;
};

}  // namespace

absl::StatusOr<ServiceAccountKey> ParseServiceAccountKey(const nlohmann::json& file) {
  ServiceAccountKey key;
  key.client_email = StringMember(file, "client_email");
  key.private_key_id = StringMember(file, "private_key_id");
  key.token_uri = StringMember(file, "token_uri");
  key.project_id = StringMember(file, "project_id");
  const std::string pem = StringMember(file, "private_key");
  if (key.client_email.empty()) {
    return absl::InvalidArgumentError("service_account credentials: missing client_email");
  }
  if (pem.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("service_account credentials for ",
                                                   key.client_email, ": missing private_key"));
  }
  if (key.token_uri.empty()) key.token_uri = kGoogleTokenUri;
  absl::StatusOr<std::unique_ptr<RsaSigner>> signer = RsaSigner::FromPem(pem);
  if (!signer.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "service_account credentials for ", key.client_email, ": ", signer.status().message()));
  }
  key.signer = std::move(*signer);
  return key;
}

absl::StatusOr<std::string> MakeServiceAccountAssertion(const ServiceAccountKey& key,
                                                        const std::vector<std::string>& scopes,
                                                        Time now) {
  const int64_t iat =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  if (!key.private_key_id.empty()) header["kid"] = key.private_key_id;
  const nlohmann::json claims = {{"iss", key.client_email},
                                 {"scope", JoinScopes(scopes, " ")},
                                 {"aud", key.token_uri},
                                 {"iat", iat},
                                 {"exp", iat + kJwtLifetime.count()}};
  return MakeJwt(header, claims, *key.signer);
}

std::unique_ptr<TokenFetcher> NewServiceAccountFetcher(ServiceAccountKey key,
                                                       const CredentialsOptions& opts) {
  return std::make_unique<ServiceAccountFetcher>(std::move(key), opts);
}

}  // namespace slurmop::agentplatform
