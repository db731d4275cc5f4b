// File: controller/reconcile/cache_lag.h
//
// CacheLag: which versions of a SlurmJob this process already knows to be
// old, so that a reconcile does not act on an informer cache that has not yet
// caught up with the operator's own writes (the ReplicaSet controller's
// "expectations", kept as resourceVersions rather than counts).
//
// Why: each write of the executor (finalizer patch, status write) produces a
// watch event that re-queues the key. The reconcile it starts often finds the
// cache at the version an earlier write of the same reconcile replaced: it
// decides from an object without the jobId just written, sends that write
// again, gets a 409 and re-reads (two requests to the API server for nothing,
// and a reconcile that holds a worker). The memo (decide.h) already makes
// such a reconcile harmless; this makes it not happen.
//
// Contract:
//  * Superseded(key, uid, old_rv, new_rv): this process saw the SlurmJob
//    `key` (incarnation `uid`) move from `old_rv` to `new_rv`: by its own
//    write, or by a fresh read after a conflict. resourceVersions are opaque:
//    they are only compared for equality, never ordered.
//  * Behind(key, uid, rv): the cache shows `key` at (`uid`, `rv`). Returns
//    how long to wait for the cache when `rv` is a version this process saw
//    superseded less than `patience` ago; nullopt otherwise, and then it
//    forgets the key (the cache caught up, moved on, or shows another
//    incarnation; or patience ran out and the reconcile goes ahead on the old
//    object as before, which the conditional writes and the memo keep safe).
//    The watch event of the newest version re-queues the key, so waiting
//    costs nothing; the returned time is only the safety net.
//  * Forget(key): the SlurmJob is gone or no longer this process's.
//  * At most kMaxVersions old versions per key (the oldest go first); an
//    entry lives from a write to the next reconcile of the key, which that
//    write's own watch event starts. Thread-safe.

#ifndef SLURMOP_CONTROLLER_RECONCILE_CACHE_LAG_H_
#define SLURMOP_CONTROLLER_RECONCILE_CACHE_LAG_H_

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "controller/common/clock.h"

namespace slurmop::reconcile {

class CacheLag {
 public:
  static constexpr size_t kMaxVersions = 8;

  CacheLag(const Clock& clock, Duration patience) : clock_(clock), patience_(patience) {}

  void Superseded(const std::string& key, const std::string& uid, const std::string& old_rv,
                  const std::string& new_rv);
  std::optional<Duration> Behind(const std::string& key, const std::string& uid,
                                 const std::string& rv);
  void Forget(const std::string& key);
  size_t size() const;

 private:
  struct Old {
    std::string uid;
    std::vector<std::string> versions;  // superseded, oldest first
    Time at;                            // the last Superseded()
  };
  const Clock& clock_;
  const Duration patience_;
  mutable std::mutex mu_;
  std::map<std::string, Old> old_;
};

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_CACHE_LAG_H_
