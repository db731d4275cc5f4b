// File: controller/api/cron_resources.h
//
// Names of the SlurmCronJob resource and of the label and annotation it puts on the SlurmJobs it
// creates. The names must match the `(slurmoperator.crd.resource)` option of
// proto/slurmoperator/v1alpha1/slurmcronjob.proto (tests/api/types_test.cc checks them).

#ifndef SLURMOP_CONTROLLER_API_CRON_RESOURCES_H_
#define SLURMOP_CONTROLLER_API_CRON_RESOURCES_H_

#include <string_view>

namespace slurmop::api {

inline constexpr std::string_view kSlurmCronJobKind = "SlurmCronJob";
inline constexpr std::string_view kSlurmCronJobPlural = "slurmcronjobs";
inline constexpr std::string_view kSlurmCronJobSingular = "slurmcronjob";
// Put on every SlurmJob a SlurmCronJob creates; its value is the SlurmCronJob's name.
inline constexpr std::string_view kCronJobNameLabel = "hpc.slurmoperator.dev/slurmcronjob";
// Put on every SlurmJob a SlurmCronJob creates: the scheduled time it was created for (RFC 3339).
inline constexpr std::string_view kScheduledTimeAnnotation = "hpc.slurmoperator.dev/scheduled-time";

}  // namespace slurmop::api

#endif  // SLURMOP_CONTROLLER_API_CRON_RESOURCES_H_
