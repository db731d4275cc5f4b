// File: controller/reconcile/read_grant.cc

#include "controller/reconcile/read_grant.h"

#include "absl/strings/str_cat.h"

namespace slurmop::reconcile {

std::string MayNotRead(std::string_view what, std::string_view ns) {
  // Debian's absl::string_view is its own type: through std::string.
  return absl::StrCat("the operator may not read ", std::string(what), " in namespace \"",
                      std::string(ns),
                      "\"; bind the ClusterRole slurmjob-operator-namespace-reader there "
                      "(deploy/tenant-namespace-rolebinding.yaml)");
}

}  // namespace slurmop::reconcile
