// File: tests/testing/stand_ins.cc

#include "tests/testing/stand_ins.h"

#include <cstdlib>
#include <filesystem>
#include <utility>

namespace slurmop::testing {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

std::string Fake(const std::string& script) {
  return std::string(SLURMOP_SOURCE_DIR) + "/tests/fakes/" + script;
}

// Success once `port_file` names a port (within 30 s), stored in `*port`
// unless null; else `log` says why `who` did not listen.
::testing::AssertionResult WaitForPort(const std::string& who, const std::string& port_file,
                                       const std::string& log, int* port) {
  const int p = ReadPort(port_file);
  if (port != nullptr) *port = p;
  if (p > 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << who << " wrote no port to " << port_file << " within 30 s; its log:\n"
         << ReadFile(log);
}

::testing::AssertionResult WaitForKubeconfig(const std::string& dir) {
  const std::string kubeconfig = dir + "/kubeconfig";
  if (WaitUntil([&] { return std::filesystem::exists(kubeconfig); }, std::chrono::seconds(10))) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "no " << kubeconfig << " within 10 s; the API server's log:\n"
         << ReadFile(dir + "/kube_apiserver.log");
}

}  // namespace

KubectlClient::KubectlClient(std::string kubeconfig, std::map<std::string, std::string> env,
                             std::chrono::milliseconds timeout)
    : kubeconfig_(std::move(kubeconfig)), env_(std::move(env)), timeout_(timeout) {
  env_["KUBECONFIG"] = kubeconfig_;
}

CommandResult KubectlClient::Run(std::vector<std::string> args,
                                 const std::string& stdin_data) const {
  return Run(std::move(args), stdin_data, timeout_);
}

CommandResult KubectlClient::Run(std::vector<std::string> args, const std::string& stdin_data,
                                 std::chrono::milliseconds timeout) const {
  args.insert(args.begin(), "kubectl");
  return RunCommand(args, env_, timeout, stdin_data);
}

::testing::AssertionResult KubectlClient::Succeeded(const std::vector<std::string>& args,
                                                    const CommandResult& r) {
  if (r.exit_code == 0) return ::testing::AssertionSuccess();
  ::testing::AssertionResult failure = ::testing::AssertionFailure() << "kubectl";
  for (const std::string& a : args) failure << " " << a;
  return failure << " exited " << r.exit_code << ":\n" << r.out << r.err;
}

::testing::AssertionResult KubectlClient::InstallCrds() const {
  const std::vector<std::string> args = {"apply", "-k", std::string(SLURMOP_SOURCE_DIR) + "/crds/"};
  return Succeeded(args, Run(args));
}

::testing::AssertionResult KubectlClient::CreateNamespace(const std::string& ns) const {
  const std::vector<std::string> args = {"create", "namespace", ns};
  return Succeeded(args, Run(args));
}

::testing::AssertionResult KubectlClient::Apply(const std::string& yaml) const {
  const std::vector<std::string> args = {"apply", "-f", "-"};
  return Succeeded(args, Run(args, yaml));
}

std::unique_ptr<Subprocess> StartKubeApiserver(const std::string& dir,
                                               const std::vector<std::string>& flags, int port,
                                               const std::string& log_name) {
  std::filesystem::remove(dir + "/kube.port");
  std::vector<std::string> argv = {kPython,
                                   Fake("kube_apiserver.py"),
                                   "--port",
                                   std::to_string(port),
                                   "--port-file",
                                   dir + "/kube.port",
                                   "--kubeconfig-out",
                                   dir + "/kubeconfig",
                                   "--tls-auto",
                                   dir + "/tls"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return std::make_unique<Subprocess>(argv, dir + "/" + log_name);
}

std::unique_ptr<Subprocess> StartAgentPlatform(const std::string& dir,
                                               const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {kPython,       Fake("agent_platform.py"), "--port", "0",
                                   "--port-file", dir + "/ap.port"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return std::make_unique<Subprocess>(argv, dir + "/agent_platform.log");
}

::testing::AssertionResult WaitForKubeApiserver(const std::string& dir, int* port) {
  ::testing::AssertionResult listening =
      WaitForPort("kube_apiserver.py", dir + "/kube.port", dir + "/kube_apiserver.log", port);
  if (!listening) return listening;
  return WaitForKubeconfig(dir);
}

StandIns::StandIns(const std::string& dir, StandInOptions options)
    : dir_(dir),
      kube_apiserver_(StartKubeApiserver(dir, options.kube_apiserver_flags)),
      agent_platform_(StartAgentPlatform(dir, options.agent_platform_flags)),
      kubectl_(dir + "/kubeconfig", std::move(options.kubectl_env), options.kubectl_timeout) {}

::testing::AssertionResult StandIns::WaitUntilServing() {
  ::testing::AssertionResult kube = WaitForPort("kube_apiserver.py", dir_ + "/kube.port",
                                                dir_ + "/kube_apiserver.log", &kube_port_);
  if (!kube) return kube;
  ::testing::AssertionResult agent = WaitForPort(
      "agent_platform.py", dir_ + "/ap.port", dir_ + "/agent_platform.log", &agent_platform_port_);
  if (!agent) return agent;
  return WaitForKubeconfig(dir_);
}

std::map<std::string, std::string> OperatorEnv(int agent_platform_port, const std::string& home) {
  return {{"GCE_METADATA_HOST", "127.0.0.1:" + std::to_string(agent_platform_port)},
          {"GOOGLE_APPLICATION_CREDENTIALS", ""},
          {"HOME", home}};
}

std::string OperatorBinary(const std::string& built) {
  const char* other = std::getenv("SLURMOP_OPERATOR_BINARY");
  return other != nullptr && *other != '\0' ? other : built;
}

}  // namespace slurmop::testing
