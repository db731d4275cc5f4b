// File: controller/reconcile/accounting_search.cc

#include "controller/reconcile/accounting_search.h"

#include <optional>
#include <string>

#include "controller/common/time_format.h"

namespace slurmop::reconcile {

int64_t AccountingSearchStart(const nlohmann::json& object, Time now) {
  std::optional<Time> created;
  if (object.is_object()) {
    auto meta = object.find("metadata");
    if (meta != object.end() && meta->is_object()) {
      auto ts = meta->find("creationTimestamp");
      if (ts != meta->end() && ts->is_string()) created = ParseRfc3339(ts->get<std::string>());
    }
  }
  const Time start = created ? *created - kAccountingSearchMargin : now - kAccountingSearchFallback;
  return std::chrono::duration_cast<std::chrono::seconds>(start.time_since_epoch()).count();
}

}  // namespace slurmop::reconcile
