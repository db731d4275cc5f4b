// File: tests/fuzz/credentials_fuzz.cc
//
// Fuzz target: Google credentials JSON (a Secret's key or
// $GOOGLE_APPLICATION_CREDENTIALS) through
// agentplatform::CredentialsFromJson(), which dispatches to every loader:
// service_account, authorized_user, impersonated_service_account (with its
// embedded source_credentials) and external_account; then, when the input
// also carries a token endpoint answer, one Token() call against it.
//
// Input: the credentials JSON, optionally followed by a line "---" and the
// body every token endpoint (OAuth2, STS, IAM Credentials) answers with,
// HTTP 200. Token() is skipped for credentials with an external_account
// "file" source: it would read an arbitrary path named by the input.
//
// Checked (credentials.h): no crash, no exception, no undefined behaviour;
// load errors are kInvalidArgument or kUnimplemented; no message (load or
// Token() error, Describe()) leaks the input's client_secret or
// refresh_token: compared with a run on the same document whose secrets are
// masked, the secret's text may not occur more often.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "controller/agentplatform/credentials.h"
#include "controller/http/http_transport.h"
#include "nlohmann/json.hpp"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace http = slurmop::http;

// Answers every request with HTTP 200 and `body`.
class FixedTransport final : public http::Transport {
 public:
  explicit FixedTransport(std::string body) : body_(std::move(body)) {}
  absl::StatusOr<http::Response> Send(const http::Request&) override {
    http::Response response;
    response.status = 200;
    response.headers["content-type"] = "application/json";
    response.body = body_;
    return response;
  }
  absl::StatusOr<http::Response> Stream(const http::Request&, const http::LineCallback&,
                                        std::shared_ptr<http::StreamHandle>) override {
    return absl::UnimplementedError("no streams");
  }

 private:
  std::string body_;
};

// Points at the client_secret / refresh_token values (at least 8 characters)
// anywhere in the document (also inside source_credentials).
void CollectSecrets(nlohmann::json& j, std::vector<std::string*>* out, int depth = 0) {
  if (!j.is_structured() || depth > 8) return;
  if (j.is_object()) {
    for (const char* key : {"client_secret", "refresh_token"}) {
      const auto it = j.find(key);
      if (it != j.end() && it->is_string() && it->get_ref<std::string&>().size() >= 8) {
        out->push_back(&it->get_ref<std::string&>());
      }
    }
  }
  for (auto& item : j) CollectSecrets(item, out, depth + 1);
}

bool HasFileSource(const nlohmann::json& j, int depth = 0) {
  if (!j.is_structured() || depth > 8) return false;
  if (j.is_object()) {
    const auto it = j.find("credential_source");
    if (it != j.end() && it->is_object() && it->contains("file")) return true;
  }
  for (const auto& item : j) {
    if (HasFileSource(item, depth + 1)) return true;
  }
  return false;
}

size_t Count(std::string_view text, std::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos;
       at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// Loads `json`, calls Token() when `answer` is set (and no file source), and
// checks the load contract; returns every error message produced.
std::string Run(std::string_view json, const std::optional<std::string>& answer, bool file_source) {
  namespace ap = slurmop::agentplatform;
  FixedTransport transport{answer.value_or("")};
  ap::CredentialsOptions opts;
  opts.transport = &transport;
  opts.timeout = std::chrono::milliseconds(100);
  absl::StatusOr<std::shared_ptr<ap::TokenSource>> source = ap::CredentialsFromJson(json, opts);
  if (!source.ok()) {
    const absl::StatusCode code = source.status().code();
    FUZZ_CHECK(code == absl::StatusCode::kInvalidArgument ||
               code == absl::StatusCode::kUnimplemented);
    return std::string(source.status().message());
  }
  FUZZ_CHECK(*source != nullptr);
  std::string messages = (*source)->Describe();
  (void)(*source)->QuotaProject();
  if (!answer.has_value() || file_source) return messages;
  absl::StatusOr<std::string> token = (*source)->Token();
  if (!token.ok()) messages += "\n" + std::string(token.status().message());
  return messages;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in = slurmop::fuzz::Input(data, size);
  std::optional<std::string> answer;
  if (const size_t at = in.find("\n---\n"); at != std::string_view::npos) {
    answer = std::string(in.substr(at + 5));
    in = in.substr(0, at);
  }
  nlohmann::json parsed = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  const bool file_source = HasFileSource(parsed);
  Run(in, answer, file_source);

  // Secrets: the same document with each secret replaced by a same-length
  // mask must produce the secret's text at least as often as the original
  // does, else the original leaked it (this tells a leak from a secret that
  // merely equals some text of a message).
  std::vector<std::string*> secrets;
  CollectSecrets(parsed, &secrets);
  if (secrets.empty()) return 0;
  const std::vector<std::string> originals = [&] {
    std::vector<std::string> v;
    for (const std::string* secret : secrets) v.push_back(*secret);
    return v;
  }();
  const std::string with_secrets = Run(parsed.dump(), answer, file_source);
  for (std::string* secret : secrets) secret->assign(secret->size(), '#');
  const std::string masked = Run(parsed.dump(), answer, file_source);
  for (const std::string& secret : originals) {
    FUZZ_CHECK(Count(with_secrets, secret) <= Count(masked, secret));
  }
  return 0;
}
