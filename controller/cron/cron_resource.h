// File: controller/cron/cron_resource.h
//
// SlurmCronJobs as a Kubernetes API resource.

#ifndef SLURMOP_CONTROLLER_CRON_CRON_RESOURCE_H_
#define SLURMOP_CONTROLLER_CRON_CRON_RESOURCE_H_

#include <string>

#include "controller/api/cron_resources.h"
#include "controller/api/resources.h"
#include "controller/kube/resource_types.h"

namespace slurmop::cron {

inline const kube::ResourceType& SlurmCronJobsResource() {
  static const kube::ResourceType rt{std::string(api::kGroup), std::string(api::kVersion),
                                     std::string(api::kSlurmCronJobPlural),
                                     std::string(api::kSlurmCronJobKind), true};
  return rt;
}

}  // namespace slurmop::cron

#endif  // SLURMOP_CONTROLLER_CRON_CRON_RESOURCE_H_
