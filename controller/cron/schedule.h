// File: controller/cron/schedule.h
//
// Cron schedules as Kubernetes' batch/v1 CronJob reads them (robfig/cron v3's ParseStandard):
// five fields separated by white space,
//
//   minute (0-59)  hour (0-23)  day of month (1-31)  month (1-12, JAN-DEC)  day of week (0-6,
//   SUN-SAT)
//
// each a comma-separated list of `*` or `?` (every value), `N`, `N-M`, with an optional `/STEP`
// (`N/STEP` means N-max/STEP); names are case-insensitive; or one of the macros @yearly,
// @annually, @monthly, @weekly, @daily, @midnight, @hourly.
//
// Contract:
//  * ParseSchedule refuses (InvalidArgument, naming the field and the value) a `TZ=`/`CRON_TZ=`
//    prefix (the time zone is spec.timeZone), a field count other than five, a value out of its
//    range, a range whose start exceeds its end, a step of zero, an unknown name or macro
//    (`@every` included).
//  * Day of month and day of week: when either field starts with `*` or `?` (and has no step
//    above 1), a day must match both; when both are restricted, a day matching either runs
//    (cron's OR rule).
//  * Next(after) is the first scheduled time strictly after `after`, evaluated on the wall clock
//    of `zone`. A wall-clock time that a daylight-saving change skips does not run; one that a
//    change repeats runs once, at its first occurrence. nullopt when nothing matches within five
//    years (e.g. `0 0 30 2 *`).

#ifndef SLURMOP_CONTROLLER_CRON_SCHEDULE_H_
#define SLURMOP_CONTROLLER_CRON_SCHEDULE_H_

#include <bitset>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace slurmop::cron {

struct Schedule {
  std::bitset<60> minutes;
  std::bitset<24> hours;
  std::bitset<32> days_of_month;  // bits 1..31
  std::bitset<13> months;         // bits 1..12
  std::bitset<7> days_of_week;    // 0 = Sunday
  // The day field was `*` or `?` (without a step above 1): see the OR rule above.
  bool day_of_month_star = false;
  bool day_of_week_star = false;
};

absl::StatusOr<Schedule> ParseSchedule(absl::string_view text);

std::optional<absl::Time> Next(const Schedule& schedule, absl::Time after,
                               const absl::TimeZone& zone);

}  // namespace slurmop::cron

#endif  // SLURMOP_CONTROLLER_CRON_SCHEDULE_H_
