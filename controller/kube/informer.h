// File: controller/kube/informer.h
//
// Informer: client-go's Reflector and Indexer as one class. It keeps a local
// cache of one resource type (in one namespace or all) in sync with the API
// server by list + watch, and tells a handler about every change.
//
// Contract:
//  * Start() runs the loop on its own thread:
//     1. List, paginated with `limit`/`continue` (continuation pages carry no
//        resourceVersion). The first list asks for resourceVersion "0"
//        (served from the watch cache); a relist after 410 asks for "" (a
//        quorum read). The result replaces the cache: objects that are new
//        are delivered ADDED, changed ones (different resourceVersion)
//        MODIFIED, and cached keys missing from the list DELETED with their
//        last known state. HasSynced() turns true after the first complete
//        list has been delivered.
//     2. Watch from the list's resourceVersion with allowWatchBookmarks and a
//        random timeoutSeconds in [min_watch_timeout, 2*min_watch_timeout)
//        (5-10 min). Every event, bookmarks included, advances
//        LastSyncResourceVersion(). ADDED/MODIFIED/DELETED update the cache
//        and are delivered (an ADDED for a cached key is delivered MODIFIED).
//     3. When the watch ends normally (timeoutSeconds), watch again from the
//        last resourceVersion, without relisting. A watch that ends at once
//        with no event counts as a failure (backoff).
//     4. 410 Expired/Gone (HTTP or ERROR event) or 504 "too large resource
//        version": relist at once with resourceVersion "".
//     5. Any other failure: wait, then retry the step that failed (a failed
//        watch re-watches from the last resourceVersion). The wait is the
//        ExponentialBackoff (0.8 s doubling to 30 s, jitter x[1,2), reset
//        after 2 min without failures), or the server's Retry-After if longer.
//  * The handler runs on the informer thread, after the cache was updated,
//    never under the cache lock: it may call Get()/List(). It must not block
//    for long (enqueue keys into a WorkQueue).
//  * Stop() cancels an in-flight watch (the transport closes the stream
//    within about a second), interrupts a backoff wait, and joins. A list in
//    flight finishes first (bounded by the request timeout). Stop() is
//    idempotent and is called by the destructor.
//  * Get()/List()/HasSynced()/LastSyncResourceVersion() are thread-safe.
//    Cached objects are immutable and shared (shared_ptr<const json>). With
//    InformerOptions::compact_cache the cache holds each object packed
//    instead (CBOR compressed by an ObjectPacker: a fiftieth of the memory of
//    a parsed nlohmann::json); Get() and List() then decode a fresh copy on
//    every call, and the handler still receives the object as parsed from the
//    API server. The objects of the last InformerOptions::recent_parsed watch
//    events stay parsed, and Get() returns the very object the handler got:
//    the reconcile an event queues reads it without decoding, and an object
//    is packed only after a later event was delivered, so packing never
//    delays a handler. An entry that does not unpack (a broken invariant) is
//    logged and reads as absent.
//  * Time: the backoff reads the injected Clock. Waits use real time unless
//    InformerOptions::sleep_for_testing is set, in which case the informer
//    calls it instead of sleeping (tests record and skip waits).

#ifndef SLURMOP_CONTROLLER_KUBE_INFORMER_H_
#define SLURMOP_CONTROLLER_KUBE_INFORMER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "controller/common/clock.h"
#include "controller/http/http_transport.h"
#include "controller/kube/backoff.h"
#include "controller/kube/client.h"
#include "controller/kube/object_packer.h"

namespace slurmop::kube {

struct InformerOptions {
  // Restricts the informer to matching objects.
  std::string label_selector;
  // `limit` of each list page; 0 lists in one request.
  int64_t page_size = 500;
  // Watch timeoutSeconds is drawn from [min, 2*min) (client-go: 5 min).
  Duration min_watch_timeout = std::chrono::minutes(5);
  BackoffOptions backoff;
  // Uniform [0, 1); defaults to a seeded engine.
  std::function<double()> random;
  // If set, called instead of sleeping for backoff waits (tests).
  std::function<void(Duration)> sleep_for_testing;
  // Drop metadata.managedFields before caching (controller-runtime's
  // TransformStripManagedFields): controllers never read them, and they are a
  // third of a SlurmJob's JSON. An update sent without them leaves the
  // server's entries as they are.
  bool strip_managed_fields = true;
  // Keep cached objects packed (see the contract). For a large cache read
  // one object at a time: a SlurmJob takes ~0.2 KB so instead of ~11 KB.
  bool compact_cache = false;
  // How compact_cache packs: against a dictionary of the kind's typical
  // object (object_packer.h). Null: CBOR compressed without a dictionary.
  std::shared_ptr<const ObjectPacker> packer;
  // With compact_cache: how many of the latest watch events' objects stay
  // parsed (see the contract; ~11 KB each for a SlurmJob). 0 packs each
  // object before its handler runs.
  std::size_t recent_parsed = 16;
};

class Informer {
 public:
  using Handler = std::function<void(const std::string& type /*ADDED|MODIFIED|DELETED*/,
                                     const std::shared_ptr<const nlohmann::json>& obj)>;

  Informer(Client& client, ResourceType rt, std::string ns /*"" all*/, Handler handler,
           const Clock& clock, InformerOptions opts = {});
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void Start();
  void Stop();
  bool HasSynced() const;
  std::shared_ptr<const nlohmann::json> Get(std::string_view ns, std::string_view name) const;
  std::vector<std::shared_ptr<const nlohmann::json>> List() const;
  std::string LastSyncResourceVersion() const;

 private:
  using Object = std::shared_ptr<const nlohmann::json>;
  // One cached object: parsed, or packed (compact_cache).
  struct Entry {
    std::string resource_version;
    Object object;
    std::vector<std::uint8_t> packed;
  };

  Entry MakeEntry(const Object& object) const;
  Object Unpack(const Entry& entry) const;
  Object UnpackBytes(const std::vector<std::uint8_t>& packed) const;

  void Run();
  // Lists all pages at `resource_version` and replaces the cache.
  absl::Status ListAndReplace(const std::string& resource_version);
  // One watch from the last resourceVersion; counts the events it applied.
  absl::Status WatchOnce(int* events_applied);
  void ApplyWatchEvent(WatchEvent& event);
  // Packs the parsed objects of the watch events beyond the latest
  // recent_parsed, oldest first (compact_cache).
  void PackOlderThanRecent();
  void Deliver(const std::string& type, const Object& object);
  void SetResourceVersion(const std::string& rv);
  // Waits before a retry after `failure`; false if Stop() was called.
  bool WaitBeforeRetry(const absl::Status& failure);
  bool stopping() const { return stopping_.load(); }

  Client& client_;
  const ResourceType rt_;
  const std::string ns_;
  const Handler handler_;
  const Clock& clock_;
  const InformerOptions opts_;
  const std::shared_ptr<const ObjectPacker> packer_;  // opts_.packer or a default one
  const std::function<double()> random_;
  ExponentialBackoff backoff_;  // informer thread only
  // The keys and objects of the latest watch events cached parsed, oldest
  // first (informer thread only; compact_cache).
  std::deque<std::pair<std::string, Object>> recent_;

  mutable std::mutex mu_;
  std::map<std::string, Entry> cache_;                // guarded by mu_
  std::string last_sync_rv_;                          // guarded by mu_
  std::shared_ptr<http::StreamHandle> watch_handle_;  // guarded by mu_
  std::condition_variable stop_cv_;                   // signalled by Stop()
  std::atomic<bool> synced_{false};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace slurmop::kube

#endif  // SLURMOP_CONTROLLER_KUBE_INFORMER_H_
