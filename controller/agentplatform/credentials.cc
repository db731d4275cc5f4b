// File: controller/agentplatform/credentials.cc
//
// Application Default Credentials lookup and the dispatch from a credentials
// file's "type" to the token fetcher that implements it, each wrapped in a
// CachedTokenSource with the right refresh margin.

#include "controller/agentplatform/credentials.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/agentplatform/authorized_user.h"
#include "controller/agentplatform/cached_token_source.h"
#include "controller/agentplatform/external_account.h"
#include "controller/agentplatform/impersonated.h"
#include "controller/agentplatform/metadata_server.h"
#include "controller/agentplatform/service_account.h"
#include "controller/common/bounded_json.h"
#include "nlohmann/json.hpp"

namespace slurmop::agentplatform {
namespace {

constexpr char kAdcFileName[] = "application_default_credentials.json";

std::string Getenv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

// Overrides the quota project ($GOOGLE_CLOUD_QUOTA_PROJECT).
class QuotaProjectOverride final : public TokenSource {
 public:
  QuotaProjectOverride(std::shared_ptr<TokenSource> inner, std::string project)
      : inner_(std::move(inner)), project_(std::move(project)) {}
  absl::StatusOr<std::string> Token() override { return inner_->Token(); }
  void Invalidate() override { inner_->Invalidate(); }
  std::string Describe() const override { return inner_->Describe(); }
  std::string QuotaProject() const override { return project_; }

 private:
  const std::shared_ptr<TokenSource> inner_;
  const std::string project_;
};

absl::StatusOr<CredentialsOptions> Resolve(const CredentialsOptions& opts) {
  if (opts.transport == nullptr) {
    return absl::InvalidArgumentError("CredentialsOptions.transport is not set");
  }
  CredentialsOptions out = opts;
  if (out.clock == nullptr) out.clock = &RealClock::Get();
  return out;
}

std::shared_ptr<TokenSource> Cache(std::unique_ptr<TokenFetcher> fetcher,
                                   const CredentialsOptions& opts,
                                   std::chrono::seconds margin = kDefaultRefreshMargin) {
  return std::make_shared<CachedTokenSource>(std::move(fetcher), opts.clock, margin);
}

std::shared_ptr<TokenSource> WithQuotaProjectFromEnvironment(std::shared_ptr<TokenSource> source) {
  const std::string project = Getenv("GOOGLE_CLOUD_QUOTA_PROJECT");
  if (project.empty()) return source;
  return std::make_shared<QuotaProjectOverride>(std::move(source), project);
}

bool Tenant(const CredentialsOptions& opts) { return opts.trust == CredentialsTrust::kTenant; }

// kTenant: `url` (the file's field `field` of credentials `type`) must be
// one the endpoint policy allows.
absl::Status CheckTenantUrl(const CredentialsOptions& opts, const std::string& type,
                            const std::string& field, const std::string& url) {
  if (!Tenant(opts)) return absl::OkStatus();
  absl::Status allowed = opts.endpoint_policy.Check(url);
  if (allowed.ok()) return allowed;
  return absl::InvalidArgumentError(
      absl::StrCat(type, " credentials: ", field, " is refused: ", allowed.message()));
}

// kTenant: external_account is refused whatever its source; the message
// names the source's field (never its value).
absl::Status RefuseTenantExternalAccount(const nlohmann::json& file) {
  std::string field = "credential_source";
  auto source = file.find("credential_source");
  if (source != file.end() && source->is_object()) {
    for (const char* kind : {"file", "url", "executable", "environment_id", "certificate"}) {
      if (source->contains(kind)) {
        field = absl::StrCat("credential_source.", kind);
        break;
      }
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "external_account credentials (", field,
      ") are not accepted from a Secret: they make the operator read a file or URL that the "
      "credentials name and send it to a token_url they name. Use a service_account key, "
      "authorized_user or impersonated_service_account credentials"));
}

absl::StatusOr<std::shared_ptr<TokenSource>> FromParsedJson(const nlohmann::json& file,
                                                            const CredentialsOptions& opts,
                                                            int depth);

// An impersonated_service_account file: its source credentials (at `depth` + 1, which may not
// be impersonated themselves) with the cloud-platform scope, exchanged for the target's token.
absl::StatusOr<std::shared_ptr<TokenSource>> FromImpersonated(const nlohmann::json& file,
                                                              const CredentialsOptions& opts,
                                                              int depth) {
  const std::string type = "impersonated_service_account";
  if (depth > 0) {
    return absl::InvalidArgumentError(
        "impersonated_service_account credentials: source_credentials may not themselves be "
        "impersonated");
  }
  nlohmann::json source_json;
  absl::StatusOr<Impersonation> imp = ParseImpersonatedServiceAccount(file, &source_json);
  if (!imp.ok()) return imp.status();
  if (absl::Status s = CheckTenantUrl(opts, type, "service_account_impersonation_url", imp->url);
      !s.ok()) {
    return s;
  }
  CredentialsOptions source_opts = opts;
  source_opts.scopes = {kCloudPlatformScope};
  absl::StatusOr<std::shared_ptr<TokenSource>> source =
      FromParsedJson(source_json, source_opts, depth + 1);
  if (!source.ok()) {
    return absl::Status(source.status().code(),
                        absl::StrCat("impersonated_service_account source_credentials: ",
                                     source.status().message()));
  }
  return Cache(NewImpersonationFetcher(*std::move(source), *std::move(imp), opts), opts);
}

// An external_account file (never a tenant's): an STS exchange, then an impersonation when the
// file names a service account.
absl::StatusOr<std::shared_ptr<TokenSource>> FromExternalAccount(const nlohmann::json& file,
                                                                 const CredentialsOptions& opts) {
  if (Tenant(opts)) return RefuseTenantExternalAccount(file);
  absl::StatusOr<ExternalAccount> account = ParseExternalAccount(file);
  if (!account.ok()) return account.status();
  if (account->service_account_impersonation_url.empty()) {
    return Cache(NewStsFetcher(*std::move(account), opts.scopes, opts), opts);
  }
  Impersonation imp;
  imp.url = account->service_account_impersonation_url;
  imp.lifetime = account->impersonation_lifetime;
  std::shared_ptr<TokenSource> sts =
      Cache(NewStsFetcher(*std::move(account), {kCloudPlatformScope}, opts), opts);
  return Cache(NewImpersonationFetcher(std::move(sts), std::move(imp), opts), opts);
}

// `opts` is resolved; `depth` is 1 for an impersonation's source credentials.
absl::StatusOr<std::shared_ptr<TokenSource>> FromParsedJson(const nlohmann::json& file,
                                                            const CredentialsOptions& opts,
                                                            int depth) {
  if (!file.is_object()) {
    return absl::InvalidArgumentError("credentials are not a JSON object");
  }
  auto type_it = file.find("type");
  const std::string type =
      type_it != file.end() && type_it->is_string() ? type_it->get<std::string>() : "";

  if (type == "service_account") {
    absl::StatusOr<ServiceAccountKey> key = ParseServiceAccountKey(file);
    if (!key.ok()) return key.status();
    if (absl::Status s = CheckTenantUrl(opts, type, "token_uri", key->token_uri); !s.ok()) {
      return s;
    }
    return Cache(NewServiceAccountFetcher(*std::move(key), opts), opts);
  }
  if (type == "authorized_user") {
    absl::StatusOr<AuthorizedUser> user = ParseAuthorizedUser(file);
    if (!user.ok()) return user.status();
    if (absl::Status s = CheckTenantUrl(opts, type, "token_uri", user->token_uri); !s.ok()) {
      return s;
    }
    return Cache(NewAuthorizedUserFetcher(*std::move(user), opts), opts);
  }
  if (type == "impersonated_service_account") return FromImpersonated(file, opts, depth);
  if (type == "external_account") return FromExternalAccount(file, opts);
  if (type.empty()) {
    return absl::InvalidArgumentError("credentials JSON has no \"type\" field");
  }
  return absl::UnimplementedError(
      absl::StrCat("credentials of type \"", type,
                   "\" are not supported; use service_account, authorized_user, "
                   "impersonated_service_account or external_account"));
}

// Reads a credentials file; kFailedPrecondition when unreadable.
absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return absl::FailedPreconditionError(absl::StrCat("cannot read ", path));
  return content.str();
}

absl::StatusOr<std::shared_ptr<TokenSource>> FromFile(const std::string& path,
                                                      const std::string& origin,
                                                      const CredentialsOptions& opts) {
  absl::StatusOr<std::string> json = ReadFile(path);
  absl::StatusOr<std::shared_ptr<TokenSource>> source =
      json.ok() ? CredentialsFromJson(*json, opts) : json.status();
  if (!source.ok()) {
    return absl::Status(source.status().code(),
                        absl::StrCat(origin, ": ", source.status().message()));
  }
  return source;
}

}  // namespace

absl::StatusOr<std::shared_ptr<TokenSource>> CredentialsFromJson(std::string_view json,
                                                                 const CredentialsOptions& opts) {
  absl::StatusOr<CredentialsOptions> resolved = Resolve(opts);
  if (!resolved.ok()) return resolved.status();
  if (Tenant(*resolved)) {
    // Every request of these credentials passes the policy, whatever code
    // path builds it.
    resolved->owned_transport =
        std::make_shared<PolicyTransport>(*resolved->transport, resolved->endpoint_policy);
    resolved->transport = resolved->owned_transport.get();
  }
  // Never quote the content or the parser's error: it may hold a private key.
  const nlohmann::json file = ParseBoundedJson(json, kMaxRemoteJsonDepth);
  if (file.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "credentials are not valid JSON (or nest deeper than ", kMaxRemoteJsonDepth, " levels)"));
  }
  absl::StatusOr<std::shared_ptr<TokenSource>> source = FromParsedJson(file, *resolved, 0);
  if (!source.ok()) return source.status();
  return WithQuotaProjectFromEnvironment(*std::move(source));
}

absl::StatusOr<std::shared_ptr<TokenSource>> MetadataServerCredentials(
    const CredentialsOptions& opts) {
  absl::StatusOr<CredentialsOptions> resolved = Resolve(opts);
  if (!resolved.ok()) return resolved.status();
  return WithQuotaProjectFromEnvironment(
      Cache(NewMetadataServerFetcher(*resolved), *resolved, kMetadataRefreshMargin));
}

absl::StatusOr<std::shared_ptr<TokenSource>> DefaultCredentials(const CredentialsOptions& opts) {
  absl::StatusOr<CredentialsOptions> resolved = Resolve(opts);
  if (!resolved.ok()) return resolved.status();

  const std::string env_path = Getenv("GOOGLE_APPLICATION_CREDENTIALS");
  if (!env_path.empty()) {
    return FromFile(env_path, absl::StrCat("GOOGLE_APPLICATION_CREDENTIALS=", env_path), *resolved);
  }

  std::string gcloud_path;
  const std::string cloudsdk_config = Getenv("CLOUDSDK_CONFIG");
  const std::string home = Getenv("HOME");
  if (!cloudsdk_config.empty()) {
    gcloud_path = (std::filesystem::path(cloudsdk_config) / kAdcFileName).string();
  } else if (!home.empty()) {
    gcloud_path = (std::filesystem::path(home) / ".config" / "gcloud" / kAdcFileName).string();
  }
  std::error_code ec;
  if (!gcloud_path.empty() && std::filesystem::exists(gcloud_path, ec)) {
    return FromFile(gcloud_path, gcloud_path, *resolved);
  }

  return MetadataServerCredentials(*resolved);
}

uint64_t TokenSource::NextInstance() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace slurmop::agentplatform
