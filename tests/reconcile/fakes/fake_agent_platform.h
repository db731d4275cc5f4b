// File: tests/reconcile/fakes/fake_agent_platform.h
//
// The outside world of the executor, besides Kubernetes:
//  * ScriptedAgentPlatform: an http::Transport under the REAL Agent Platform
//    client (NewSlurmApiClient). It decodes each callSlurmRestApi envelope
//    it receives, records it, and answers with scripted raw HTTP: a status
//    code plus body text exactly as Agent Platform sends it (envelopes with
//    structuredBody or a `body` string, Google errors), or a transport
//    failure.
//  * FixedTokenSource / FakeCredentialsResolver: a fixed bearer token.
//  * RecordingEventSink: the Events the executor records.
//
// Contract of ScriptedAgentPlatform:
//  * On(method, path, reply...) queues replies for one (envelope method,
//    Slurm path); they are used in order and the LAST one repeats, until
//    the next On() for that call replaces it.
//  * A call without a script is answered with a Google INTERNAL error and
//    listed in unexpected(); tests check that list is empty.
//  * Thread-safe.

#ifndef SLURMOP_TESTS_RECONCILE_FAKES_FAKE_AGENT_PLATFORM_H_
#define SLURMOP_TESTS_RECONCILE_FAKES_FAKE_AGENT_PLATFORM_H_

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "controller/agentplatform/credentials.h"
#include "controller/http/http_transport.h"
#include "controller/reconcile/ports.h"
#include "nlohmann/json.hpp"

namespace slurmop::reconcile::testing {

// One callSlurmRestApi request as it went over the wire.
struct WireCall {
  http::Request request;     // url, headers, raw body
  std::string method;        // envelope method, e.g. HTTP_METHOD_POST
  std::string path;          // envelope path, e.g. /slurm/v0.0.42/job/submit
  nlohmann::json body;       // envelope body (null when absent)
  bool has_body = false;     // the envelope carried a "body" key
  std::string raw_envelope;  // exactly what was sent
};

using Reply = absl::StatusOr<http::Response>;

// 200 {"status": <slurm_status>, "structuredBody": <slurm_json>}
inline Reply StructuredBody(int slurm_status, const std::string& slurm_json) {
  http::Response r;
  r.status = 200;
  r.headers["content-type"] = "application/json; charset=UTF-8";
  r.body = absl::StrCat("{\n  \"status\": ", slurm_status, ",\n  \"structuredBody\": ", slurm_json,
                        "\n}\n");
  return r;
}

// 200 {"status": <slurm_status>, "body": "<slurm_json as a JSON string>"}
inline Reply StringBody(int slurm_status, const std::string& slurm_json) {
  http::Response r;
  r.status = 200;
  r.headers["content-type"] = "application/json; charset=UTF-8";
  r.body = absl::StrCat("{\n  \"status\": ", slurm_status,
                        ",\n  \"body\": ", nlohmann::json(slurm_json).dump(), "\n}\n");
  return r;
}

// A Google error answer: HTTP `code` with {"error": {...}} (raw text given).
inline Reply GoogleErrorReply(int code, const std::string& raw_body) {
  http::Response r;
  r.status = code;
  r.headers["content-type"] = "application/json; charset=UTF-8";
  r.body = raw_body;
  return r;
}

class ScriptedAgentPlatform : public http::Transport {
 public:
  template <typename... R>
  void On(const std::string& method, const std::string& path, R... replies) {
    std::lock_guard<std::mutex> lock(mu_);
    Script& q = script_[{method, path}];
    if (q.last_served) {  // a repeating last reply is replaced by new ones
      q.replies.clear();
      q.last_served = false;
    }
    (q.replies.push_back(std::move(replies)), ...);
  }

  absl::StatusOr<http::Response> Send(const http::Request& request) override {
    WireCall call;
    call.request = request;
    call.raw_envelope = request.body;
    nlohmann::json env = nlohmann::json::parse(request.body, nullptr, false);
    if (env.is_object()) {
      call.method = env.value("method", "");
      call.path = env.value("path", "");
      call.has_body = env.contains("body");
      if (call.has_body) call.body = env["body"];
    }
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(call);
    auto it = script_.find({call.method, call.path});
    if (it == script_.end() || it->second.replies.empty()) {
      unexpected_.push_back(absl::StrCat(call.method, " ", call.path));
      return GoogleErrorReply(
          500, absl::StrCat(R"({"error":{"code":500,"message":"ScriptedAgentPlatform: no script )",
                            R"(for this call","status":"INTERNAL"}})"));
    }
    Script& q = it->second;
    Reply r = q.replies.front();
    if (q.replies.size() > 1) {
      q.replies.pop_front();
    } else {
      q.last_served = true;
    }
    return r;
  }

  absl::StatusOr<http::Response> Stream(const http::Request&, const http::LineCallback&,
                                        std::shared_ptr<http::StreamHandle>) override {
    return absl::UnimplementedError("ScriptedAgentPlatform: Stream");
  }

  std::vector<WireCall> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  // Calls with this envelope method and path.
  std::vector<WireCall> calls(const std::string& method, const std::string& path) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<WireCall> out;
    for (const auto& c : calls_) {
      if (c.method == method && c.path == path) out.push_back(c);
    }
    return out;
  }
  int Count(const std::string& method, const std::string& path) const {
    return static_cast<int>(calls(method, path).size());
  }
  std::vector<std::string> unexpected() const {
    std::lock_guard<std::mutex> lock(mu_);
    return unexpected_;
  }
  void ClearCalls() {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.clear();
  }

 private:
  mutable std::mutex mu_;
  struct Script {
    std::deque<Reply> replies;
    bool last_served = false;  // the last reply was used (and now repeats)
  };
  std::map<std::pair<std::string, std::string>, Script> script_;
  std::vector<WireCall> calls_;
  std::vector<std::string> unexpected_;
};

class FixedTokenSource : public agentplatform::TokenSource {
 public:
  explicit FixedTokenSource(std::string token) : token_(std::move(token)) {}
  absl::StatusOr<std::string> Token() override {
    ++tokens_handed_out;
    return token_;
  }
  void Invalidate() override { ++invalidations; }
  std::string Describe() const override {
    return "service account slurm-operator@proj.iam.gserviceaccount.com";
  }
  std::atomic<int> tokens_handed_out{0};
  std::atomic<int> invalidations{0};

 private:
  const std::string token_;
};

class FakeCredentialsResolver : public CredentialsResolver {
 public:
  explicit FakeCredentialsResolver(std::shared_ptr<agentplatform::TokenSource> source)
      : source_(std::move(source)) {}
  // Like the real resolver, no identity means no credentials.
  absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> For(
      const ClusterIdentity& identity) override {
    ++calls;
    std::lock_guard<std::mutex> lock(mu_);
    identities.push_back(identity);
    if (identity.source == ClusterIdentity::Source::kNone) {
      return absl::PermissionDeniedError("no identity");
    }
    return source_;
  }
  std::atomic<int> calls{0};
  std::vector<ClusterIdentity> identities;  // every identity asked for, in order

 private:
  std::shared_ptr<agentplatform::TokenSource> source_;
  std::mutex mu_;
};

struct RecordedEvent {
  std::string object;  // ns/name of `regarding`
  EventSpec event;
};

class RecordingEventSink : public EventSink {
 public:
  void Record(const nlohmann::json& regarding, const EventSpec& event) override {
    const auto& m = regarding.value("metadata", nlohmann::json::object());
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back({absl::StrCat(m.value("namespace", ""), "/", m.value("name", "")), event});
  }
  std::vector<RecordedEvent> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  std::vector<EventSpec> WithReason(const std::string& reason) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<EventSpec> out;
    for (const auto& e : events_) {
      if (e.event.reason == reason) out.push_back(e.event);
    }
    return out;
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    events_.clear();
  }

 private:
  mutable std::mutex mu_;
  std::vector<RecordedEvent> events_;
};

}  // namespace slurmop::reconcile::testing

#endif  // SLURMOP_TESTS_RECONCILE_FAKES_FAKE_AGENT_PLATFORM_H_
