// File: controller/agentplatform/client.cc
//
// The callSlurmRestApi client: validation, the 1 MB limit, rate limiting,
// authentication, retries and error mapping (see client.h for the contract).

#include "controller/agentplatform/client.h"

#include <exception>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "controller/agentplatform/backoff.h"
#include "controller/agentplatform/envelope.h"
#include "controller/agentplatform/google_error.h"
#include "controller/agentplatform/quota_budget.h"
#include "controller/agentplatform/silent_clusters.h"
#include "controller/agentplatform/token_endpoint.h"
#include "controller/http/percent_encoding.h"
#include "glog/logging.h"

namespace slurmop::agentplatform {
namespace {

// A copy of `status` with another message and the same payloads (so
// http::MayHaveBeenDelivered() and RetryDelay() still answer).
absl::Status WithMessage(const absl::Status& status, std::string message) {
  absl::Status out(status.code(), std::move(message));
  status.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

// Marks a failure that happened before anything was sent, so that
// http::MayHaveBeenDelivered() answers false (a POST may then be repeated).
absl::Status NotSent(const absl::Status& status) {
  absl::Status out = http::TransportError(status.code(), std::string(status.message()),
                                          /*request_sent=*/false);
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    if (!out.GetPayload(url).has_value()) out.SetPayload(url, payload);
  });
  return out;
}

// Letters, digits, '-', '_', '.', and ':' when `colon_ok` (domain-scoped
// project ids such as "example.com:proj", which the CRD allows).
bool ValidNamePart(std::string_view s, bool colon_ok) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.' &&
        !(colon_ok && c == ':')) {
      return false;
    }
  }
  return true;
}

absl::Status ValidateCluster(const ClusterName& cluster) {
  for (const auto& [name, value] :
       {std::pair{"project_id", &cluster.project_id}, std::pair{"region", &cluster.region},
        std::pair{"cluster_id", &cluster.cluster_id}}) {
    const bool colon_ok = value == &cluster.project_id;
    // The CRD's maxLength (128 for a project, 63 otherwise), checked again: the names become
    // URL segments, messages and metric labels.
    const size_t max = colon_ok ? 128 : 63;
    if (value->size() > max) {
      return absl::InvalidArgumentError(
          absl::StrCat("Agent Platform: the cluster's ", name, " is longer than ", max, " bytes"));
    }
    if (!ValidNamePart(*value, colon_ok)) {
      return absl::InvalidArgumentError(
          absl::StrCat("Agent Platform: the cluster's ", name, " \"", *value,
                       "\" is empty or holds characters other than letters, digits, '-', '_', '.'",
                       colon_ok ? " and ':'" : ""));
    }
  }
  return absl::OkStatus();
}

bool IsTransientHttpStatus(int s) { return s == 408 || s == 502 || s == 503 || s == 504; }

constexpr char kHeldBackPayload[] = "slurmop.agentplatform/held-back-by-budget";

class SlurmApiClient final : public SlurmApi {
 public:
  explicit SlurmApiClient(const ClientOptions& options)
      : opts_(options),
        clock_(options.clock != nullptr ? options.clock : &RealClock::Get()),
        guarded_(options.transport != nullptr ? std::make_unique<PolicyTransport>(
                                                    *options.transport, options.endpoint_policy)
                                              : nullptr),
        budget_(clock_, options.budget),
        silent_(clock_, options.silent_clusters) {
    if (!opts_.sleep) {
      opts_.sleep = [](std::chrono::nanoseconds d) { std::this_thread::sleep_for(d); };
    }
    if (!opts_.jitter) opts_.jitter = DefaultJitter;
    if (opts_.max_attempts < 1) opts_.max_attempts = 1;
  }

  using SlurmApi::Call;
  std::vector<BudgetState> Budgets() override { return budget_.Snapshot(); }

  absl::StatusOr<SlurmResponse> Call(const ClusterName& cluster, TokenSource& credentials,
                                     HttpMethod method, std::string_view path,
                                     const nlohmann::json* body,
                                     const CallOptions& options) override {
    try {
      bool sent = false;
      absl::StatusOr<SlurmResponse> result =
          CallImpl(cluster, credentials, method, path, body, options, &sent);
      if (!result.ok() && !sent) return NotSent(result.status());
      return result;
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat("Agent Platform: unexpected error: ", e.what()));
    } catch (...) {
      return absl::InternalError("Agent Platform: unexpected error");
    }
  }

 private:
  void Sleep(std::chrono::nanoseconds d) {
    if (d > std::chrono::nanoseconds::zero()) opts_.sleep(d);
  }

  // RESOURCE_EXHAUSTED (unsent) while `key` is paused after an exhausted quota.
  // The message is the same for every call of one pause (the wait is only in
  // the status's retry delay): it becomes a SlurmJob's condition, and a
  // message that changed with each retry would be a status write, hence a
  // watch event and a reconcile, per retry.
  std::optional<absl::Status> PausedStatus(const std::string& key, const ClusterName& cluster) {
    std::optional<Time> until = budget_.PausedUntil(key);
    if (!until) return std::nullopt;
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(*until - clock_->Now());
    absl::Status s = absl::ResourceExhaustedError(absl::StrCat(
        "Agent Platform: the quota of project ", cluster.project_id, " in ", cluster.region,
        " is exhausted; calls of every cluster there are paused for the server's retry delay, "
        "and the operator's budget there (",
        std::lround(budget_.ConfiguredRequestsPerMinute(key)),
        " calls/min) is halved, then grows back (raise the project's Agent Platform quota or "
        "lower --agent-platform-requests-per-minute)"));
    SetRetryDelay(s, wait);
    return NotSent(MarkHeldBackByBudget(s));
  }

  // kUnavailable (unsent unless an earlier attempt was: Call marks it) when
  // the budget has no token for this call within max_rate_limit_wait. The
  // message does not change from one held-back call to the next (the wait is
  // only in the retry delay; the rate quoted is the configured one): see
  // PausedStatus.
  absl::Status OverBudget(const ClusterName& cluster, const TokenSource& credentials,
                          CallPriority priority, const Reservation& r) {
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(r.wait);
    const std::string whose =
        r.unproven && !r.limited_by_own_cap
            ? absl::StrCat("of ", credentials.Describe(), " in project ", cluster.project_id, " (",
                           std::lround(opts_.budget.unproven_requests_per_minute),
                           " calls/min until the project accepts one of their calls; check that "
                           "they may call the cluster)")
        : r.limited_by_own_cap
            ? absl::StrCat("of SlurmCluster ", cluster.budget.owner, " (",
                           std::lround(cluster.budget.own_requests_per_minute),
                           " calls/min, its spec.callBudget.requestsPerMinute)")
            : absl::StrCat(
                  "of project ", cluster.project_id, " in ", cluster.region, " (",
                  std::lround(budget_.ConfiguredRequestsPerMinute(
                      QuotaKey(cluster.endpoint, cluster.project_id, cluster.region))),
                  " calls/min for all its clusters: --agent-platform-requests-per-minute, or "
                  "a ClusterSlurmCluster's spec.callBudget)");
    absl::Status s =
        absl::UnavailableError(absl::StrCat("Agent Platform: the client-side budget ", whose,
                                            " is spent; this ", CallPriorityName(priority),
                                            " call is not sent, and is retried when the "
                                            "budget has room"));
    SetRetryDelay(s, ms);
    return MarkHeldBackByBudget(s);
  }

  // kUnavailable, unsent and marked held back (HeldBackByBudget()): the
  // caller waits RetryDelay() and counts no failure, as for the budget, since
  // nothing was sent. The message is the same whatever the state of the hold
  // (see PausedStatus): the wait is only in the retry delay.
  absl::Status HeldBackWhileSilent(const ClusterName& cluster, const SilentClusters::Refusal& r) {
    absl::Status s = absl::UnavailableError(absl::StrCat(
        "Agent Platform: cluster ", cluster.ResourceName(),
        " did not answer in time; so that it does not hold the operator's shared workers, its "
        "calls are held back and go one at a time until it answers again"));
    SetRetryDelay(s, std::chrono::ceil<std::chrono::milliseconds>(r.wait));
    s.SetPayload(kHeldBackPayload, absl::Cord("silent"));
    return s;
  }

  // What an attempt's end says about whether the cluster answers: an answer
  // (even an error) is one, unless it is a failure that took half the
  // timeout or more (a gateway that waits for a silent backend).
  SilentClusters::Outcome OutcomeOf(const absl::StatusOr<http::Response>& response,
                                    Duration took) const {
    const bool slow = took * 2 >= opts_.timeout;
    if (!response.ok()) {
      return response.status().code() == absl::StatusCode::kDeadlineExceeded || slow
                 ? SilentClusters::Outcome::kSilent
                 : SilentClusters::Outcome::kOther;
    }
    // Google's front end answers these itself: they say nothing about
    // whether the cluster answers (and a tenant could send them at will).
    if (response->status == 401 || response->status == 403 || response->status == 429) {
      return SilentClusters::Outcome::kOther;
    }
    const bool failed = response->status == 408 || response->status >= 500;
    return failed && slow ? SilentClusters::Outcome::kSilent : SilentClusters::Outcome::kAnswered;
  }

  absl::StatusOr<SlurmResponse> CallImpl(const ClusterName& cluster, TokenSource& credentials,
                                         HttpMethod method, std::string_view path_view,
                                         const nlohmann::json* body, const CallOptions& options,
                                         bool* sent) {
    const std::string path(path_view);
    if (opts_.transport == nullptr) {
      return absl::FailedPreconditionError("Agent Platform: ClientOptions.transport is not set");
    }
    if (absl::Status s = ValidateCluster(cluster); !s.ok()) return s;
    if (path.empty() || path.front() != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("Agent Platform: the Slurm path \"", path,
                       "\" must start with '/' (e.g. /slurm/v0.0.42/job/submit)"));
    }
    if (method == HttpMethod::kPost && body == nullptr) {
      return absl::InvalidArgumentError("Agent Platform: a POST to Slurm needs a body");
    }
    absl::StatusOr<std::string> request_body = EncodeRequest(method, path, body);
    if (!request_body.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Agent Platform: ", request_body.status().message()));
    }
    if (request_body->size() > opts_.max_request_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Agent Platform: the request is ", request_body->size(),
          " bytes, over the 1 MB limit of callSlurmRestApi (", opts_.max_request_bytes,
          " bytes); put large scripts on the cluster's shared storage and call them from a "
          "short wrapper script"));
    }

    const std::string url = cluster.CallUrl();
    if (absl::Status allowed = opts_.endpoint_policy.Check(url); !allowed.ok()) {
      return WithMessage(allowed, absl::StrCat("Agent Platform: ", allowed.message()));
    }
    // Compact JSON: Google's frontends indent answers unless told not to.
    const std::string request_url = absl::StrCat(url, "?prettyPrint=false");
    const std::string budget_key = QuotaKey(cluster.endpoint, cluster.project_id, cluster.region);
    const CallPriority priority = options.priority.value_or(
        method == HttpMethod::kGet ? CallPriority::kTrack : CallPriority::kChange);
    const std::string method_name(HttpMethodName(method));
    BudgetRequest budget_request = cluster.budget;
    // Per credentials and per cluster resource: several tenants may share
    // one identity (the operator's), and one tenant's refused cluster must
    // not put the others back on the small bucket.
    budget_request.caller =
        absl::StrCat("credentials#", credentials.Instance(), "|", cluster.budget.owner);
    Backoff backoff(opts_.initial_backoff, opts_.max_backoff, opts_.jitter);
    bool auth_retried = false;
    bool unproven = false;  // an attempt drew on the caller's own bucket
    // A project and region whose quota ran out (RESOURCE_EXHAUSTED) is left
    // alone until the server's retry delay passed: calls fail fast instead
    // of adding load or holding a worker in a sleep.
    if (std::optional<absl::Status> paused = PausedStatus(budget_key, cluster)) return *paused;
    for (int attempt = 1;; ++attempt) {
      const bool attempts_left = attempt < opts_.max_attempts;
      // A cluster that did not answer is not called from a shared thread
      // again until its hold has passed (silent_clusters.h).
      SilentClusters::Ticket ticket;
      if (std::optional<SilentClusters::Refusal> held = silent_.Admit(url, &ticket)) {
        return HeldBackWhileSilent(cluster, *held);
      }
      // Credentials the project has not accepted yet spend one token of
      // their own bucket per call, not per attempt: their retries (after a
      // 5xx or a reset; a 403 is never retried) are bounded by max_attempts.
      if (!unproven) {
        const Reservation r =
            budget_.Reserve(budget_key, budget_request, priority, opts_.max_rate_limit_wait);
        if (!r.granted) return OverBudget(cluster, credentials, priority, r);
        unproven = r.unproven;
        Sleep(r.wait);
      }

      absl::StatusOr<std::string> token = credentials.Token();
      if (!token.ok()) {
        absl::Status s = WithMessage(
            token.status(), absl::StrCat("Agent Platform: no access token from ",
                                         credentials.Describe(), ": ", token.status().message()));
        if (s.code() == absl::StatusCode::kUnavailable && attempts_left) {
          Sleep(backoff.Next());
          continue;
        }
        return s;
      }
      const std::vector<std::string> secrets = {*token};

      http::Request request;
      request.method = "POST";
      request.url = request_url;
      request.headers["Authorization"] = "Bearer " + *token;
      request.headers["Content-Type"] = "application/json";
      request.headers["Accept"] = "application/json";
      if (std::string quota = credentials.QuotaProject(); !quota.empty()) {
        request.headers["x-goog-user-project"] = quota;
      }
      request.body = *request_body;
      // Shorter for a trial, but not for a streamed job list, whose
      // answer may take longer than a trial's timeout on a healthy cluster.
      request.timeout = options.job_sink != nullptr ? opts_.timeout : ticket.Timeout(opts_.timeout);
      request.max_body_bytes = opts_.max_response_bytes;

      *sent = true;
      // A list asked for record by record is decoded as it arrives (the
      // answer of 10,000 jobs is ~25 MB): never held whole.
      std::optional<absl::StatusOr<SlurmResponse>> streamed;
      absl::StatusOr<http::Response> response;
      const Time sent_at = clock_->Now();
      if (options.job_sink != nullptr) {
        options.job_sink->Restart();
        response = guarded_->SendReading(request, [&](http::BodySource& source) {
          streamed = DecodeResponseStream(source, options);
          return streamed->status();
        });
      } else {
        response = guarded_->Send(request);
      }
      const SilentClusters::Outcome outcome = OutcomeOf(response, clock_->Now() - sent_at);
      ticket.Finish(outcome);
      if (!response.ok()) {
        const absl::Status& t = response.status();
        const bool delivered = http::MayHaveBeenDelivered(t);
        absl::Status s =
            WithMessage(t, Redact(absl::StrCat("Agent Platform: ", method_name, " ", path, " via ",
                                               url, " failed: ", t.message()),
                                  secrets));
        const bool transport_retryable = t.code() == absl::StatusCode::kUnavailable ||
                                         t.code() == absl::StatusCode::kDeadlineExceeded;
        const bool safe = method != HttpMethod::kPost || !delivered;
        // A silent cluster is not waited for again in this thread.
        const bool silent = outcome == SilentClusters::Outcome::kSilent;
        if (transport_retryable && safe && !silent && attempts_left) {
          VLOG(1) << s.message() << "; retrying (attempt " << attempt << ")";
          Sleep(backoff.Next());
          continue;
        }
        if (attempt > 1) {
          s = WithMessage(s, absl::StrCat(s.message(), " (after ", attempt, " attempts)"));
        }
        return s;
      }

      if (response->status != 429) budget_.Succeeded(budget_key);
      if (response->status >= 200 && response->status < 300) {
        budget_.Accepted(budget_key, budget_request.caller);
        absl::StatusOr<SlurmResponse> decoded =
            streamed ? *std::move(streamed) : DecodeResponse(response->body, options);
        if (!decoded.ok()) return RedactStatus(decoded.status(), secrets);
        return decoded;
      }

      absl::Status s =
          RedactStatus(GoogleErrorToStatus(*response, clock_->Now(), secrets), secrets);
      // Google refuses a caller without access to the project with 401 or
      // 403, before anything else (quota included): any other answer means
      // these credentials may call it, and its calls may draw on the
      // project's budget (quota_budget.h).
      const bool refused = s.code() == absl::StatusCode::kUnauthenticated ||
                           s.code() == absl::StatusCode::kPermissionDenied ||
                           response->status == 401 || response->status == 403;
      // A 429 proves nothing: quota may be checked against the caller's own
      // quota project (x-goog-user-project) before access to the project.
      const bool exhausted =
          s.code() == absl::StatusCode::kResourceExhausted || response->status == 429;
      if (refused) {
        budget_.Rejected(budget_key, budget_request.caller);
      } else if (!exhausted) {
        budget_.Accepted(budget_key, budget_request.caller);
      }
      if (s.code() == absl::StatusCode::kUnauthenticated || response->status == 401) {
        if (!auth_retried) {
          auth_retried = true;
          credentials.Invalidate();
          --attempt;  // the retry after a refresh does not count
          continue;
        }
      }
      if (s.code() == absl::StatusCode::kUnauthenticated ||
          s.code() == absl::StatusCode::kPermissionDenied) {
        return WithMessage(s, absl::StrCat(s.message(), "; caller: ", credentials.Describe()));
      }
      if (s.code() == absl::StatusCode::kResourceExhausted) {
        // Slow the whole project and region down (every cluster in it
        // draws on the same quota) for at least the server's delay.
        // Only for a caller the project accepted: another's 429 may be its
        // own quota project's, and must not pause everyone's calls there.
        if (!unproven) budget_.Exhausted(budget_key, RetryDelay(s));
        if (std::optional<Time> until = budget_.PausedUntil(budget_key)) {
          SetRetryDelay(s, std::chrono::ceil<std::chrono::milliseconds>(*until - clock_->Now()));
        }
      }
      const bool transient =
          s.code() == absl::StatusCode::kUnavailable || IsTransientHttpStatus(response->status);
      const bool silent = outcome == SilentClusters::Outcome::kSilent;
      if (transient && method != HttpMethod::kPost && !silent && attempts_left) {
        const std::optional<std::chrono::milliseconds> hint = RetryDelay(s);
        if (!hint.has_value() || *hint <= opts_.max_backoff) {
          VLOG(1) << s.message() << "; retrying (attempt " << attempt << ")";
          Sleep(backoff.Next(hint));
          continue;
        }
      }
      if (attempt > 1) {
        s = WithMessage(s, absl::StrCat(s.message(), " (after ", attempt, " attempts)"));
      }
      return s;
    }
  }

  ClientOptions opts_;
  const Clock* const clock_;
  const std::unique_ptr<PolicyTransport> guarded_;  // opts_.transport behind the policy
  QuotaBudget budget_;
  SilentClusters silent_;  // by CallUrl()
};

}  // namespace

std::string_view HttpMethodName(HttpMethod method) {
  switch (method) {
    case HttpMethod::kGet:
      return "GET";
    case HttpMethod::kPost:
      return "POST";
    case HttpMethod::kDelete:
      return "DELETE";
  }
  return "UNKNOWN";
}

std::string ClusterName::ResourceName() const {
  return absl::StrCat("projects/", project_id, "/locations/", region, "/modelDevelopmentClusters/",
                      cluster_id);
}

std::string ClusterName::CallUrl() const {
  absl::string_view base = endpoint;
  while (absl::ConsumeSuffix(&base, "/")) {
  }
  const std::string root = base.empty()
                               ? absl::StrCat("https://", region, "-aiplatform.googleapis.com")
                               : std::string(base);
  // Each name percent-encoded as a path segment: the ':' of a domain-scoped
  // project id becomes %3A, so the only ':' left in the path is the one that
  // starts the custom method.
  return absl::StrCat(root, "/v1beta1/projects/", http::PercentEncode(project_id), "/locations/",
                      http::PercentEncode(region), "/modelDevelopmentClusters/",
                      http::PercentEncode(cluster_id), ":callSlurmRestApi");
}

std::unique_ptr<SlurmApi> NewSlurmApiClient(const ClientOptions& options) {
  return std::make_unique<SlurmApiClient>(options);
}

absl::Status MarkHeldBackByBudget(absl::Status status) {
  status.SetPayload(kHeldBackPayload, absl::Cord("1"));
  return status;
}

bool HeldBackByBudget(const absl::Status& status) {
  return status.GetPayload(kHeldBackPayload).has_value();
}

bool HeldBackWhileSilent(const absl::Status& status) {
  const auto why = status.GetPayload(kHeldBackPayload);
  return why.has_value() && *why == "silent";
}

}  // namespace slurmop::agentplatform
