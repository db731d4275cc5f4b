// File: controller/kube/client.h
//
// The Kubernetes API client the operator talks through. Objects are raw JSON
// (nlohmann::json): the operator uses a handful of types and keeps their
// schemas in its own code.
//
// Contract:
//  * Thread-safe. Every method returns the object the server returned
//    (2xx body) or an absl::Status mapped from the Kubernetes Status
//    (errors.h); transport failures come back unchanged (http_transport.h),
//    so http::MayHaveBeenDelivered() tells whether a failed write may have
//    happened anyway.
//  * Get/Update/UpdateStatus/Patch/Delete address one object. Update and
//    UpdateStatus take namespace and name from obj.metadata and send it as
//    is (PUT), so obj.metadata.resourceVersion is the optimistic-concurrency
//    precondition (missing -> 422 from the server, stale -> 409 kAborted).
//  * Create posts to `ns` (or obj.metadata.namespace when `ns` is empty).
//  * Patch content types: kMerge application/merge-patch+json, kJson
//    application/json-patch+json, kApply application/apply-patch+yaml (the
//    JSON body is valid YAML) with force=true; kApply requires
//    `field_manager`. `status_subresource` patches .../status.
//  * Delete returns the body: the object (finalizers pending, 200/202) or a
//    Status of kind "Status" (deleted at once). DeleteOptions go in the
//    request body; a failed uid precondition is a 409 (kAborted).
//  * List returns the whole List object; ListOptions map to resourceVersion,
//    labelSelector, limit and continue (empty/zero values are not sent).
//  * Watch sends watch=true&allowWatchBookmarks&timeoutSeconds and calls
//    `on_event` for each event, in order, on the calling thread. It returns
//      OK             the server ended the watch (normal at timeoutSeconds),
//                     or `on_event` returned false;
//      kCancelled     `handle->Cancel()` was called (handle may be null);
//      the ERROR event's Status after handing the ERROR event to `on_event`
//                     (410 Expired/Gone -> kOutOfRange: IsGone());
//      an HTTP error Status (non-2xx response) or a transport error;
//      kInternal      a line that is not a watch event.
//  * Requests carry "Authorization: Bearer <token>" from the configured
//    TokenSource; after a 401 the token is refreshed (OnUnauthorized) and the
//    request is retried once if the token changed. Tokens are never logged.

#ifndef SLURMOP_CONTROLLER_KUBE_CLIENT_H_
#define SLURMOP_CONTROLLER_KUBE_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/common/clock.h"
#include "controller/http/http_transport.h"
#include "controller/kube/config.h"
#include "controller/kube/errors.h"
#include "controller/kube/resource_types.h"
#include "controller/kube/watch_event.h"

namespace slurmop::kube {

enum class PatchType { kMerge, kJson, kApply };

struct ListOptions {
  std::string resource_version;
  std::string label_selector;
  int64_t limit = 0;
  std::string continue_token;
};

// The body of a DELETE (meta/v1 DeleteOptions); empty fields are not sent.
struct DeleteOptions {
  // preconditions.uid: only the object with this uid is deleted (409 Conflict when the name now
  // belongs to another incarnation).
  std::string precondition_uid;
  // Background | Foreground | Orphan ("": the server's default for the kind).
  std::string propagation_policy;
};

struct WatchOptions {
  std::string resource_version;
  bool allow_bookmarks = true;
  int timeout_seconds = 300;
  std::string label_selector;
};

class Client {  // thread-safe
 public:
  virtual ~Client() = default;
  virtual absl::StatusOr<nlohmann::json> Get(const ResourceType& rt, std::string_view ns,
                                             std::string_view name) = 0;
  virtual absl::StatusOr<nlohmann::json> List(const ResourceType& rt, std::string_view ns,
                                              const ListOptions& opts) = 0;
  // List() whose items go to `on_item` one by one, in order, instead of into
  // the answer, which is returned without `items` (metadata.resourceVersion,
  // metadata.continue). RestClient decodes the page as it arrives and never
  // holds it whole (list_stream.h); this default hands over List()'s items.
  virtual absl::StatusOr<nlohmann::json> ListEach(
      const ResourceType& rt, std::string_view ns, const ListOptions& opts,
      const std::function<absl::Status(nlohmann::json item)>& on_item) {
    absl::StatusOr<nlohmann::json> page = List(rt, ns, opts);
    if (!page.ok() || !page->is_object()) return page;
    auto items = page->find("items");
    if (items != page->end() && items->is_array()) {
      for (nlohmann::json& item : *items) {
        if (absl::Status s = on_item(std::move(item)); !s.ok()) return s;
      }
    }
    page->erase("items");
    return page;
  }
  virtual absl::StatusOr<nlohmann::json> Create(const ResourceType& rt, std::string_view ns,
                                                const nlohmann::json& obj) = 0;
  // PUT; obj carries metadata.resourceVersion.
  virtual absl::StatusOr<nlohmann::json> Update(const ResourceType& rt,
                                                const nlohmann::json& obj) = 0;
  // PUT .../status
  virtual absl::StatusOr<nlohmann::json> UpdateStatus(const ResourceType& rt,
                                                      const nlohmann::json& obj) = 0;
  virtual absl::StatusOr<nlohmann::json> Patch(const ResourceType& rt, std::string_view ns,
                                               std::string_view name, PatchType type,
                                               const nlohmann::json& patch,
                                               bool status_subresource = false,
                                               std::string_view field_manager = "") = 0;
  virtual absl::StatusOr<nlohmann::json> Delete(const ResourceType& rt, std::string_view ns,
                                                std::string_view name,
                                                const DeleteOptions& opts = {}) = 0;
  // Streams watch events until the server ends the watch (OK), the callback
  // returns false, or handle->Cancel(). The callback owns each event while it
  // runs: it may move the object out (an informer caches it without a copy).
  virtual absl::Status Watch(const ResourceType& rt, std::string_view ns, const WatchOptions& opts,
                             const std::function<bool(WatchEvent&)>& on_event,
                             std::shared_ptr<http::StreamHandle> handle) = 0;
};

// A client for `config.server` over `transport` (not owned; must outlive the
// client), with the token source `config` asks for (credentials.h).
std::unique_ptr<Client> NewClient(const ClientConfig& config, http::Transport* transport,
                                  const Clock& clock = RealClock::Get());

// A client that owns a CpprestTransport built from the TLS fields of
// `config`. An exec plugin is run once here; a client certificate it returns
// is used for TLS (not rotated), its token as bearer token (refreshed).
absl::StatusOr<std::unique_ptr<Client>> NewClientFromConfig(const ClientConfig& config,
                                                            const Clock& clock = RealClock::Get());

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_CLIENT_H_
