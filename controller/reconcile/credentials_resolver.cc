// File: controller/reconcile/credentials_resolver.cc

#include "controller/reconcile/credentials_resolver.h"

#include <functional>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "controller/kube/resource_types.h"

namespace slurmop::reconcile {

SecretCredentialsResolver::SecretCredentialsResolver(kube::Client& kube,
                                                     agentplatform::CredentialsOptions options)
    : kube_(kube), options_(std::move(options)) {}

absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> SecretCredentialsResolver::For(
    std::string_view ns, const v1alpha1::SlurmClusterSpec& cluster) {
  if (!cluster.has_credentials_secret_ref() || cluster.credentials_secret_ref().name().empty()) {
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

  const auto& ref = cluster.credentials_secret_ref();
  const std::string key_name = ref.key().empty() ? "credentials.json" : ref.key();
  absl::StatusOr<nlohmann::json> secret = kube_.Get(kube::Secrets(), ns, ref.name());
  if (!secret.ok()) {
    if (kube::IsNotFound(secret.status())) {
      return absl::UnauthenticatedError(absl::StrCat("Secret \"", ref.name(),
                                                     "\" (credentialsSecretRef) does not exist in "
                                                     "namespace \"",
                                                     std::string(ns), "\""));
    }
    return absl::UnavailableError(
        absl::StrCat("reading Secret \"", ref.name(), "\": ", secret.status().message()));
  }
  const nlohmann::json data = secret->value("data", nlohmann::json::object());
  auto it = data.find(key_name);
  std::string content;
  if (it == data.end() || !it->is_string() ||
      !absl::Base64Unescape(it->get<std::string>(), &content)) {
    return absl::UnauthenticatedError(absl::StrCat("Secret \"", ref.name(), "\" has no key \"",
                                                   key_name, "\" holding a credentials JSON file"));
  }
  const std::string cache_key = absl::StrCat(std::string(ns), "/", ref.name(), "/", key_name);
  const std::string digest = std::to_string(std::hash<std::string>{}(content));
  std::lock_guard<std::mutex> lock(mu_);
  if (auto found = by_secret_.find(cache_key);
      found != by_secret_.end() && found->second.content_digest == digest) {
    return found->second.source;
  }
  // A Secret is a tenant's: restricted types and URLs (CredentialsFromJson).
  agentplatform::CredentialsOptions tenant = options_;
  tenant.trust = agentplatform::CredentialsTrust::kTenant;
  absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> source =
      agentplatform::CredentialsFromJson(content, tenant);
  if (!source.ok()) {
    return absl::UnauthenticatedError(absl::StrCat("Secret \"", ref.name(), "\" key \"", key_name,
                                                   "\": ", source.status().message()));
  }
  by_secret_[cache_key] = {digest, *source};
  return *source;
}

}  // namespace slurmop::reconcile
