// File: controller/kube/config.cc
//
// See config.h for the contract. yaml-cpp exceptions are caught here.

#include "controller/kube/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace slurmop::kube {
namespace {

constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

std::string Scalar(const YAML::Node& node, const char* key) {
  const YAML::Node value = node[key];
  if (!value || !value.IsScalar()) return "";
  return value.as<std::string>();
}

bool Bool(const YAML::Node& node, const char* key) {
  const YAML::Node value = node[key];
  if (!value || !value.IsScalar()) return false;
  return value.as<bool>();
}

// The `field` map of the entry named `name` in the list `list_key`
// (clusters/users/contexts), or an undefined node.
YAML::Node FindNamed(const YAML::Node& root, const char* list_key, const std::string& name,
                     const char* field) {
  const YAML::Node list = root[list_key];
  if (!list || !list.IsSequence()) return YAML::Node(YAML::NodeType::Undefined);
  for (const YAML::Node& entry : list) {
    if (entry.IsMap() && Scalar(entry, "name") == name) {
      YAML::Node value = entry[field];
      return value ? value : YAML::Node(YAML::NodeType::Map);
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string Absolute(const std::string& path, const std::filesystem::path& base_dir) {
  if (path.empty()) return path;
  std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  return (base_dir / p).lexically_normal().string();
}

absl::StatusOr<std::string> DecodeData(const std::string& encoded, const char* field) {
  std::string decoded;
  std::string compact;
  for (char c : encoded) {
    if (!absl::ascii_isspace(static_cast<unsigned char>(c))) compact.push_back(c);
  }
  if (!absl::Base64Unescape(compact, &decoded)) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig: ", field, " is not base64"));
  }
  return decoded;
}

absl::StatusOr<ExecConfig> ParseExec(const YAML::Node& exec, const std::filesystem::path& dir) {
  ExecConfig config;
  config.api_version = Scalar(exec, "apiVersion");
  if (config.api_version != "client.authentication.k8s.io/v1" &&
      config.api_version != "client.authentication.k8s.io/v1beta1") {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig: unsupported exec apiVersion \"", config.api_version, "\""));
  }
  config.command = Scalar(exec, "command");
  if (config.command.empty()) return absl::InvalidArgumentError("kubeconfig: exec without command");
  if (config.command.find('/') != std::string::npos) {
    config.command = Absolute(config.command, dir);
  }
  if (const YAML::Node args = exec["args"]; args && args.IsSequence()) {
    for (const YAML::Node& arg : args) config.args.push_back(arg.as<std::string>());
  }
  if (const YAML::Node env = exec["env"]; env && env.IsSequence()) {
    for (const YAML::Node& var : env) {
      config.env.emplace_back(Scalar(var, "name"), Scalar(var, "value"));
    }
  }
  const std::string mode = Scalar(exec, "interactiveMode");
  if (!mode.empty()) config.interactive_mode = mode;
  config.provide_cluster_info = Bool(exec, "provideClusterInfo");
  config.install_hint = Scalar(exec, "installHint");
  return config;
}

// Decodes the base64 `field` of `node` into `out` when it is present; leaves `out` alone otherwise.
absl::Status ReadData(const YAML::Node& node, const char* field, std::string& out) {
  const std::string data = Scalar(node, field);
  if (data.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> decoded = DecodeData(data, field);
  if (!decoded.ok()) return decoded.status();
  out = *std::move(decoded);
  return absl::OkStatus();
}

// The server and its TLS settings from the `cluster` map named `cluster_name`.
absl::Status ParseCluster(const YAML::Node& cluster, const std::string& cluster_name,
                          const std::filesystem::path& dir, ClientConfig& config) {
  config.server = Scalar(cluster, "server");
  if (config.server.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig: cluster \"", cluster_name, "\" has no server"));
  }
  while (config.server.size() > 1 && config.server.back() == '/') config.server.pop_back();
  config.ca_file = Absolute(Scalar(cluster, "certificate-authority"), dir);
  if (absl::Status s = ReadData(cluster, "certificate-authority-data", config.ca_data); !s.ok()) {
    return s;
  }
  config.insecure_skip_tls_verify = Bool(cluster, "insecure-skip-tls-verify");
  if (config.insecure_skip_tls_verify && (!config.ca_file.empty() || !config.ca_data.empty())) {
    return absl::InvalidArgumentError(
        "kubeconfig: specifying a root certificates file with the insecure flag is not allowed");
  }
  config.tls_server_name = Scalar(cluster, "tls-server-name");
  return absl::OkStatus();
}

// The client certificate, token or exec plugin of the `user` map.
absl::Status ParseUser(const YAML::Node& user, const std::filesystem::path& dir,
                       ClientConfig& config) {
  if (user["auth-provider"]) {
    return absl::UnimplementedError("kubeconfig: auth-provider is not supported; use exec");
  }
  config.client_cert_file = Absolute(Scalar(user, "client-certificate"), dir);
  if (absl::Status s = ReadData(user, "client-certificate-data", config.client_cert_data);
      !s.ok()) {
    return s;
  }
  config.client_key_file = Absolute(Scalar(user, "client-key"), dir);
  if (absl::Status s = ReadData(user, "client-key-data", config.client_key_data); !s.ok()) {
    return s;
  }
  config.token = Scalar(user, "token");
  if (config.token.empty()) config.token_file = Absolute(Scalar(user, "tokenFile"), dir);
  if (const YAML::Node exec = user["exec"]; exec && exec.IsMap()) {
    absl::StatusOr<ExecConfig> parsed = ParseExec(exec, dir);
    if (!parsed.ok()) return parsed.status();
    config.exec = *std::move(parsed);
  }
  return absl::OkStatus();
}

absl::StatusOr<ClientConfig> ParseKubeconfig(const YAML::Node& root,
                                             const std::filesystem::path& dir,
                                             const std::string& requested_context) {
  if (!root || !root.IsMap()) return absl::InvalidArgumentError("kubeconfig: not a YAML map");
  std::string context_name = requested_context;
  if (context_name.empty()) context_name = Scalar(root, "current-context");
  if (context_name.empty()) {
    return absl::InvalidArgumentError("kubeconfig: no context given and no current-context");
  }
  const YAML::Node context = FindNamed(root, "contexts", context_name, "context");
  if (!context.IsDefined()) {
    return absl::NotFoundError(
        absl::StrCat("kubeconfig: context \"", context_name, "\" not found"));
  }
  const std::string cluster_name = Scalar(context, "cluster");
  const YAML::Node cluster = FindNamed(root, "clusters", cluster_name, "cluster");
  if (!cluster.IsDefined()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kubeconfig: cluster \"", cluster_name, "\" of context \"", context_name, "\" not found"));
  }
  ClientConfig config;
  if (absl::Status s = ParseCluster(cluster, cluster_name, dir, config); !s.ok()) return s;
  if (const std::string user_name = Scalar(context, "user"); !user_name.empty()) {
    const YAML::Node user = FindNamed(root, "users", user_name, "user");
    if (!user.IsDefined()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kubeconfig: user \"", user_name, "\" of context \"", context_name, "\" not found"));
    }
    if (absl::Status s = ParseUser(user, dir, config); !s.ok()) return s;
  }
  config.default_namespace = Scalar(context, "namespace");
  if (config.default_namespace.empty()) config.default_namespace = "default";
  return config;
}

std::string Getenv(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

}  // namespace

absl::StatusOr<ClientConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("kubeconfig not readable: ", path));
  std::stringstream contents;
  contents << in.rdbuf();
  const std::filesystem::path dir =
      std::filesystem::absolute(std::filesystem::path(path)).parent_path();
  try {
    return ParseKubeconfig(YAML::Load(contents.str()), dir, context);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", path, ": ", e.what()));
  }
}

absl::StatusOr<ClientConfig> InClusterConfigFrom(const std::string& sa_dir) {
  const std::string host = Getenv("KUBERNETES_SERVICE_HOST");
  const std::string port = Getenv("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return absl::FailedPreconditionError(
        "not running in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set");
  }
  ClientConfig config;
  const bool ipv6 = host.find(':') != std::string::npos;
  config.server = absl::StrCat("https://", ipv6 ? "[" : "", host, ipv6 ? "]" : "", ":", port);
  const std::filesystem::path dir(sa_dir);
  config.token_file = (dir / "token").string();
  if (!std::filesystem::exists(config.token_file)) {
    return absl::NotFoundError(absl::StrCat("service account token missing: ", config.token_file));
  }
  if (std::filesystem::exists(dir / "ca.crt")) config.ca_file = (dir / "ca.crt").string();
  config.default_namespace = "default";
  if (std::ifstream ns_file(dir / "namespace"); ns_file) {
    std::string ns;
    std::getline(ns_file, ns);
    ns = std::string(absl::StripAsciiWhitespace(ns));
    if (!ns.empty()) config.default_namespace = ns;
  }
  return config;
}

absl::StatusOr<ClientConfig> InClusterConfig() { return InClusterConfigFrom(kServiceAccountDir); }

absl::StatusOr<ClientConfig> ResolveConfig(const std::string& kubeconfig_flag,
                                           const std::string& context) {
  if (!kubeconfig_flag.empty()) return LoadKubeconfig(kubeconfig_flag, context);
  const std::string env = Getenv("KUBECONFIG");
  if (!env.empty()) {
    // The first file that exists (client-go skips missing ones; it would
    // also merge the rest, which this client does not).
    std::stringstream files(env);
    std::string first;
    for (std::string file; std::getline(files, file, ':');) {
      if (file.empty()) continue;
      if (first.empty()) first = file;
      if (std::filesystem::exists(file)) return LoadKubeconfig(file, context);
    }
    if (!first.empty()) return LoadKubeconfig(first, context);  // reports the missing file
  }
  absl::StatusOr<ClientConfig> in_cluster = InClusterConfig();
  if (in_cluster.ok()) return in_cluster;
  const std::string home = Getenv("HOME");
  if (!home.empty()) {
    const std::string path = home + "/.kube/config";
    if (std::filesystem::exists(path)) return LoadKubeconfig(path, context);
  }
  // In a pod with a broken service account, say so rather than "nothing found".
  if (!absl::IsFailedPrecondition(in_cluster.status())) return in_cluster;
  return absl::NotFoundError(
      "no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, run in a pod, or create "
      "~/.kube/config");
}

}  // namespace slurmop::kube
