// File: controller/server/health_server.h
//
// The gRPC health endpoint (grpc.health.v1.Health: Check and Watch) that
// Kubernetes' gRPC probes call. Three service names are registered, because
// an unknown name answers NOT_FOUND and the kubelet counts that as a failed
// probe:
//   ""          the whole server: SERVING while the process runs;
//   "liveness"  SERVING while the controller's loops make progress;
//   "readiness" SERVING once the informers have synced (and, with leader
//               election, while this replica leads).
// Shutdown() flips everything to NOT_SERVING (and freezes it there) before
// stopping the server, so probes see the shutdown coming.

#ifndef SLURMOP_CONTROLLER_SERVER_HEALTH_SERVER_H_
#define SLURMOP_CONTROLLER_SERVER_HEALTH_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"

namespace grpc {
class Server;
}

namespace slurmop::server {

inline constexpr char kLivenessService[] = "liveness";
inline constexpr char kReadinessService[] = "readiness";

class HealthService;

class HealthServer {
 public:
  HealthServer();
  ~HealthServer();

  // Listens on address:port ("0.0.0.0", 9090); port 0 picks a free port.
  absl::Status Start(const std::string& address, int port);
  // The port actually bound (after Start).
  int port() const { return port_; }

  void SetLive(bool live);
  void SetReady(bool ready);
  void Shutdown();

 private:
  std::unique_ptr<HealthService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace slurmop::server

#endif  // SLURMOP_CONTROLLER_SERVER_HEALTH_SERVER_H_
