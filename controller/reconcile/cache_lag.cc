// File: controller/reconcile/cache_lag.cc

#include "controller/reconcile/cache_lag.h"

#include <algorithm>

namespace slurmop::reconcile {

void CacheLag::Superseded(const std::string& key, const std::string& uid, const std::string& old_rv,
                          const std::string& new_rv) {
  if (old_rv.empty() || old_rv == new_rv) return;
  std::lock_guard<std::mutex> lock(mu_);
  Old& old = old_[key];
  if (old.uid != uid) old = Old{uid, {}, {}};
  old.versions.push_back(old_rv);
  if (old.versions.size() > kMaxVersions) old.versions.erase(old.versions.begin());
  old.at = clock_.Now();
}

std::optional<Duration> CacheLag::Behind(const std::string& key, const std::string& uid,
                                         const std::string& rv) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = old_.find(key);
  if (it == old_.end()) return std::nullopt;
  const Old& old = it->second;
  const Duration waited = clock_.Now() - old.at;
  if (old.uid == uid && waited < patience_ &&
      std::find(old.versions.begin(), old.versions.end(), rv) != old.versions.end()) {
    return patience_ - waited;
  }
  old_.erase(it);
  return std::nullopt;
}

void CacheLag::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  old_.erase(key);
}

size_t CacheLag::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return old_.size();
}

}  // namespace slurmop::reconcile
