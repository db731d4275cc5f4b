// File: controller/slurm/exit_code_decoding.cc
//
// Exit code / signal decoding for every version's shape.

#include "controller/slurm/exit_code_decoding.h"

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "controller/slurm/json_fields.h"
#include "controller/slurm/text_compat.h"

namespace slurmop::slurm {
namespace {

// Linux signal numbers for the names Slurm prints (v0.0.40+ "KILL"; older
// code paths may spell "SIGKILL").
std::optional<int32_t> SignalNumberFromName(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, int32_t>, 15> kSignals = {{
      {"HUP", 1},
      {"INT", 2},
      {"QUIT", 3},
      {"ILL", 4},
      {"TRAP", 5},
      {"ABRT", 6},
      {"BUS", 7},
      {"FPE", 8},
      {"KILL", 9},
      {"USR1", 10},
      {"SEGV", 11},
      {"USR2", 12},
      {"PIPE", 13},
      {"ALRM", 14},
      {"TERM", 15},
  }};
  if (absl::StartsWithIgnoreCase(ToAbsl(name), "SIG")) name.remove_prefix(3);
  for (const auto& [spelled, number] : kSignals) {
    if (absl::EqualsIgnoreCase(ToAbsl(spelled), ToAbsl(name))) return number;
  }
  return std::nullopt;
}

bool HasStatus(const std::vector<std::string>& statuses, std::string_view s) {
  for (const std::string& status : statuses) {
    if (absl::EqualsIgnoreCase(status, ToAbsl(s))) return true;
  }
  return false;
}

}  // namespace

ProcessExit DecodeWaitStatus(int64_t status) {
  ProcessExit out;
  if (status < 0 || status >= 0xfffffffeLL) return out;  // NO_VAL / INFINITE
  const int64_t low = status & 0x7f;
  if (low == 0) {
    out.exit_code = static_cast<int32_t>((status >> 8) & 0xff);
  } else if (low != 0x7f) {
    out.signal = static_cast<int32_t>(low);
  }
  return out;
}

ProcessExit DecodeSlurmctldExitCode(const nlohmann::json& value) {
  if (value.is_object() && FindMember(value, "status") != nullptr) {
    return DecodeProcessExitCode(value);
  }
  std::optional<int64_t> raw = NoValInteger(value);
  if (!raw.has_value()) return {};
  return DecodeWaitStatus(*raw);
}

ProcessExit DecodeProcessExitCode(const nlohmann::json& value) {
  ProcessExit out;
  const nlohmann::json* status = FindMember(value, "status");
  if (status == nullptr) return out;
  const std::vector<std::string> statuses = StringOrStringArray(*status);
  if (HasStatus(statuses, "SIGNALED") || HasStatus(statuses, "CORE_DUMPED")) {
    const nlohmann::json* signal = FindMember(value, "signal");
    if (signal != nullptr) {
      std::optional<int64_t> id = IntegerMember(*signal, "id");
      if (!id.has_value()) id = IntegerMember(*signal, "signal_id");
      if (id.has_value() && *id > 0) {
        out.signal = static_cast<int32_t>(*id);
      } else {
        out.signal = SignalNumberFromName(StringMember(*signal, "name"));
      }
    }
    return out;
  }
  if (HasStatus(statuses, "SUCCESS") || HasStatus(statuses, "ERROR")) {
    std::optional<int64_t> rc = IntegerMember(value, "return_code");
    if (rc.has_value()) {
      out.exit_code = static_cast<int32_t>(*rc);
    } else if (HasStatus(statuses, "SUCCESS")) {
      out.exit_code = 0;
    }
  }
  return out;
}

ProcessExit DecodeUnreliableSlurmdbExitCode(const nlohmann::json& value, BaseState state) {
  ProcessExit out;
  const nlohmann::json* status = FindMember(value, "status");
  if (status != nullptr && HasStatus(StringOrStringArray(*status), "SIGNALED")) {
    const nlohmann::json* signal = FindMember(value, "signal");
    if (signal != nullptr) {
      std::optional<int64_t> id = IntegerMember(*signal, "signal_id");
      if (!id.has_value()) id = IntegerMember(*signal, "id");
      if (id.has_value() && *id > 0) out.signal = static_cast<int32_t>(*id);
    }
    if (out.signal.has_value()) return out;
  }
  if (state == BaseState::kCompleted) out.exit_code = 0;
  return out;
}

}  // namespace slurmop::slurm
