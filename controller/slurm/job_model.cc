// File: controller/slurm/job_model.cc
//
// Base state names and predicates, JobInfo helpers, SlurmMessage text.

#include "controller/slurm/job_model.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/slurm/text_compat.h"

namespace slurmop::slurm {
namespace {

constexpr std::array<std::pair<BaseState, std::string_view>, 12> kStateNames = {{
    {BaseState::kPending, "PENDING"},
    {BaseState::kRunning, "RUNNING"},
    {BaseState::kSuspended, "SUSPENDED"},
    {BaseState::kCompleted, "COMPLETED"},
    {BaseState::kCancelled, "CANCELLED"},
    {BaseState::kFailed, "FAILED"},
    {BaseState::kTimeout, "TIMEOUT"},
    {BaseState::kNodeFail, "NODE_FAIL"},
    {BaseState::kPreempted, "PREEMPTED"},
    {BaseState::kBootFail, "BOOT_FAIL"},
    {BaseState::kDeadline, "DEADLINE"},
    {BaseState::kOutOfMemory, "OUT_OF_MEMORY"},
}};

}  // namespace

std::string_view BaseStateName(BaseState s) {
  for (const auto& [state, name] : kStateNames) {
    if (state == s) return name;
  }
  return "UNKNOWN";
}

BaseState ParseBaseState(std::string_view name) {
  for (const auto& [state, spelled] : kStateNames) {
    if (absl::EqualsIgnoreCase(ToAbsl(spelled), ToAbsl(name))) return state;
  }
  return BaseState::kUnknown;
}

bool IsTerminalState(BaseState s) {
  switch (s) {
    case BaseState::kCompleted:
    case BaseState::kCancelled:
    case BaseState::kFailed:
    case BaseState::kTimeout:
    case BaseState::kNodeFail:
    case BaseState::kPreempted:
    case BaseState::kBootFail:
    case BaseState::kDeadline:
    case BaseState::kOutOfMemory:
      return true;
    case BaseState::kUnknown:
    case BaseState::kPending:
    case BaseState::kRunning:
    case BaseState::kSuspended:
      return false;
  }
  return false;
}

const std::vector<BaseState>& AllKnownBaseStates() {
  static const std::vector<BaseState>* const kAll = [] {
    auto* all = new std::vector<BaseState>();
    for (const auto& entry : kStateNames) all->push_back(entry.first);
    return all;
  }();
  return *kAll;
}

bool JobInfo::HasFlag(std::string_view f) const {
  for (const std::string& flag : flags) {
    if (flag == f) return true;
  }
  return false;
}

bool JobInfo::IsFinal() const { return IsTerminalState(state) && !HasFlag("COMPLETING"); }

bool ArrayTask::IsFinal() const {
  return IsTerminalState(state) &&
         std::find(flags.begin(), flags.end(), "COMPLETING") == flags.end();
}

std::string SlurmMessage::ToString() const {
  std::string text = !error.empty() ? error : description;
  if (error_number.has_value() && *error_number != 0) {
    absl::StrAppend(&text, text.empty() ? "" : " ", "(error ", *error_number, ")");
  }
  if (!error.empty() && !description.empty() && description != error) {
    absl::StrAppend(&text, ": ", description);
  }
  if (text.empty()) text = source.empty() ? "unspecified Slurm error" : source;
  return text;
}

}  // namespace slurmop::slurm
