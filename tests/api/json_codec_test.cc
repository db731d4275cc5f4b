// File: tests/api/json_codec_test.cc
//
// Tests of controller/api/json_codec.h on the real API messages (SlurmJob, SlurmCluster) and, for
// the field kinds the API does not use yet (maps, enums, bytes, oneofs, Duration, wrappers), on a
// dynamic message built from a small proto parsed at test time.

#include "controller/api/json_codec.h"

#include <gmock/gmock.h>
#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/duration.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/timestamp.pb.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "slurmoperator/v1alpha1/slurmcluster.pb.h"
#include "slurmoperator/v1alpha1/slurmjob.pb.h"

namespace slurmop::api {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::nlohmann::json;
using ::slurmoperator::v1alpha1::SlurmClusterSpec;
using ::slurmoperator::v1alpha1::SlurmJob;
using ::slurmoperator::v1alpha1::SlurmJobSpec;
using ::slurmoperator::v1alpha1::SlurmJobStatus;

// 2024-05-01T12:34:56Z
constexpr int64_t kMayFirst = 1714566896;

SlurmJob FullJob() {
  SlurmJob job;
  SlurmJobSpec* spec = job.mutable_spec();
  spec->mutable_cluster_ref()->set_name("local");
  spec->set_script("#!/bin/bash\necho \"hello: world\"\n");
  spec->set_partition("debug");
  spec->set_nodes(2);
  spec->set_gpus_per_node(8);
  spec->set_memory_per_node_mb(int64_t{1} << 40);
  spec->set_time_limit_minutes(5);
  auto* env = spec->add_environment();
  env->set_name("GREETING");
  env->set_value("hi");
  spec->add_environment()->set_name("EMPTY");
  (*spec->mutable_extra()->mutable_fields())["exclusive"].set_string_value("user");
  (*spec->mutable_extra()->mutable_fields())["nice"].set_number_value(10);
  spec->set_deletion_policy("Orphan");
  SlurmJobStatus* status = job.mutable_status();
  status->set_job_id(9007199254740993);  // 2^53 + 1: not representable as a double
  status->set_job_state("RUNNING");
  status->set_observed_generation(3);
  auto* condition = status->add_conditions();
  condition->set_type("Ready");
  condition->set_status("True");
  condition->set_observed_generation(3);
  condition->mutable_last_transition_time()->set_seconds(kMayFirst);
  condition->set_reason("Running");
  condition->set_message("Slurm job 42 is running");
  status->mutable_submit_time()->set_seconds(kMayFirst);
  status->set_exit_code(0);
  return job;
}

TEST(JsonCodecTest, RoundTripsAFullJob) {
  const SlurmJob job = FullJob();
  const json j = ToJson(job);
  SlurmJob back;
  ASSERT_TRUE(FromJson(j, &back).ok());
  std::string differences;
  MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differencer.Compare(job, back)) << differences;
  // And JSON -> proto -> JSON is stable too.
  EXPECT_EQ(ToJson(back), j);
}

TEST(JsonCodecTest, WritesKubernetesStyleJson) {
  const json j = ToJson(FullJob());
  const json expected_spec = R"({
    "clusterRef": {"name": "local"},
    "script": "#!/bin/bash\necho \"hello: world\"\n",
    "partition": "debug",
    "nodes": 2,
    "gpusPerNode": 8,
    "memoryPerNodeMB": 1099511627776,
    "timeLimitMinutes": 5,
    "environment": [{"name": "GREETING", "value": "hi"}, {"name": "EMPTY"}],
    "extra": {"exclusive": "user", "nice": 10},
    "deletionPolicy": "Orphan"
  })"_json;
  EXPECT_EQ(j["spec"], expected_spec) << j["spec"].dump(2);
  const json expected_status = R"({
    "jobId": 9007199254740993,
    "jobState": "RUNNING",
    "observedGeneration": 3,
    "conditions": [{
      "type": "Ready", "status": "True", "observedGeneration": 3,
      "lastTransitionTime": "2024-05-01T12:34:56Z", "reason": "Running",
      "message": "Slurm job 42 is running"
    }],
    "submitTime": "2024-05-01T12:34:56Z",
    "exitCode": 0
  })"_json;
  EXPECT_EQ(j["status"], expected_status) << j["status"].dump(2);
}

TEST(JsonCodecTest, Int64IsAJsonNumberNotAString) {
  const json j = ToJson(FullJob());
  ASSERT_TRUE(j["status"]["jobId"].is_number_integer());
  EXPECT_EQ(j["status"]["jobId"].get<int64_t>(), 9007199254740993);
  EXPECT_TRUE(j["spec"]["memoryPerNodeMB"].is_number_integer());
  EXPECT_EQ(j.dump().find("\"9007199254740993\""), std::string::npos);
  EXPECT_NE(j.dump().find("\"jobId\":9007199254740993"), std::string::npos);
}

TEST(JsonCodecTest, ReadsIntegersFromNumbersNumericStringsAndIntegralFloats) {
  SlurmJobSpec spec;
  ASSERT_TRUE(FromJson(R"({"nodes": "3", "memoryPerNodeMB": "123456789012",
                           "tasks": 4.0, "cpusPerTask": 2})"_json,
                       &spec)
                  .ok());
  EXPECT_EQ(spec.nodes(), 3);
  EXPECT_EQ(spec.memory_per_node_mb(), 123456789012);
  EXPECT_EQ(spec.tasks(), 4);
  EXPECT_EQ(spec.cpus_per_task(), 2);
}

TEST(JsonCodecTest, ProtoScalarDefaultsAndEmptyThingsAreOmitted) {
  SlurmJobSpec spec;
  spec.set_nodes(0);
  spec.set_partition("");
  EXPECT_EQ(ToJson(spec), json::object());
  spec.mutable_cluster_ref();  // set, though empty
  EXPECT_EQ(ToJson(spec), R"({"clusterRef": {}})"_json);
}

TEST(JsonCodecTest, OptionalExitCodeZeroIsPresentUnsetIsAbsent) {
  SlurmJobStatus status;
  EXPECT_FALSE(ToJson(status).contains("exitCode"));
  status.set_exit_code(0);
  EXPECT_EQ(ToJson(status), R"({"exitCode": 0})"_json);

  SlurmJobStatus decoded;
  ASSERT_TRUE(FromJson(R"({"exitCode": 0})"_json, &decoded).ok());
  EXPECT_TRUE(decoded.has_exit_code());
  EXPECT_EQ(decoded.exit_code(), 0);
  ASSERT_TRUE(FromJson(R"({"exitCode": null})"_json, &decoded).ok());
  EXPECT_FALSE(decoded.has_exit_code());
  ASSERT_TRUE(FromJson(json::object(), &decoded).ok());
  EXPECT_FALSE(decoded.has_exit_code());
}

TEST(JsonCodecTest, TimestampsReadRfc3339AndWriteUtcSeconds) {
  struct Case {
    std::string text;
    int64_t seconds;
    int32_t nanos;
  };
  for (const Case& c : std::vector<Case>{
           {"2024-05-01T12:34:56Z", kMayFirst, 0},
           {"2024-05-01T12:34:56.789Z", kMayFirst, 789000000},
           {"2024-05-01T12:34:56.000000001Z", kMayFirst, 1},
           {"2024-05-01T14:34:56+02:00", kMayFirst, 0},
           {"2024-05-01T10:04:56.5-02:30", kMayFirst, 500000000},
           {"1969-12-31T23:59:59.5Z", -1, 500000000},
       }) {
    SCOPED_TRACE(c.text);
    SlurmJobStatus status;
    ASSERT_TRUE(FromJson(json{{"startTime", c.text}}, &status).ok());
    EXPECT_EQ(status.start_time().seconds(), c.seconds);
    EXPECT_EQ(status.start_time().nanos(), c.nanos);
  }
  SlurmJobStatus status;
  status.mutable_end_time()->set_seconds(kMayFirst);
  status.mutable_end_time()->set_nanos(999999999);  // metav1.Time drops the fraction
  EXPECT_EQ(ToJson(status)["endTime"], "2024-05-01T12:34:56Z");
  status.mutable_end_time()->set_seconds(-62135596800);
  status.mutable_end_time()->set_nanos(0);
  EXPECT_EQ(ToJson(status)["endTime"], "0001-01-01T00:00:00Z");
}

TEST(JsonCodecTest, RejectsBadTimestampsWithThePath) {
  for (const json& bad : {json("yesterday"), json("2024-05-01 12:34:56"), json("2024-05-01"),
                          json(1714566896), json("2024-05-01T12:34:56")}) {
    SCOPED_TRACE(bad.dump());
    SlurmJob job;
    absl::Status status = FromJson(json{{"status", {{"submitTime", bad}}}}, &job);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()),
                ::testing::StartsWith("status.submitTime: expected an RFC 3339 timestamp"));
  }
}

TEST(JsonCodecTest, StructCarriesArbitraryJson) {
  const json extra = R"({
    "exclusive": "user", "nice": 10, "ratio": 0.5, "flag": false, "nothing": null,
    "list": [1, "two", [3], {"four": 4}], "nested": {"deeper": {"x": -7}}
  })"_json;
  SlurmJobSpec spec;
  ASSERT_TRUE(FromJson(json{{"extra", extra}}, &spec).ok());
  EXPECT_EQ(spec.extra().fields().at("nice").number_value(), 10);
  EXPECT_EQ(spec.extra()
                .fields()
                .at("nested")
                .struct_value()
                .fields()
                .at("deeper")
                .struct_value()
                .fields()
                .at("x")
                .number_value(),
            -7);
  EXPECT_EQ(ToJson(spec)["extra"], extra);
  // Integral numbers stay integers in the output: "nice": 10, not 10.0.
  EXPECT_NE(ToJson(spec).dump().find("\"nice\":10,"), std::string::npos) << ToJson(spec).dump();
}

TEST(JsonCodecTest, StructMustBeAnObject) {
  SlurmJobSpec spec;
  absl::Status status = FromJson(R"({"extra": [1]})"_json, &spec);
  EXPECT_EQ(status.message(), "extra: expected an object, got an array");
}

TEST(JsonCodecTest, ErrorsNameTheFieldPath) {
  struct Case {
    json object;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"spec": {"nodes": "abc"}})"_json, "spec.nodes: expected an integer, got \"abc\""},
           {R"({"spec": {"nodes": 2.5}})"_json, "spec.nodes: expected an integer, got 2.5"},
           {R"({"spec": {"nodes": true}})"_json, "spec.nodes: expected an integer, got true"},
           {R"({"spec": {"nodes": 3000000000}})"_json,
            "spec.nodes: 3000000000 is out of range for int32"},
           {R"({"spec": {"nodes": " 3"}})"_json, "spec.nodes: expected an integer, got \" 3\""},
           {R"({"spec": {"environment": [{"name": "A"}, {"name": 5}]}})"_json,
            "spec.environment[1].name: expected a string, got 5"},
           {R"({"spec": {"environment": {"name": "A"}}})"_json,
            "spec.environment: expected an array, got an object"},
           {R"({"spec": {"environment": [null]}})"_json,
            "spec.environment[0]: expected an object, got null"},
           {R"({"spec": {"clusterRef": "local"}})"_json,
            "spec.clusterRef: expected an object, got \"local\""},
           {R"({"spec": {"scriptFrom": {"configMapKeyRef": {"name": ["x"]}}}})"_json,
            "spec.scriptFrom.configMapKeyRef.name: expected a string, got an array"},
           {R"({"status": {"jobId": "12x"}})"_json,
            "status.jobId: expected an integer, got \"12x\""},
           {R"({"spec": 7})"_json, "spec: expected an object, got 7"},
           {R"([1, 2])"_json, "expected an object, got an array"},
       }) {
    SCOPED_TRACE(c.object.dump());
    SlurmJob job;
    absl::Status status = FromJson(c.object, &job);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), c.message);
  }
}

// The value shown in a message is cut to 64 bytes without splitting a UTF-8 sequence: the
// message reaches a condition, and a split sequence made the status write fail to serialize.
TEST(JsonCodecTest, AShownValueIsCutWithoutSplittingUtf8) {
  std::string value(59, 'x');  // dumped as '"' + 59 x: the first two-byte é starts at byte 60
  for (int i = 0; i < 40; ++i) value += "\u00e9";
  SlurmJob job;
  const absl::Status status = FromJson(json{{"spec", {{"nodes", value}}}}, &job);
  ASSERT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NO_THROW(json(std::string(status.message())).dump()) << "split UTF-8";
  EXPECT_TRUE(absl::EndsWith(status.message(), "...")) << status.message();
}

TEST(JsonCodecTest, UnknownFieldsAndProtoNamesAreIgnored) {
  SlurmJob job;
  ASSERT_TRUE(FromJson(R"({
    "apiVersion": "hpc.slurmoperator.dev/v1alpha1", "kind": "SlurmJob",
    "metadata": {"name": "hello", "resourceVersion": "12"},
    "spec": {"partition": "debug", "futureField": {"a": 1}, "memory_per_node_mb": 5,
             "memoryPerNodeMB": 7}
  })"_json,
                       &job)
                  .ok());
  EXPECT_EQ(job.spec().partition(), "debug");
  EXPECT_EQ(job.spec().memory_per_node_mb(), 7);  // the JSON name wins; the proto name is unknown
}

TEST(JsonCodecTest, NullLeavesFieldsUnset) {
  SlurmJob job;
  ASSERT_TRUE(FromJson(R"({"spec": {"partition": null, "clusterRef": null, "environment": null,
                                     "extra": null}, "status": null})"_json,
                       &job)
                  .ok());
  EXPECT_TRUE(job.has_spec());
  EXPECT_FALSE(job.spec().has_cluster_ref());
  EXPECT_FALSE(job.spec().has_extra());
  EXPECT_EQ(job.spec().environment_size(), 0);
  EXPECT_FALSE(job.has_status());
}

TEST(JsonCodecTest, FromJsonReplacesThePreviousContent) {
  SlurmClusterSpec spec;
  spec.set_region("europe-west4");
  ASSERT_TRUE(FromJson(R"({"projectId": "p"})"_json, &spec).ok());
  EXPECT_EQ(spec.project_id(), "p");
  EXPECT_EQ(spec.region(), "");
}

TEST(JsonCodecTest, OutputIsDeterministic) {
  const std::string first = ToJson(FullJob()).dump();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ToJson(FullJob()).dump(), first);
}

TEST(JsonCodecTest, WellKnownTypesAtTheTop) {
  google::protobuf::Duration duration;
  ASSERT_TRUE(FromJson(json("1.5s"), &duration).ok());
  EXPECT_EQ(duration.seconds(), 1);
  EXPECT_EQ(duration.nanos(), 500000000);
  EXPECT_EQ(ToJson(duration), "1.500s");
  ASSERT_TRUE(FromJson(json("-0.000001s"), &duration).ok());
  EXPECT_EQ(duration.seconds(), 0);
  EXPECT_EQ(duration.nanos(), -1000);
  EXPECT_EQ(ToJson(duration), "-0.000001s");
  EXPECT_FALSE(FromJson(json("5m"), &duration).ok());
  EXPECT_FALSE(FromJson(json("1.s"), &duration).ok());

  google::protobuf::Value value;
  ASSERT_TRUE(FromJson(json::parse("[1, {\"a\": null}]"), &value).ok());
  EXPECT_EQ(ToJson(value), json::parse("[1, {\"a\": null}]"));
}

// --- Field kinds the API protos do not use, on a dynamic message -------------------------------

constexpr char kSampleProto[] = R"pb(
  syntax = "proto3"
  ;
package codec.test;
import "google/protobuf/duration.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/wrappers.proto";

enum Mode {
  MODE_UNSPECIFIED = 0;
  FAST = 1;
}

message Sample {
  map<string, int64> limits = 1;
  map<int32, string> names = 2;
  Mode mode = 3;
  bytes blob = 4;
  uint64 big = 5;
  float ratio = 6;
  google.protobuf.Duration timeout = 7;
  google.protobuf.Int64Value wrapped = 8;
  repeated google.protobuf.Value values = 9;
  oneof choice {
    string a = 10;
    int32 b = 11;
  }
  repeated int64 counts = 12;
  google.protobuf.Value any = 13;
  map<bool, string> flags = 14;
  double precise = 15;
}
)pb";

class DynamicSampleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    google::protobuf::io::ArrayInputStream input(kSampleProto, sizeof(kSampleProto) - 1);
    google::protobuf::io::Tokenizer tokenizer(&input, nullptr);
    google::protobuf::compiler::Parser parser;
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(parser.Parse(&tokenizer, &file));
    file.set_name("codec_test_sample.proto");
    const google::protobuf::FileDescriptor* built = pool_.BuildFile(file);
    ASSERT_NE(built, nullptr);
    prototype_ = factory_.GetPrototype(built->FindMessageTypeByName("Sample"));
  }

  std::unique_ptr<google::protobuf::Message> Decode(const json& j, absl::Status* status) {
    std::unique_ptr<google::protobuf::Message> msg(prototype_->New());
    *status = FromJson(j, msg.get());
    return msg;
  }

  // JSON -> message -> JSON must give `j` back.
  void ExpectRoundTrip(const json& j) {
    absl::Status status;
    auto msg = Decode(j, &status);
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(ToJson(*msg), j);
  }

  google::protobuf::DescriptorPool pool_{google::protobuf::DescriptorPool::generated_pool()};
  google::protobuf::DynamicMessageFactory factory_{&pool_};
  const google::protobuf::Message* prototype_ = nullptr;
};

TEST_F(DynamicSampleTest, MapsEnumsBytesAndNumbersRoundTrip) {
  ExpectRoundTrip(R"({
    "limits": {"a": 5000000000, "b": -1},
    "names": {"7": "seven", "-2": "minus two"},
    "flags": {"true": "yes"},
    "mode": "FAST",
    "blob": "aGVsbG8=",
    "big": 18446744073709551615,
    "ratio": 0.1,
    "precise": 0.1,
    "timeout": "90s",
    "wrapped": 0,
    "values": [1, "x", null, {"k": []}, true],
    "counts": [1, -2, 9007199254740993],
    "b": 4
  })"_json);
}

TEST_F(DynamicSampleTest, LenientInputs) {
  absl::Status status;
  auto msg = Decode(R"({"mode": 1, "counts": ["7", 8.0], "blob": "aGVsbG8", "ratio": "NaN"})"_json,
                    &status);
  ASSERT_TRUE(status.ok()) << status;
  const json out = ToJson(*msg);
  EXPECT_EQ(out["mode"], "FAST");
  EXPECT_EQ(out["counts"], json::parse("[7, 8]"));
  EXPECT_EQ(out["blob"], "aGVsbG8=");
  EXPECT_EQ(out["ratio"], "NaN");
}

TEST_F(DynamicSampleTest, ValueFieldKeepsAnExplicitNull) {
  ExpectRoundTrip(R"({"any": null})"_json);
  ExpectRoundTrip(R"({"any": {"nested": [1.5]}})"_json);
}

TEST_F(DynamicSampleTest, Errors) {
  struct Case {
    json object;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"names": {"x": "y"}})"_json, "names[\"x\"]: expected an integer, got \"x\""},
           {R"({"limits": {"a": "b"}})"_json, "limits[\"a\"]: expected an integer, got \"b\""},
           {R"({"flags": {"maybe": "y"}})"_json,
            "flags[\"maybe\"]: expected a boolean, got \"maybe\""},
           {R"({"mode": "SLOW"})"_json, "mode: expected a value name of the enum, got \"SLOW\""},
           {R"({"big": -1})"_json, "big: -1 is out of range for uint64"},
           {R"({"blob": "***"})"_json, "blob: expected a base64 string, got \"***\""},
           {R"({"timeout": 5})"_json, "timeout: expected a duration like \"1.5s\", got 5"},
           {R"({"wrapped": "x"})"_json, "wrapped: expected an integer, got \"x\""},
           {R"({"a": "x", "b": 1})"_json, "b: only one field of `choice` may be set"},
           {R"({"counts": [1, "two"]})"_json, "counts[1]: expected an integer, got \"two\""},
           {R"({"ratio": 1e300})"_json, "ratio: 1e+300 is out of range for float"},
       }) {
    SCOPED_TRACE(c.object.dump());
    absl::Status status;
    Decode(c.object, &status);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), c.message);
  }
}

}  // namespace
}  // namespace slurmop::api
