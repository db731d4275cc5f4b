// File: controller/reconcile/credentials_resolver.cc

#include "controller/reconcile/credentials_resolver.h"

#include <openssl/evp.h>

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "controller/kube/resource_types.h"
#include "controller/reconcile/read_grant.h"

namespace slurmop::reconcile {
namespace {

// The cache tells a changed Secret by this digest of its content: SHA-256,
// so no other content can pass for it ("" if OpenSSL fails: never cached as
// a match, see For()).
std::string Sha256(const std::string& content) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(content.data(), content.size(), md, &len, EVP_sha256(), nullptr) != 1) return "";
  return std::string(reinterpret_cast<const char*>(md), len);
}

}  // namespace

SecretCredentialsResolver::SecretCredentialsResolver(kube::Client& kube,
                                                     agentplatform::CredentialsOptions options,
                                                     Duration secret_ttl)
    : kube_(kube), options_(std::move(options)), secret_ttl_(secret_ttl) {}

absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> SecretCredentialsResolver::For(
    const ClusterIdentity& identity) {
  switch (identity.source) {
    case ClusterIdentity::Source::kOperator:
      return OperatorCredentials();
    case ClusterIdentity::Source::kSecret:
      return FromSecret(identity);
    case ClusterIdentity::Source::kNone:
      break;
  }
  return absl::PermissionDeniedError("no identity may be used for this cluster");
}

absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>>
SecretCredentialsResolver::OperatorCredentials() {
  std::lock_guard<std::mutex> lock(mu_);
  if (default_) return default_;
  absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> adc =
      agentplatform::DefaultCredentials(options_);
  if (!adc.ok()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "the operator has no usable Application Default Credentials (", adc.status().message(),
        "); set GOOGLE_APPLICATION_CREDENTIALS, run on GKE with Workload Identity, or give the "
        "SlurmCluster a credentialsSecretRef"));
  }
  default_ = *adc;
  return default_;
}

absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> SecretCredentialsResolver::FromSecret(
    const ClusterIdentity& id) {
  const std::string cache_key =
      absl::StrCat(id.secret_namespace, "/", id.secret_name, "/", id.secret_key,
                   id.installer_secret ? "/installer" : "");
  const Clock& clock = options_.clock ? *options_.clock : RealClock::Get();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto found = by_secret_.find(cache_key);
    if (found != by_secret_.end() && clock.Now() - found->second.read_at < secret_ttl_) {
      return found->second.source;
    }
  }
  absl::StatusOr<nlohmann::json> secret =
      kube_.Get(kube::Secrets(), id.secret_namespace, id.secret_name);
  if (!secret.ok()) {
    if (kube::IsNotFound(secret.status())) {
      return absl::UnauthenticatedError(absl::StrCat("Secret \"", id.secret_name,
                                                     "\" (credentialsSecretRef) does not exist in "
                                                     "namespace \"",
                                                     id.secret_namespace, "\""));
    }
    if (secret.status().code() == absl::StatusCode::kPermissionDenied) {
      return absl::UnauthenticatedError(
          MayNotRead(absl::StrCat("Secret \"", id.secret_name, "\""), id.secret_namespace));
    }
    return absl::UnavailableError(
        absl::StrCat("reading Secret \"", id.secret_name, "\": ", secret.status().message()));
  }
  const nlohmann::json data = secret->value("data", nlohmann::json::object());
  auto it = data.find(id.secret_key);
  std::string content;
  if (it == data.end() || !it->is_string() ||
      !absl::Base64Unescape(it->get<std::string>(), &content)) {
    return absl::UnauthenticatedError(absl::StrCat("Secret \"", id.secret_name, "\" has no key \"",
                                                   id.secret_key,
                                                   "\" holding a credentials JSON file"));
  }
  const std::string digest = Sha256(content);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto found = by_secret_.find(cache_key);
      found != by_secret_.end() && !digest.empty() && found->second.content_digest == digest) {
    found->second.read_at = clock.Now();
    return found->second.source;
  }
  // A namespace's Secret is a tenant's: restricted types and URLs (CredentialsFromJson). A
  // ClusterSlurmCluster's, in the operator's namespace, is the installer's, like its own ADC.
  agentplatform::CredentialsOptions trusted_as = options_;
  trusted_as.trust = id.installer_secret ? agentplatform::CredentialsTrust::kInstaller
                                         : agentplatform::CredentialsTrust::kTenant;
  absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> source =
      agentplatform::CredentialsFromJson(content, trusted_as);
  if (!source.ok()) {
    return absl::UnauthenticatedError(absl::StrCat("Secret \"", id.secret_name, "\" key \"",
                                                   id.secret_key,
                                                   "\": ", source.status().message()));
  }
  by_secret_[cache_key] = {digest, clock.Now(), *source};
  PruneLocked(clock.Now());
  return *source;
}

void SecretCredentialsResolver::PruneLocked(Time now) {
  if (now - pruned_at_ < std::chrono::minutes(1)) return;
  pruned_at_ = now;
  for (auto it = by_secret_.begin(); it != by_secret_.end();) {
    it = now - it->second.read_at >= kIdleEntry ? by_secret_.erase(it) : std::next(it);
  }
}

size_t SecretCredentialsResolver::CachedSecrets() {
  std::lock_guard<std::mutex> lock(mu_);
  return by_secret_.size();
}

}  // namespace slurmop::reconcile
