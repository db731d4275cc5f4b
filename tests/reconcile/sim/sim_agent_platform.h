// File: tests/reconcile/sim/sim_agent_platform.h
//
// The http::Transport under one replica's REAL Agent Platform client
// (NewSlurmApiClient): decodes each callSlurmRestApi envelope, hands it to
// the SimSlurm of the cluster its URL names (SimFleet; a cluster Agent
// Platform does not have is its NOT_FOUND), and answers with the envelope Agent Platform sends
// ({"status": N, "structuredBody": ...}), unless the schedule's dice inject
// a fault into the call:
//   slurm.lost-reply        the effect happened, the answer never arrived
//                           (connection reset after the request was sent)
//   slurm.not-sent          connection refused: nothing reached Slurm
//   slurm.google-503-before Agent Platform's UNAVAILABLE, nothing done
//   slurm.google-503-after  Agent Platform's UNAVAILABLE after Slurm acted
//   slurm.5xx-after         (submit) slurmrestd 502/503/504 or 500 + comm
//                           error 1004 after slurmctld queued the job
//   slurm.5xx-before        the same answers, nothing queued
//   slurm.2xx-no-job-id     (submit) 200 without job_id, queued or not
//   slurm.delayed-landing   (submit) the request is still in flight when
//                           the client times out; the job lands 1-45 s
//                           later (within the 60 s settle window)
//   slurm.refused           (submit) slurmctld refuses: error 2000 (bad
//                           partition), nothing queued
//   slurm.permission-denied (submit) Agent Platform's PERMISSION_DENIED
// Every submit that reaches slurmctld gets a seeded life (pending 0-5 s,
// running 1-15 s, one in five fails). A refused submit is remembered by
// its tag (the invariants accept no job for a refused run).

#ifndef SLURMOP_TESTS_RECONCILE_SIM_SIM_AGENT_PLATFORM_H_
#define SLURMOP_TESTS_RECONCILE_SIM_SIM_AGENT_PLATFORM_H_

#include <set>
#include <string>

#include "controller/common/clock.h"
#include "controller/http/http_transport.h"
#include "tests/reconcile/sim/faults.h"
#include "tests/reconcile/sim/replica_link.h"
#include "tests/reconcile/sim/sim_fleet.h"

namespace slurmop::reconcile::sim {

class SimAgentPlatform : public http::Transport {
 public:
  SimAgentPlatform(const SimFleet& fleet, Faults& faults, ReplicaLink& link, const Clock& clock,
                   std::set<std::string>& refused_tags)
      : fleet_(fleet), faults_(faults), link_(link), clock_(clock), refused_tags_(refused_tags) {}

  absl::StatusOr<http::Response> Send(const http::Request& request) override;
  absl::StatusOr<http::Response> Stream(const http::Request&, const http::LineCallback&,
                                        std::shared_ptr<http::StreamHandle>) override {
    return absl::UnimplementedError("SimAgentPlatform: Stream");
  }

 private:
  struct Call {
    std::string method, path;
    nlohmann::json body;
    bool submit = false;
    SimSlurm* slurm = nullptr;  // of the cluster the URL names
  };
  absl::StatusOr<http::Response> Faulted(const std::string& fault, const Call& call);
  absl::StatusOr<http::Response> FaultedSubmit(const std::string& fault, const Call& call);
  // Slurm performs the call now.
  SlurmAnswer Perform(const Call& call, Duration land_delay = Duration::zero());

  const SimFleet& fleet_;
  Faults& faults_;
  ReplicaLink& link_;
  const Clock& clock_;
  std::set<std::string>& refused_tags_;
};

}  // namespace slurmop::reconcile::sim

#endif  // SLURMOP_TESTS_RECONCILE_SIM_SIM_AGENT_PLATFORM_H_
