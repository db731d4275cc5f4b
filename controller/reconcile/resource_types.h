// File: controller/reconcile/resource_types.h
//
// The operator's own kinds as Kubernetes API resources.

#ifndef SLURMOP_CONTROLLER_RECONCILE_RESOURCE_TYPES_H_
#define SLURMOP_CONTROLLER_RECONCILE_RESOURCE_TYPES_H_

#include <string>

#include "controller/api/resources.h"
#include "controller/kube/client.h"

namespace slurmop::reconcile {

inline const kube::ResourceType& SlurmJobsResource() {
  static const kube::ResourceType rt{std::string(api::kGroup), std::string(api::kVersion),
                                     std::string(api::kSlurmJobPlural),
                                     std::string(api::kSlurmJobKind), true};
  return rt;
}

inline const kube::ResourceType& SlurmClustersResource() {
  static const kube::ResourceType rt{std::string(api::kGroup), std::string(api::kVersion),
                                     std::string(api::kSlurmClusterPlural),
                                     std::string(api::kSlurmClusterKind), true};
  return rt;
}

inline const kube::ResourceType& ClusterSlurmClustersResource() {
  static const kube::ResourceType rt{std::string(api::kGroup), std::string(api::kVersion),
                                     std::string(api::kClusterSlurmClusterPlural),
                                     std::string(api::kClusterSlurmClusterKind), false};
  return rt;
}

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_RESOURCE_TYPES_H_
