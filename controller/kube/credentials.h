// File: controller/kube/credentials.h
//
// Bearer tokens for API requests, refreshed the way client-go does it.
//
// Contract:
//  * Token() returns the token to send ("" = send no Authorization header)
//    or an error (kUnauthenticated) when none can be obtained. Thread-safe.
//  * OnUnauthorized(token) is called after a 401 for a request that used
//    `token`; the next Token() then fetches a fresh one (re-reads the file,
//    re-runs the exec plugin) unless it has already changed since.
//  * Static token: never changes.
//  * Token file: read on first use and re-read when the last read is a
//    minute old (client-go NewCachedFileTokenSource); a failed re-read keeps
//    the previous token.
//  * Exec plugin: run on first use; the token is cached until its
//    expirationTimestamp (forever without one) or a 401.
//  * Times come from the injected Clock.

#ifndef SLURMOP_CONTROLLER_KUBE_CREDENTIALS_H_
#define SLURMOP_CONTROLLER_KUBE_CREDENTIALS_H_

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "controller/common/clock.h"
#include "controller/kube/config.h"
#include "controller/kube/exec_plugin.h"

namespace slurmop::kube {

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual absl::StatusOr<std::string> Token() = 0;
  virtual void OnUnauthorized(const std::string& token) = 0;
};

// Static token (possibly empty: no Authorization header).
class StaticTokenSource final : public TokenSource {
 public:
  explicit StaticTokenSource(std::string token) : token_(std::move(token)) {}
  absl::StatusOr<std::string> Token() override { return token_; }
  void OnUnauthorized(const std::string&) override {}

 private:
  const std::string token_;
};

class FileTokenSource final : public TokenSource {
 public:
  static constexpr Duration kRereadPeriod = std::chrono::minutes(1);

  FileTokenSource(std::string path, const Clock& clock) : path_(std::move(path)), clock_(clock) {}
  absl::StatusOr<std::string> Token() override;
  void OnUnauthorized(const std::string& token) override;

 private:
  const std::string path_;
  const Clock& clock_;
  std::mutex mu_;
  std::string token_;            // guarded by mu_
  std::optional<Time> read_at_;  // guarded by mu_; unset = read on next use
};

class ExecTokenSource final : public TokenSource {
 public:
  using Runner = std::function<absl::StatusOr<ExecCredential>()>;

  // `runner` runs the plugin (RunExecPlugin by default, see NewTokenSource);
  // `initial` is a credential it already produced, used until it expires.
  ExecTokenSource(Runner runner, const Clock& clock,
                  std::optional<ExecCredential> initial = std::nullopt)
      : runner_(std::move(runner)), clock_(clock), cached_(std::move(initial)) {}
  absl::StatusOr<std::string> Token() override;
  void OnUnauthorized(const std::string& token) override;

 private:
  const Runner runner_;
  const Clock& clock_;
  std::mutex mu_;
  std::optional<ExecCredential> cached_;  // guarded by mu_
};

// The token source a ClientConfig asks for: exec, else token, else
// token_file, else none.
std::unique_ptr<TokenSource> NewTokenSource(const ClientConfig& config, const Clock& clock);

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_CREDENTIALS_H_
