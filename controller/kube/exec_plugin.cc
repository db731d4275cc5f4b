// File: controller/kube/exec_plugin.cc
//
// See exec_plugin.h for the contract.

#include "controller/kube/exec_plugin.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "controller/common/bounded_json.h"
#include "controller/common/json_members.h"
#include "controller/common/time_format.h"

extern char** environ;

namespace slurmop::kube {
namespace {

std::string ExecInfo(const ExecConfig& config, const ExecClusterInfo& cluster) {
  nlohmann::json info = {{"apiVersion", config.api_version},
                         {"kind", "ExecCredential"},
                         {"spec", {{"interactive", false}}}};
  if (config.provide_cluster_info) {
    nlohmann::json c = {{"server", cluster.server}};
    if (!cluster.ca_data.empty())
      c["certificate-authority-data"] = absl::Base64Escape(cluster.ca_data);
    if (!cluster.tls_server_name.empty()) c["tls-server-name"] = cluster.tls_server_name;
    if (cluster.insecure_skip_tls_verify) c["insecure-skip-tls-verify"] = true;
    info["spec"]["cluster"] = std::move(c);
  }
  return info.dump();
}

std::vector<std::string> BuildEnvironment(const ExecConfig& config,
                                          const ExecClusterInfo& cluster) {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string var(*entry);
    const size_t eq = var.find('=');
    if (eq != std::string::npos) env[var.substr(0, eq)] = var.substr(eq + 1);
  }
  for (const auto& [name, value] : config.env) env[name] = value;
  env["KUBERNETES_EXEC_INFO"] = ExecInfo(config, cluster);
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

absl::Status PluginError(const ExecConfig& config, const std::string& what) {
  std::string message = absl::StrCat("exec plugin ", config.command, ": ", what);
  if (!config.install_hint.empty()) absl::StrAppend(&message, "; ", config.install_hint);
  return absl::UnauthenticatedError(message);
}

}  // namespace

absl::StatusOr<ExecCredential> ParseExecCredential(const std::string& output,
                                                   const std::string& api_version) {
  nlohmann::json credential = ParseBoundedJson(output, kMaxRemoteJsonDepth);
  if (!credential.is_object()) {
    return absl::UnauthenticatedError("exec plugin printed no JSON ExecCredential");
  }
  if (StringMember(credential, "kind") != "ExecCredential") {
    return absl::UnauthenticatedError("exec plugin output is not an ExecCredential");
  }
  if (StringMember(credential, "apiVersion") != api_version) {
    return absl::UnauthenticatedError(absl::StrCat("exec plugin returned apiVersion \"",
                                                   StringMember(credential, "apiVersion"),
                                                   "\", want \"", api_version, "\""));
  }
  auto status = credential.find("status");
  if (status == credential.end() || !status->is_object()) {
    return absl::UnauthenticatedError("exec plugin ExecCredential has no status");
  }
  ExecCredential result;
  result.token = StringMember(*status, "token");
  result.client_certificate_pem = StringMember(*status, "clientCertificateData");
  result.client_key_pem = StringMember(*status, "clientKeyData");
  if (result.token.empty() &&
      (result.client_certificate_pem.empty() || result.client_key_pem.empty())) {
    return absl::UnauthenticatedError(
        "exec plugin ExecCredential has neither a token nor a client certificate and key");
  }
  const std::string expiration = StringMember(*status, "expirationTimestamp");
  if (!expiration.empty()) {
    std::optional<Time> parsed = ParseRfc3339(expiration);
    if (!parsed.has_value()) {
      return absl::UnauthenticatedError("exec plugin expirationTimestamp is not RFC 3339");
    }
    result.expiration = parsed;
  }
  return result;
}

namespace {

// Starts the plugin with stdin on /dev/null and stdout on `stdout_fd`; its pid, or errno.
absl::StatusOr<pid_t> SpawnPlugin(const ExecConfig& config, const ExecClusterInfo& cluster,
                                  int stdout_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, stdout_fd, STDOUT_FILENO);

  std::vector<std::string> argv_strings = {config.command};
  argv_strings.insert(argv_strings.end(), config.args.begin(), config.args.end());
  std::vector<std::string> env_strings = BuildEnvironment(config, cluster);
  std::vector<char*> argv = Pointers(argv_strings);
  std::vector<char*> envp = Pointers(env_strings);

  pid_t pid = 0;
  const bool has_path = config.command.find('/') != std::string::npos;
  const int spawn_error =
      has_path
          ? posix_spawn(&pid, config.command.c_str(), &actions, nullptr, argv.data(), envp.data())
          : posix_spawnp(&pid, config.command.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawn_error != 0) {
    return absl::InternalError(absl::StrCat("cannot run: ", std::strerror(spawn_error)));
  }
  return pid;
}

// What the plugin printed before it closed stdout, the deadline passed or it printed more
// than kMaxExecOutputBytes.
struct PluginOutput {
  std::string text;
  bool timed_out = false;
  bool too_large = false;
};

PluginOutput ReadOutput(int fd, std::chrono::steady_clock::time_point deadline) {
  PluginOutput out;
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      out.timed_out = true;
      return out;
    }
    pollfd pfd = {fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      out.timed_out = ready == 0;
      return out;
    }
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    if (out.text.size() + static_cast<size_t>(n) > kMaxExecOutputBytes) {
      out.too_large = true;
      return out;
    }
    out.text.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace

absl::StatusOr<ExecCredential> RunExecPlugin(const ExecConfig& config,
                                             const ExecClusterInfo& cluster,
                                             std::chrono::milliseconds timeout) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return PluginError(config, "pipe failed");
  absl::StatusOr<pid_t> pid = SpawnPlugin(config, cluster, pipe_fds[1]);
  close(pipe_fds[1]);
  if (!pid.ok()) {
    close(pipe_fds[0]);
    return PluginError(config, std::string(pid.status().message()));
  }
  const PluginOutput output = ReadOutput(pipe_fds[0], std::chrono::steady_clock::now() + timeout);
  close(pipe_fds[0]);
  if (output.timed_out || output.too_large) kill(*pid, SIGKILL);
  int wait_status = 0;
  while (waitpid(*pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  if (output.timed_out) return PluginError(config, "timed out");
  if (output.too_large) {
    return PluginError(config, absl::StrCat("printed more than ", kMaxExecOutputBytes,
                                            " bytes; an ExecCredential is a few kilobytes"));
  }
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    return PluginError(config,
                       absl::StrCat("failed with exit status ",
                                    WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1));
  }
  absl::StatusOr<ExecCredential> credential = ParseExecCredential(output.text, config.api_version);
  if (!credential.ok()) return PluginError(config, std::string(credential.status().message()));
  return credential;
}

}  // namespace slurmop::kube
