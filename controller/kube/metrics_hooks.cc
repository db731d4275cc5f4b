// File: controller/kube/metrics_hooks.cc
//
// See metrics_hooks.h for the contract.

#include "controller/kube/metrics_hooks.h"

#include <utility>

namespace slurmop::kube {
namespace {

MetricsHooks& Hooks() {
  static MetricsHooks* hooks = new MetricsHooks();
  return *hooks;
}

}  // namespace

void SetMetricsHooks(MetricsHooks hooks) { Hooks() = std::move(hooks); }

const MetricsHooks& GetMetricsHooks() { return Hooks(); }

}  // namespace slurmop::kube
