// File: controller/agentplatform/metadata_server.h
//
// The metadata server's access token for the attached service account
// (GCE, GKE Workload Identity, Cloud Run; google-auth.md §3.5):
//   GET http://<host>/computeMetadata/v1/instance/service-accounts/default/token?scopes=<a,b>
//   Metadata-Flavor: Google
//
// Contract: the host is opts.metadata_host, else $GCE_METADATA_HOST, else
// $GCE_METADATA_ROOT, else metadata.google.internal (an "http://" prefix is
// tolerated). The answer must echo "Metadata-Flavor: Google". Errors follow
// token_endpoint.h, with hints for GCE and GKE Workload Identity. The fetcher
// is meant for a CachedTokenSource with kMetadataRefreshMargin.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_METADATA_SERVER_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_METADATA_SERVER_H_

#include <memory>
#include <string>

#include "controller/agentplatform/cached_token_source.h"
#include "controller/agentplatform/credentials.h"

namespace slurmop::agentplatform {

inline constexpr char kDefaultMetadataHost[] = "metadata.google.internal";

// opts.metadata_host or the environment's choice (see above).
std::string ResolveMetadataHost(const CredentialsOptions& opts);

// The token URL for `host` and `scopes` (scopes omitted when empty).
std::string MetadataTokenUrl(const std::string& host, const std::vector<std::string>& scopes);

// `opts` must have a transport and a clock.
std::unique_ptr<TokenFetcher> NewMetadataServerFetcher(const CredentialsOptions& opts);

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_METADATA_SERVER_H_
