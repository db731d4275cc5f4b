// File: controller/agentplatform/external_account.cc
//
// Workload identity federation: subject token sources and the STS exchange.

#include "controller/agentplatform/external_account.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "controller/agentplatform/token_endpoint.h"
#include "controller/common/bounded_json.h"
#include "controller/common/json_members.h"

namespace slurmop::agentplatform {
namespace {

class StsFetcher final : public TokenFetcher {
 public:
  StsFetcher(ExternalAccount account, std::vector<std::string> scopes,
             const CredentialsOptions& opts)
      : account_(std::move(account)), scopes_(std::move(scopes)), opts_(opts) {}

  absl::StatusOr<AccessToken> Fetch() override {
    absl::StatusOr<std::string> subject = SubjectToken();
    if (!subject.ok()) return subject.status();
    const Time now = opts_.clock->Now();
    TokenExchange exchange{
        absl::StrCat("the Security Token Service ", account_.token_url),
        absl::StrCat("check the workload identity pool provider ", account_.audience,
                     " (its issuer, allowed audiences and attribute conditions) and that the "
                     "subject token is current"),
        {*subject}};
    std::vector<std::pair<std::string, std::string>> form = {
        {"grant_type", kTokenExchangeGrant},
        {"requested_token_type", kAccessTokenType},
        {"audience", account_.audience},
        {"scope", JoinScopes(scopes_, " ")},
        {"subject_token_type", account_.subject_token_type},
        {"subject_token", *subject}};
    if (!account_.workforce_pool_user_project.empty() &&
        account_.service_account_impersonation_url.empty()) {
      form.emplace_back(
          "options",
          nlohmann::json({{"userProject", account_.workforce_pool_user_project}}).dump());
    }
    const http::Request request = FormPost(account_.token_url, FormEncode(form), opts_.timeout);
    return ExchangeForToken(*opts_.transport, request, exchange, now);
  }

  std::string Describe() const override {
    return "workload identity federation (" + account_.audience + ")";
  }

  std::string QuotaProject() const override { return account_.quota_project_id; }

 private:
  absl::StatusOr<std::string> SubjectToken() {
    std::string raw;
    std::string where;
    if (!account_.file.empty()) {
      // Neither the path nor the URL is quoted: the URL may carry a secret
      // in its query, and messages reach SlurmCluster status and Events.
      where = "the subject token file (credential_source.file)";
      std::ifstream in(account_.file, std::ios::binary);
      std::ostringstream content;
      if (in) content << in.rdbuf();
      if (!in) {
        return absl::UnauthenticatedError(
            absl::StrCat("cannot read ", where,
                         "; check that the projected service-account token volume is mounted"));
      }
      raw = content.str();
    } else {
      where = "the subject token URL (credential_source.url)";
      http::Request request;
      request.method = "GET";
      request.url = account_.url;
      for (const auto& [k, v] : account_.headers) request.headers[k] = v;
      request.timeout = opts_.timeout;
      const TokenExchange exchange{where, "check the credential_source url and headers", {}};
      absl::StatusOr<http::Response> response =
          SendTokenRequest(*opts_.transport, request, exchange);
      if (!response.ok()) return response.status();
      if (response->status < 200 || response->status >= 300) {
        // Do not quote the body: it could hold a token.
        return absl::Status(response->status >= 500 ? absl::StatusCode::kUnavailable
                                                    : absl::StatusCode::kUnauthenticated,
                            absl::StrCat(where, " answered HTTP ", response->status,
                                         "; check the credential_source url and headers"));
      }
      raw = response->body;
    }
    std::string token;
    if (account_.format_type == "json") {
      const nlohmann::json j = ParseBoundedJson(raw, kMaxRemoteJsonDepth);
      if (j.is_object()) token = StringMember(j, account_.subject_token_field_name.c_str());
      if (token.empty()) {
        return absl::UnauthenticatedError(absl::StrCat(where, " holds no JSON field \"",
                                                       account_.subject_token_field_name, "\""));
      }
    } else {
      token = std::string(absl::StripAsciiWhitespace(raw));
      if (token.empty()) return absl::UnauthenticatedError(absl::StrCat(where, " is empty"));
    }
    return token;
  }

  const ExternalAccount account_;
  const std::vector<std::string> scopes_;
  const CredentialsOptions opts_;
};

}  // namespace

absl::StatusOr<ExternalAccount> ParseExternalAccount(const nlohmann::json& file) {
  ExternalAccount a;
  a.audience = StringMember(file, "audience");
  a.subject_token_type = StringMember(file, "subject_token_type");
  a.token_url = StringMember(file, "token_url");
  a.workforce_pool_user_project = StringMember(file, "workforce_pool_user_project");
  a.quota_project_id = StringMember(file, "quota_project_id");
  a.service_account_impersonation_url = StringMember(file, "service_account_impersonation_url");
  if (a.audience.empty() || a.subject_token_type.empty()) {
    return absl::InvalidArgumentError(
        "external_account credentials: audience and subject_token_type are required");
  }
  if (a.token_url.empty()) a.token_url = kDefaultStsUrl;
  auto imp = file.find("service_account_impersonation");
  if (imp != file.end() && imp->is_object()) {
    auto lifetime = imp->find("token_lifetime_seconds");
    if (lifetime != imp->end() && lifetime->is_number_integer() && lifetime->get<int64_t>() > 0) {
      a.impersonation_lifetime = std::chrono::seconds(lifetime->get<int64_t>());
    }
  }
  auto source = file.find("credential_source");
  if (source == file.end() || !source->is_object()) {
    return absl::InvalidArgumentError("external_account credentials: missing credential_source");
  }
  a.file = StringMember(*source, "file");
  a.url = StringMember(*source, "url");
  if (a.file.empty() && a.url.empty()) {
    return absl::UnimplementedError(
        "external_account credentials: only \"file\" and \"url\" credential sources are "
        "supported (not aws, executable or certificate)");
  }
  auto headers = source->find("headers");
  if (headers != source->end() && headers->is_object()) {
    for (const auto& [k, v] : headers->items()) {
      if (v.is_string()) a.headers[k] = v.get<std::string>();
    }
  }
  auto format = source->find("format");
  if (format != source->end() && format->is_object()) {
    const std::string type = StringMember(*format, "type");
    if (!type.empty()) a.format_type = type;
    a.subject_token_field_name = StringMember(*format, "subject_token_field_name");
  }
  if (a.format_type != "text" && a.format_type != "json") {
    return absl::InvalidArgumentError(absl::StrCat(
        "external_account credentials: unknown credential_source format ", a.format_type));
  }
  if (a.format_type == "json" && a.subject_token_field_name.empty()) {
    return absl::InvalidArgumentError(
        "external_account credentials: format json needs subject_token_field_name");
  }
  return a;
}

std::unique_ptr<TokenFetcher> NewStsFetcher(ExternalAccount account,
                                            std::vector<std::string> scopes,
                                            const CredentialsOptions& opts) {
  return std::make_unique<StsFetcher>(std::move(account), std::move(scopes), opts);
}

}  // namespace slurmop::agentplatform
