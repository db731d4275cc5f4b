// File: tests/slurm/job_model_test.cc
//
// BaseState names/predicates, JobInfo::HasFlag/IsFinal, SlurmMessage text.

#include "controller/slurm/job_model.h"

#include "gtest/gtest.h"

namespace slurmop::slurm {
namespace {

TEST(BaseStateTest, NamesRoundTrip) {
  for (BaseState s : AllKnownBaseStates()) {
    EXPECT_EQ(ParseBaseState(BaseStateName(s)), s) << BaseStateName(s);
  }
  EXPECT_EQ(AllKnownBaseStates().size(), 12u);
}

TEST(BaseStateTest, SpellingsAreSlurms) {
  EXPECT_EQ(BaseStateName(BaseState::kUnknown), "UNKNOWN");
  EXPECT_EQ(BaseStateName(BaseState::kNodeFail), "NODE_FAIL");
  EXPECT_EQ(BaseStateName(BaseState::kBootFail), "BOOT_FAIL");
  EXPECT_EQ(BaseStateName(BaseState::kOutOfMemory), "OUT_OF_MEMORY");
  EXPECT_EQ(BaseStateName(BaseState::kCancelled), "CANCELLED");
}

TEST(BaseStateTest, ParseRejectsFlagsAndNoise) {
  EXPECT_EQ(ParseBaseState("COMPLETING"), BaseState::kUnknown);
  EXPECT_EQ(ParseBaseState("REQUEUED"), BaseState::kUnknown);
  EXPECT_EQ(ParseBaseState(""), BaseState::kUnknown);
  EXPECT_EQ(ParseBaseState("UNKNOWN"), BaseState::kUnknown);
  EXPECT_EQ(ParseBaseState("CANCELLED by 0"), BaseState::kUnknown);
  EXPECT_EQ(ParseBaseState("running"), BaseState::kRunning);
}

TEST(BaseStateTest, TerminalStates) {
  for (BaseState s : {BaseState::kCompleted, BaseState::kCancelled, BaseState::kFailed,
                      BaseState::kTimeout, BaseState::kNodeFail, BaseState::kPreempted,
                      BaseState::kBootFail, BaseState::kDeadline, BaseState::kOutOfMemory}) {
    EXPECT_TRUE(IsTerminalState(s)) << BaseStateName(s);
  }
  for (BaseState s :
       {BaseState::kUnknown, BaseState::kPending, BaseState::kRunning, BaseState::kSuspended}) {
    EXPECT_FALSE(IsTerminalState(s)) << BaseStateName(s);
  }
}

TEST(JobInfoTest, FinalNeedsTerminalStateWithoutCompleting) {
  JobInfo info;
  info.state = BaseState::kFailed;
  EXPECT_TRUE(info.IsFinal());
  info.flags = {"REQUEUED", "COMPLETING"};
  EXPECT_TRUE(info.HasFlag("COMPLETING"));
  EXPECT_FALSE(info.HasFlag("completing"));
  EXPECT_FALSE(info.IsFinal());
  info.flags = {"STAGE_OUT"};
  EXPECT_TRUE(info.IsFinal());
  info.state = BaseState::kRunning;
  EXPECT_FALSE(info.IsFinal());
  info.state = BaseState::kUnknown;
  info.flags = {"COMPLETING"};
  EXPECT_FALSE(info.IsFinal());
}

TEST(SlurmMessageTest, ToStringJoinsTheParts) {
  SlurmMessage m{2000, "Invalid partition name specified", "Batch job submission failed",
                 "slurm_submit_batch_job()"};
  EXPECT_EQ(m.ToString(),
            "Invalid partition name specified (error 2000): Batch job submission failed");
  EXPECT_EQ((SlurmMessage{2000, "Invalid partition name specified", "", ""}).ToString(),
            "Invalid partition name specified (error 2000)");
  EXPECT_EQ((SlurmMessage{std::nullopt, "", "Unknown key \"x\"", "hsearch_r"}).ToString(),
            "Unknown key \"x\"");
  EXPECT_EQ((SlurmMessage{-1, "", "Unable to find JobId=2", "slurm_load_job"}).ToString(),
            "Unable to find JobId=2 (error -1)");
  EXPECT_EQ((SlurmMessage{0, "No error", "", ""}).ToString(), "No error");
  EXPECT_EQ((SlurmMessage{2021, "Job/step already completing or completed",
                          "Job/step already completing or completed", ""})
                .ToString(),
            "Job/step already completing or completed (error 2021)");
  EXPECT_EQ((SlurmMessage{std::nullopt, "", "", "hsearch_r"}).ToString(), "hsearch_r");
  EXPECT_EQ(SlurmMessage{}.ToString(), "unspecified Slurm error");
}

}  // namespace
}  // namespace slurmop::slurm
