// File: controller/cron/time_zone.cc

#include "controller/cron/time_zone.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace slurmop::cron {

absl::StatusOr<absl::TimeZone> LoadZone(absl::string_view name) {
  if (name.empty()) return absl::UTCTimeZone();
  if (absl::AsciiStrToLower(name) == "local") {
    return absl::InvalidArgumentError(
        "time zone \"Local\" is not allowed: name an IANA time zone such as Europe/Paris");
  }
  absl::TimeZone zone;
  if (!absl::LoadTimeZone(std::string(name), &zone)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown time zone \"", name, "\": not in the tz database (/usr/share/zoneinfo)"));
  }
  return zone;
}

}  // namespace slurmop::cron
