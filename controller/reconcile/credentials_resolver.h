// File: controller/reconcile/credentials_resolver.h
//
// CredentialsResolver backed by Kubernetes Secrets: an identity of
// Source::kSecret gets a token source built from that Secret's key (a Google
// credentials JSON file: service_account, authorized_user, external_account,
// impersonated_service_account; restricted as a tenant's unless
// identity.installer_secret); Source::kOperator shares the operator's own
// Application Default Credentials; Source::kNone is refused. Which identity a
// cluster gets is DecideClusterAccess's decision (cluster_access.h), not this
// class's.
//
// Cost (review M6): a Secret is read at most once per `secret_ttl` per
// (namespace, name, key), however often its clusters' jobs are reconciled;
// after that it is read again, and the token source is rebuilt only when the
// key's content changed, so cached tokens survive the re-read.
// A rotated or deleted Secret is noticed within `secret_ttl`.
//
// Memory: an entry not read again for kIdleEntry (no cluster used it: an active one re-reads it
// every `secret_ttl`) is dropped, at most once a minute, so the cache holds the Secrets in use,
// not every Secret a SlurmCluster ever named.

#ifndef SLURMOP_CONTROLLER_RECONCILE_CREDENTIALS_RESOLVER_H_
#define SLURMOP_CONTROLLER_RECONCILE_CREDENTIALS_RESOLVER_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "controller/agentplatform/credentials.h"
#include "controller/common/clock.h"
#include "controller/kube/client.h"
#include "controller/reconcile/ports.h"

namespace slurmop::reconcile {

class SecretCredentialsResolver final : public CredentialsResolver {
 public:
  // `options` are used to build every token source (transport, clock, metadata host); its clock
  // (or the real one) also times `secret_ttl`.
  SecretCredentialsResolver(kube::Client& kube, agentplatform::CredentialsOptions options,
                            Duration secret_ttl = std::chrono::seconds(30));

  // Errors are kUnauthenticated with a message naming the Secret or the ADC
  // problem (never the secret's content); kPermissionDenied for Source::kNone.
  absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> For(
      const ClusterIdentity& identity) override;

  static constexpr Duration kIdleEntry = std::chrono::minutes(10);
  // Secrets whose token source is kept (for tests).
  size_t CachedSecrets();

 private:
  struct Entry {
    std::string content_digest;
    Time read_at{};
    std::shared_ptr<agentplatform::TokenSource> source;
  };
  absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> OperatorCredentials();
  absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> FromSecret(
      const ClusterIdentity& identity);
  // Drops the entries idle for kIdleEntry (at most once a minute). With mu_ held.
  void PruneLocked(Time now);

  kube::Client& kube_;
  const agentplatform::CredentialsOptions options_;
  const Duration secret_ttl_;
  std::mutex mu_;
  std::shared_ptr<agentplatform::TokenSource> default_;
  std::map<std::string, Entry> by_secret_;  // "ns/name/key[/installer]"
  Time pruned_at_{};
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_CREDENTIALS_RESOLVER_H_
