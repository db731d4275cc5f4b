// File: controller/reconcile/ports.h
//
// The small interfaces the reconcilers need from the outside world, so that
// tests can hand them in-memory fakes: a read-only view of the informer
// caches, a sink for Kubernetes Events, and the credentials for a cluster;
// and what a reconcile tells the work queue.

#ifndef SLURMOP_CONTROLLER_RECONCILE_PORTS_H_
#define SLURMOP_CONTROLLER_RECONCILE_PORTS_H_

#include <memory>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "controller/agentplatform/credentials.h"
#include "controller/common/clock.h"
#include "controller/reconcile/cluster_access.h"
#include "controller/reconcile/job_status.h"
#include "nlohmann/json.hpp"
#include "slurmoperator/v1alpha1/slurmcluster.pb.h"

namespace slurmop::reconcile {

namespace v1alpha1 = ::slurmoperator::v1alpha1;

// What the work queue should do with a key after its reconcile (the
// controller-runtime result contract, manager.h).
struct ReconcileResult {
  std::optional<Duration> requeue_after;
  bool retry_with_backoff = false;
  // With retry_with_backoff: a Kubernetes request got no answer at all
  // (kube::IsUnreachable), so the retry waits for the API server, not for the
  // key's backoff: the manager retries the key as soon as the API server
  // answers again (retry_scheduler.h, #13 item 9).
  bool api_server_unreachable = false;
};

// Objects of one kind as the informer last saw them. Thread-safe.
class ObjectCache {
 public:
  virtual ~ObjectCache() = default;
  // nullptr when absent.
  virtual std::shared_ptr<const nlohmann::json> Get(std::string_view ns,
                                                    std::string_view name) const = 0;
};

// Where Events go (best effort: never fails a reconcile).
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void Record(const nlohmann::json& regarding, const EventSpec& event) = 0;
};

// The credentials for an identity that DecideClusterAccess (cluster_access.h)
// chose: a Secret's credentials file, or the operator's own Application
// Default Credentials. Source::kNone is refused (PermissionDenied), so a call
// site that skipped the access decision never gets the operator's token.
class CredentialsResolver {
 public:
  virtual ~CredentialsResolver() = default;
  virtual absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> For(
      const ClusterIdentity& identity) = 0;
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_PORTS_H_
