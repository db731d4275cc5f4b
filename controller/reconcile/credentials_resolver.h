// File: controller/reconcile/credentials_resolver.h
//
// CredentialsResolver backed by Kubernetes Secrets: a SlurmCluster with
// credentialsSecretRef gets a token source built from that Secret's key (an
// ADC JSON file: service_account, authorized_user, external_account,
// impersonated_service_account); one without it shares the operator's own
// Application Default Credentials. Token sources are cached and rebuilt only
// when the Secret's content changes, so their cached tokens survive.

#ifndef SLURMOP_CONTROLLER_RECONCILE_CREDENTIALS_RESOLVER_H_
#define SLURMOP_CONTROLLER_RECONCILE_CREDENTIALS_RESOLVER_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "controller/agentplatform/credentials.h"
#include "controller/kube/client.h"
#include "controller/reconcile/ports.h"

namespace slurmop::reconcile {

class SecretCredentialsResolver final : public CredentialsResolver {
 public:
  // `options` are used to build every token source (transport, clock, metadata host).
  SecretCredentialsResolver(kube::Client& kube, agentplatform::CredentialsOptions options);

  // Errors are kUnauthenticated with a message naming the Secret or the ADC
  // problem (never the secret's content).
  absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> For(
      std::string_view ns, const v1alpha1::SlurmClusterSpec& cluster) override;

 private:
  struct Entry {
    std::string content_digest;
    std::shared_ptr<agentplatform::TokenSource> source;
  };
  kube::Client& kube_;
  const agentplatform::CredentialsOptions options_;
  std::mutex mu_;
  std::shared_ptr<agentplatform::TokenSource> default_;
  std::map<std::string, Entry> by_secret_;  // "ns/name/key"
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_CREDENTIALS_RESOLVER_H_
