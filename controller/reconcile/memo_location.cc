// File: controller/reconcile/memo_location.cc

#include "controller/reconcile/memo_location.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>

#include "absl/strings/str_cat.h"

namespace slurmop::reconcile {
namespace {

class Pool {
 public:
  std::shared_ptr<const MemoLocation::Location> Share(const MemoLocation::Location& where) {
    // The three fields, each with its length: no two locations share a key.
    const std::string key =
        absl::StrCat(where.project_id().size(), ":", where.project_id(), where.region().size(), ":",
                     where.region(), where.cluster_id().size(), ":", where.cluster_id());
    std::lock_guard<std::mutex> lock(mu_);
    std::weak_ptr<const MemoLocation::Location>& slot = shared_[key];
    if (auto held = slot.lock()) return held;
    auto made = std::make_shared<const MemoLocation::Location>(where);
    slot = made;
    // Forget locations nobody names once the pool doubled since the last look.
    if (shared_.size() >= 2 * live_after_sweep_) {
      std::erase_if(shared_, [](const auto& entry) { return entry.second.expired(); });
      live_after_sweep_ = std::max<size_t>(shared_.size(), 32);
    }
    return made;
  }

  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(shared_, [](const auto& entry) { return entry.second.expired(); });
    return shared_.size();
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::weak_ptr<const MemoLocation::Location>> shared_;
  size_t live_after_sweep_ = 32;
};

Pool& ThePool() {
  static Pool* pool = new Pool();  // never destroyed: memos may outlive static destruction
  return *pool;
}

}  // namespace

MemoLocation::MemoLocation(const Location& where) : where_(ThePool().Share(where)) {}

std::optional<MemoLocation::Location> MemoLocation::ToOptional() const {
  if (!where_) return std::nullopt;
  return *where_;
}

size_t MemoLocation::PoolSizeForTest() { return ThePool().size(); }

}  // namespace slurmop::reconcile
