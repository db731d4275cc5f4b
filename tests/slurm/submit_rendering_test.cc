// File: tests/slurm/submit_rendering_test.cc
//
// RenderSubmit: golden request bodies per version (the v0.0.38 and v0.0.42
// bodies of slurm-rest-versions.md §4/§5 and the recorded v0.0.38 e2e
// submit), the v0.0.38 key whitelist from 22.05's OpenAPI document, node
// ranges, `extra`, and every validation error.

#include <set>
#include <string>

#include "controller/slurm/dialects.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/slurm/test_fixtures.h"

namespace slurmop::slurm {
namespace {

using nlohmann::json;

const Dialect& D(const std::string& version) {
  absl::StatusOr<const Dialect*> d = DialectFor(version);
  EXPECT_TRUE(d.ok()) << d.status();
  return **d;
}

// The descriptor behind slurm-rest-versions.md §4 (v0.0.38) and §5 (v0.0.42).
JobDescriptor RepresentativeJob() {
  JobDescriptor j;
  j.script = "#!/bin/bash\necho hello\n";
  j.name = "my-run";
  j.partition = "debug";
  j.current_working_directory = "/home/alice";
  j.minimum_nodes = 1;
  j.tasks_per_node = 1;
  j.environment = {{"PATH", "/bin:/usr/bin"}};
  j.time_limit_minutes = 120;
  j.comment = "ns/name";
  j.account = "acct";
  j.qos = "normal";
  j.standard_output = "/home/alice/my-run-%j.out";
  j.standard_error = "/home/alice/my-run-%j.err";
  return j;
}

// Every descriptor field set.
JobDescriptor FullJob() {
  JobDescriptor j;
  j.script = "#!/bin/bash\nsrun hostname\n";
  j.name = "train";
  j.partition = "gpu";
  j.current_working_directory = "/scratch/run1";
  j.nodes = 2;
  j.tasks = 16;
  j.tasks_per_node = 8;
  j.cpus_per_task = 4;
  j.gpus_per_node = 8;
  j.memory_per_node_mb = 65536;
  j.environment = {{"PATH", "/usr/bin:/bin"}, {"OMP_NUM_THREADS", "4"}, {"MSG", "a=b c"}};
  j.time_limit_minutes = 1440;
  j.account = "ml";
  j.qos = "high";
  j.standard_output = "/scratch/run1/out-%j.log";
  j.standard_error = "/scratch/run1/err-%j.log";
  j.constraints = "a100";
  j.reservation = "maint";
  j.comment = "slurmjob-operator:uid-1";
  j.extra = json{{"nice", 10}};
  return j;
}

class SubmitGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SubmitGoldenTest, RepresentativeDescriptor) {
  absl::StatusOr<json> body = D(GetParam()).RenderSubmit(RepresentativeJob());
  ASSERT_TRUE(body.ok()) << body.status();
  const json expected =
      fixtures::LoadJson(fixtures::FindFixture(GetParam(), "submit_request.json"));
  EXPECT_EQ(*body, expected) << "got:\n" << body->dump(2) << "\nwant:\n" << expected.dump(2);
}

TEST_P(SubmitGoldenTest, EveryField) {
  absl::StatusOr<json> body = D(GetParam()).RenderSubmit(FullJob());
  ASSERT_TRUE(body.ok()) << body.status();
  const json expected =
      fixtures::LoadJson(fixtures::FindFixture(GetParam(), "submit_request_full.json"));
  EXPECT_EQ(*body, expected) << "got:\n" << body->dump(2) << "\nwant:\n" << expected.dump(2);
}

// Slurm's `deadline` as each version parses it: 22.05 (v0.0.38) with sbatch's parse_time(),
// which takes a unix time only as "uts<seconds>" (a bare number was refused by the real
// 22.05: "Invalid deadline time", found by RealSlurm.ActiveDeadlineEndsTheJobAndFailsTheSlurmJob);
// data_parser v0.0.39+ as an integer. Not sent without one.
std::string DeadlineText(const json& deadline) {
  return deadline.is_string() ? deadline.get<std::string>() : deadline.dump();
}

TEST_P(SubmitGoldenTest, DeadlineIsAUnixTimeInTheVersionsForm) {
  JobDescriptor j = RepresentativeJob();
  absl::StatusOr<json> without = D(GetParam()).RenderSubmit(j);
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_FALSE(without->at("job").contains("deadline"));
  j.deadline = 1700003600;
  absl::StatusOr<json> body = D(GetParam()).RenderSubmit(j);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(DeadlineText(body->at("job").at("deadline")),
            GetParam() == "v0.0.38" ? "uts1700003600" : "1700003600");
}

TEST_P(SubmitGoldenTest, CommentAlwaysSentEvenEmpty) {
  JobDescriptor j = RepresentativeJob();
  j.comment.clear();
  absl::StatusOr<json> body = D(GetParam()).RenderSubmit(j);
  ASSERT_TRUE(body.ok()) << body.status();
  ASSERT_TRUE(body->at("job").contains("comment"));
  EXPECT_EQ(body->at("job").at("comment"), "");
}

TEST_P(SubmitGoldenTest, ScriptOnlyAtTopLevel) {
  absl::StatusOr<json> body = D(GetParam()).RenderSubmit(RepresentativeJob());
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(body->at("script"), "#!/bin/bash\necho hello\n");
  EXPECT_FALSE(body->at("job").contains("script"));
  EXPECT_EQ(body->size(), 2u);
}

TEST_P(SubmitGoldenTest, NodeRange) {
  JobDescriptor j = RepresentativeJob();
  j.minimum_nodes = 2;
  j.maximum_nodes = 4;
  absl::StatusOr<json> body = D(GetParam()).RenderSubmit(j);
  ASSERT_TRUE(body.ok()) << body.status();
  const json& job = body->at("job");
  if (GetParam() == "v0.0.38") {
    EXPECT_EQ(job.at("nodes"), "2-4");
    EXPECT_FALSE(job.contains("minimum_nodes"));  // a boolean flag on v0.0.38
    EXPECT_FALSE(job.contains("maximum_nodes"));
  } else {
    EXPECT_EQ(job.at("minimum_nodes"), 2);
    EXPECT_EQ(job.at("maximum_nodes"), 4);
    EXPECT_FALSE(job.contains("nodes"));
  }
  j.minimum_nodes.reset();
  body = D(GetParam()).RenderSubmit(j);
  ASSERT_TRUE(body.ok()) << body.status();
  if (GetParam() == "v0.0.38") {
    EXPECT_EQ(body->at("job").at("nodes"), "1-4");
  } else {
    EXPECT_EQ(body->at("job").at("maximum_nodes"), 4);
    EXPECT_FALSE(body->at("job").contains("minimum_nodes"));
  }
}

TEST_P(SubmitGoldenTest, ExtraIsMergedLastAndWinsOverTheUsersFields) {
  JobDescriptor j = RepresentativeJob();
  j.extra = json{{"partition", "other"}, {"nice", 10}};
  absl::StatusOr<json> body = D(GetParam()).RenderSubmit(j);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(body->at("job").at("partition"), "other");
  EXPECT_EQ(body->at("job").at("nice"), 10);
  j.extra = nullptr;  // null counts as "nothing extra"
  EXPECT_TRUE(D(GetParam()).RenderSubmit(j).ok());
}

// #13 E4: extra never replaces the tag, the name, the dependency, the hold,
// the script or the identity (validation refuses such a spec first; this is
// the renderer's own defence).
TEST_P(SubmitGoldenTest, ExtraNeverReplacesTheOperatorsOwnKeys) {
  JobDescriptor j = RepresentativeJob();
  j.dependency = "afterok:7";
  j.deadline = 1700003600;
  j.extra = json{{"comment", "slurmjob-operator:other/uid/1"},
                 {"deadline", 1900000000},
                 {"name", "spoofed"},
                 {"job_name", "spoofed"},
                 {"dependency", ""},
                 {"hold", true},
                 {"priority", 0},
                 {"script", "#!/bin/sh\nrm -rf ~\n"},
                 {"wrap", "rm -rf ~"},
                 {"user_id", 0},
                 {"group_id", 0}};
  absl::StatusOr<json> body = D(GetParam()).RenderSubmit(j);
  ASSERT_TRUE(body.ok()) << body.status();
  const json& job = body->at("job");
  EXPECT_EQ(job.at("comment"), "ns/name");
  EXPECT_EQ(job.at("name"), "my-run");
  EXPECT_EQ(job.at("dependency"), "afterok:7");
  // spec.activeDeadlineSeconds', not extra's
  EXPECT_THAT(DeadlineText(job.at("deadline")), ::testing::EndsWith("1700003600"));
  EXPECT_EQ(body->at("script"), "#!/bin/bash\necho hello\n");
  for (const char* key :
       {"job_name", "hold", "priority", "script", "wrap", "user_id", "group_id"}) {
    EXPECT_FALSE(job.contains(key)) << key;
  }
}

TEST_P(SubmitGoldenTest, EnvironmentKeepsOrderAndDuplicates) {
  JobDescriptor j = RepresentativeJob();
  j.environment = {{"B", "1"}, {"A", "2"}, {"B", "3"}};
  absl::StatusOr<json> body = D(GetParam()).RenderSubmit(j);
  ASSERT_TRUE(body.ok()) << body.status();
  if (GetParam() == "v0.0.38") {
    EXPECT_EQ(body->at("job").at("environment"), (json{{"A", "2"}, {"B", "3"}}));
  } else {
    EXPECT_EQ(body->at("job").at("environment"), (json{"B=1", "A=2", "B=3"}));
  }
}

struct InvalidCase {
  const char* what;
  void (*mutate)(JobDescriptor&);
};

TEST_P(SubmitGoldenTest, RejectsDescriptorsSlurmCannotTake) {
  const InvalidCase cases[] = {
      {"empty script", [](JobDescriptor& j) { j.script.clear(); }},
      {"no cwd", [](JobDescriptor& j) { j.current_working_directory.clear(); }},
      {"no environment", [](JobDescriptor& j) { j.environment.clear(); }},
      {"empty env name",
       [](JobDescriptor& j) {
         j.environment.push_back({"", "x"});
       }},
      {"'=' in env name",
       [](JobDescriptor& j) {
         j.environment.push_back({"A=B", "x"});
       }},
      {"zero nodes", [](JobDescriptor& j) { j.nodes = 0; }},
      {"nodes with range", [](JobDescriptor& j) { j.nodes = 2; }},  // minimum_nodes is set
      {"min > max",
       [](JobDescriptor& j) {
         j.minimum_nodes = 5;
         j.maximum_nodes = 4;
       }},
      {"zero max", [](JobDescriptor& j) { j.maximum_nodes = 0; }},
      {"negative tasks", [](JobDescriptor& j) { j.tasks = -1; }},
      {"zero tasks per node", [](JobDescriptor& j) { j.tasks_per_node = 0; }},
      {"zero cpus per task", [](JobDescriptor& j) { j.cpus_per_task = 0; }},
      {"zero gpus", [](JobDescriptor& j) { j.gpus_per_node = 0; }},
      {"negative memory", [](JobDescriptor& j) { j.memory_per_node_mb = -1; }},
      {"zero time limit", [](JobDescriptor& j) { j.time_limit_minutes = 0; }},
      {"extra not an object", [](JobDescriptor& j) { j.extra = json::array({1}); }},
      {"invalid UTF-8", [](JobDescriptor& j) { j.script = "#!/bin/sh\n\xff\xfe\n"; }},
  };
  for (const InvalidCase& c : cases) {
    JobDescriptor j = RepresentativeJob();
    c.mutate(j);
    absl::StatusOr<json> body = D(GetParam()).RenderSubmit(j);
    EXPECT_EQ(body.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
  }
  JobDescriptor zero_memory = RepresentativeJob();
  zero_memory.memory_per_node_mb = 0;  // --mem=0: all of the node's memory
  EXPECT_TRUE(D(GetParam()).RenderSubmit(zero_memory).ok());
}

INSTANTIATE_TEST_SUITE_P(AllVersions, SubmitGoldenTest, ::testing::ValuesIn(SupportedVersions()),
                         [](const auto& info) { return fixtures::VersionTestName(info.param); });

TEST(SubmitV0038Test, RecordedE2eSubmitBody) {
  JobDescriptor j;
  j.script = "#!/bin/bash\necho hello\nsleep 30\n";
  j.name = "e2e-sleep";
  j.partition = "debug";
  j.current_working_directory = "/tmp/slurm-local/jobs";
  j.environment = {{"PATH", "/bin:/usr/bin"}, {"GREETING", "hi"}};
  j.time_limit_minutes = 5;
  j.comment = "e2e test job";
  absl::StatusOr<json> body = D("v0.0.38").RenderSubmit(j);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, fixtures::LoadJson("v0.0.38/recorded/submit_request_e2e.json"));
}

// v0.0.38 rejects unknown keys with HTTP 400: every key it is sent must be
// in 22.05's job_properties.
TEST(SubmitV0038Test, OnlyKeysThe2205ParserKnows) {
  const json whitelist = fixtures::LoadJson("v0.0.38/job_properties_keys.json");
  ASSERT_TRUE(whitelist.contains("keys"));
  std::set<std::string> known;
  for (const json& k : whitelist.at("keys")) known.insert(k.get<std::string>());
  JobDescriptor j = FullJob();
  j.extra = json::object();
  absl::StatusOr<json> body = D("v0.0.38").RenderSubmit(j);
  ASSERT_TRUE(body.ok()) << body.status();
  for (const auto& [key, value] : body->at("job").items()) {
    EXPECT_TRUE(known.count(key)) << "v0.0.38 would reject key \"" << key << "\"";
  }
  EXPECT_FALSE(body->at("job").contains("minimum_nodes"));
}

}  // namespace
}  // namespace slurmop::slurm
