// File: controller/http/pplx_wait.h
//
// Blocking waits on pplx tasks that can be interrupted. cpprestsdk reports
// everything through pplx tasks; these helpers let CpprestTransport wait for
// one with a deadline and a StreamHandle, cancelling the request (which makes
// cpprest close the connection) when either fires.
//
// Contract:
//  * TaskOutcome observes the task's result or exception in a continuation,
//    so no exception is ever left unobserved (pplx would call
//    std::terminate), even if the waiter gives up. `keepalive` is held until
//    the task finishes (e.g. the buffer a read writes into).
//  * AwaitTask() polls every 50 ms. When `handle` is cancelled or `deadline`
//    passes it cancels `cts` once, then waits up to 5 s more for the task to
//    wind down. It reports why it stopped and whether the task finished.

#ifndef SLURMOP_CONTROLLER_HTTP_PPLX_WAIT_H_
#define SLURMOP_CONTROLLER_HTTP_PPLX_WAIT_H_

#include <pplx/pplxtasks.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "controller/http/http_transport.h"

namespace slurmop::http {

template <typename T>
class TaskOutcome {
 public:
  explicit TaskOutcome(const pplx::task<T>& task, std::shared_ptr<void> keepalive = nullptr)
      : state_(std::make_shared<State>()) {
    std::shared_ptr<State> state = state_;
    task.then([state, keepalive](pplx::task<T> finished) {
      std::optional<T> value;
      std::exception_ptr error;
      try {
        value.emplace(finished.get());
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(state->mu);
      state->value = std::move(value);
      state->error = error;
      state->done = true;
      state->cv.notify_all();
    });
  }

  // True once the task has finished (value or error available).
  bool WaitFor(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(state_->mu);
    return state_->cv.wait_for(lock, timeout, [this] { return state_->done; });
  }
  // Only after WaitFor() returned true.
  std::exception_ptr error() const {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->error;
  }
  T& value() {
    std::lock_guard<std::mutex> lock(state_->mu);
    return *state_->value;
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::optional<T> value;
    std::exception_ptr error;
  };
  std::shared_ptr<State> state_;
};

enum class StopReason { kNone, kCancelled, kDeadline };

struct AwaitResult {
  bool finished = false;
  StopReason reason = StopReason::kNone;
};

template <typename T>
AwaitResult AwaitTask(TaskOutcome<T>& outcome, pplx::cancellation_token_source& cts,
                      const StreamHandle* handle,
                      std::optional<std::chrono::steady_clock::time_point> deadline) {
  constexpr std::chrono::milliseconds kPoll(50);
  constexpr std::chrono::seconds kWindDown(5);
  AwaitResult result;
  std::chrono::steady_clock::time_point give_up{};
  while (!outcome.WaitFor(kPoll)) {
    const auto now = std::chrono::steady_clock::now();
    if (result.reason == StopReason::kNone) {
      if (handle != nullptr && handle->cancelled()) {
        result.reason = StopReason::kCancelled;
      } else if (deadline.has_value() && now >= *deadline) {
        result.reason = StopReason::kDeadline;
      }
      if (result.reason != StopReason::kNone) {
        cts.cancel();
        give_up = now + kWindDown;
      }
    } else if (now >= give_up) {
      return result;  // finished == false
    }
  }
  result.finished = true;
  return result;
}

}  // namespace slurmop::http

#endif  // SLURMOP_CONTROLLER_HTTP_PPLX_WAIT_H_
