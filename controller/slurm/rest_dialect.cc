// File: controller/slurm/rest_dialect.cc
//
// Paths and the exception fence around rendering and parsing.

#include "controller/slurm/rest_dialect.h"

#include <cctype>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/slurm/job_record_decoding.h"
#include "controller/slurm/response_parsing.h"
#include "controller/slurm/submit_rendering.h"
#include "controller/slurm/text_compat.h"

namespace slurmop::slurm {
namespace {

// Runs `fn`, turning anything thrown (the JSON library throws on misuse; the
// code below is written not to) into kInternal.
template <typename Fn>
auto Fenced(std::string_view what, Fn&& fn) -> decltype(fn()) {
  try {
    return std::forward<Fn>(fn)();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(ToAbsl(what), ": ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat(ToAbsl(what), ": unknown exception"));
  }
}

}  // namespace

std::string RestDialect::SubmitPath() const {
  return absl::StrCat("/slurm/", ToAbsl(format_.version), "/job/submit");
}

std::string RestDialect::JobPath(int64_t job_id) const {
  return absl::StrCat("/slurm/", ToAbsl(format_.version), "/job/", job_id);
}

std::string RestDialect::JobsPath(std::optional<int64_t> update_time) const {
  std::string path = absl::StrCat("/slurm/", ToAbsl(format_.version), "/jobs/");
  if (update_time.has_value()) absl::StrAppend(&path, "?update_time=", *update_time);
  return path;
}

std::string RestDialect::DbJobsPath(std::string_view job_name, int64_t start_time) const {
  // Percent-encode everything outside RFC 3986's unreserved set.
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string encoded;
  for (unsigned char c : job_name) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      encoded += static_cast<char>(c);
    } else {
      encoded += '%';
      encoded += kHex[c >> 4];
      encoded += kHex[c & 15];
    }
  }
  return absl::StrCat("/slurmdb/", ToAbsl(format_.version), "/jobs?job_name=", encoded,
                      "&start_time=uts", start_time);
}

std::string RestDialect::CancelPath(int64_t job_id) const { return JobPath(job_id); }

std::string RestDialect::DbJobPath(int64_t job_id) const {
  return absl::StrCat("/slurmdb/", ToAbsl(format_.version), "/job/", job_id);
}

std::string RestDialect::DbJobsByIdPath(const std::vector<int64_t>& job_ids) const {
  const char* const separator =
      format_.slurmdb_id_list == SlurmdbIdList::kCommaSeparated ? "%2C" : "&step=";
  return absl::StrCat("/slurmdb/", ToAbsl(format_.version),
                      "/jobs?step=", absl::StrJoin(job_ids, separator));
}

std::string RestDialect::PingPath() const {
  return absl::StrCat("/slurm/", ToAbsl(format_.version), "/ping/");
}

std::string RestDialect::UpdatePath(int64_t job_id) const { return JobPath(job_id); }

absl::StatusOr<nlohmann::json> RestDialect::RenderUpdate(const JobUpdate& update) const {
  nlohmann::json body = nlohmann::json::object();
  if (update.comment) body["comment"] = *update.comment;
  // "hold": false releases in every version: checked on 22.05.8's v0.0.38,
  // which refuses the INFINITE priority scontrol sends ("Priority too large").
  if (update.hold) body["hold"] = *update.hold;
  if (body.empty()) return absl::InvalidArgumentError("a job update must change something");
  if (format_.update == UpdateFormat::kBareAndWrapped) {
    nlohmann::json wrapped = body;
    body["job"] = std::move(wrapped);
  }
  return body;
}

absl::StatusOr<UpdateResponse> RestDialect::ParseUpdate(int http_status,
                                                        const nlohmann::json& body) const {
  return Fenced("reading the update response",
                [&] { return ParseUpdateResponse(http_status, body); });
}

absl::StatusOr<nlohmann::json> RestDialect::RenderSubmit(const JobDescriptor& job) const {
  return Fenced("rendering the submit request",
                [&] { return RenderSubmitBody(job, format_.submit); });
}

absl::StatusOr<SubmitResponse> RestDialect::ParseSubmit(int http_status,
                                                        const nlohmann::json& body) const {
  return Fenced("reading the submit response",
                [&] { return ParseSubmitResponse(http_status, body); });
}

absl::StatusOr<JobLookup> RestDialect::ParseJob(int http_status, const nlohmann::json& body,
                                                int64_t job_id) const {
  return Fenced("reading the job response",
                [&] { return ParseJobResponse(http_status, body, job_id); });
}

absl::StatusOr<JobList> RestDialect::ParseJobs(int http_status, const nlohmann::json& body) const {
  return Fenced("reading the jobs response", [&] { return ParseJobsResponse(http_status, body); });
}

absl::StatusOr<PackedJobList> RestDialect::ParseJobs(int http_status, const nlohmann::json& body,
                                                     JobListDecoder& records) const {
  return Fenced("reading the jobs response",
                [&] { return ParseJobsResponse(http_status, body, records); });
}

const std::vector<std::string>& RestDialect::JobRecordKeys() const {
  // Every version's records are read by the same shape-aware decoder.
  return SlurmctldJobRecordKeys();
}

absl::StatusOr<JobList> RestDialect::ParseDbJobs(int http_status,
                                                 const nlohmann::json& body) const {
  return Fenced("reading the slurmdb jobs response", [&] {
    return ParseSlurmdbJobsResponse(http_status, body, format_.slurmdb_exit_codes);
  });
}

absl::StatusOr<JobLookup> RestDialect::ParseDbJob(int http_status, const nlohmann::json& body,
                                                  int64_t job_id) const {
  return Fenced("reading the slurmdb job response", [&] {
    return ParseSlurmdbJobResponse(http_status, body, job_id, format_.slurmdb_exit_codes);
  });
}

absl::StatusOr<DbRecordsById> RestDialect::ParseDbJobsById(
    int http_status, const nlohmann::json& body, const std::vector<int64_t>& job_ids) const {
  return Fenced("reading the slurmdb jobs response", [&] {
    return ParseSlurmdbJobsByIdResponse(http_status, body, job_ids, format_.slurmdb_exit_codes);
  });
}

absl::StatusOr<CancelResponse> RestDialect::ParseCancel(int http_status, const nlohmann::json& body,
                                                        int64_t job_id) const {
  return Fenced("reading the cancel response",
                [&] { return ParseCancelResponse(http_status, body, job_id); });
}

}  // namespace slurmop::slurm
