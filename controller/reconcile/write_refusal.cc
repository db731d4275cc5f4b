// File: controller/reconcile/write_refusal.cc

#include "controller/reconcile/write_refusal.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace slurmop::reconcile {

bool RefusedForGood(const absl::Status& s) {
  return s.code() == absl::StatusCode::kPermissionDenied ||
         s.code() == absl::StatusCode::kInvalidArgument;
}

EventSpec WriteRefusedEvent(const absl::Status& s, std::string_view what_view,
                            std::string_view kind_view) {
  const std::string what(what_view), kind(kind_view);  // Debian's absl::string_view is its own
  return {kWarning, "WriteRefused", "Reconcile",
          absl::StrCat("The API server refused the operator's ", what, " of this ", kind, ": ",
                       s.message(), ". The ", kind,
                       " stays where it is until that is accepted. Check the operator's RBAC and "
                       "any admission policy on ",
                       kind, "s; retrying.")};
}

}  // namespace slurmop::reconcile
