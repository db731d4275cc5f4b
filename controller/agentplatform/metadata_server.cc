// File: controller/agentplatform/metadata_server.cc
//
// Access tokens from the metadata server.

#include "controller/agentplatform/metadata_server.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "controller/agentplatform/token_endpoint.h"
#include "controller/http/percent_encoding.h"

namespace slurmop::agentplatform {
namespace {

constexpr char kHint[] =
    "on GCE, check that the VM has a service account with the cloud-platform scope; on GKE, "
    "check that the node pool uses Workload Identity (GKE_METADATA) and that the pod's "
    "Kubernetes service account is allowed to act as a Google service account (annotation "
    "iam.gke.io/gcp-service-account); off Google Cloud, set GOOGLE_APPLICATION_CREDENTIALS or "
    "give the SlurmCluster a credentials Secret";

class MetadataServerFetcher final : public TokenFetcher {
 public:
  explicit MetadataServerFetcher(const CredentialsOptions& opts)
      : opts_(opts), host_(ResolveMetadataHost(opts)), url_(MetadataTokenUrl(host_, opts.scopes)) {}

  absl::StatusOr<AccessToken> Fetch() override {
    const Time now = opts_.clock->Now();
    const TokenExchange exchange{absl::StrCat("the metadata server at ", host_), kHint, {}};
    http::Request request;
    request.method = "GET";
    request.url = url_;
    request.headers["Metadata-Flavor"] = "Google";
    request.timeout = opts_.timeout;
    absl::StatusOr<http::Response> response = SendTokenRequest(*opts_.transport, request, exchange);
    if (!response.ok()) return response.status();
    if (response->status < 200 || response->status >= 300) {
      return TokenEndpointError(*response, exchange);
    }
    auto flavor = response->headers.find("metadata-flavor");
    if (flavor == response->headers.end() || flavor->second != "Google") {
      return absl::UnavailableError(absl::StrCat(
          "the answer from ", host_,
          " lacks the header Metadata-Flavor: Google, so it is not from a metadata server; ",
          kHint));
    }
    return ParseOAuthTokenResponse(*response, now, exchange);
  }

  std::string Describe() const override {
    return "the metadata server's default service account (" + host_ + ")";
  }

 private:
  const CredentialsOptions opts_;
  const std::string host_;
  const std::string url_;
};

}  // namespace

std::string ResolveMetadataHost(const CredentialsOptions& opts) {
  std::string host = opts.metadata_host;
  for (const char* var : {"GCE_METADATA_HOST", "GCE_METADATA_ROOT"}) {
    if (!host.empty()) break;
    const char* value = std::getenv(var);
    if (value != nullptr) host = value;
  }
  if (host.empty()) host = kDefaultMetadataHost;
  absl::string_view h = absl::StripAsciiWhitespace(host);
  absl::ConsumePrefix(&h, "http://");
  absl::ConsumeSuffix(&h, "/");
  return std::string(h);
}

std::string MetadataTokenUrl(const std::string& host, const std::vector<std::string>& scopes) {
  std::string url =
      absl::StrCat("http://", host, "/computeMetadata/v1/instance/service-accounts/default/token");
  if (!scopes.empty())
    absl::StrAppend(&url, "?scopes=", http::PercentEncode(JoinScopes(scopes, ",")));
  return url;
}

std::unique_ptr<TokenFetcher> NewMetadataServerFetcher(const CredentialsOptions& opts) {
  return std::make_unique<MetadataServerFetcher>(opts);
}

}  // namespace slurmop::agentplatform
