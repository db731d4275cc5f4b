// File: tests/slurm/decoding_test.cc
//
// The building blocks: tolerant JSON readers, job_state and exit-code
// decoding in every version's shape.

#include <chrono>

#include "controller/slurm/exit_code_decoding.h"
#include "controller/slurm/job_state_decoding.h"
#include "controller/slurm/json_fields.h"
#include "gtest/gtest.h"

namespace slurmop::slurm {
namespace {

using nlohmann::json;

TEST(JsonFieldsTest, NoValIntegerShapes) {
  EXPECT_EQ(NoValInteger(json(5)), 5);
  EXPECT_EQ(NoValInteger(json(-1)), -1);
  EXPECT_EQ(NoValInteger(json(4294901759u)), 4294901759);
  EXPECT_EQ(NoValInteger(json(18446744073709551614u)), std::nullopt);  // NO_VAL64
  EXPECT_EQ(NoValInteger(json(7.0)), 7);
  EXPECT_EQ(NoValInteger(json(7.5)), std::nullopt);
  EXPECT_EQ(NoValInteger(json(nullptr)), std::nullopt);
  EXPECT_EQ(NoValInteger(json("5")), std::nullopt);
  EXPECT_EQ(NoValInteger(json{{"set", true}, {"infinite", false}, {"number", 120}}), 120);
  EXPECT_EQ(NoValInteger(json{{"set", true}, {"number", 120}}), 120);
  EXPECT_EQ(NoValInteger(json{{"number", 9}}), 9);
  EXPECT_EQ(NoValInteger(json{{"set", false}, {"infinite", false}, {"number", 0}}), std::nullopt);
  EXPECT_EQ(NoValInteger(json{{"set", false}, {"infinite", true}, {"number", 0}}), std::nullopt);
  EXPECT_EQ(NoValInteger(json{{"set", true}, {"infinite", true}, {"number", 5}}), std::nullopt);
  EXPECT_EQ(NoValInteger(json::array({1})), std::nullopt);
}

TEST(JsonFieldsTest, MembersAreTolerant) {
  const json obj = {{"s", "text"}, {"n", 3}, {"null", nullptr}, {"t", 1700000000}, {"zero", 0}};
  EXPECT_EQ(StringMember(obj, "s"), "text");
  EXPECT_EQ(StringMember(obj, "n"), "");
  EXPECT_EQ(StringMember(obj, "missing"), "");
  EXPECT_EQ(StringMember(json::array(), "s"), "");
  EXPECT_EQ(IntegerMember(obj, "n"), 3);
  EXPECT_EQ(IntegerMember(obj, "null"), std::nullopt);
  EXPECT_NE(FindMember(obj, "null"), nullptr);
  EXPECT_EQ(FindMember(json(3), "n"), nullptr);
  EXPECT_EQ(EpochMember(obj, "t"), Time(std::chrono::seconds(1700000000)));
  EXPECT_EQ(EpochMember(obj, "zero"), std::nullopt);
  EXPECT_EQ(EpochMember(json{{"t", 4294967294u}}, "t"), std::nullopt);  // NO_VAL
  EXPECT_EQ(
      EpochMember(json{{"t", {{"set", true}, {"infinite", false}, {"number", 1700000005}}}}, "t"),
      Time(std::chrono::seconds(1700000005)));
  EXPECT_EQ(StringOrStringArray(json("A")), std::vector<std::string>{"A"});
  EXPECT_EQ(StringOrStringArray(json{"A", 1, "B"}), (std::vector<std::string>{"A", "B"}));
  EXPECT_TRUE(StringOrStringArray(json(1)).empty());
}

TEST(JobStateDecodingTest, Shapes) {
  DecodedJobState a = DecodeJobState(json("FAILED"));
  EXPECT_EQ(a.state, BaseState::kFailed);
  EXPECT_TRUE(a.flags.empty());
  DecodedJobState b = DecodeJobState(json("COMPLETING"));
  EXPECT_EQ(b.state, BaseState::kUnknown);
  EXPECT_EQ(b.flags, std::vector<std::string>{"COMPLETING"});
  DecodedJobState c = DecodeJobState(json{"FAILED", "COMPLETING"});
  EXPECT_EQ(c.state, BaseState::kFailed);
  EXPECT_EQ(c.flags, std::vector<std::string>{"COMPLETING"});
  DecodedJobState d = DecodeJobState(json("CONFIGURING"));
  EXPECT_EQ(d.state, BaseState::kRunning);
  EXPECT_EQ(d.flags, std::vector<std::string>{"CONFIGURING"});
  DecodedJobState e = DecodeJobState(json{"COMPLETING", "CANCELLED"});  // order-independent
  EXPECT_EQ(e.state, BaseState::kCancelled);
  EXPECT_EQ(e.flags, std::vector<std::string>{"COMPLETING"});
  EXPECT_EQ(DecodeJobState(json(nullptr)).state, BaseState::kUnknown);
  EXPECT_EQ(DecodeJobState(json(3)).state, BaseState::kUnknown);
  EXPECT_EQ(DecodeJobState(json("")).flags.size(), 0u);
}

TEST(ExitCodeDecodingTest, WaitStatus) {
  EXPECT_EQ(DecodeWaitStatus(0).exit_code, 0);
  EXPECT_EQ(DecodeWaitStatus(256).exit_code, 1);
  EXPECT_EQ(DecodeWaitStatus(768).exit_code, 3);
  EXPECT_EQ(DecodeWaitStatus(2048).exit_code, 8);
  EXPECT_EQ(DecodeWaitStatus(15).signal, 15);
  EXPECT_EQ(DecodeWaitStatus(15).exit_code, std::nullopt);
  EXPECT_EQ(DecodeWaitStatus(9 | 0x80).signal, 9);           // core dumped
  EXPECT_EQ(DecodeWaitStatus(0x137f).signal, std::nullopt);  // stopped
  EXPECT_EQ(DecodeWaitStatus(0x137f).exit_code, std::nullopt);
  EXPECT_EQ(DecodeWaitStatus(-1).exit_code, std::nullopt);
  EXPECT_EQ(DecodeWaitStatus(4294967294).exit_code, std::nullopt);  // NO_VAL
}

TEST(ExitCodeDecodingTest, SlurmctldShapes) {
  EXPECT_EQ(DecodeSlurmctldExitCode(json(768)).exit_code, 3);  // v0.0.38
  EXPECT_EQ(
      DecodeSlurmctldExitCode(json{{"set", true}, {"infinite", false}, {"number", 768}}).exit_code,
      3);  // v0.0.39
  EXPECT_EQ(
      DecodeSlurmctldExitCode(json{{"set", false}, {"infinite", false}, {"number", 0}}).exit_code,
      std::nullopt);
  const json v42_error = {
      {"status", {"ERROR"}},
      {"return_code", {{"set", true}, {"infinite", false}, {"number", 1}}},
      {"signal", {{"id", {{"set", false}, {"infinite", false}, {"number", 0}}}, {"name", ""}}}};
  EXPECT_EQ(DecodeSlurmctldExitCode(v42_error).exit_code, 1);
  EXPECT_EQ(DecodeSlurmctldExitCode(json(nullptr)).exit_code, std::nullopt);
}

TEST(ExitCodeDecodingTest, ProcessExitCode) {
  const json signaled = {
      {"status", {"SIGNALED"}},
      {"return_code", {{"set", false}, {"infinite", false}, {"number", 0}}},
      {"signal", {{"id", {{"set", true}, {"infinite", false}, {"number", 9}}}, {"name", "KILL"}}}};
  EXPECT_EQ(DecodeProcessExitCode(signaled).signal, 9);
  EXPECT_EQ(DecodeProcessExitCode(signaled).exit_code, std::nullopt);
  const json by_name = {{"status", {"SIGNALED", "CORE_DUMPED"}},
                        {"signal", {{"id", {{"set", false}}}, {"name", "SEGV"}}}};
  EXPECT_EQ(DecodeProcessExitCode(by_name).signal, 11);
  EXPECT_EQ(DecodeProcessExitCode(json{{"status", {"SUCCESS"}}}).exit_code, 0);
  EXPECT_EQ(DecodeProcessExitCode(json{{"status", {"PENDING"}}}).exit_code, std::nullopt);
  EXPECT_EQ(DecodeProcessExitCode(json{{"status", "ERROR"}, {"return_code", 2}}).exit_code, 2);
}

TEST(ExitCodeDecodingTest, UnreliableSlurmdbOnlyTrustsSignalAndState) {
  const json success0 = {{"status", "SUCCESS"}, {"return_code", 0}};
  EXPECT_EQ(DecodeUnreliableSlurmdbExitCode(success0, BaseState::kCompleted).exit_code, 0);
  EXPECT_EQ(DecodeUnreliableSlurmdbExitCode(success0, BaseState::kFailed).exit_code, std::nullopt);
  const json signaled = {{"status", "SIGNALED"},
                         {"return_code", nullptr},
                         {"signal", {{"signal_id", 9}, {"name", "Killed"}}}};
  ProcessExit s = DecodeUnreliableSlurmdbExitCode(signaled, BaseState::kCancelled);
  EXPECT_EQ(s.signal, 9);
  EXPECT_EQ(s.exit_code, std::nullopt);
}

}  // namespace
}  // namespace slurmop::slurm
