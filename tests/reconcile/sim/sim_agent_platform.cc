// File: tests/reconcile/sim/sim_agent_platform.cc

#include "tests/reconcile/sim/sim_agent_platform.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace slurmop::reconcile::sim {
namespace {

using nlohmann::json;

http::Response Envelope(const SlurmAnswer& a) {
  http::Response r;
  r.status = 200;
  r.headers["content-type"] = "application/json; charset=UTF-8";
  json env = {{"status", a.status}};
  if (a.body.is_string()) {
    env["body"] = a.body;
  } else if (!a.body.is_null()) {
    env["structuredBody"] = a.body;
  }
  r.body = env.dump();
  return r;
}

http::Response GoogleError(int code, const std::string& status, const std::string& message) {
  http::Response r;
  r.status = code;
  r.headers["content-type"] = "application/json; charset=UTF-8";
  r.body = json{{"error", {{"code", code}, {"message", message}, {"status", status}}}}.dump();
  return r;
}

absl::Status Lost() {
  return http::TransportError(absl::StatusCode::kUnavailable,
                              "connection reset by peer after the request was sent", true);
}

// What slurmrestd answers when slurmctld's reply timed out (queued or not).
SlurmAnswer GatewayAnswer(Faults& faults) {
  switch (faults.Between(0, 3)) {
    case 0:
      return {502, nullptr};
    case 1:
      return {503, nullptr};
    case 2:
      return {504, nullptr};
    default:
      return {500,
              {{"errors",
                {{{"error_number", 1004},
                  {"error", "Unable to contact slurm controller (connect failure)"},
                  {"description", "slurm_submit_batch_job()"}}}},
               {"warnings", json::array()}}};
  }
}

// The cluster id in ".../modelDevelopmentClusters/<id>:callSlurmRestApi".
std::string ClusterIdOf(const std::string& url) {
  const std::string kMarker = "/modelDevelopmentClusters/";
  const size_t at = url.find(kMarker);
  if (at == std::string::npos) return "";
  const size_t from = at + kMarker.size();
  return url.substr(from, url.find_first_of(":/?", from) - from);
}

std::string MethodOf(const std::string& envelope_method) {
  const std::string kPrefix = "HTTP_METHOD_";
  return absl::StartsWith(envelope_method, kPrefix) ? envelope_method.substr(kPrefix.size())
                                                    : envelope_method;
}

}  // namespace

SlurmAnswer SimAgentPlatform::Perform(const Call& call, Duration land_delay) {
  if (call.submit) {
    SimSlurm::Life life;
    life.land_delay = land_delay;
    life.pending = faults_.Millis(0, 5000);
    life.running = faults_.Millis(1000, 15000);
    life.fails = faults_.Chance(0.2);
    call.slurm->SetNextLife(life);
  }
  return call.slurm->Handle(call.method, call.path, call.body, clock_.Now());
}

absl::StatusOr<http::Response> SimAgentPlatform::Send(const http::Request& request) {
  Call call;
  json env = json::parse(request.body, nullptr, false);
  if (!env.is_object()) return GoogleError(400, "INVALID_ARGUMENT", "not an envelope");
  call.method = MethodOf(env.value("method", ""));
  call.path = env.value("path", "");
  call.body = env.value("body", json());
  call.submit = SimSlurm::IsSubmit(call.method, call.path);
  call.slurm = fleet_.At(ClusterIdOf(request.url));
  if (call.slurm == nullptr) {
    return GoogleError(404, "NOT_FOUND", "The cluster does not exist.");
  }
  switch (link_.Next(faults_)) {
    case ReplicaLink::Fate::kDead:
      return http::TransportError(absl::StatusCode::kUnavailable, "the process is gone", false);
    case ReplicaLink::Fate::kDiesAfterEffect:
      Perform(call);
      return Lost();
    case ReplicaLink::Fate::kDiesBeforeEffect:
      return http::TransportError(absl::StatusCode::kUnavailable, "the process died", false);
    case ReplicaLink::Fate::kAlive:
      break;
  }
  std::vector<std::string> kinds = {"slurm.lost-reply", "slurm.not-sent", "slurm.google-503-before",
                                    "slurm.google-503-after"};
  if (call.submit) {
    for (const char* k : {"slurm.5xx-after", "slurm.5xx-before", "slurm.2xx-no-job-id",
                          "slurm.delayed-landing", "slurm.refused", "slurm.permission-denied"}) {
      kinds.push_back(k);
    }
  }
  const std::string fault = faults_.Roll(kinds);
  if (fault.empty()) return Envelope(Perform(call));
  return Faulted(fault, call);
}

absl::StatusOr<http::Response> SimAgentPlatform::Faulted(const std::string& fault,
                                                         const Call& call) {
  if (fault == "slurm.lost-reply") {
    Perform(call);
    return Lost();
  }
  if (fault == "slurm.not-sent") {
    return http::TransportError(absl::StatusCode::kUnavailable, "connection refused", false);
  }
  if (fault == "slurm.google-503-before" || fault == "slurm.google-503-after") {
    if (fault == "slurm.google-503-after") Perform(call);
    return GoogleError(503, "UNAVAILABLE", "The service is currently unavailable.");
  }
  return FaultedSubmit(fault, call);
}

absl::StatusOr<http::Response> SimAgentPlatform::FaultedSubmit(const std::string& fault,
                                                               const Call& call) {
  if (fault == "slurm.5xx-after" || fault == "slurm.5xx-before") {
    if (fault == "slurm.5xx-after") Perform(call);
    return Envelope(GatewayAnswer(faults_));
  }
  if (fault == "slurm.2xx-no-job-id") {
    if (faults_.Chance(0.5)) Perform(call);
    return Envelope({200, {{"errors", json::array()}, {"warnings", json::array()}}});
  }
  if (fault == "slurm.delayed-landing") {
    // Still in flight (in Agent Platform) when the client gave up. Never
    // answered with its id: slurmctld hands out an id only once the job is
    // queued, and a queued job is in the listings at once.
    Perform(call, faults_.Millis(1000, 45000));
    return http::TransportError(absl::StatusCode::kDeadlineExceeded,
                                "the request timed out after it was sent", true);
  }
  if (fault == "slurm.refused") {
    // Refused for good (this spec): the run may stay without a job.
    refused_tags_.insert(call.body.value("job", json::object()).value("comment", ""));
    return Envelope({500,
                     {{"errors",
                       {{{"error_number", 2000},
                         {"error", "Invalid partition name specified"},
                         {"description", "Batch job submission failed"}}}},
                      {"warnings", json::array()}}});
  }
  return GoogleError(403, "PERMISSION_DENIED",
                     "Permission 'aiplatform.googleapis.com/modelDevelopmentClusters.run' denied");
}

}  // namespace slurmop::reconcile::sim
