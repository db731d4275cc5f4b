// File: tests/fuzz/kubeconfig_fuzz.cc
//
// Fuzz target: kubeconfig files (YAML), through kube::LoadKubeconfig() with
// the current context and with a named one. The input is written to a file
// in a private temporary directory first, since LoadKubeconfig reads a path
// (it reads no other file: file references are only made absolute).
//
// Checked (config.h): no crash, no exception, no undefined behaviour; a
// config that loads has a server and a default namespace, and its file
// references are absolute.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "controller/kube/config.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// <private dir>/config; the directory lives for the whole process.
const std::string& ConfigPath() {
  static const std::string* path = [] {
    std::string tmpl = "/tmp/kubeconfig-fuzz.XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    return new std::string(tmpl + "/config");
  }();
  return *path;
}

bool AbsoluteOrEmpty(const std::string& path) { return path.empty() || path[0] == '/'; }

void Load(const std::string& context) {
  absl::StatusOr<slurmop::kube::ClientConfig> config =
      slurmop::kube::LoadKubeconfig(ConfigPath(), context);
  if (!config.ok()) {
    FUZZ_CHECK(config.status().code() != absl::StatusCode::kOk);
    return;
  }
  FUZZ_CHECK(!config->server.empty());
  FUZZ_CHECK(!config->default_namespace.empty());
  FUZZ_CHECK(AbsoluteOrEmpty(config->ca_file));
  FUZZ_CHECK(AbsoluteOrEmpty(config->client_cert_file));
  FUZZ_CHECK(AbsoluteOrEmpty(config->client_key_file));
  FUZZ_CHECK(AbsoluteOrEmpty(config->token_file));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(ConfigPath(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    FUZZ_CHECK(out.good());
  }
  Load("");
  Load("fuzz");
  return 0;
}
