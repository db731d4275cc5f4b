// File: controller/common/time_format.h
//
// RFC 3339 timestamps as Kubernetes writes them: metav1.Time with second
// precision ("2006-01-02T15:04:05Z") and MicroTime with microseconds
// ("2006-01-02T15:04:05.000000Z").

#ifndef SLURMOP_CONTROLLER_COMMON_TIME_FORMAT_H_
#define SLURMOP_CONTROLLER_COMMON_TIME_FORMAT_H_

#include <optional>
#include <string>
#include <string_view>

#include "controller/common/clock.h"

namespace slurmop {

// "2006-01-02T15:04:05Z" (UTC, seconds).
std::string FormatRfc3339(Time t);
// "2006-01-02T15:04:05.000000Z" (UTC, microseconds).
std::string FormatRfc3339Micro(Time t);
// Parses RFC 3339 with optional fractional seconds and a `Z` or +hh:mm offset.
// nullopt for a time Time cannot hold (before about 1678 or after about 2262).
std::optional<Time> ParseRfc3339(std::string_view s);

}  // namespace slurmop

#endif  // SLURMOP_CONTROLLER_COMMON_TIME_FORMAT_H_
