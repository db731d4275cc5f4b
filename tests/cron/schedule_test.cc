// File: tests/cron/schedule_test.cc
//
// Cron parsing (fields, ranges, steps, names, macros, the day OR rule, refusals) and next-time
// computation, in UTC and across daylight-saving changes in named zones.

#include "controller/cron/schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "controller/cron/time_zone.h"

namespace slurmop::cron {
namespace {

using ::testing::HasSubstr;

Schedule MustParse(const std::string& text) {
  absl::StatusOr<Schedule> s = ParseSchedule(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status();
  return s.ok() ? *s : Schedule{};
}

absl::TimeZone Zone(const std::string& name) {
  absl::StatusOr<absl::TimeZone> zone = LoadZone(name);
  EXPECT_TRUE(zone.ok()) << zone.status();
  return zone.ok() ? *zone : absl::UTCTimeZone();
}

absl::Time At(const std::string& zone, int y, int mo, int d, int h, int mi) {
  return absl::FromCivil(absl::CivilMinute(y, mo, d, h, mi), Zone(zone));
}

// The next `n` times after `from`, as "YYYY-MM-DD HH:MM" wall-clock strings in `zone`.
std::vector<std::string> NextTimes(const std::string& text, const std::string& zone,
                                   absl::Time from, int n) {
  const Schedule s = MustParse(text);
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    std::optional<absl::Time> t = Next(s, from, Zone(zone));
    if (!t) break;
    out.push_back(absl::FormatTime("%Y-%m-%d %H:%M %Ez", *t, Zone(zone)));
    from = *t;
  }
  return out;
}

TEST(ParseScheduleTest, PlainValuesListsRangesAndSteps) {
  const Schedule s = MustParse("5,10-12,50/5 */6 1-31/10 * *");
  EXPECT_TRUE(s.minutes.test(5));
  EXPECT_TRUE(s.minutes.test(10) && s.minutes.test(11) && s.minutes.test(12));
  EXPECT_FALSE(s.minutes.test(13));
  EXPECT_TRUE(s.minutes.test(50) && s.minutes.test(55));  // 50/5 is 50-59/5
  EXPECT_EQ(s.minutes.count(), 6u);
  EXPECT_EQ(s.hours.count(), 4u);  // 0 6 12 18
  EXPECT_TRUE(s.hours.test(18));
  EXPECT_TRUE(s.days_of_month.test(1) && s.days_of_month.test(11) && s.days_of_month.test(31));
  EXPECT_EQ(s.days_of_month.count(), 4u);
  EXPECT_EQ(s.months.count(), 12u);
  EXPECT_FALSE(s.day_of_month_star);  // a step above 1 is a restriction
  EXPECT_TRUE(s.day_of_week_star);
}

// A step near INT_MAX stepped an int past its range (undefined behaviour; the sanitizer build
// stops on it). It is a step past the field's end: the start alone.
TEST(ParseScheduleTest, AHugeStepIsTheStartAlone) {
  const Schedule s = MustParse("59/2147483647 23/2147483647 * * *");
  EXPECT_EQ(s.minutes.count(), 1u);
  EXPECT_TRUE(s.minutes.test(59));
  EXPECT_EQ(s.hours.count(), 1u);
  EXPECT_TRUE(s.hours.test(23));
}

TEST(ParseScheduleTest, NamesAreCaseInsensitive) {
  const Schedule s = MustParse("0 0 ? jan-MAR,Dec mon-fri");
  EXPECT_TRUE(s.months.test(1) && s.months.test(3) && s.months.test(12));
  EXPECT_FALSE(s.months.test(4));
  EXPECT_EQ(s.days_of_week.count(), 5u);
  EXPECT_FALSE(s.days_of_week.test(0));  // Sunday
  EXPECT_TRUE(s.day_of_month_star);      // `?` is `*`
}

TEST(ParseScheduleTest, MacrosExpandToTheirFields) {
  struct Case {
    const char* macro;
    const char* fields;
  };
  for (const Case& c : std::vector<Case>{{"@yearly", "0 0 1 1 *"},
                                         {"@annually", "0 0 1 1 *"},
                                         {"@monthly", "0 0 1 * *"},
                                         {"@weekly", "0 0 * * 0"},
                                         {"@daily", "0 0 * * *"},
                                         {"@midnight", "0 0 * * *"},
                                         {"@hourly", "0 * * * *"}}) {
    const absl::Time from = At("UTC", 2026, 3, 15, 10, 7);
    EXPECT_EQ(NextTimes(c.macro, "UTC", from, 3), NextTimes(c.fields, "UTC", from, 3)) << c.macro;
  }
}

TEST(ParseScheduleTest, RefusesBadInputNamingTheProblem) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c :
       std::vector<Case>{{"* * * *", "expected 5 fields"},
                         {"* * * * * *", "expected 5 fields"},
                         {"", "expected 5 fields"},
                         {"60 * * * *", "minute field \"60\": 60 is out of range 0-59"},
                         {"* 24 * * *", "hour field"},
                         {"* * 0 * *", "day of month field \"0\": 0 is out of range 1-31"},
                         {"* * * 13 *", "month field"},
                         {"* * * * 7", "day of week field \"7\": 7 is out of range 0-6"},
                         {"10-5 * * * *", "10 is after 5"},
                         {"*/0 * * * *", "the step must be a positive number"},
                         {"1/x * * * *", "the step must be a positive number"},
                         {"* * * foo *", "\"foo\" is not a number or a name"},
                         {"1,,2 * * * *", "an empty list item"},
                         {"-1 * * * *", "not a number"},
                         {"*-5 * * * *", "'*' cannot start a range"},
                         {"@every 1h", "unknown macro"},
                         {"@reboot", "unknown macro"},
                         {"TZ=UTC 0 * * * *", "set spec.timeZone instead"},
                         {"CRON_TZ=Europe/Paris 0 * * * *", "set spec.timeZone instead"}}) {
    absl::StatusOr<Schedule> s = ParseSchedule(c.text);
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(), HasSubstr(c.says)) << c.text;
  }
}

TEST(NextTest, EveryMinuteIsStrictlyAfter) {
  EXPECT_THAT(NextTimes("* * * * *", "UTC", At("UTC", 2026, 12, 31, 23, 58), 3),
              ::testing::ElementsAre("2026-12-31 23:59 +00:00", "2027-01-01 00:00 +00:00",
                                     "2027-01-01 00:01 +00:00"));
  // A time inside a minute: the next minute, not the current one.
  const absl::Time mid = At("UTC", 2026, 5, 1, 12, 0) + absl::Seconds(30);
  EXPECT_THAT(NextTimes("* * * * *", "UTC", mid, 1),
              ::testing::ElementsAre("2026-05-01 12:01 +00:00"));
}

TEST(NextTest, DayOfMonthAndDayOfWeekBothRestrictedMeansEither) {
  // The 13th, or any Friday. 2026-11: Fridays 6, 13, 20, 27; the 13th is a Friday.
  EXPECT_THAT(NextTimes("0 9 13 * 5", "UTC", At("UTC", 2026, 11, 1, 0, 0), 4),
              ::testing::ElementsAre("2026-11-06 09:00 +00:00", "2026-11-13 09:00 +00:00",
                                     "2026-11-20 09:00 +00:00", "2026-11-27 09:00 +00:00"));
  EXPECT_THAT(NextTimes("0 9 1 * 3", "UTC", At("UTC", 2026, 11, 25, 12, 0), 2),
              ::testing::ElementsAre("2026-12-01 09:00 +00:00",    // the 1st (a Tuesday)
                                     "2026-12-02 09:00 +00:00"));  // a Wednesday
}

TEST(NextTest, AStarDayFieldMeansBoth) {
  // Day of week star: only the 1st. `*/1` still counts as a star.
  EXPECT_THAT(NextTimes("0 0 1 * */1", "UTC", At("UTC", 2026, 11, 2, 0, 0), 1),
              ::testing::ElementsAre("2026-12-01 00:00 +00:00"));
  // Day of month star, Mondays only.
  EXPECT_THAT(NextTimes("0 0 * * MON", "UTC", At("UTC", 2026, 12, 1, 0, 0), 2),
              ::testing::ElementsAre("2026-12-07 00:00 +00:00", "2026-12-14 00:00 +00:00"));
}

TEST(NextTest, LeapDayAndImpossibleDates) {
  EXPECT_THAT(NextTimes("0 0 29 2 *", "UTC", At("UTC", 2026, 1, 1, 0, 0), 1),
              ::testing::ElementsAre("2028-02-29 00:00 +00:00"));
  EXPECT_EQ(Next(MustParse("0 0 30 2 *"), At("UTC", 2026, 1, 1, 0, 0), absl::UTCTimeZone()),
            std::nullopt);
}

TEST(NextTest, SpringForwardSkipsTheMissingTimeInNewYork) {
  // 2026-03-08 02:00 EST jumps to 03:00 EDT: 02:30 does not exist that day.
  EXPECT_THAT(
      NextTimes("30 2 * * *", "America/New_York", At("America/New_York", 2026, 3, 7, 3, 0), 2),
      ::testing::ElementsAre("2026-03-09 02:30 -04:00", "2026-03-10 02:30 -04:00"));
  // An hourly schedule has 23 runs that day.
  const Schedule hourly = MustParse("0 * * * *");
  absl::Time t = At("America/New_York", 2026, 3, 8, 0, 0) - absl::Seconds(1);
  int runs = 0;
  for (;;) {
    t = *Next(hourly, t, Zone("America/New_York"));
    if (t >= At("America/New_York", 2026, 3, 9, 0, 0)) break;
    ++runs;
  }
  EXPECT_EQ(runs, 23);
}

TEST(NextTest, FallBackRunsTheRepeatedTimeOnceInParis) {
  // 2026-10-25 03:00 CEST goes back to 02:00 CET: 02:30 happens twice, runs at the first.
  EXPECT_THAT(NextTimes("30 2 * * *", "Europe/Paris", At("Europe/Paris", 2026, 10, 24, 12, 0), 3),
              ::testing::ElementsAre("2026-10-25 02:30 +02:00", "2026-10-26 02:30 +01:00",
                                     "2026-10-27 02:30 +01:00"));
  // Right after the first 02:30 (and during the repeated hour) the next is the next day.
  const absl::Time first = At("Europe/Paris", 2026, 10, 25, 2, 30);
  EXPECT_THAT(NextTimes("30 2 * * *", "Europe/Paris", first + absl::Minutes(45), 1),
              ::testing::ElementsAre("2026-10-26 02:30 +01:00"));
  // Every 15 minutes through the change: each wall-clock time runs once, so the repeated hour's
  // second pass (02:00-02:45 CET) has no runs and 03:00 CET follows 02:45 CEST.
  std::vector<std::string> times =
      NextTimes("*/15 * * * *", "Europe/Paris", first - absl::Minutes(31), 6);
  EXPECT_THAT(times, ::testing::ElementsAre("2026-10-25 02:00 +02:00", "2026-10-25 02:15 +02:00",
                                            "2026-10-25 02:30 +02:00", "2026-10-25 02:45 +02:00",
                                            "2026-10-25 03:00 +01:00", "2026-10-25 03:15 +01:00"));
}

TEST(LoadZoneTest, EmptyIsUtcUnknownAndLocalAreRefused) {
  absl::StatusOr<absl::TimeZone> utc = LoadZone("");
  ASSERT_TRUE(utc.ok());
  EXPECT_EQ(utc->name(), "UTC");
  EXPECT_TRUE(LoadZone("Asia/Kolkata").ok());
  absl::StatusOr<absl::TimeZone> bad = LoadZone("Mars/Olympus_Mons");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("unknown time zone \"Mars/Olympus_Mons\""));
  EXPECT_FALSE(LoadZone("Local").ok());
}

// spec.timeZone is a tenant's text, and absl's loader opens what it names: an absolute path or
// a "file:" prefix read any file of the operator's (a FIFO would block the worker for good).
// Before the check, "/usr/share/zoneinfo/Europe/Paris" loaded.
TEST(LoadZoneTest, ANameThatIsAPathIsRefusedBeforeAnyFileIsOpened) {
  for (const char* name :
       {"/usr/share/zoneinfo/Europe/Paris", "file:/usr/share/zoneinfo/Europe/Paris",
        "Europe/../Europe/Paris", "Europe//Paris", "Europe/Paris/", "./UTC", "Europe/Paris\n"}) {
    absl::StatusOr<absl::TimeZone> zone = LoadZone(name);
    ASSERT_FALSE(zone.ok()) << name;
    EXPECT_THAT(zone.status().message(), HasSubstr("is not an IANA name")) << name;
  }
  EXPECT_FALSE(LoadZone(std::string(65, 'A')).ok());
  EXPECT_TRUE(LoadZone("America/Argentina/Buenos_Aires").ok());
  EXPECT_TRUE(LoadZone("Etc/GMT+5").ok());
  EXPECT_TRUE(LoadZone("EST5EDT").ok());
  EXPECT_TRUE(LoadZone("UTC").ok());
}

// absl keeps every name it was asked to load, found or not, for the life of the process: each
// distinct unknown spec.timeZone a tenant wrote was kept for good. Now only names the database
// holds reach it. 100,000 distinct unknown names grew the heap by about 12 MB before.
TEST(LoadZoneTest, UnknownNamesAreNotKeptForGood) {
  auto heap = [] { return static_cast<int64_t>(mallinfo2().uordblks); };
  LoadZone("Nowhere/Warmup-0").IgnoreError();
  const int64_t before = heap();
  for (int i = 0; i < 100000; ++i) {
    absl::StatusOr<absl::TimeZone> zone =
        LoadZone(absl::StrCat("Nowhere/Atlantis-", i, "-abcdefghijklmnopqrstuvwxyz"));
    ASSERT_FALSE(zone.ok());
  }
  EXPECT_LT(heap() - before, 1 << 20) << "bytes kept after 100,000 unknown names";
}

}  // namespace
}  // namespace slurmop::cron
