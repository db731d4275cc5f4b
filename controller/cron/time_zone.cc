// File: controller/cron/time_zone.cc

#include "controller/cron/time_zone.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "controller/common/bounded_text.h"

namespace slurmop::cron {

namespace {

// The CRD's limits on spec.timeZone (proto/.../slurmcronjob.proto), checked again here: the
// API server may hold objects from before them, and what reaches absl must be a plain name.
constexpr size_t kMaxZoneNameBytes = 64;

// `^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$`: no absolute path, no "file:" prefix, no "."
// or ".." segment, so the name stays inside the tz database.
bool PlainZoneName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxZoneNameBytes || !absl::ascii_isalpha(name[0])) {
    return false;
  }
  bool segment_empty = false;
  for (char c : name) {
    if (c == '/') {
      if (segment_empty) return false;
      segment_empty = true;
    } else if (absl::ascii_isalnum(c) || c == '_' || c == '+' || c == '-') {
      segment_empty = false;
    } else {
      return false;
    }
  }
  return !segment_empty;
}

// The tz database's directory, as absl's loader finds it ($TZDIR, else /usr/share/zoneinfo).
std::string ZoneDirectory() {
  const char* dir = std::getenv("TZDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/usr/share/zoneinfo";
}

}  // namespace

absl::StatusOr<absl::TimeZone> LoadZone(absl::string_view name) {
  if (name.empty()) return absl::UTCTimeZone();
  if (absl::AsciiStrToLower(name) == "local") {
    return absl::InvalidArgumentError(
        "time zone \"Local\" is not allowed: name an IANA time zone such as Europe/Paris");
  }
  if (!PlainZoneName(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "time zone \"", Utf8Prefix(std::string_view(name.data(), name.size()), kMaxZoneNameBytes),
        "\" is not an IANA name (at most 64 letters, digits, _ + - in /-separated parts, such as "
        "Europe/Paris)"));
  }
  // absl reads the zone's file, and keeps every name it was asked for, found or not, for the
  // life of the process. Only a name the database holds as a file reaches it, so what it keeps
  // is bounded by the database, not by what tenants write.
  std::error_code error;
  if (!std::filesystem::is_regular_file(std::filesystem::path(ZoneDirectory()) / std::string(name),
                                        error)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown time zone \"", name, "\": not in the tz database (/usr/share/zoneinfo)"));
  }
  absl::TimeZone zone;
  if (!absl::LoadTimeZone(std::string(name), &zone)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown time zone \"", name, "\": not in the tz database (/usr/share/zoneinfo)"));
  }
  return zone;
}

}  // namespace slurmop::cron
