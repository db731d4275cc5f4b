// File: tests/testing/stand_ins.h
//
// The stand-ins the end-to-end suites run the operator against, and kubectl
// against them: tests/fakes/kube_apiserver.py (a Kubernetes API server over
// TLS that writes a kubeconfig for itself) and tests/fakes/agent_platform.py
// (Agent Platform with its Slurm simulator, also the metadata server the
// operator takes its Google credentials from), each started with
// /usr/bin/python3 from the source tree in a directory the caller owns:
//
//   kube.port, kubeconfig, tls/, kube_apiserver.log   the API server
//   ap.port, agent_platform.log                        Agent Platform
//
// Both listen on a port of their choosing unless told one. A stand-in stops
// (SIGTERM, then SIGKILL) when its owner goes out of scope; the directory is
// left to the caller. Waits and kubectl calls report failure as a
// ::testing::AssertionResult whose message carries what explains it (the
// stand-in's log, kubectl's output), for ASSERT_TRUE or EXPECT_TRUE at the
// call site. Link slurmop_testing.

#ifndef SLURMOP_TESTS_TESTING_STAND_INS_H_
#define SLURMOP_TESTS_TESTING_STAND_INS_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace slurmop::testing {

// kubectl against one API server: KUBECONFIG=`kubeconfig` and `env` added to
// its environment, killed after `timeout` unless a call names another.
class KubectlClient {
 public:
  explicit KubectlClient(std::string kubeconfig, std::map<std::string, std::string> env = {},
                         std::chrono::milliseconds timeout = std::chrono::seconds(90));

  const std::string& kubeconfig() const { return kubeconfig_; }

  // `kubectl args...` with `stdin_data` on its standard input.
  CommandResult Run(std::vector<std::string> args, const std::string& stdin_data = "") const;
  CommandResult Run(std::vector<std::string> args, const std::string& stdin_data,
                    std::chrono::milliseconds timeout) const;

  // `kubectl apply -k <source tree>/crds/`.
  ::testing::AssertionResult InstallCrds() const;
  // `kubectl create namespace ns`.
  ::testing::AssertionResult CreateNamespace(const std::string& ns) const;
  // `kubectl apply -f -` with `yaml` on its standard input.
  ::testing::AssertionResult Apply(const std::string& yaml) const;

 private:
  // Success when `r` exited 0; else its exit code, stdout and stderr.
  static ::testing::AssertionResult Succeeded(const std::vector<std::string>& args,
                                              const CommandResult& r);

  std::string kubeconfig_;
  std::map<std::string, std::string> env_;
  std::chrono::milliseconds timeout_;
};

// kube_apiserver.py in `dir` with --port `port` (0: any) --port-file
// <dir>/kube.port --kubeconfig-out <dir>/kubeconfig --tls-auto <dir>/tls and
// then `flags`, its output to <dir>/`log_name`. A port file left by an
// earlier run is removed first.
std::unique_ptr<Subprocess> StartKubeApiserver(const std::string& dir,
                                               const std::vector<std::string>& flags = {},
                                               int port = 0,
                                               const std::string& log_name = "kube_apiserver.log");

// agent_platform.py in `dir` with --port 0 --port-file <dir>/ap.port and then
// `flags`, its output to <dir>/agent_platform.log.
std::unique_ptr<Subprocess> StartAgentPlatform(const std::string& dir,
                                               const std::vector<std::string>& flags = {});

// Waits up to 30 s for the port of the API server started in `dir` (stored in
// `*port` unless null), then up to 10 s for its kubeconfig.
::testing::AssertionResult WaitForKubeApiserver(const std::string& dir, int* port = nullptr);

struct StandInOptions {
  // Added to kube_apiserver.py's flags (e.g. --access-log FILE).
  std::vector<std::string> kube_apiserver_flags = {};
  // Added to agent_platform.py's flags (e.g. --verbose, --cluster ID).
  std::vector<std::string> agent_platform_flags = {};
  // kubectl's environment besides KUBECONFIG, and its timeout.
  std::map<std::string, std::string> kubectl_env = {};
  std::chrono::milliseconds kubectl_timeout = std::chrono::seconds(90);
};

// Both stand-ins in `dir`, started by the constructor (the API server
// first); Agent Platform stops first.
class StandIns {
 public:
  explicit StandIns(const std::string& dir, StandInOptions options = {});
  StandIns(const StandIns&) = delete;
  StandIns& operator=(const StandIns&) = delete;

  // Waits up to 30 s for each port and then up to 10 s for the kubeconfig.
  ::testing::AssertionResult WaitUntilServing();

  // The ports, once WaitUntilServing succeeded.
  int kube_port() const { return kube_port_; }
  int agent_platform_port() const { return agent_platform_port_; }

  const KubectlClient& kubectl() const { return kubectl_; }

 private:
  std::string dir_;
  std::unique_ptr<Subprocess> kube_apiserver_;
  std::unique_ptr<Subprocess> agent_platform_;
  KubectlClient kubectl_;
  int kube_port_ = 0;
  int agent_platform_port_ = 0;
};

// The operator's environment: Application Default Credentials from the
// metadata server of the Agent Platform stand-in on `agent_platform_port`,
// none from a key file, and HOME=`home`.
std::map<std::string, std::string> OperatorEnv(int agent_platform_port, const std::string& home);

// The operator binary to run: SLURMOP_OPERATOR_BINARY from the environment
// when set and not empty (another build, e.g. a sanitizer one), else `built`.
std::string OperatorBinary(const std::string& built);

}  // namespace slurmop::testing

#endif  // SLURMOP_TESTS_TESTING_STAND_INS_H_
