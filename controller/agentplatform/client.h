// File: controller/agentplatform/client.h
//
// The callSlurmRestApi client: SlurmApi is the seam the executor uses (tests
// swap a fake); NewSlurmApiClient() is the real one.
//
// Contract of Call():
//  * Sends {"method": "HTTP_METHOD_*", "path": path, "body": body} (body
//    omitted when null) to cluster.CallUrl() + "?prettyPrint=false" (Google's
//    system parameter for compact JSON: a list of 10,000 jobs is 46 MB
//    indented, 25 MB compact) with "Authorization: Bearer <token>",
//    "Content-Type: application/json" and, when the credentials name a
//    quota project, "x-goog-user-project".
//  * options.job_fields: see CallOptions.
//  * OK: the envelope arrived, whatever Slurm's own status.
//  * Errors (absl canonical codes = google.rpc codes):
//    - Google errors: code from error.status (else from the HTTP status),
//      message "Agent Platform: <message>" plus " (retry after <delay>)";
//      for UNAUTHENTICATED and PERMISSION_DENIED also "; caller: <identity>".
//    - transport failures: kUnavailable / kDeadlineExceeded, with
//      http::MayHaveBeenDelivered() telling whether the request may have
//      arrived.
//    - a request over max_request_bytes: kInvalidArgument (nothing sent).
//    - an endpoint options.endpoint_policy refuses: kPermissionDenied with
//      the condition reason EndpointNotAllowed (nothing sent, no token).
//    - an answer over max_response_bytes: kUnavailable from the transport.
//    - bad arguments (empty cluster fields, a path not starting with "/",
//      POST without a body, integers beyond 2^53 in the body):
//      kInvalidArgument (nothing sent).
//    - a 2xx answer that is not an envelope: kInternal.
//    - token errors: the TokenSource's status, prefixed with the identity.
//    Delivery: a failure before anything was sent (bad arguments, the 1 MB
//    limit, token errors) is marked so that http::MayHaveBeenDelivered() is
//    false; a Google error answer carries no mark, so MayHaveBeenDelivered()
//    is (conservatively) true for it; a transport failure keeps the
//    transport's mark.
//  * Retries, with exponential backoff and full jitter, never waiting less
//    than the server's RetryInfo / Retry-After delay: GET and DELETE on
//    UNAVAILABLE, HTTP 408/502/503/504 and transport errors; POST only when
//    the transport proves the request never left (!MayHaveBeenDelivered).
//    Token fetches failing with kUnavailable are retried for every method
//    (nothing was sent). A server delay longer than max_backoff is not
//    waited out here: the error is returned with RetryDelay() set.
//    UNAUTHENTICATED/401: Invalidate() the credentials and retry once (any
//    method; the request was rejected before reaching Slurm).
//    RESOURCE_EXHAUSTED is returned at once, with the delay in the message
//    and in RetryDelay().
//  * A cluster that did not answer (no answer within the timeout, or a
//    failed answer that took half of it) is not retried in the same call.
//    Its later calls go one at a time, and after a second silence in a row
//    they are held back (silent_clusters.h, keyed by CallUrl()): calls that
//    may not go fail at once, unsent, with kUnavailable saying why and
//    RetryDelay() set. After each hold (5 s, doubling to 2 min) one trial
//    call, under a 5 s timeout and one at a time across all clusters, finds
//    out whether it answers again. So however many clusters are silent, they
//    hold shared threads for one or two timeouts each, then for a few
//    seconds per hold, not for every call's 5 attempts of 30 s.
//  * Each attempt first takes a token from the budget of the cluster's
//    project and region (quota_budget.h: options.budget, shared by every
//    cluster of that project and region, with submits and cancels ahead of
//    tracking and tracking ahead of probes), waiting through options.sleep
//    if it is empty, but never longer than max_rate_limit_wait: a call that
//    would wait longer is not sent and fails at once with kUnavailable and
//    RetryDelay() set, so that a busy project does not hold the shared
//    workers in a sleep (#13 A2). A RESOURCE_EXHAUSTED answer pauses the
//    whole project and region for the server's retry delay (RetryInfo; 30 s
//    without one) and halves its budget, which then grows back (#16 item 3);
//    calls during the pause fail at once, unsent, with kResourceExhausted.
//    The caller is the credentials object (TokenSource::Instance()): until
//    the project answers one of its calls with anything but a 401 or 403,
//    and again after one, its calls draw on a small bucket of their own
//    instead of the project's, so credentials the project refuses never
//    spend that project's budget.
//  * Thread-safe; exceptions never escape.

#ifndef SLURMOP_CONTROLLER_AGENTPLATFORM_CLIENT_H_
#define SLURMOP_CONTROLLER_AGENTPLATFORM_CLIENT_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/agentplatform/credentials.h"
#include "controller/agentplatform/endpoint_policy.h"
#include "controller/agentplatform/quota_budget.h"
#include "controller/agentplatform/silent_clusters.h"
#include "controller/common/clock.h"
#include "controller/http/http_transport.h"
#include "nlohmann/json.hpp"

namespace slurmop::agentplatform {

enum class HttpMethod { kGet, kPost, kDelete };

// "GET", "POST", "DELETE".
std::string_view HttpMethodName(HttpMethod method);

struct ClusterName {
  // "" -> https://REGION-aiplatform.googleapis.com ; else scheme://host[:port]
  // (trailing slash ok).
  std::string endpoint;
  std::string project_id, region, cluster_id;
  // What the cluster's resource asks of the call budget (quota_budget.h).
  BudgetRequest budget;
  // projects/P/locations/R/modelDevelopmentClusters/C
  std::string ResourceName() const;
  // <endpoint>/v1beta1/<ResourceName()>:callSlurmRestApi, each name
  // percent-encoded ("example.com:proj" -> example.com%3Aproj).
  std::string CallUrl() const;
};

struct SlurmResponse {
  int status = 0;  // Slurm's own HTTP status, from the envelope
  nlohmann::json
      body;  // Slurm's JSON answer (structuredBody, else body parsed/taken); null when none
};

struct ClientOptions {
  http::Transport* transport = nullptr;
  // Where calls may go (endpoint_policy.h). Default: Google's hosts only. A
  // cluster whose CallUrl() it refuses gets the refusal (kPermissionDenied,
  // condition reason EndpointNotAllowed) before a token is even taken, and
  // the transport is wrapped in a PolicyTransport, so no request the policy
  // refuses reaches it.
  EndpointPolicy endpoint_policy;
  const Clock* clock = nullptr;  // nullptr: RealClock
  std::chrono::milliseconds timeout{30000};
  size_t max_request_bytes = 1000 * 1000;  // the documented 1 MB limit, checked before sending
  // The largest answer read (enforced by the transport): 64 MiB. A list of
  // 10,000 jobs is about 25 MB compact (bench/agentplatform_client_bench).
  size_t max_response_bytes = size_t{64} << 20;
  // The client-side budget per project and region (requests_per_minute <= 0: off).
  QuotaBudgetOptions budget;
  std::chrono::milliseconds max_rate_limit_wait{250};  // longer: fail fast (see above)
  int max_attempts = 5;                                // for retryable calls
  // Waits between attempts are spent in the caller's thread (a shared
  // worker), so a server delay longer than max_backoff is returned instead
  // (RetryDelay()) and the caller requeues: at most ~20 s of waits per call.
  std::chrono::milliseconds initial_backoff{500}, max_backoff{5000};
  // Clusters that did not answer (silent_clusters.h): held back, not waited for.
  SilentClustersOptions silent_clusters;
  // Waits between attempts and for the rate limiter. Default:
  // std::this_thread::sleep_for. Tests advance a FakeClock instead.
  std::function<void(std::chrono::nanoseconds)> sleep;
  // Uniform in [0, 1) for full jitter. Default: a per-thread PRNG.
  std::function<double()> jitter;
};

// Takes the job records of a list as they are decoded (CallOptions::job_sink).
class JobSink {
 public:
  virtual ~JobSink() = default;
  // One element of the Slurm body's top-level `jobs` array (reduced to
  // job_fields), as soon as its closing brace was read; the record is not
  // kept in SlurmResponse::body. A non-OK status stops the read, and Call()
  // returns it.
  virtual absl::Status Job(nlohmann::json record) = 0;
  // Forget every record given so far: the answer is read again (an attempt
  // is retried, a field given twice in the envelope replaces the body, or a
  // small answer the streaming pass refused is decoded whole; that one's
  // records then stay in SlurmResponse::body).
  virtual void Restart() = 0;
};

// Per-call choices of SlurmApi::Call().
struct CallOptions {
  // When not empty: each object of the Slurm answer's top-level `jobs` array
  // keeps only these keys (and everything under them). The other keys are
  // dropped while the answer is parsed, so a list of thousands of jobs is
  // never held whole. For lists whose reader needs a few fields of each job
  // (slurm::Dialect::JobRecordKeys()).
  std::vector<std::string> job_fields;
  // When set: the answer is decoded as it streams in (envelope.h
  // DecodeResponseStream), never held whole, and each record of the body's
  // top-level `jobs` array goes to the sink instead of into the body (the
  // `jobs` array stays, empty). Callers must read records both from the
  // sink and from what is left in body.jobs (a SlurmApi fake or a small
  // answer decoded whole leaves them there).
  JobSink* job_sink = nullptr;
  // Which class of the project's budget the call draws on. Unset: kChange
  // for POST and DELETE (submit, update, cancel), kTrack for GET.
  std::optional<CallPriority> priority;
};

class SlurmApi {  // the seam the executor uses; tests swap a fake
 public:
  virtual ~SlurmApi() = default;
  // See the file comment.
  virtual absl::StatusOr<SlurmResponse> Call(const ClusterName& cluster, TokenSource& credentials,
                                             HttpMethod method, std::string_view path,
                                             const nlohmann::json* body,
                                             const CallOptions& options) = 0;
  // The call budget of every project and region called so far (for the
  // metrics); none for a SlurmApi without one.
  virtual std::vector<BudgetState> Budgets() { return {}; }
  // The same with default options.
  absl::StatusOr<SlurmResponse> Call(const ClusterName& cluster, TokenSource& credentials,
                                     HttpMethod method, std::string_view path,
                                     const nlohmann::json* body) {
    return Call(cluster, credentials, method, path, body, CallOptions());
  }
};

std::unique_ptr<SlurmApi> NewSlurmApiClient(const ClientOptions& options);

// The server-suggested delay attached to a RESOURCE_EXHAUSTED / UNAVAILABLE
// status, if any (defined in google_error.cc).
std::optional<std::chrono::milliseconds> RetryDelay(const absl::Status& status);

// True when Call() did not send the call because the project's budget had
// no room for it (spent, or paused after RESOURCE_EXHAUSTED): the cluster
// was not asked, so the failure says nothing about it. RetryDelay() says
// when to try again.
bool HeldBackByBudget(const absl::Status& status);
// True for the calls HeldBackByBudget() is true for because their cluster
// did not answer (silent_clusters.h): not sent either, and no failure of the
// call, but the message says what is wrong with the cluster.
bool HeldBackWhileSilent(const absl::Status& status);
// `status` marked so that HeldBackByBudget() is true (the client's own
// refusals; fakes in tests).
absl::Status MarkHeldBackByBudget(absl::Status status);

}  // namespace slurmop::agentplatform

#endif  // SLURMOP_CONTROLLER_AGENTPLATFORM_CLIENT_H_
