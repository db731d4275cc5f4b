// File: tests/reconcile/sim/replica_kube.h
//
// One replica's kube::Client: the shared InMemoryKube (both replicas and the
// user write to it), behind the replica's link (a crash, a dead process)
// and the schedule's dice:
//   kube.unavailable     the API server is unreachable: nothing done
//   kube.reply-lost      a write was applied, its answer lost (the
//                        connection dropped after the server committed)
//   kube.conflict        409: someone else wrote first (nothing done)
//   kube.forbidden       403: an admission policy (or RBAC being rolled out) refused the
//                        write (nothing done); the protector's refusals reach the
//                        SlurmJobs waiting on it (ProtectionProblems)

#ifndef SLURMOP_TESTS_RECONCILE_SIM_REPLICA_KUBE_H_
#define SLURMOP_TESTS_RECONCILE_SIM_REPLICA_KUBE_H_

#include <functional>

#include "controller/kube/client.h"
#include "tests/reconcile/fakes/fake_kube.h"
#include "tests/reconcile/sim/faults.h"
#include "tests/reconcile/sim/replica_link.h"

namespace slurmop::reconcile::sim {

class ReplicaKube : public kube::Client {
 public:
  ReplicaKube(testing::InMemoryKube& kube, Faults& faults, ReplicaLink& link)
      : kube_(kube), faults_(faults), link_(link) {}

  absl::StatusOr<nlohmann::json> Get(const kube::ResourceType& rt, std::string_view ns,
                                     std::string_view name) override {
    return Read([&] { return kube_.Get(rt, ns, name); });
  }
  absl::StatusOr<nlohmann::json> List(const kube::ResourceType& rt, std::string_view ns,
                                      const kube::ListOptions& o) override {
    return Read([&] { return kube_.List(rt, ns, o); });
  }
  absl::StatusOr<nlohmann::json> Create(const kube::ResourceType& rt, std::string_view ns,
                                        const nlohmann::json& obj) override {
    return Write([&] { return kube_.Create(rt, ns, obj); });
  }
  absl::StatusOr<nlohmann::json> Update(const kube::ResourceType& rt,
                                        const nlohmann::json& obj) override {
    return Write([&] { return kube_.Update(rt, obj); });
  }
  absl::StatusOr<nlohmann::json> UpdateStatus(const kube::ResourceType& rt,
                                              const nlohmann::json& obj) override {
    return Write([&] { return kube_.UpdateStatus(rt, obj); });
  }
  absl::StatusOr<nlohmann::json> Patch(const kube::ResourceType& rt, std::string_view ns,
                                       std::string_view name, kube::PatchType type,
                                       const nlohmann::json& patch, bool status_subresource,
                                       std::string_view field_manager) override {
    return Write(
        [&] { return kube_.Patch(rt, ns, name, type, patch, status_subresource, field_manager); });
  }
  absl::StatusOr<nlohmann::json> Delete(const kube::ResourceType& rt, std::string_view ns,
                                        std::string_view name,
                                        const kube::DeleteOptions& opts = {}) override {
    return Write([&] { return kube_.Delete(rt, ns, name, opts); });
  }
  absl::Status Watch(const kube::ResourceType&, std::string_view, const kube::WatchOptions&,
                     const std::function<bool(kube::WatchEvent&)>&,
                     std::shared_ptr<http::StreamHandle>) override {
    return absl::UnimplementedError("the simulation's caches are refreshed by the schedule");
  }

 private:
  using Op = std::function<absl::StatusOr<nlohmann::json>()>;

  static absl::Status Unreachable() {
    return absl::UnavailableError("dial tcp 10.96.0.1:443: connect: connection refused");
  }

  // A dead or dying process: the call may still have been applied.
  std::optional<absl::StatusOr<nlohmann::json>> Died(const Op& op) {
    switch (link_.Next(faults_)) {
      case ReplicaLink::Fate::kAlive:
        return std::nullopt;
      case ReplicaLink::Fate::kDiesAfterEffect:
        (void)op();
        return Unreachable();
      default:
        return Unreachable();
    }
  }

  absl::StatusOr<nlohmann::json> Read(const Op& op) {
    if (auto d = Died(op)) return *d;
    if (!faults_.Roll({"kube.unavailable"}).empty()) return Unreachable();
    return op();
  }

  absl::StatusOr<nlohmann::json> Write(const Op& op) {
    if (auto d = Died(op)) return *d;
    const std::string fault =
        faults_.Roll({"kube.unavailable", "kube.reply-lost", "kube.conflict", "kube.forbidden"});
    if (fault == "kube.unavailable") return Unreachable();
    if (fault == "kube.forbidden") {
      return absl::PermissionDeniedError(
          "admission webhook \"policy.example.com\" denied the request: try again later");
    }
    if (fault == "kube.conflict") {
      return absl::AbortedError(
          "Operation cannot be fulfilled: the object has been modified; please apply your "
          "changes to the latest version and try again");
    }
    absl::StatusOr<nlohmann::json> r = op();
    if (fault == "kube.reply-lost") {
      return absl::UnavailableError("http2: client connection lost");
    }
    return r;
  }

  testing::InMemoryKube& kube_;
  Faults& faults_;
  ReplicaLink& link_;
};

}  // namespace slurmop::reconcile::sim

#endif  // SLURMOP_TESTS_RECONCILE_SIM_REPLICA_KUBE_H_
