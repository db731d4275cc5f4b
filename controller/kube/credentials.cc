// File: controller/kube/credentials.cc
//
// See credentials.h for the contract.

#include "controller/kube/credentials.h"

#include <glog/logging.h>

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace slurmop::kube {
namespace {

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::UnauthenticatedError(absl::StrCat("cannot read token file ", path));
  std::stringstream contents;
  contents << in.rdbuf();
  return std::string(absl::StripAsciiWhitespace(contents.str()));
}

}  // namespace

absl::StatusOr<std::string> FileTokenSource::Token() {
  std::lock_guard<std::mutex> lock(mu_);
  const Time now = clock_.Now();
  if (read_at_.has_value() && now - *read_at_ < kRereadPeriod) return token_;
  absl::StatusOr<std::string> fresh = ReadToken(path_);
  if (!fresh.ok()) {
    if (token_.empty()) return fresh.status();
    LOG(WARNING) << "keeping the previous token: " << fresh.status().message();
  } else {
    token_ = *std::move(fresh);
  }
  read_at_ = now;
  return token_;
}

void FileTokenSource::OnUnauthorized(const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  if (token == token_) read_at_.reset();
}

absl::StatusOr<std::string> ExecTokenSource::Token() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cached_.has_value() &&
      (!cached_->expiration.has_value() || clock_.Now() < *cached_->expiration)) {
    return cached_->token;
  }
  cached_.reset();
  absl::StatusOr<ExecCredential> credential = runner_();
  if (!credential.ok()) return credential.status();
  cached_ = *std::move(credential);
  return cached_->token;
}

void ExecTokenSource::OnUnauthorized(const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cached_.has_value() && cached_->token == token) cached_.reset();
}

std::unique_ptr<TokenSource> NewTokenSource(const ClientConfig& config, const Clock& clock) {
  if (config.exec.has_value()) {
    ExecConfig exec = *config.exec;
    ExecClusterInfo cluster{config.server, config.ca_data, config.tls_server_name,
                            config.insecure_skip_tls_verify};
    return std::make_unique<ExecTokenSource>(
        [exec, cluster] { return RunExecPlugin(exec, cluster); }, clock);
  }
  if (!config.token.empty()) return std::make_unique<StaticTokenSource>(config.token);
  if (!config.token_file.empty()) {
    return std::make_unique<FileTokenSource>(config.token_file, clock);
  }
  return std::make_unique<StaticTokenSource>("");
}

}  // namespace slurmop::kube
