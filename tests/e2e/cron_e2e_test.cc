// File: tests/e2e/cron_e2e_test.cc
//
// SlurmCronJob end to end, as a user drives it: the real kubectl against the stand-in Kubernetes
// API server, the operator binary, and the Agent Platform stand-in with its Slurm simulator.
// examples/slurmcronjob.yaml is applied with its schedule set to every minute (the example runs
// at 02:30 Paris time), so the first SlurmJob comes within a minute.

#include <signal.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/manifests.h"
#include "tests/testing/stand_ins.h"
#include "tests/testing/subprocess.h"

namespace slurmop {
namespace {

using std::chrono::seconds;
using testing::CommandResult;
using ::testing::HasSubstr;
using testing::ReadFile;
using testing::ReadPort;
using testing::RunCommand;
using testing::Subprocess;
using testing::WaitUntil;

constexpr char kNs[] = "cron";

int64_t ParseTime(const std::string& rfc3339) {
  std::tm tm{};
  if (strptime(rfc3339.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) == nullptr) return 0;
  return timegm(&tm);
}

class CronE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir("slurmop-cron-e2e-"));
    stand_ins_ = new testing::StandIns(*dir_);
    ASSERT_TRUE(stand_ins_->WaitUntilServing());
    ap_port_ = stand_ins_->agent_platform_port();
    ASSERT_TRUE(stand_ins_->kubectl().InstallCrds());
    ASSERT_TRUE(stand_ins_->kubectl().CreateNamespace(kNs));
    ASSERT_TRUE(
        stand_ins_->kubectl().Apply(testing::LocalSlurmClusterManifest(kNs, ap_port_, "v0.0.42")));
    StartOperator("operator.log");
    ASSERT_GT(ReadPort(*dir_ + "/health.port"), 0) << ReadFile(*dir_ + "/operator.log");
  }

  static void StartOperator(const std::string& log) {
    std::filesystem::remove(*dir_ + "/health.port");
    operator_ = new Subprocess(
        {SLURMOP_OPERATOR_BINARY, "--kubeconfig=" + *dir_ + "/kubeconfig", "--health-port=0",
         "--health-port-file=" + *dir_ + "/health.port", "--min-poll-seconds=0.5",
         "--submit-settle-seconds=10", "--allow-operator-identity-for-namespaced-clusters",
         testing::AllowStandInFlag(ap_port_)},
        *dir_ + "/" + log, testing::OperatorEnv(ap_port_, *dir_));
  }

  // Slurm jobs the stand-in accepted under the Slurm job name `name`.
  static int AcceptedSubmits(const std::string& name) {
    CommandResult r =
        RunCommand({"curl", "-sf",
                    "http://127.0.0.1:" + std::to_string(ap_port_) + "/__admin/jobs?name=" + name},
                   {}, seconds(10));
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (!j.is_object()) return -1;
    return j["submit_counts"].value("accepted", -1);
  }

  static void TearDownTestSuite() {
    if (operator_) {
      int status = operator_->Stop(SIGTERM, seconds(10));
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "operator did not exit cleanly on SIGTERM; log: " << ReadFile(*dir_ + "/operator.log");
    }
    delete operator_;
    delete stand_ins_;
    testing::RemoveDirUnlessKept(*dir_,
                                 ::testing::UnitTest::GetInstance()->failed_test_count() > 0);
    delete dir_;
  }

  void TearDown() override {
    if (HasFailure()) {
      std::cerr << "---- operator log (tail) ----\n"
                << testing::LogTail(*dir_ + "/operator.log") << "\n";
    }
  }

  static CommandResult Kubectl(std::vector<std::string> args, const std::string& stdin_data = "",
                               std::chrono::milliseconds timeout = seconds(90)) {
    return stand_ins_->kubectl().Run(std::move(args), stdin_data, timeout);
  }

  static nlohmann::json GetJson(const std::vector<std::string>& what) {
    std::vector<std::string> args = {"get", "-n", kNs};
    args.insert(args.end(), what.begin(), what.end());
    args.insert(args.end(), {"-o", "json"});
    CommandResult r = Kubectl(args);
    return r.exit_code == 0 ? nlohmann::json::parse(r.out, nullptr, false) : nlohmann::json();
  }

  // examples/slurmcronjob.yaml with its schedule replaced.
  static std::string ExampleWithSchedule(const std::string& schedule) {
    const std::string text =
        ReadFile(std::string(SLURMOP_SOURCE_DIR) + "/examples/slurmcronjob.yaml");
    const std::regex line(R"(schedule: "30 2 \* \* \*")");
    EXPECT_TRUE(std::regex_search(text, line)) << "the example's schedule line changed";
    return std::regex_replace(text, line, "schedule: \"" + schedule + "\"");
  }

  static std::string* dir_;
  static testing::StandIns* stand_ins_;
  static Subprocess* operator_;
  static int ap_port_;
};

std::string* CronE2E::dir_ = nullptr;
testing::StandIns* CronE2E::stand_ins_ = nullptr;
Subprocess* CronE2E::operator_ = nullptr;
int CronE2E::ap_port_ = 0;

TEST_F(CronE2E, KubectlExplainDocumentsTheSpec) {
  CommandResult r = Kubectl({"explain", "slurmcronjob.spec"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* field :
       {"schedule", "timeZone", "concurrencyPolicy", "startingDeadlineSeconds",
        "successfulJobsHistoryLimit", "failedJobsHistoryLimit", "suspend", "jobTemplate"}) {
    EXPECT_THAT(r.out, HasSubstr(field));
  }
  CommandResult tmpl = Kubectl({"explain", "slurmcronjob.spec.jobTemplate.spec.script"});
  ASSERT_EQ(tmpl.exit_code, 0) << tmpl.out << tmpl.err;
  EXPECT_THAT(tmpl.out, HasSubstr("#!"));
}

TEST_F(CronE2E, ExampleCreatesAnOwnedSubmittedChildAndDeletingItDeletesTheChildren) {
  CommandResult apply = Kubectl({"apply", "-n", kNs, "-f", "-"}, ExampleWithSchedule("* * * * *"));
  ASSERT_EQ(apply.exit_code, 0) << apply.out << apply.err;
  const std::string selector = "hpc.slurmoperator.dev/slurmcronjob=nightly-report";
  nlohmann::json children;
  ASSERT_TRUE(WaitUntil(
      [&] {
        children = GetJson({"sj", "-l", selector});
        return children.is_object() && !children["items"].empty();
      },
      seconds(75)))
      << "no SlurmJob within 75 s";
  const nlohmann::json child = children["items"][0];
  const nlohmann::json cron = GetJson({"slurmcronjob", "nightly-report"});
  // Named after its scheduled minute, owned by the SlurmCronJob.
  const std::string scheduled =
      child["metadata"]["annotations"]["hpc.slurmoperator.dev/scheduled-time"];
  const int64_t minute = ParseTime(scheduled) / 60;
  ASSERT_GT(minute, 0) << child.dump();
  EXPECT_EQ(child["metadata"]["name"], "nightly-report-" + std::to_string(minute));
  ASSERT_EQ(child["metadata"]["ownerReferences"].size(), 1u);
  const nlohmann::json& owner = child["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["kind"], "SlurmCronJob");
  EXPECT_EQ(owner["uid"], cron["metadata"]["uid"]);
  EXPECT_EQ(owner["controller"], true);
  EXPECT_EQ(child["metadata"]["labels"]["team"], "analytics");  // the template's label
  // Submitted to Slurm.
  const std::string name = child["metadata"]["name"];
  EXPECT_TRUE(WaitUntil(
      [&] {
        return !Kubectl({"get", "-n", kNs, "sj", name, "-o", "jsonpath={.status.jobId}"})
                    .out.empty();
      },
      seconds(30)))
      << "SlurmJob " << name << " was not submitted";
  // The SlurmCronJob's status names the time.
  nlohmann::json status;
  ASSERT_TRUE(WaitUntil(
      [&] {
        status = GetJson({"slurmcronjob", "nightly-report"})["status"];
        return status.is_object() && status.value("lastScheduleTime", "") != "";
      },
      seconds(20)));
  EXPECT_GE(ParseTime(status["lastScheduleTime"]), ParseTime(scheduled));
  CommandResult table = Kubectl({"get", "-n", kNs, "scj", "nightly-report"});
  EXPECT_THAT(table.out, HasSubstr("LASTSCHEDULE"));
  EXPECT_THAT(table.out, HasSubstr("* * * * *"));
  // Deleting the SlurmCronJob deletes its SlurmJobs (the garbage collector follows the
  // ownerReferences; the finished job's finalizer comes off without a cancel).
  CommandResult del = Kubectl({"delete", "-n", kNs, "slurmcronjob", "nightly-report"});
  ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
  EXPECT_TRUE(WaitUntil(
      [&] {
        const nlohmann::json left = GetJson({"sj", "-l", selector});
        return left.is_object() && left["items"].empty();
      },
      seconds(30)))
      << "the SlurmCronJob's SlurmJobs were not deleted with it";
}

TEST_F(CronE2E, AnUnknownTimeZoneIsStalledWithAReason) {
  CommandResult apply = Kubectl({"apply", "-f", "-"},
                                "apiVersion: hpc.slurmoperator.dev/v1alpha1\n"
                                "kind: SlurmCronJob\n"
                                "metadata: {name: lost, namespace: cron}\n"
                                "spec:\n"
                                "  schedule: \"0 * * * *\"\n"
                                "  timeZone: Europe/Atlantis\n"
                                "  jobTemplate:\n"
                                "    spec:\n"
                                "      clusterRef: {name: local}\n"
                                "      script: \"#!/bin/bash\\ntrue\\n\"\n");
  ASSERT_EQ(apply.exit_code, 0) << apply.out << apply.err;
  CommandResult wait =
      Kubectl({"wait", "-n", kNs, "scj/lost", "--for=condition=Stalled", "--timeout=30s"});
  ASSERT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  const std::string reason = Kubectl({"get", "-n", kNs, "scj", "lost", "-o",
                                      "jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}"})
                                 .out;
  EXPECT_EQ(reason, "InvalidTimeZone");
}

// What CEL can tell is refused at admission, with the CRD's messages (the stand-in evaluates
// these rules as a real API server does): a TZ= prefix, a schedule that is not five fields or a
// macro, a name over 52 characters, and a template spec that breaks a SlurmJob's own rule.
TEST_F(CronE2E, AdmissionRefusesWhatCelCanTell) {
  auto apply = [](const std::string& name, const std::string& schedule,
                  const std::string& template_extra = "") {
    return Kubectl({"apply", "-f", "-"},
                   "apiVersion: hpc.slurmoperator.dev/v1alpha1\n"
                   "kind: SlurmCronJob\n"
                   "metadata: {name: " +
                       name +
                       ", namespace: cron}\n"
                       "spec:\n"
                       "  schedule: \"" +
                       schedule +
                       "\"\n"
                       "  jobTemplate:\n"
                       "    spec:\n"
                       "      clusterRef: {name: local}\n" +
                       template_extra + "      script: \"#!/bin/bash\\ntrue\\n\"\n");
  };
  const struct {
    std::string name, schedule, template_extra, message;
  } refused[] = {
      {"tz", "TZ=UTC 0 * * * *", "", "TZ="},
      {"six", "0 0 * * * *", "", "five"},
      {"every", "@every 1h", "", "five"},
      {std::string(53, 'n'), "0 * * * *", "", "52"},
      {"deadline", "0 * * * *", "      timeLimitMinutes: 5\n      activeDeadlineSeconds: 60\n",
       "timeLimitMinutes must end within activeDeadlineSeconds"},
  };
  for (const auto& r : refused) {
    CommandResult got = apply(r.name, r.schedule, r.template_extra);
    EXPECT_NE(got.exit_code, 0) << r.schedule << ": " << got.out;
    EXPECT_THAT(got.err, HasSubstr(r.message)) << r.schedule;
  }
  CommandResult ok = apply("fine", "*/15 2-4 * JAN-MAR MON-FRI");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// Exactly once across a crash: with successfulJobsHistoryLimit 0 the finished child is deleted
// at once; an operator SIGKILLed and started again finds no child for that minute, and
// status.lastScheduleTime keeps it from creating (and Slurm from running) the minute again.
TEST_F(CronE2E, AHistoryDeletedChildIsNotCreatedAgainAfterACrash) {
  CommandResult apply = Kubectl({"apply", "-f", "-"},
                                "apiVersion: hpc.slurmoperator.dev/v1alpha1\n"
                                "kind: SlurmCronJob\n"
                                "metadata: {name: once, namespace: cron}\n"
                                "spec:\n"
                                "  schedule: \"* * * * *\"\n"
                                "  successfulJobsHistoryLimit: 0\n"
                                "  jobTemplate:\n"
                                "    spec:\n"
                                "      clusterRef: {name: local}\n"
                                "      timeLimitMinutes: 5\n"
                                "      script: \"#!/bin/bash\\ntrue\\n\"\n");
  ASSERT_EQ(apply.exit_code, 0) << apply.out << apply.err;
  std::string last;
  ASSERT_TRUE(WaitUntil(
      [&] {
        last =
            Kubectl({"get", "-n", kNs, "scj", "once", "-o", "jsonpath={.status.lastScheduleTime}"})
                .out;
        return !last.empty();
      },
      seconds(75)));
  const std::string child = "once-" + std::to_string(ParseTime(last) / 60);
  ASSERT_TRUE(WaitUntil([&] { return AcceptedSubmits(child) == 1; }, seconds(30)));
  ASSERT_TRUE(WaitUntil(
      [&] {
        return Kubectl({"get", "-n", kNs, "sj", child}).exit_code != 0;
      },
      seconds(30)))
      << "the finished child was not deleted by the history limit";
  operator_->Stop(SIGKILL);
  delete operator_;
  StartOperator("operator-2.log");
  ASSERT_GT(ReadPort(*dir_ + "/health.port"), 0) << ReadFile(*dir_ + "/operator-2.log");
  std::this_thread::sleep_for(seconds(8));  // synced, reconciled, and the child's submit settled
  EXPECT_NE(Kubectl({"get", "-n", kNs, "sj", child}).exit_code, 0) << child << " came back";
  EXPECT_EQ(AcceptedSubmits(child), 1);
}

// Only the elected leader runs the SlurmCronJob controller, and a takeover never starts a minute
// twice: two replicas with --leader-elect; the leader creates the first minute's SlurmJob, is
// SIGKILLed (the Lease is not released), and the standby, once it holds the Lease, creates the
// next minutes'. Every minute's SlurmJob is submitted to Slurm exactly once.
TEST_F(CronE2E, AStandbyTakesOverAndEachMinuteRunsOnce) {
  operator_->Stop(SIGTERM, seconds(10));
  delete operator_;
  operator_ = nullptr;
  auto replica = [&](const std::string& id) {
    return new Subprocess(
        {SLURMOP_OPERATOR_BINARY, "--kubeconfig=" + *dir_ + "/kubeconfig", "--health-port=0",
         "--health-port-file=" + *dir_ + "/" + id + ".port", "--min-poll-seconds=0.5",
         "--submit-settle-seconds=10", "--leader-elect", "--leader-elect-namespace=cron",
         "--leader-elect-identity=" + id, "--leader-elect-lease-duration-seconds=3",
         "--leader-elect-renew-deadline-seconds=2", "--leader-elect-retry-period-seconds=0.5",
         "--allow-operator-identity-for-namespaced-clusters", testing::AllowStandInFlag(ap_port_)},
        *dir_ + "/operator-" + id + ".log", testing::OperatorEnv(ap_port_, *dir_));
  };
  std::map<std::string, Subprocess*> replicas = {{"a", replica("a")}, {"b", replica("b")}};
  auto holder = [&] {
    CommandResult r = Kubectl(
        {"get", "lease", "-n", kNs, "slurmjob-operator", "-o", "jsonpath={.spec.holderIdentity}"});
    return r.exit_code == 0 ? r.out : std::string();
  };
  std::string leader;
  ASSERT_TRUE(WaitUntil([&] { return !(leader = holder()).empty(); }, seconds(20)));
  const std::string standby = leader == "a" ? "b" : "a";
  CommandResult apply = Kubectl({"apply", "-f", "-"},
                                "apiVersion: hpc.slurmoperator.dev/v1alpha1\n"
                                "kind: SlurmCronJob\n"
                                "metadata: {name: ha, namespace: cron}\n"
                                "spec:\n"
                                "  schedule: \"* * * * *\"\n"
                                "  jobTemplate:\n"
                                "    spec:\n"
                                "      clusterRef: {name: local}\n"
                                "      timeLimitMinutes: 5\n"
                                "      script: \"#!/bin/bash\\ntrue\\n\"\n");
  ASSERT_EQ(apply.exit_code, 0) << apply.out << apply.err;
  auto last_minute = [&] {
    return ParseTime(
               Kubectl({"get", "-n", kNs, "scj", "ha", "-o", "jsonpath={.status.lastScheduleTime}"})
                   .out) /
           60;
  };
  int64_t first = 0;
  ASSERT_TRUE(WaitUntil([&] { return (first = last_minute()) > 0; }, seconds(75)));
  ASSERT_TRUE(
      WaitUntil([&] { return AcceptedSubmits("ha-" + std::to_string(first)) == 1; }, seconds(30)));
  replicas[leader]->Stop(SIGKILL);
  ASSERT_TRUE(WaitUntil([&] { return holder() == standby; }, seconds(20)));
  int64_t second = 0;
  ASSERT_TRUE(WaitUntil([&] { return (second = last_minute()) > first; }, seconds(75)));
  ASSERT_TRUE(
      WaitUntil([&] { return AcceptedSubmits("ha-" + std::to_string(second)) >= 1; }, seconds(30)));
  std::this_thread::sleep_for(seconds(3));  // room for a duplicate to show
  for (int64_t m = first; m <= second; ++m) {
    EXPECT_LE(AcceptedSubmits("ha-" + std::to_string(m)), 1) << "minute " << m;
  }
  EXPECT_EQ(AcceptedSubmits("ha-" + std::to_string(first)), 1);
  EXPECT_EQ(AcceptedSubmits("ha-" + std::to_string(second)), 1);
  // Each replica started the SlurmCronJob controller only once it led.
  for (const std::string& id : {leader, standby}) {
    const std::string log = ReadFile(*dir_ + "/operator-" + id + ".log");
    const size_t led = log.find("became the leader");
    const size_t started = log.find("SlurmCronJob controller started");
    ASSERT_NE(started, std::string::npos) << id;
    EXPECT_LT(led, started) << id << " started the SlurmCronJob controller before it led";
  }
  delete replicas[leader];
  operator_ = replicas[standby];  // stopped (SIGTERM, exit 0) by the suite's teardown
}

}  // namespace
}  // namespace slurmop
