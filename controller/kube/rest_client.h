// File: controller/kube/rest_client.h
//
// RestClient: the Client (client.h) over an http::Transport, speaking the
// Kubernetes REST conventions: paths from ResourceType, JSON bodies, patch
// content types, watch streams, bearer tokens from a TokenSource. See
// client.h for the behaviour every Client method promises.

#ifndef SLURMOP_CONTROLLER_KUBE_REST_CLIENT_H_
#define SLURMOP_CONTROLLER_KUBE_REST_CLIENT_H_

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "controller/http/http_transport.h"
#include "controller/kube/client.h"
#include "controller/kube/credentials.h"

namespace slurmop::kube {

// The largest Kubernetes API answer read (a page of a list, an object):
// 64 MiB. Lists are paged (Informer page_size), and etcd stores objects of at
// most 1.5 MiB by default.
inline constexpr size_t kMaxKubeResponseBytes = size_t{64} << 20;
// The largest list answer read by ListEach, which decodes it item by item as it arrives
// (list_stream.h), so its size costs time, not memory: 4 GiB. A list with resourceVersion=0
// (an informer's first list) is served from the API server's watch cache as one page, whatever
// `limit` says: capped at kMaxKubeResponseBytes, 62 SlurmJobs with 1 MiB scripts (or 15,000
// ordinary ones) made every relist fail, for every tenant, for good.
inline constexpr size_t kMaxKubeListBytes = size_t{4} << 30;
// The longest line of a watch stream (one event carrying one object): 16 MiB.
inline constexpr size_t kMaxWatchEventBytes = size_t{16} << 20;

// Query parameters; values are percent-encoded when rendered.
class QueryString {
 public:
  QueryString& Add(std::string name, std::string value);
  // "" or "?a=b&c=d"
  std::string Render() const;

 private:
  std::vector<std::pair<std::string, std::string>> params_;
};

class RestClient final : public Client {
 public:
  // `transport` must outlive the client unless it is `owned_transport`.
  RestClient(ClientConfig config, http::Transport* transport, std::unique_ptr<TokenSource> tokens,
             std::unique_ptr<http::Transport> owned_transport = nullptr);

  absl::StatusOr<nlohmann::json> Get(const ResourceType& rt, std::string_view ns,
                                     std::string_view name) override;
  absl::StatusOr<nlohmann::json> List(const ResourceType& rt, std::string_view ns,
                                      const ListOptions& opts) override;
  absl::StatusOr<nlohmann::json> ListEach(
      const ResourceType& rt, std::string_view ns, const ListOptions& opts,
      const std::function<absl::Status(nlohmann::json item)>& on_item) override;
  absl::StatusOr<nlohmann::json> Create(const ResourceType& rt, std::string_view ns,
                                        const nlohmann::json& obj) override;
  absl::StatusOr<nlohmann::json> Update(const ResourceType& rt, const nlohmann::json& obj) override;
  absl::StatusOr<nlohmann::json> UpdateStatus(const ResourceType& rt,
                                              const nlohmann::json& obj) override;
  absl::StatusOr<nlohmann::json> Patch(const ResourceType& rt, std::string_view ns,
                                       std::string_view name, PatchType type,
                                       const nlohmann::json& patch, bool status_subresource,
                                       std::string_view field_manager) override;
  absl::StatusOr<nlohmann::json> Delete(const ResourceType& rt, std::string_view ns,
                                        std::string_view name,
                                        const DeleteOptions& opts = {}) override;
  absl::Status Watch(const ResourceType& rt, std::string_view ns, const WatchOptions& opts,
                     const std::function<bool(WatchEvent&)>& on_event,
                     std::shared_ptr<http::StreamHandle> handle) override;

 private:
  using Sender = std::function<absl::StatusOr<http::Response>(const http::Request&)>;

  http::Request NewRequest(std::string method, const std::string& path,
                           const QueryString& query) const;
  // Adds the bearer token and retries once after a 401 if the token changed.
  absl::StatusOr<http::Response> Authorized(http::Request request, const Sender& send);
  // One round trip, to the request_result metrics hook (rest_client_requests_total).
  static void ReportRequestResult(const http::Request& request,
                                  const absl::StatusOr<http::Response>& response);
  absl::StatusOr<nlohmann::json> Call(http::Request request);
  absl::StatusOr<nlohmann::json> Put(const ResourceType& rt, const nlohmann::json& obj,
                                     bool status_subresource);
  std::string NamespaceFor(const ResourceType& rt, std::string_view ns,
                           const nlohmann::json& obj) const;

  const ClientConfig config_;
  std::unique_ptr<http::Transport> owned_transport_;
  http::Transport* const transport_;
  const std::unique_ptr<TokenSource> tokens_;
};

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_REST_CLIENT_H_
