// File: tests/fuzz/slurm_response_fuzz.cc
//
// Fuzz target: Slurm's JSON answers, as callSlurmRestApi hands them over,
// through every parser of every dialect (v0.0.38 ... v0.0.44):
// ParseSubmit, ParseJob, ParseJobs, ParseDbJob, ParseDbJobs, ParseCancel.
//
// Input: an optional first line "HTTP <status> [<version>]" (e.g.
// "HTTP 404 v0.0.38"), then Slurm's body. Without the line the status is
// 200; without a (supported) version every dialect is tried. A body that is
// not JSON is passed as a JSON string, as the client does with a text/plain
// body; an empty body is null (e.g. a 304).
//
// Checked (dialect.h): no parser throws or crashes on any JSON value; a
// successful submit has a positive job id; a job found by ParseJob /
// ParseDbJob has a job id; an exit code or signal is only reported for a
// final state; every message renders with SlurmMessage::ToString().

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "controller/slurm/dialect.h"
#include "controller/slurm/dialects.h"
#include "nlohmann/json.hpp"
#include "tests/fuzz/fuzz_check.h"

namespace {

using slurmop::slurm::Dialect;
using slurmop::slurm::JobInfo;
using slurmop::slurm::SlurmMessage;

void CheckMessages(const std::vector<SlurmMessage>& messages) {
  for (const SlurmMessage& m : messages) (void)m.ToString();
}

void CheckJob(const JobInfo& job) {
  (void)job.IsFinal();
  FUZZ_CHECK(!job.exit_code.has_value() || job.IsFinal());
  FUZZ_CHECK(!job.signal.has_value() || job.IsFinal());
}

void RunDialect(const Dialect& dialect, int status, const nlohmann::json& body) {
  constexpr int64_t kJobId = 42;
  if (auto submit = dialect.ParseSubmit(status, body); submit.ok()) {
    FUZZ_CHECK(submit->job_id > 0);
    CheckMessages(submit->warnings);
  }
  if (auto lookup = dialect.ParseJob(status, body, kJobId); lookup.ok()) {
    if (lookup->job.has_value()) CheckJob(*lookup->job);
    CheckMessages(lookup->warnings);
  }
  if (auto list = dialect.ParseJobs(status, body); list.ok()) {
    for (const JobInfo& job : list->jobs) CheckJob(job);
    CheckMessages(list->warnings);
  }
  if (auto db = dialect.ParseDbJob(status, body, kJobId); db.ok()) {
    if (db->job.has_value()) CheckJob(*db->job);
    CheckMessages(db->warnings);
  }
  if (auto db_list = dialect.ParseDbJobs(status, body); db_list.ok()) {
    for (const JobInfo& job : db_list->jobs) CheckJob(job);
    CheckMessages(db_list->warnings);
  }
  if (auto cancel = dialect.ParseCancel(status, body, kJobId); cancel.ok()) {
    CheckMessages(cancel->warnings);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [header, body_text] =
      slurmop::fuzz::SplitHeader(slurmop::fuzz::Input(data, size), "HTTP ");
  const int status = slurmop::fuzz::LeadingNumber(header, 5, 200);
  std::string version;
  if (const size_t space = header.find(' ', 5); space != std::string_view::npos) {
    version = std::string(header.substr(space + 1));
  }

  nlohmann::json body;
  if (!body_text.empty()) {
    body = nlohmann::json::parse(body_text, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) body = std::string(body_text);
  }

  if (auto dialect = slurmop::slurm::DialectFor(version); dialect.ok()) {
    RunDialect(**dialect, status, body);
    return 0;
  }
  for (const std::string& v : slurmop::slurm::SupportedVersions()) {
    auto dialect = slurmop::slurm::DialectFor(v);
    FUZZ_CHECK(dialect.ok());
    RunDialect(**dialect, status, body);
  }
  return 0;
}
