// File: tests/slurm/job_record_keys_test.cc
//
// Dialect::JobRecordKeys() names every key of a /slurm job record that the
// parsers read: for every version and every response fixture of that version
// (tests/slurm/testdata, the recordings of a real Slurm included), an answer
// decoded with the `jobs` filter of agentplatform::DecodeResponse() (only
// those keys kept in each job) parses exactly as the full answer does, with
// ParseJobs and with ParseJob for every job id it holds, whichever envelope
// form carries it (structuredBody, `body` as an object, `body` as text); and
// the keys left out may hold anything without changing either parse. And the
// same answers streamed record by record (DecodeResponseStream into a
// JobListDecoder, the tracker's path) parse as the whole ones.

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/agentplatform/envelope.h"
#include "controller/slurm/dialects.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/slurm/test_fixtures.h"
#include "tests/testing/chunked_body_source.h"

namespace slurmop::slurm {
namespace {

using nlohmann::json;

struct Fixture {
  std::string name;  // relative to testdata
  int status = 0;
  json body;
};

// Every {"status": N, "body": ...} file under the version's fixture dirs.
std::vector<Fixture> ResponseFixtures(const std::string& version) {
  std::vector<Fixture> out;
  for (const std::string& dir : fixtures::FixtureDirs(version)) {
    const std::filesystem::path root = fixtures::TestdataPath(dir);
    std::error_code ec;
    if (!std::filesystem::is_directory(root, ec)) continue;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      json wrapper = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
      if (!wrapper.is_object() || !wrapper.contains("body") || !wrapper.contains("status") ||
          !wrapper["status"].is_number_integer()) {
        continue;  // a request fixture, or a key list
      }
      out.push_back({std::filesystem::relative(entry.path(), fixtures::TestdataPath("")).string(),
                     wrapper["status"].get<int>(), wrapper["body"]});
    }
  }
  return out;
}

std::string Describe(const JobInfo& j) {
  auto time = [](const std::optional<Time>& t) {
    return t ? absl::StrCat(
                   std::chrono::duration_cast<std::chrono::seconds>(t->time_since_epoch()).count())
             : std::string("-");
  };
  return absl::StrCat(
      "{id=", j.job_id, " name=", j.name, " comment=", j.comment, " partition=", j.partition,
      " state=", std::string(BaseStateName(j.state)), " flags=", absl::StrJoin(j.flags, "|"),
      " reason=", j.state_reason, " description=", j.state_description,
      " exit=", j.exit_code ? absl::StrCat(*j.exit_code) : "-",
      " signal=", j.signal ? absl::StrCat(*j.signal) : "-", " submit=", time(j.submit_time),
      " start=", time(j.start_time), " end=", time(j.end_time), " stdout=", j.standard_output,
      " stderr=", j.standard_error, "}");
}

std::string Describe(const std::vector<SlurmMessage>& messages) {
  std::vector<std::string> parts;
  for (const SlurmMessage& m : messages) parts.push_back(m.ToString());
  return absl::StrJoin(parts, "; ");
}

std::string Describe(const absl::StatusOr<JobList>& list) {
  if (!list.ok()) return list.status().ToString();
  std::vector<std::string> jobs;
  for (const JobInfo& j : list->jobs) jobs.push_back(Describe(j));
  return absl::StrCat("unchanged=", list->unchanged,
                      " last_update=", list->last_update ? *list->last_update : -1, " warnings=[",
                      Describe(list->warnings), "] jobs=[", absl::StrJoin(jobs, ", "), "]");
}

std::string Describe(const absl::StatusOr<PackedJobList>& list) {
  if (!list.ok()) return list.status().ToString();
  for (const PackedJob& j : list->jobs) {
    absl::StatusOr<JobInfo> job = UnpackJob(j.bytes);
    if (!job.ok() || job->job_id != j.job_id || job->IsFinal() != j.final) {
      return absl::StrCat("packed job ", j.job_id, " does not unpack to itself");
    }
  }
  return Describe(UnpackJobList(*list));
}

std::string Describe(const absl::StatusOr<JobLookup>& lookup) {
  if (!lookup.ok()) return lookup.status().ToString();
  return absl::StrCat("job=", lookup->job ? Describe(*lookup->job) : "none", " warnings=[",
                      Describe(lookup->warnings), "]");
}

// The envelopes that can carry `body`: structuredBody (objects only), `body`
// as a JSON value, and `body` as text.
std::vector<std::string> Envelopes(int status, const json& body) {
  std::vector<std::string> out;
  if (body.is_object()) {
    out.push_back(json{{"status", status}, {"structuredBody", body}}.dump());
  }
  out.push_back(json{{"status", status}, {"body", body}}.dump());
  if (!body.is_null() && !body.is_string()) {
    out.push_back(json{{"status", status}, {"body", body.dump()}}.dump());
  }
  return out;
}

class JobRecordKeysTest : public ::testing::TestWithParam<std::string> {};

TEST_P(JobRecordKeysTest, AFilteredAnswerParsesAsTheFullOne) {
  const std::string version = GetParam();
  const Dialect* dialect = *DialectFor(version);
  agentplatform::CallOptions filter;
  filter.job_fields = dialect->JobRecordKeys();
  ASSERT_FALSE(filter.job_fields.empty());

  const std::vector<Fixture> all = ResponseFixtures(version);
  ASSERT_FALSE(all.empty()) << version;
  int records = 0;          // job records seen across the fixtures
  int records_reduced = 0;  // ... of which the filter dropped keys
  for (const Fixture& f : all) {
    for (const std::string& envelope : Envelopes(f.status, f.body)) {
      SCOPED_TRACE(absl::StrCat(version, " ", f.name, " as ", envelope.substr(0, 40)));
      absl::StatusOr<agentplatform::SlurmResponse> full = agentplatform::DecodeResponse(envelope);
      absl::StatusOr<agentplatform::SlurmResponse> kept =
          agentplatform::DecodeResponse(envelope, filter);
      ASSERT_TRUE(full.ok()) << full.status();
      ASSERT_TRUE(kept.ok()) << kept.status();
      ASSERT_EQ(full->status, kept->status);

      EXPECT_EQ(Describe(dialect->ParseJobs(kept->status, kept->body)),
                Describe(dialect->ParseJobs(full->status, full->body)));
      std::vector<int64_t> ids = {999999};
      if (full->body.is_object() && full->body.contains("jobs") && full->body["jobs"].is_array()) {
        const json& jobs = full->body["jobs"];
        for (size_t i = 0; i < jobs.size(); ++i) {
          if (!jobs[i].is_object()) continue;
          ++records;
          if (kept->body["jobs"][i].size() < jobs[i].size()) ++records_reduced;
          for (const auto& [key, value] : kept->body["jobs"][i].items()) {
            EXPECT_EQ(value, jobs[i][key]) << key;  // kept keys are kept whole
          }
          if (jobs[i].contains("job_id") && jobs[i]["job_id"].is_number_integer()) {
            ids.push_back(jobs[i]["job_id"].get<int64_t>());
          }
        }
      }
      for (int64_t id : ids) {
        EXPECT_EQ(Describe(dialect->ParseJob(kept->status, kept->body, id)),
                  Describe(dialect->ParseJob(full->status, full->body, id)))
            << "job " << id;
      }
    }
  }
  // The fixtures hold job records with keys the parsers do not read, so the
  // comparison above is not trivially true.
  EXPECT_GT(records, 0) << version;
  EXPECT_GT(records_reduced, 0) << version;
}

// Keys a slurmctld or slurmdb job record may carry in some version (those of
// tests/fakes/slurm_sim.py's records and of slurm-rest-versions.md).
const char* const kOtherJobKeys[] = {"account",
                                     "accrue_time",
                                     "admin_comment",
                                     "array_job_id",
                                     "array_task_id",
                                     "array_max_tasks",
                                     "array_task_string",
                                     "association_id",
                                     "batch_features",
                                     "batch_flag",
                                     "batch_host",
                                     "flags",
                                     "burst_buffer",
                                     "burst_buffer_state",
                                     "cluster",
                                     "cluster_features",
                                     "command",
                                     "container",
                                     "contiguous",
                                     "cpus",
                                     "cpus_per_task",
                                     "current_working_directory",
                                     "deadline",
                                     "dependency",
                                     "derived_exit_code",
                                     "eligible_time",
                                     "excluded_nodes",
                                     "features",
                                     "group_id",
                                     "group_name",
                                     "last_sched_evaluation",
                                     "licenses",
                                     "max_cpus",
                                     "max_nodes",
                                     "nice",
                                     "node_count",
                                     "nodes",
                                     "priority",
                                     "qos",
                                     "requeue",
                                     "restart_cnt",
                                     "resv_name",
                                     "standard_error",
                                     "standard_input",
                                     "standard_output",
                                     "suspend_time",
                                     "system_comment",
                                     "tasks",
                                     "tasks_per_node",
                                     "time_limit",
                                     "time_minimum",
                                     "tres_req_str",
                                     "tres_alloc_str",
                                     "user_id",
                                     "user_name",
                                     "wckey",
                                     "state",
                                     "time",
                                     "steps",
                                     "submit_line",
                                     "stdout_expanded",
                                     "stderr_expanded",
                                     "stdin_expanded",
                                     "segment_size",
                                     "licenses_allocated",
                                     "het_job_id",
                                     "job",
                                     "id",
                                     "status",
                                     "reason",
                                     "current",
                                     "signal",
                                     "return_code",
                                     "user",
                                     "array"};

// A key that JobRecordKeys() leaves out may hold anything without changing
// what ParseJobs and ParseJob make of a record: every key seen in any
// version's fixtures or in kOtherJobKeys is given values of every shape
// Slurm uses (a flag name, a number, a set/number wrapper, a state array, an
// exit-code or slurmdb structure) in every fixture record. A key the parsers
// read but the list missed changes the result for one of them.
TEST_P(JobRecordKeysTest, KeysLeftOutAreNeverRead) {
  const std::string version = GetParam();
  const Dialect* dialect = *DialectFor(version);
  const std::vector<std::string>& listed = dialect->JobRecordKeys();
  std::set<std::string> candidates(std::begin(kOtherJobKeys), std::end(kOtherJobKeys));
  std::vector<json> records;
  for (const std::string& v : SupportedVersions()) {
    for (const Fixture& f : ResponseFixtures(v)) {
      if (!f.body.is_object() || !f.body.contains("jobs") || !f.body["jobs"].is_array()) continue;
      for (const json& record : f.body["jobs"]) {
        if (!record.is_object()) continue;
        for (const auto& [key, value] : record.items()) candidates.insert(key);
        if (v == version) records.push_back(record);
      }
    }
  }
  for (const std::string& key : listed) candidates.erase(key);
  ASSERT_FALSE(records.empty());
  const json poisons[] = {
      "COMPLETED",
      "poison",
      123456,
      json{{"set", true}, {"infinite", false}, {"number", 654321}},
      json::array({"FAILED", "COMPLETING"}),
      json{{"status", {"SIGNALED"}},
           {"signal", {{"id", 9}, {"signal_id", 9}, {"name", "KILL"}}},
           {"return_code", 5},
           {"current", {"FAILED"}},
           {"reason", "poison"},
           {"job", "poison"},
           {"submission", 1700000001},
           {"start", 1700000002},
           {"end", 1700000003}},
      nullptr,
  };
  for (const json& record : records) {
    const json body = {{"jobs", json::array({record})}};
    const int64_t id =
        record.value("job_id", json(0)).is_number_integer() ? record["job_id"].get<int64_t>() : 0;
    const std::string want_list = Describe(dialect->ParseJobs(200, body));
    const std::string want_job = Describe(dialect->ParseJob(200, body, id));
    for (const std::string& key : candidates) {
      for (const json& poison : poisons) {
        json changed = body;
        changed["jobs"][0][key] = poison;
        EXPECT_EQ(Describe(dialect->ParseJobs(200, changed)), want_list)
            << key << " = " << poison.dump() << " in " << record.dump();
        EXPECT_EQ(Describe(dialect->ParseJob(200, changed, id)), want_job)
            << key << " = " << poison.dump() << " in " << record.dump();
      }
    }
  }
}

// The tracker's path (job_tracker.cc ListJobs): the answer decoded as it
// streams in, each record decoded into a JobInfo as it closes
// (JobListDecoder), parses as the whole answer does, for every version,
// fixture and envelope form, in chunks of 1, 7 and 4096 bytes.
class DecoderSink final : public agentplatform::JobSink {
 public:
  explicit DecoderSink(JobListDecoder& records) : records_(records) {}
  absl::Status Job(json record) override {
    records_.Add(record);
    return absl::OkStatus();
  }
  void Restart() override { records_.Restart(); }

 private:
  JobListDecoder& records_;
};

TEST_P(JobRecordKeysTest, AStreamedAnswerParsesAsTheWholeOne) {
  const std::string version = GetParam();
  const Dialect* dialect = *DialectFor(version);
  agentplatform::CallOptions whole;
  whole.job_fields = dialect->JobRecordKeys();
  int streamed_records = 0;
  for (const Fixture& f : ResponseFixtures(version)) {
    for (const std::string& envelope : Envelopes(f.status, f.body)) {
      SCOPED_TRACE(absl::StrCat(version, " ", f.name, " as ", envelope.substr(0, 40)));
      absl::StatusOr<agentplatform::SlurmResponse> full =
          agentplatform::DecodeResponse(envelope, whole);
      ASSERT_TRUE(full.ok()) << full.status();
      const std::string want = Describe(dialect->ParseJobs(full->status, full->body));
      for (size_t chunk : {size_t{1}, size_t{7}, size_t{4096}}) {
        JobListDecoder records;
        DecoderSink sink(records);
        agentplatform::CallOptions options = whole;
        options.job_sink = &sink;
        slurmop::testing::ChunkedBodySource source(envelope, {chunk});
        absl::StatusOr<agentplatform::SlurmResponse> r =
            agentplatform::DecodeResponseStream(source, options);
        ASSERT_TRUE(r.ok()) << r.status();
        streamed_records += static_cast<int>(records.records());
        EXPECT_EQ(Describe(dialect->ParseJobs(r->status, r->body, records)), want)
            << "chunks of " << chunk;
      }
    }
  }
  EXPECT_GT(streamed_records, 0) << version;
}

INSTANTIATE_TEST_SUITE_P(AllVersions, JobRecordKeysTest, ::testing::ValuesIn(SupportedVersions()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return fixtures::VersionTestName(info.param);
                         });

TEST(JobRecordKeysTest, NamesTheKeysTheDecoderReads) {
  for (const std::string& version : SupportedVersions()) {
    EXPECT_THAT((*DialectFor(version))->JobRecordKeys(),
                ::testing::IsSupersetOf({"job_id", "name", "partition", "comment", "job_state",
                                         "state_reason", "state_description", "submit_time",
                                         "start_time", "end_time", "exit_code"}))
        << version;
  }
}

}  // namespace
}  // namespace slurmop::slurm
