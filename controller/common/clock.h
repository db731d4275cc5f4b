// File: controller/common/clock.h
//
// The clock seam. Everything that decides on time (backoff, poll intervals,
// lease expiry, condition timestamps) takes a `const Clock&` so that tests
// drive time by hand with FakeClock instead of sleeping.

#ifndef SLURMOP_CONTROLLER_COMMON_CLOCK_H_
#define SLURMOP_CONTROLLER_COMMON_CLOCK_H_

#include <chrono>
#include <mutex>

namespace slurmop {

using Time = std::chrono::system_clock::time_point;
using Duration = std::chrono::nanoseconds;

// Clock: the current wall-clock time. Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time Now() const = 0;
};

// RealClock: std::chrono::system_clock.
class RealClock final : public Clock {
 public:
  Time Now() const override { return std::chrono::system_clock::now(); }
  // A process-wide instance.
  static const RealClock& Get() {
    static const RealClock clock;
    return clock;
  }
};

// FakeClock: time moves only when a test calls Set() or Advance().
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Time start = Time(std::chrono::seconds(1700000000))) : now_(start) {}
  Time Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  void Set(Time t) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ = t;
  }
  void Advance(Duration d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += std::chrono::duration_cast<Time::duration>(d);
  }

 private:
  mutable std::mutex mu_;
  Time now_;
};

}  // namespace slurmop

#endif  // SLURMOP_CONTROLLER_COMMON_CLOCK_H_
