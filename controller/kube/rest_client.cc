// File: controller/kube/rest_client.cc
//
// RestClient and NewClient()/NewClientFromConfig(). See client.h and
// rest_client.h for the contracts.

#include "controller/kube/rest_client.h"

#include <algorithm>
#include <istream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/common/bounded_json.h"
#include "controller/http/cpprest_transport.h"
#include "controller/http/keep_alive_pool.h"
#include "controller/http/percent_encoding.h"
#include "controller/kube/list_stream.h"
#include "controller/kube/metrics_hooks.h"
#include "controller/kube/request_deadline.h"

namespace slurmop::kube {
namespace {

constexpr char kJson[] = "application/json";
// A watch may stay silent for its whole timeoutSeconds (no bookmarks); the
// transport's inactivity limit must be longer than that.
constexpr std::chrono::seconds kWatchIdleMargin{60};

// The JSON text of a request. A string that is not UTF-8 (a remote's text cut mid-sequence, a
// byte from a non-JSON answer) is written with U+FFFD in its place: the strict dump() throws
// type_error 316, and nothing catches it on a worker thread, so one such text in a condition
// would end the process on every try.
std::string RequestBody(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
constexpr std::chrono::hours kWatchWithoutTimeout{1};

const char* ContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

std::string MetadataString(const nlohmann::json& obj, const char* field) {
  auto metadata = obj.find("metadata");
  if (metadata == obj.end() || !metadata->is_object()) return "";
  auto value = metadata->find(field);
  if (value == metadata->end() || !value->is_string()) return "";
  return value->get<std::string>();
}

absl::StatusOr<nlohmann::json> DecodeBody(const http::Response& response) {
  if (response.status < 200 || response.status >= 300) return StatusFromResponse(response);
  if (response.body.empty()) return nlohmann::json::object();
  nlohmann::json body = ParseBoundedJson(response.body, kMaxKubeAnswerJsonDepth);
  if (body.is_discarded()) {
    return absl::InternalError(absl::StrCat("HTTP ", response.status,
                                            ": response is not JSON (or nests deeper than ",
                                            kMaxKubeAnswerJsonDepth, " levels)"));
  }
  return body;
}

}  // namespace

QueryString& QueryString::Add(std::string name, std::string value) {
  params_.emplace_back(std::move(name), std::move(value));
  return *this;
}

std::string QueryString::Render() const {
  std::string out;
  for (const auto& [name, value] : params_) {
    out += out.empty() ? "?" : "&";
    out += http::PercentEncode(name);
    out += "=";
    out += http::PercentEncode(value);
  }
  return out;
}

RestClient::RestClient(ClientConfig config, http::Transport* transport,
                       std::unique_ptr<TokenSource> tokens,
                       std::unique_ptr<http::Transport> owned_transport)
    : config_(std::move(config)),
      owned_transport_(std::move(owned_transport)),
      transport_(transport),
      tokens_(std::move(tokens)) {}

http::Request RestClient::NewRequest(std::string method, const std::string& path,
                                     const QueryString& query) const {
  http::Request request;
  request.method = std::move(method);
  std::string server = config_.server;
  while (!server.empty() && server.back() == '/') server.pop_back();
  request.url = server + path + query.Render();
  request.headers["Accept"] = kJson;
  request.headers["User-Agent"] = config_.user_agent;
  request.timeout = config_.request_timeout;
  request.max_body_bytes = kMaxKubeResponseBytes;  // a watch: per line (the default)
  return request;
}

void RestClient::ReportRequestResult(const http::Request& request,
                                     const absl::StatusOr<http::Response>& response) {
  const auto& hook = GetMetricsHooks().request_result;
  if (!hook) return;
  // rest_client_requests_total's host label: the URL's host[:port].
  std::string_view host = request.url;
  if (size_t scheme = host.find("://"); scheme != std::string_view::npos) {
    host.remove_prefix(scheme + 3);
  }
  host = host.substr(0, host.find_first_of("/?"));
  hook(response.ok() ? std::to_string(response->status) : "<error>", request.method,
       std::string(host));
}

absl::StatusOr<http::Response> RestClient::Authorized(http::Request request, const Sender& send) {
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<std::string> token = tokens_->Token();
    if (!token.ok()) return token.status();
    if (token->empty()) {
      request.headers.erase("Authorization");
    } else {
      request.headers["Authorization"] = "Bearer " + *token;
    }
    absl::StatusOr<http::Response> response = send(request);
    ReportRequestResult(request, response);
    if (!response.ok() || response->status != 401 || attempt > 0) return response;
    // The token may have rotated (file) or expired early (exec): refresh it
    // and retry once; a 401 means the server did not act on the request.
    tokens_->OnUnauthorized(*token);
    absl::StatusOr<std::string> fresh = tokens_->Token();
    if (!fresh.ok() || *fresh == *token) return response;
  }
}

absl::StatusOr<nlohmann::json> RestClient::Call(http::Request request) {
  // Within this thread's request deadline (request_deadline.h), if any.
  request.timeout = TimeoutWithinDeadline(request.timeout);
  if (request.timeout <= std::chrono::milliseconds::zero()) {
    return absl::DeadlineExceededError(
        absl::StrCat("kube: ", request.method, " not sent: the caller's deadline has passed"));
  }
  absl::StatusOr<http::Response> response = Authorized(
      std::move(request), [this](const http::Request& r) { return transport_->Send(r); });
  if (!response.ok()) return response.status();
  return DecodeBody(*response);
}

std::string RestClient::NamespaceFor(const ResourceType& rt, std::string_view ns,
                                     const nlohmann::json& obj) const {
  if (!rt.namespaced) return "";
  if (!ns.empty()) return std::string(ns);
  std::string from_object = MetadataString(obj, "namespace");
  return from_object.empty() ? config_.default_namespace : from_object;
}

absl::StatusOr<nlohmann::json> RestClient::Get(const ResourceType& rt, std::string_view ns,
                                               std::string_view name) {
  return Call(NewRequest("GET", rt.ObjectPath(ns, name), {}));
}

absl::StatusOr<nlohmann::json> RestClient::List(const ResourceType& rt, std::string_view ns,
                                                const ListOptions& opts) {
  QueryString query;
  if (!opts.resource_version.empty()) query.Add("resourceVersion", opts.resource_version);
  if (!opts.label_selector.empty()) query.Add("labelSelector", opts.label_selector);
  if (opts.limit > 0) query.Add("limit", std::to_string(opts.limit));
  if (!opts.continue_token.empty()) query.Add("continue", opts.continue_token);
  return Call(NewRequest("GET", rt.CollectionPath(ns), query));
}

absl::StatusOr<nlohmann::json> RestClient::ListEach(
    const ResourceType& rt, std::string_view ns, const ListOptions& opts,
    const std::function<absl::Status(nlohmann::json item)>& on_item) {
  QueryString query;
  if (!opts.resource_version.empty()) query.Add("resourceVersion", opts.resource_version);
  if (!opts.label_selector.empty()) query.Add("labelSelector", opts.label_selector);
  if (opts.limit > 0) query.Add("limit", std::to_string(opts.limit));
  if (!opts.continue_token.empty()) query.Add("continue", opts.continue_token);
  http::Request request = NewRequest("GET", rt.CollectionPath(ns), query);
  request.max_body_bytes = kMaxKubeListBytes;
  request.timeout = TimeoutWithinDeadline(request.timeout);
  if (request.timeout <= std::chrono::milliseconds::zero()) {
    return absl::DeadlineExceededError("kube: GET not sent: the caller's deadline has passed");
  }
  // Read as it arrives (list_stream.h). A retry after a 401 starts over, so
  // nothing is handed over before the answer is a 2xx.
  absl::StatusOr<nlohmann::json> list = absl::InternalError("list response: no body");
  absl::StatusOr<http::Response> response =
      Authorized(std::move(request), [&](const http::Request& r) {
        return transport_->SendReading(r, [&](http::BodySource& body) {
          BodySourceStream buffer(body);
          std::istream in(&buffer);
          list = ReadList(in, kMaxKubeAnswerJsonDepth, on_item);
          if (!buffer.transport_status().ok()) list = buffer.transport_status();
          return list.status();
        });
      });
  if (!response.ok()) return response.status();
  if (response->status < 200 || response->status >= 300) return DecodeBody(*response);
  return list;
}

absl::StatusOr<nlohmann::json> RestClient::Create(const ResourceType& rt, std::string_view ns,
                                                  const nlohmann::json& obj) {
  http::Request request = NewRequest("POST", rt.CollectionPath(NamespaceFor(rt, ns, obj)), {});
  request.headers["Content-Type"] = kJson;
  request.body = RequestBody(obj);
  return Call(std::move(request));
}

absl::StatusOr<nlohmann::json> RestClient::Put(const ResourceType& rt, const nlohmann::json& obj,
                                               bool status_subresource) {
  const std::string name = MetadataString(obj, "name");
  if (name.empty()) return absl::InvalidArgumentError("update: object has no metadata.name");
  std::string path = rt.ObjectPath(NamespaceFor(rt, "", obj), name);
  if (status_subresource) path += "/status";
  http::Request request = NewRequest("PUT", path, {});
  request.headers["Content-Type"] = kJson;
  request.body = RequestBody(obj);
  return Call(std::move(request));
}

absl::StatusOr<nlohmann::json> RestClient::Update(const ResourceType& rt,
                                                  const nlohmann::json& obj) {
  return Put(rt, obj, /*status_subresource=*/false);
}

absl::StatusOr<nlohmann::json> RestClient::UpdateStatus(const ResourceType& rt,
                                                        const nlohmann::json& obj) {
  return Put(rt, obj, /*status_subresource=*/true);
}

absl::StatusOr<nlohmann::json> RestClient::Patch(const ResourceType& rt, std::string_view ns,
                                                 std::string_view name, PatchType type,
                                                 const nlohmann::json& patch,
                                                 bool status_subresource,
                                                 std::string_view field_manager) {
  if (type == PatchType::kApply && field_manager.empty()) {
    return absl::InvalidArgumentError("server-side apply needs a field manager");
  }
  QueryString query;
  if (!field_manager.empty()) query.Add("fieldManager", std::string(field_manager));
  if (type == PatchType::kApply) query.Add("force", "true");
  std::string path = rt.ObjectPath(ns, name);
  if (status_subresource) path += "/status";
  http::Request request = NewRequest("PATCH", path, query);
  request.headers["Content-Type"] = ContentType(type);
  request.body = RequestBody(patch);
  // A merge patch with metadata.resourceVersion is conditional: replayed
  // after it applied, it fails with 409 Conflict instead of applying twice.
  if (type == PatchType::kMerge && patch.is_object()) {
    auto md = patch.find("metadata");
    request.replay_safe = md != patch.end() && md->is_object() && md->contains("resourceVersion") &&
                          (*md)["resourceVersion"].is_string() &&
                          !(*md)["resourceVersion"].get<std::string>().empty();
  }
  return Call(std::move(request));
}

absl::StatusOr<nlohmann::json> RestClient::Delete(const ResourceType& rt, std::string_view ns,
                                                  std::string_view name,
                                                  const DeleteOptions& opts) {
  http::Request request = NewRequest("DELETE", rt.ObjectPath(ns, name), {});
  nlohmann::json body = nlohmann::json::object();
  if (!opts.precondition_uid.empty()) body["preconditions"]["uid"] = opts.precondition_uid;
  if (!opts.propagation_policy.empty()) body["propagationPolicy"] = opts.propagation_policy;
  if (!body.empty()) {
    body["kind"] = "DeleteOptions";
    body["apiVersion"] = "v1";
    request.headers["Content-Type"] = kJson;
    request.body = RequestBody(body);
  }
  return Call(std::move(request));
}

absl::Status RestClient::Watch(const ResourceType& rt, std::string_view ns,
                               const WatchOptions& opts,
                               const std::function<bool(WatchEvent&)>& on_event,
                               std::shared_ptr<http::StreamHandle> handle) {
  if (handle == nullptr) handle = std::make_shared<http::StreamHandle>();
  QueryString query;
  query.Add("watch", "true");
  if (!opts.resource_version.empty()) query.Add("resourceVersion", opts.resource_version);
  if (opts.allow_bookmarks) query.Add("allowWatchBookmarks", "true");
  if (opts.timeout_seconds > 0) query.Add("timeoutSeconds", std::to_string(opts.timeout_seconds));
  if (!opts.label_selector.empty()) query.Add("labelSelector", opts.label_selector);
  http::Request request = NewRequest("GET", rt.CollectionPath(ns), query);
  request.max_body_bytes = kMaxWatchEventBytes;
  request.timeout =
      opts.timeout_seconds > 0
          ? std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::seconds(opts.timeout_seconds) + kWatchIdleMargin)
          : std::chrono::duration_cast<std::chrono::milliseconds>(kWatchWithoutTimeout);

  absl::Status stream_status;
  const http::LineCallback on_line = [&](const std::string& line) {
    absl::StatusOr<WatchEvent> event = ParseWatchLine(line);
    if (!event.ok()) {
      stream_status = event.status();
      return false;
    }
    if (event->type == kError) {
      // A server ends the watch after an ERROR event; so do we.
      stream_status = StatusFromErrorEvent(*event);
      on_event(*event);
      return false;
    }
    return on_event(*event);
  };
  absl::StatusOr<http::Response> response =
      Authorized(std::move(request),
                 [&](const http::Request& r) { return transport_->Stream(r, on_line, handle); });
  if (!response.ok()) return response.status();
  if (response->status < 200 || response->status >= 300) return StatusFromResponse(*response);
  if (!stream_status.ok()) return stream_status;
  if (handle->cancelled()) return absl::CancelledError("watch cancelled");
  return absl::OkStatus();
}

std::unique_ptr<Client> NewClient(const ClientConfig& config, http::Transport* transport,
                                  const Clock& clock) {
  return std::make_unique<RestClient>(config, transport, NewTokenSource(config, clock));
}

absl::StatusOr<std::unique_ptr<Client>> NewClientFromConfig(const ClientConfig& config,
                                                            const Clock& clock) {
  http::CpprestTransportOptions options;
  options.tls.ca_file = config.ca_file;
  options.tls.ca_pem = config.ca_data;
  options.tls.client_cert_file = config.client_cert_file;
  options.tls.client_cert_pem = config.client_cert_data;
  options.tls.client_key_file = config.client_key_file;
  options.tls.client_key_pem = config.client_key_data;
  options.tls.insecure_skip_tls_verify = config.insecure_skip_tls_verify;
  options.tls.server_name = config.tls_server_name;

  std::unique_ptr<TokenSource> tokens;
  if (config.exec.has_value()) {
    ExecConfig exec = *config.exec;
    ExecClusterInfo cluster{config.server, config.ca_data, config.tls_server_name,
                            config.insecure_skip_tls_verify};
    ExecTokenSource::Runner runner = [exec, cluster] { return RunExecPlugin(exec, cluster); };
    absl::StatusOr<ExecCredential> first = runner();
    if (!first.ok()) return first.status();
    if (!first->client_certificate_pem.empty()) {
      options.tls.client_cert_file.clear();
      options.tls.client_key_file.clear();
      options.tls.client_cert_pem = first->client_certificate_pem;
      options.tls.client_key_pem = first->client_key_pem;
    }
    tokens = std::make_unique<ExecTokenSource>(std::move(runner), clock, *std::move(first));
  } else {
    tokens = NewTokenSource(config, clock);
  }
  absl::StatusOr<std::unique_ptr<http::CpprestTransport>> cpprest =
      http::CpprestTransport::Create(options);
  if (!cpprest.ok()) return cpprest.status();
  std::unique_ptr<http::Transport> transport = *std::move(cpprest);
  if (config.keep_alive_writes) {
    http::KeepAlivePoolOptions pool_options;
    pool_options.tls = options.tls;
    absl::StatusOr<std::unique_ptr<http::KeepAliveConnectionPool>> pool =
        http::KeepAliveConnectionPool::Create(pool_options);
    if (!pool.ok()) return pool.status();
    transport = std::make_unique<http::KeepAliveWritesTransport>(
        std::move(transport), *std::move(pool), config.watches_on_informer_thread);
  }
  http::Transport* raw = transport.get();
  return std::unique_ptr<Client>(
      new RestClient(config, raw, std::move(tokens), std::move(transport)));
}

}  // namespace slurmop::kube
