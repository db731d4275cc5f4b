// File: controller/common/time_format.cc

#include "controller/common/time_format.h"

#include <cstdio>
#include <ctime>

namespace slurmop {
namespace {

std::tm ToUtc(Time t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return tm;
}

}  // namespace

std::string FormatRfc3339(Time t) {
  std::tm tm = ToUtc(t);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string FormatRfc3339Micro(Time t) {
  auto secs = std::chrono::time_point_cast<std::chrono::seconds>(t);
  if (secs > t) secs -= std::chrono::seconds(1);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t - secs).count();
  std::tm tm = ToUtc(secs);
  char buf[48];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[64];
  std::snprintf(out, sizeof(out), "%s.%06lldZ", buf, static_cast<long long>(micros));
  return out;
}

std::optional<Time> ParseRfc3339(std::string_view s) {
  std::tm tm{};
  int year, mon, day, hour, min, sec;
  int consumed = 0;
  std::string str(s);
  if (std::sscanf(str.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &mon, &day, &hour, &min, &sec,
                  &consumed) != 6) {
    return std::nullopt;
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  std::time_t secs = timegm(&tm);
  // Time counts nanoseconds in 64 bits (about 1678..2262); leave room for the
  // fraction and an offset of up to 99:99 so that nothing below overflows.
  constexpr std::time_t kMargin = 5 * 86400;
  constexpr std::time_t kMinSecs =
      std::chrono::duration_cast<std::chrono::seconds>(Time::duration::min()).count() + kMargin;
  constexpr std::time_t kMaxSecs =
      std::chrono::duration_cast<std::chrono::seconds>(Time::duration::max()).count() - kMargin;
  if (secs < kMinSecs || secs > kMaxSecs) return std::nullopt;
  Time t = std::chrono::system_clock::from_time_t(secs);
  size_t i = static_cast<size_t>(consumed);
  if (i < str.size() && str[i] == '.') {
    ++i;
    long long frac = 0;
    int digits = 0;
    while (i < str.size() && str[i] >= '0' && str[i] <= '9') {
      if (digits < 9) {
        frac = frac * 10 + (str[i] - '0');
        ++digits;
      }
      ++i;
    }
    while (digits < 9) {
      frac *= 10;
      ++digits;
    }
    t += std::chrono::duration_cast<Time::duration>(std::chrono::nanoseconds(frac));
  }
  if (i >= str.size()) return std::nullopt;
  if (str[i] == 'Z' || str[i] == 'z')
    return i + 1 == str.size() ? std::optional<Time>(t) : std::nullopt;
  if (str[i] == '+' || str[i] == '-') {
    int oh, om;
    if (std::sscanf(str.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2) return std::nullopt;
    auto offset = std::chrono::hours(oh) + std::chrono::minutes(om);
    return str[i] == '+' ? t - offset : t + offset;
  }
  return std::nullopt;
}

}  // namespace slurmop
