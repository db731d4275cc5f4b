// File: controller/cron/time_zone.h
//
// The time zone of a SlurmCronJob's schedule (spec.timeZone), read from the system's tz database
// (/usr/share/zoneinfo: the Debian package tzdata; the image installs it).
//
// Contract:
//  * "" is UTC (the operator's own zone never matters).
//  * An IANA name (`Europe/Paris`, `America/New_York`, `UTC`, `Etc/GMT+5`) loads that zone.
//  * "Local" (the machine's zone, which a user cannot know) and any name the database does not
//    hold are InvalidArgument, naming the value.
//  * A name is a tenant's text: one that is not a plain IANA name (an absolute path, a "file:"
//    prefix, a "." segment, more than 64 bytes) is refused before any file is opened, and one
//    that names no regular file of the database never reaches absl, which would keep it for
//    good.

#ifndef SLURMOP_CONTROLLER_CRON_TIME_ZONE_H_
#define SLURMOP_CONTROLLER_CRON_TIME_ZONE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace slurmop::cron {

absl::StatusOr<absl::TimeZone> LoadZone(absl::string_view name);

}  // namespace slurmop::cron

#endif  // SLURMOP_CONTROLLER_CRON_TIME_ZONE_H_
