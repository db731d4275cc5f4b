// File: controller/kube/exec_plugin.h
//
// Runs a kubeconfig exec credential plugin (client.authentication.k8s.io)
// and parses the ExecCredential it prints.
//
// Contract:
//  * The plugin runs with the parent's environment plus ExecConfig::env and
//    KUBERNETES_EXEC_INFO (an ExecCredential with spec.interactive=false and,
//    if provideClusterInfo, spec.cluster.server/certificate-authority-data).
//    stdin is /dev/null (never interactive); stderr is inherited.
//  * A plugin that exits non-zero, prints no valid ExecCredential of the
//    configured apiVersion, or runs longer than `timeout` (then killed) is
//    kUnauthenticated, as is one that prints more than kMaxExecOutputBytes
//    (then killed); the message includes the installHint when the command
//    is missing. stdout is never logged (it holds credentials).
//  * status.token or status.clientCertificateData + clientKeyData must be set;
//    status.expirationTimestamp (RFC 3339) is optional.

#ifndef SLURMOP_CONTROLLER_KUBE_EXEC_PLUGIN_H_
#define SLURMOP_CONTROLLER_KUBE_EXEC_PLUGIN_H_

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "controller/common/clock.h"
#include "controller/kube/config.h"

namespace slurmop::kube {

struct ExecCredential {
  std::string token;
  std::string client_certificate_pem;
  std::string client_key_pem;
  std::optional<Time> expiration;
};

struct ExecClusterInfo {
  std::string server;
  std::string ca_data;  // PEM
  std::string tls_server_name;
  bool insecure_skip_tls_verify = false;
};

// Bounds what the plugin's stdout may hold (a credential is a few kilobytes).
inline constexpr size_t kMaxExecOutputBytes = 1 << 20;

absl::StatusOr<ExecCredential> RunExecPlugin(
    const ExecConfig& config, const ExecClusterInfo& cluster,
    std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Parses the plugin's stdout; exposed for tests.
absl::StatusOr<ExecCredential> ParseExecCredential(const std::string& output,
                                                   const std::string& api_version);

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_EXEC_PLUGIN_H_
