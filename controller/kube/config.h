// File: controller/kube/config.h
//
// Where the operator finds its API server and credentials: a kubeconfig
// file, the in-cluster service account, or both by client-go's precedence.
//
// Contract:
//  * LoadKubeconfig(path, context) reads one kubeconfig with yaml-cpp and
//    resolves `context` ("" = current-context) to its cluster and user.
//    *-data fields are base64 and are decoded to PEM text; file paths
//    (certificate-authority, client-certificate, client-key, tokenFile and an
//    exec command containing '/') are made absolute against the kubeconfig's
//    directory. A `token` wins over `tokenFile`. auth-provider is rejected
//    (kUnimplemented); exec needs apiVersion client.authentication.k8s.io/v1
//    or v1beta1. The exec plugin is not run here: the client runs it on first
//    use (see credentials.h). Only the named file is read (no KUBECONFIG
//    merging of several files).
//  * InClusterConfig(): https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
//    (IPv6 hosts bracketed), the service account token file (re-read by the
//    client at most once a minute and right after a 401), its ca.crt and
//    namespace. kFailedPrecondition when not running in a pod.
//  * ResolveConfig(flag, context): the --kubeconfig flag, else the first
//    existing file of $KUBECONFIG, else in-cluster (if it works), else ~/.kube/config
//    (controller-runtime's order). `context` applies to kubeconfig files.

#ifndef SLURMOP_CONTROLLER_KUBE_CONFIG_H_
#define SLURMOP_CONTROLLER_KUBE_CONFIG_H_

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace slurmop::kube {

// users[].user.exec of a kubeconfig (client.authentication.k8s.io).
struct ExecConfig {
  std::string api_version;  // client.authentication.k8s.io/v1 (or v1beta1)
  std::string command;      // absolute if the kubeconfig gave a relative path
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string interactive_mode = "Never";  // Never | IfAvailable | Always
  bool provide_cluster_info = false;
  std::string install_hint;
};

struct ClientConfig {
  std::string server;  // https://host:port[/prefix]
  std::string ca_file;
  std::string ca_data;  // PEM (decoded)
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
  std::string client_cert_file;
  std::string client_cert_data;  // PEM (decoded)
  std::string client_key_file;
  std::string client_key_data;  // PEM (decoded)
  std::string token;            // static bearer token
  std::string token_file;       // bearer token file, re-read periodically
  std::optional<ExecConfig> exec;
  std::string default_namespace;  // context namespace, or the pod's namespace
  // Not from kubeconfig: request defaults of the client built from this.
  std::string user_agent = "slurmjob-operator";
  std::chrono::milliseconds request_timeout{30000};
  // Writes that may be re-sent go on keep-alive connections driven on the
  // calling thread (http::KeepAliveWritesTransport); false: cpprestsdk's pool.
  bool keep_alive_writes = true;
  // Watches are read on the informer's own thread (Boost.Beast, through
  // KeepAliveWritesTransport; needs keep_alive_writes); false: cpprestsdk's.
  bool watches_on_informer_thread = true;
};

absl::StatusOr<ClientConfig> LoadKubeconfig(const std::string& path, const std::string& context);

absl::StatusOr<ClientConfig> InClusterConfig();
// InClusterConfig() reading the service account files from `sa_dir` instead
// of /var/run/secrets/kubernetes.io/serviceaccount (for tests).
absl::StatusOr<ClientConfig> InClusterConfigFrom(const std::string& sa_dir);

absl::StatusOr<ClientConfig> ResolveConfig(const std::string& kubeconfig_flag,
                                           const std::string& context);

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_CONFIG_H_
