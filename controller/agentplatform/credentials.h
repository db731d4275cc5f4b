// File: controller/agentplatform/credentials.h
//
// Google OAuth2 credentials for calling Agent Platform: the TokenSource
// interface the client uses, and the two ways to obtain one (Application
// Default Credentials, or the contents of a credentials JSON file).
//
// Contract:
//  * A TokenSource is thread-safe. Token() returns a cached access token and
//    refreshes it ahead of expiry (225 s early for metadata-server tokens,
//    300 s early for the others), one refresh at a time; if a refresh fails
//    while the cached token is still valid, the cached token is returned.
//    Invalidate() (after a 401) makes the next Token() refresh.
//  * Errors are absl::Status values: kUnauthenticated (credentials rejected
//    or unusable), kPermissionDenied (the identity lacks a permission),
//    kUnavailable (a token endpoint or the metadata server could not be
//    reached or failed), kInvalidArgument / kFailedPrecondition (a malformed
//    or unreadable credentials file). Messages say what to check and never
//    contain a token, a private key, a refresh token or a client secret.
//  * Supported credential file types: service_account (OAuth2 JWT-bearer
//    grant), authorized_user (refresh-token grant),
//    impersonated_service_account, external_account (workload identity
//    federation with a file or url credential source, optionally followed
//    by service-account impersonation). Without a file: the metadata server.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_CREDENTIALS_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_CREDENTIALS_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/agentplatform/endpoint_policy.h"
#include "controller/common/clock.h"
#include "controller/http/http_transport.h"

namespace slurmop::agentplatform {

inline constexpr char kCloudPlatformScope[] = "https://www.googleapis.com/auth/cloud-platform";

// An OAuth2 access token provider; thread-safe.
class TokenSource {
 public:
  TokenSource() : instance_(NextInstance()) {}
  virtual ~TokenSource() = default;
  // Unique to this object for the life of the process. The call budget tells
  // callers apart by it (quota_budget.h): unlike Describe(), which repeats
  // what a tenant's credentials file says, no tenant can make its
  // credentials pass for another's.
  uint64_t Instance() const { return instance_; }
  // Cached; refreshed ahead of expiry; one refresh at a time.
  virtual absl::StatusOr<std::string> Token() = 0;
  // After a 401: the next Token() refreshes.
  virtual void Invalidate() = 0;
  // e.g. "service account sa@p.iam.gserviceaccount.com" (no secrets).
  virtual std::string Describe() const = 0;
  // The project to bill quota to ("x-goog-user-project"), or "" for none.
  // Set for user credentials with a quota_project_id, or through
  // $GOOGLE_CLOUD_QUOTA_PROJECT.
  virtual std::string QuotaProject() const { return ""; }

 private:
  static uint64_t NextInstance();
  const uint64_t instance_;
};

// Who wrote a credentials file (see CredentialsFromJson).
enum class CredentialsTrust {
  kInstaller,  // the operator's own ADC: every supported type and URL
  kTenant,     // a namespace's Secret: restricted, see CredentialsFromJson
};

struct CredentialsOptions {
  http::Transport* transport = nullptr;  // for token endpoints and the metadata server
  CredentialsTrust trust = CredentialsTrust::kInstaller;
  // kTenant: the hosts that token and impersonation URLs may name (default:
  // Google's only); every request of such credentials goes through a
  // PolicyTransport with it.
  EndpointPolicy endpoint_policy;
  // Keeps a transport that `transport` points to alive (set internally).
  std::shared_ptr<http::Transport> owned_transport;
  const Clock* clock = nullptr;  // nullptr: RealClock
  // Default: $GCE_METADATA_HOST, else $GCE_METADATA_ROOT, else
  // "metadata.google.internal". host[:port], no scheme.
  std::string metadata_host;
  std::vector<std::string> scopes = {kCloudPlatformScope};
  // Timeout of each token-endpoint or metadata-server request.
  std::chrono::milliseconds timeout{30000};
};

// Application Default Credentials lookup: $GOOGLE_APPLICATION_CREDENTIALS
// (must load: no fallback), then $CLOUDSDK_CONFIG/application_default_credentials.json
// or ~/.config/gcloud/application_default_credentials.json, then the metadata
// server (not probed: errors surface at the first Token()).
absl::StatusOr<std::shared_ptr<TokenSource>> DefaultCredentials(const CredentialsOptions& opts);

// From the contents of a credentials JSON file (e.g. a Secret's key).
// With opts.trust == kTenant the file is untrusted input:
//  * accepted: service_account, authorized_user, and
//    impersonated_service_account whose source_credentials are one of those;
//    their token_uri and service_account_impersonation_url must be allowed by
//    opts.endpoint_policy (Google's hosts, or hosts the installer listed);
//  * refused (kInvalidArgument naming the field, before anything is read or
//    sent): external_account of any credential_source (file, url,
//    executable, ...), which would make the operator read a file or URL the
//    file names and post it to a token_url it names; a URL the policy
//    refuses.
// Nothing of the file's content is quoted in errors, except the refused
// URL's host (and its field's name).
absl::StatusOr<std::shared_ptr<TokenSource>> CredentialsFromJson(std::string_view json,
                                                                 const CredentialsOptions& opts);

// The metadata server's token (GCE, GKE Workload Identity, Cloud Run).
absl::StatusOr<std::shared_ptr<TokenSource>> MetadataServerCredentials(
    const CredentialsOptions& opts);

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_CREDENTIALS_H_
