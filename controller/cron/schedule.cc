// File: controller/cron/schedule.cc

#include "controller/cron/schedule.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/civil_time.h"

namespace slurmop::cron {
namespace {

struct FieldSpec {
  const char* name;
  int min;
  int max;
  const std::vector<absl::string_view>* names;  // names[i] is min+i; may be null
};

const std::vector<absl::string_view> kMonthNames = {"jan", "feb", "mar", "apr", "may", "jun",
                                                    "jul", "aug", "sep", "oct", "nov", "dec"};
const std::vector<absl::string_view> kDayNames = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

const std::array<FieldSpec, 5> kFields = {{{"minute", 0, 59, nullptr},
                                           {"hour", 0, 23, nullptr},
                                           {"day of month", 1, 31, nullptr},
                                           {"month", 1, 12, &kMonthNames},
                                           {"day of week", 0, 6, &kDayNames}}};

// The bits of one field (bit i = value i) and whether it counts as `*`.
struct FieldBits {
  uint64_t bits = 0;
  bool star = false;
};

absl::Status FieldError(const FieldSpec& f, absl::string_view part, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(f.name, " field \"", part, "\": ", why));
}

absl::StatusOr<int> ParseValue(const FieldSpec& f, absl::string_view part, absl::string_view v) {
  int n = 0;
  if (absl::SimpleAtoi(v, &n) && !v.empty() && absl::ascii_isdigit(v[0])) {
    if (n < f.min || n > f.max) {
      return FieldError(f, part, absl::StrCat(n, " is out of range ", f.min, "-", f.max));
    }
    return n;
  }
  if (f.names != nullptr) {
    const std::string lower = absl::AsciiStrToLower(v);
    for (size_t i = 0; i < f.names->size(); ++i) {
      if ((*f.names)[i] == lower) return f.min + static_cast<int>(i);
    }
  }
  return FieldError(f, part, absl::StrCat("\"", v, "\" is not a number or a name"));
}

// One comma-separated part: `*`, `?`, `N`, `N-M`, each with an optional `/STEP`.
absl::StatusOr<FieldBits> ParsePart(const FieldSpec& f, absl::string_view part) {
  std::vector<absl::string_view> range_and_step = absl::StrSplit(part, '/');
  if (range_and_step.size() > 2) return FieldError(f, part, "more than one '/'");
  std::vector<absl::string_view> low_high = absl::StrSplit(range_and_step[0], '-');
  if (low_high.size() > 2) return FieldError(f, part, "more than one '-'");
  FieldBits out;
  int start = f.min, end = f.max;
  if (low_high[0] == "*" || low_high[0] == "?") {
    if (low_high.size() != 1) return FieldError(f, part, "'*' cannot start a range");
    out.star = true;
  } else {
    absl::StatusOr<int> low = ParseValue(f, part, low_high[0]);
    if (!low.ok()) return low.status();
    start = end = *low;
    if (low_high.size() == 2) {
      absl::StatusOr<int> high = ParseValue(f, part, low_high[1]);
      if (!high.ok()) return high.status();
      end = *high;
    }
  }
  int step = 1;
  if (range_and_step.size() == 2) {
    if (!absl::SimpleAtoi(range_and_step[1], &step) || step <= 0) {
      return FieldError(f, part, "the step must be a positive number");
    }
    if (low_high.size() == 1 && !out.star) end = f.max;  // N/STEP is N-max/STEP
    if (step > 1) out.star = false;
  }
  if (start > end) return FieldError(f, part, absl::StrCat(start, " is after ", end));
  // In 64 bits: a step near INT_MAX would overflow an int past `end` (undefined behaviour).
  for (int64_t v = start; v <= end; v += step) out.bits |= uint64_t{1} << v;
  return out;
}

absl::StatusOr<FieldBits> ParseField(const FieldSpec& f, absl::string_view field) {
  FieldBits out;
  for (absl::string_view part : absl::StrSplit(field, ',')) {
    if (part.empty()) return FieldError(f, field, "an empty list item");
    absl::StatusOr<FieldBits> bits = ParsePart(f, part);
    if (!bits.ok()) return bits.status();
    out.bits |= bits->bits;
    out.star = out.star || bits->star;
  }
  return out;
}

absl::string_view Expand(absl::string_view macro) {
  if (macro == "@yearly" || macro == "@annually") return "0 0 1 1 *";
  if (macro == "@monthly") return "0 0 1 * *";
  if (macro == "@weekly") return "0 0 * * 0";
  if (macro == "@daily" || macro == "@midnight") return "0 0 * * *";
  if (macro == "@hourly") return "0 * * * *";
  return "";
}

absl::StatusOr<std::vector<absl::string_view>> Fields(absl::string_view text) {
  if (absl::StartsWith(text, "TZ=") || absl::StartsWith(text, "CRON_TZ=")) {
    return absl::InvalidArgumentError(
        "a TZ= or CRON_TZ= prefix is not allowed: set spec.timeZone instead");
  }
  if (absl::StartsWith(text, "@")) {
    absl::string_view expanded = Expand(text);
    if (expanded.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown macro \"", text,
          "\" (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)"));
    }
    text = expanded;
  }
  std::vector<absl::string_view> fields =
      absl::StrSplit(text, absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
  if (fields.size() != 5) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected 5 fields (minute hour day-of-month month day-of-week), got ", fields.size()));
  }
  return fields;
}

bool DayMatches(const Schedule& s, absl::CivilDay day) {
  const bool dom = s.days_of_month.test(day.day());
  // absl: Monday is 0 ... Sunday is 6; cron: Sunday is 0.
  const bool dow = s.days_of_week.test((static_cast<int>(absl::GetWeekday(day)) + 1) % 7);
  if (s.day_of_month_star || s.day_of_week_star) return dom && dow;
  return dom || dow;
}

}  // namespace

absl::StatusOr<Schedule> ParseSchedule(absl::string_view text) {
  absl::StatusOr<std::vector<absl::string_view>> fields = Fields(text);
  if (!fields.ok()) return fields.status();
  std::array<FieldBits, 5> bits;
  for (size_t i = 0; i < kFields.size(); ++i) {
    absl::StatusOr<FieldBits> field = ParseField(kFields[i], (*fields)[i]);
    if (!field.ok()) return field.status();
    bits[i] = *field;
  }
  Schedule s;
  s.minutes = std::bitset<60>(bits[0].bits);
  s.hours = std::bitset<24>(bits[1].bits);
  s.days_of_month = std::bitset<32>(bits[2].bits);
  s.months = std::bitset<13>(bits[3].bits);
  s.days_of_week = std::bitset<7>(bits[4].bits);
  s.day_of_month_star = bits[2].star;
  s.day_of_week_star = bits[4].star;
  return s;
}

std::optional<absl::Time> Next(const Schedule& s, absl::Time after, const absl::TimeZone& zone) {
  absl::CivilMinute t = absl::CivilMinute(absl::ToCivilSecond(after, zone)) + 1;
  const absl::CivilMinute limit = absl::CivilMinute(absl::CivilYear(t) + 5);
  while (t < limit) {
    if (!s.months.test(t.month())) {
      t = absl::CivilMinute(absl::CivilMonth(t) + 1);
    } else if (!DayMatches(s, absl::CivilDay(t))) {
      t = absl::CivilMinute(absl::CivilDay(t) + 1);
    } else if (!s.hours.test(t.hour())) {
      t = absl::CivilMinute(absl::CivilHour(t) + 1);
    } else if (!s.minutes.test(t.minute())) {
      t += 1;
    } else {
      const absl::TimeZone::TimeInfo info = zone.At(absl::CivilSecond(t));
      // A skipped wall-clock time does not run; a repeated one runs at its first occurrence.
      if (info.kind != absl::TimeZone::TimeInfo::SKIPPED && info.pre > after) return info.pre;
      t += 1;
    }
  }
  return std::nullopt;
}

}  // namespace slurmop::cron
