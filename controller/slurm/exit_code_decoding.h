// File: controller/slurm/exit_code_decoding.h
//
// A job's exit, in every shape Slurm reports it:
//  * slurmctld v0.0.38: exit_code = raw wait(2) status int (exit 3 -> 768,
//    SIGTERM -> 15);
//  * slurmctld v0.0.39: the same raw status in {set, infinite, number};
//  * v0.0.40+ (slurmctld and slurmdb): {status: ["SUCCESS" | "ERROR" |
//    "SIGNALED" | "CORE_DUMPED" | ...], return_code: {set, infinite,
//    number}, signal: {id: {set, infinite, number}, name}};
//  * slurmdb dbv0.0.38/39: {status: "SUCCESS", return_code, signal:
//    {signal_id, name}}, whose normal-exit branch is buggy (every normal
//    exit reads SUCCESS/0), so only the signal is believed.

#ifndef SLURMOP_CONTROLLER_SLURM_EXIT_CODE_DECODING_H_
#define SLURMOP_CONTROLLER_SLURM_EXIT_CODE_DECODING_H_

#include <cstdint>
#include <optional>

#include "controller/slurm/job_model.h"
#include "nlohmann/json.hpp"

namespace slurmop::slurm {

struct ProcessExit {
  std::optional<int32_t> exit_code;  // WEXITSTATUS when exited normally
  std::optional<int32_t> signal;     // WTERMSIG when killed by a signal
};

// A raw wait status: (s & 0x7f) == 0 -> exit_code = (s >> 8) & 0xff; else
// signal = s & 0x7f (0x7f = stopped -> nothing). Negative or NO_VAL -> {}.
ProcessExit DecodeWaitStatus(int64_t status);

// slurmctld job_info exit_code of any version: a number or a
// {set,infinite,number} wrapper is a raw wait status; an object with
// "status" is a v0.0.40+ process exit code. null/unset -> {}.
ProcessExit DecodeSlurmctldExitCode(const nlohmann::json& value);

// v0.0.40+ {status, return_code, signal{id, name}}. SIGNALED/CORE_DUMPED ->
// signal (from id, else from a known name such as "KILL"); SUCCESS/ERROR ->
// exit_code (return_code, SUCCESS without one -> 0); PENDING/INVALID -> {}.
ProcessExit DecodeProcessExitCode(const nlohmann::json& value);

// dbv0.0.38/39: signal from SIGNALED + signal.signal_id; otherwise the exit
// code is derived from the final state alone: COMPLETED -> 0, else unknown.
ProcessExit DecodeUnreliableSlurmdbExitCode(const nlohmann::json& value, BaseState state);

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_EXIT_CODE_DECODING_H_
