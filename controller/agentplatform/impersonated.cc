// File: controller/agentplatform/impersonated.cc
//
// generateAccessToken exchange for service-account impersonation.

#include "controller/agentplatform/impersonated.h"

#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/agentplatform/token_endpoint.h"
#include "controller/common/time_format.h"

namespace slurmop::agentplatform {
namespace {

class ImpersonationFetcher final : public TokenFetcher {
 public:
  ImpersonationFetcher(std::shared_ptr<TokenSource> source, Impersonation impersonation,
                       const CredentialsOptions& opts)
      : source_(std::move(source)),
        impersonation_(std::move(impersonation)),
        opts_(opts),
        target_(ImpersonationTarget(impersonation_.url)) {}

  absl::StatusOr<AccessToken> Fetch() override {
    absl::StatusOr<AccessToken> token = FetchOnce();
    if (!token.ok() && token.status().code() == absl::StatusCode::kUnauthenticated &&
        retry_after_401_) {
      source_->Invalidate();
      token = FetchOnce();
    }
    return token;
  }

  std::string Describe() const override {
    return absl::StrCat("service account ", target_.empty() ? impersonation_.url : target_,
                        " impersonated by ", source_->Describe());
  }

  std::string QuotaProject() const override { return source_->QuotaProject(); }

 private:
  absl::StatusOr<AccessToken> FetchOnce() {
    retry_after_401_ = false;
    absl::StatusOr<std::string> source_token = source_->Token();
    if (!source_token.ok()) return source_token.status();
    TokenExchange exchange{absl::StrCat("the IAM Credentials API ", impersonation_.url),
                           absl::StrCat("check that ", source_->Describe(),
                                        " has roles/iam.serviceAccountTokenCreator on ",
                                        target_.empty() ? "the target service account" : target_,
                                        " and that the IAM Credentials API is enabled"),
                           {*source_token}};
    nlohmann::json body = {{"scope", opts_.scopes},
                           {"lifetime", absl::StrCat(impersonation_.lifetime.count(), "s")}};
    if (!impersonation_.delegates.empty()) body["delegates"] = impersonation_.delegates;
    http::Request request;
    request.method = "POST";
    request.url = impersonation_.url;
    request.headers["Authorization"] = "Bearer " + *source_token;
    request.headers["Content-Type"] = "application/json";
    request.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    request.timeout = opts_.timeout;
    absl::StatusOr<http::Response> response = SendTokenRequest(*opts_.transport, request, exchange);
    if (!response.ok()) return response.status();
    if (response->status < 200 || response->status >= 300) {
      retry_after_401_ = response->status == 401;
      return TokenEndpointError(*response, exchange);
    }
    absl::StatusOr<nlohmann::json> json = ParseJsonObject(*response, exchange);
    if (!json.ok()) return RedactStatus(json.status(), exchange.secrets);
    auto token = json->find("accessToken");
    auto expire = json->find("expireTime");
    std::optional<Time> expiry;
    if (expire != json->end() && expire->is_string()) {
      expiry = ParseRfc3339(expire->get<std::string>());
    }
    if (token == json->end() || !token->is_string() || token->get<std::string>().empty() ||
        !expiry.has_value()) {
      return absl::UnavailableError(absl::StrCat(
          exchange.what, " answered without accessToken or a valid RFC 3339 expireTime"));
    }
    return AccessToken{token->get<std::string>(), *expiry};
  }

  const std::shared_ptr<TokenSource> source_;
  const Impersonation impersonation_;
  const CredentialsOptions opts_;
  const std::string target_;
  bool retry_after_401_ = false;  // Fetch() is never concurrent (TokenFetcher contract)
};

}  // namespace

std::string ImpersonationTarget(const std::string& url) {
  static constexpr std::string_view kMarker = "/serviceAccounts/";
  const size_t start = url.find(kMarker);
  if (start == std::string::npos) return "";
  const size_t begin = start + kMarker.size();
  const size_t end = url.find(':', begin);
  return url.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

absl::StatusOr<Impersonation> ParseImpersonatedServiceAccount(const nlohmann::json& file,
                                                              nlohmann::json* source) {
  Impersonation out;
  auto url = file.find("service_account_impersonation_url");
  if (url == file.end() || !url->is_string() || url->get<std::string>().empty()) {
    return absl::InvalidArgumentError(
        "impersonated_service_account credentials: missing service_account_impersonation_url");
  }
  out.url = url->get<std::string>();
  auto src = file.find("source_credentials");
  if (src == file.end() || !src->is_object()) {
    return absl::InvalidArgumentError(
        "impersonated_service_account credentials: missing source_credentials");
  }
  *source = *src;
  auto delegates = file.find("delegates");
  if (delegates != file.end() && delegates->is_array()) {
    for (const auto& d : *delegates) {
      if (d.is_string()) out.delegates.push_back(d.get<std::string>());
    }
  }
  return out;
}

std::unique_ptr<TokenFetcher> NewImpersonationFetcher(std::shared_ptr<TokenSource> source,
                                                      Impersonation impersonation,
                                                      const CredentialsOptions& opts) {
  return std::make_unique<ImpersonationFetcher>(std::move(source), std::move(impersonation), opts);
}

}  // namespace slurmop::agentplatform
