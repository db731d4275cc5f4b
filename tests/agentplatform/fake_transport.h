// File: tests/agentplatform/fake_transport.h
//
// A scripted http::Transport for the Agent Platform tests: it records every
// request and answers from a FIFO of scripted results, else from a handler,
// else with kInternal ("unexpected request"). Plus small helpers to build
// responses, transport failures and to decode form bodies.
//
// Contract: thread-safe; the handler runs outside the lock (it may block).
// Stream() is not used by the Agent Platform client and returns
// kUnimplemented.

#ifndef SLURMOP_TESTS_AGENTPLATFORM_FAKE_TRANSPORT_H_
#define SLURMOP_TESTS_AGENTPLATFORM_FAKE_TRANSPORT_H_

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "controller/common/clock.h"
#include "controller/http/http_transport.h"

namespace slurmop::agentplatform::testing {

class FakeTransport : public http::Transport {
 public:
  using Handler = std::function<absl::StatusOr<http::Response>(const http::Request&)>;

  void Enqueue(absl::StatusOr<http::Response> result) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(result));
  }
  void SetHandler(Handler handler) {
    std::lock_guard<std::mutex> lock(mu_);
    handler_ = std::move(handler);
  }

  absl::StatusOr<http::Response> Send(const http::Request& request) override {
    Handler handler;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
      if (!queue_.empty()) {
        absl::StatusOr<http::Response> result = std::move(queue_.front());
        queue_.pop_front();
        return result;
      }
      handler = handler_;
    }
    if (handler) return handler(request);
    return absl::InternalError("FakeTransport: unexpected request to " + request.url);
  }

  absl::StatusOr<http::Response> Stream(const http::Request&, const http::LineCallback&,
                                        std::shared_ptr<http::StreamHandle>) override {
    return absl::UnimplementedError("FakeTransport: Stream");
  }

  std::vector<http::Request> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  size_t request_count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.size();
  }
  size_t pending() const {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.size();
  }

 private:
  mutable std::mutex mu_;
  std::deque<absl::StatusOr<http::Response>> queue_;
  Handler handler_;
  std::vector<http::Request> requests_;
};

inline http::Response Respond(int status, std::string body, http::Headers headers = {}) {
  http::Response r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

// A transport failure as the real transport reports it.
inline absl::Status Failure(absl::StatusCode code, bool request_sent) {
  return http::TransportError(code, "connection reset by peer", request_sent);
}

inline std::string UrlDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Decodes an application/x-www-form-urlencoded body.
inline std::map<std::string, std::string> ParseForm(const std::string& body) {
  std::map<std::string, std::string> out;
  for (absl::string_view pair : absl::StrSplit(body, '&', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
    out[UrlDecode(kv.first)] = UrlDecode(kv.second);
  }
  return out;
}

// A sleep function for ClientOptions that records the delays and advances
// a FakeClock instead of sleeping.
struct FakeSleeper {
  FakeClock* clock;
  std::vector<std::chrono::nanoseconds>* delays;
  void operator()(std::chrono::nanoseconds d) const {
    delays->push_back(d);
    clock->Advance(d);
  }
};

}  // namespace slurmop::agentplatform::testing

#endif  // SLURMOP_TESTS_AGENTPLATFORM_FAKE_TRANSPORT_H_
