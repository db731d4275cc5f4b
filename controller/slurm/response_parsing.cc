// File: controller/slurm/response_parsing.cc
//
// Response classification (success / unknown job / unchanged / rejection)
// and record selection for the job endpoints.

#include "controller/slurm/response_parsing.h"

#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "controller/slurm/array_folding.h"
#include "controller/slurm/job_record_decoding.h"
#include "controller/slurm/json_fields.h"
#include "controller/slurm/slurm_errors.h"
#include "controller/slurm/text_compat.h"

namespace slurmop::slurm {
namespace {

using nlohmann::json;

// errors[] and warnings[] of a body, read once.
struct Messages {
  std::vector<SlurmMessage> errors;
  std::vector<SlurmMessage> warnings;
};

Messages ReadMessages(const json& body) {
  return {MessagesMember(body, "errors"), MessagesMember(body, "warnings")};
}

// warnings followed by errors: what a caller should surface on success.
std::vector<SlurmMessage> Surfaced(Messages m) {
  std::vector<SlurmMessage> out = std::move(m.warnings);
  for (SlurmMessage& e : m.errors) out.push_back(std::move(e));
  return out;
}

// `messages` without those numbered `error_number` (the ones that are the
// answer itself, e.g. 2017 for an unknown job, are not repeated as warnings).
std::vector<SlurmMessage> Without(std::vector<SlurmMessage> messages, int error_number) {
  std::vector<SlurmMessage> out;
  for (SlurmMessage& m : messages) {
    if (m.error_number != error_number) out.push_back(std::move(m));
  }
  return out;
}

// slurmrestd's text/plain 404 for a path it does not serve (unknown version).
bool IsUnknownPath(int http_status, const json& body) {
  return http_status == 404 && body.is_string() &&
         ContainsIgnoreCase(body.get<std::string>(), "Unable find requested URL");
}

// The jobs[] array; nullptr when missing or not an array.
const json* JobsArray(const json& body) {
  const json* jobs = FindMember(body, "jobs");
  if (jobs == nullptr || !jobs->is_array()) return nullptr;
  return jobs;
}

}  // namespace

absl::StatusOr<SubmitResponse> ParseSubmitResponse(int http_status, const json& body) {
  Messages m = ReadMessages(body);
  std::optional<int64_t> job_id = IntegerMember(body, "job_id");
  if (!job_id.has_value()) {
    // v0.0.40/41 also carry it in result{}; v0.0.42 removed result.
    if (const json* result = FindMember(body, "result"); result != nullptr) {
      job_id = IntegerMember(*result, "job_id");
    }
  }
  if (!job_id.has_value() || *job_id <= 0) {
    if (http_status < 400 && m.errors.empty()) {
      return MalformedResponse("submit succeeded without a job_id");
    }
    return RejectionStatus(http_status, body, m.errors);
  }
  // A job id means slurmctld queued the job, whatever else was said: v0.0.38
  // answers 200 + job_id + errors[] for a queued job with a non-zero code
  // (e.g. 2015), and v0.0.39 on 23.02 answered such submits with 500.
  // Reporting failure here would make the caller submit a duplicate, so the
  // errors become warnings.
  return SubmitResponse{*job_id, Surfaced(std::move(m))};
}

absl::StatusOr<JobLookup> ParseJobResponse(int http_status, const json& body, int64_t job_id) {
  Messages m = ReadMessages(body);
  if (IsUnknownPath(http_status, body)) return RejectionStatus(http_status, body, m.errors);
  // 22.05 / 23.02.0-3: 500 + 2017; 23.02.4+: 404 + 2017.
  if (http_status == 404 || ContainsErrorNumber(m.errors, kErrorInvalidJobId)) {
    m.errors = Without(std::move(m.errors), kErrorInvalidJobId);
    return JobLookup{std::nullopt, Surfaced(std::move(m))};
  }
  const json* jobs = JobsArray(body);
  const bool has_jobs = jobs != nullptr && !jobs->empty();
  if (http_status >= 400 || (!m.errors.empty() && !has_jobs)) {
    return RejectionStatus(http_status, body, m.errors);
  }
  if (jobs == nullptr) return MalformedResponse("job query answered without a jobs array");
  if (!has_jobs) return JobLookup{std::nullopt, Surfaced(std::move(m))};
  // An array job answers with one record per task (array_folding.h): they
  // are folded into the array's one record; otherwise prefer the exact id.
  std::vector<JobInfo> records;
  for (const json& record : *jobs) {
    absl::StatusOr<JobInfo> info = DecodeSlurmctldJob(record);
    if (!info.ok()) return info.status();
    records.push_back(*std::move(info));
  }
  records = FoldArrayRecords(std::move(records));
  JobInfo* chosen = &records.front();
  for (JobInfo& r : records) {
    if (r.job_id == job_id) {
      chosen = &r;
      break;
    }
  }
  return JobLookup{std::move(*chosen), Surfaced(std::move(m))};
}

namespace {

// slurmctld's time of the last job change in a jobs answer (v0.0.40+).
std::optional<int64_t> LastUpdate(const json& body) {
  const json* last = FindMember(body, "last_update");
  if (last == nullptr) return std::nullopt;
  std::optional<int64_t> out;
  if (last->is_number_integer()) {
    out = last->get<int64_t>();
  } else if (last->is_object()) {
    auto set = last->find("set");
    auto number = last->find("number");
    if (number != last->end() && number->is_number_integer() &&
        (set == last->end() || (set->is_boolean() && set->get<bool>()))) {
      out = number->get<int64_t>();
    }
  }
  if (out && *out <= 0) out.reset();
  return out;
}

// A jobs answer without its records: `list` (jobs empty) says whether it is
// unchanged, its warnings and last_update; `jobs` is its jobs[] (null when
// it has none). `streamed_records`: records already read as they streamed
// in, which count as the first elements of jobs[].
struct JobsEnvelope {
  JobList list;
  const json* jobs = nullptr;
};

absl::StatusOr<JobsEnvelope> ReadJobsEnvelope(int http_status, const json& body,
                                              size_t streamed_records) {
  // 22.05 answers an unchanged update_time with 304 and no body.
  if (http_status == 304) return JobsEnvelope{JobList{true, {}, {}, std::nullopt}};
  Messages m = ReadMessages(body);
  if (http_status >= 400) return RejectionStatus(http_status, body, m.errors);
  // 23.02+: 200 + "No job changes since update_time" and jobs: [].
  constexpr std::string_view kNoChanges = "No job changes since update_time";
  if (ContainsText(m.warnings, kNoChanges) || ContainsText(m.errors, kNoChanges)) {
    return JobsEnvelope{JobList{true, {}, Surfaced(std::move(m)), std::nullopt}};
  }
  const json* jobs = JobsArray(body);
  const bool no_records = streamed_records == 0 && (jobs == nullptr || jobs->empty());
  if (!m.errors.empty() && no_records) return RejectionStatus(http_status, body, m.errors);
  if (jobs == nullptr && streamed_records == 0) {
    return MalformedResponse("jobs query answered without a jobs array");
  }
  return JobsEnvelope{JobList{false, {}, Surfaced(std::move(m)), LastUpdate(body)}, jobs};
}

}  // namespace

absl::StatusOr<JobList> ParseJobsResponse(int http_status, const json& body) {
  absl::StatusOr<JobsEnvelope> envelope = ReadJobsEnvelope(http_status, body, 0);
  if (!envelope.ok()) return envelope.status();
  JobList list = std::move(envelope->list);
  if (list.unchanged) return list;
  list.jobs.reserve(envelope->jobs->size());
  for (const json& record : *envelope->jobs) {
    absl::StatusOr<JobInfo> info = DecodeSlurmctldJob(record);
    if (!info.ok()) return info.status();
    list.jobs.push_back(*std::move(info));
  }
  list.jobs = FoldArrayRecords(std::move(list.jobs));
  return list;
}

absl::StatusOr<PackedJobList> ParseJobsResponse(int http_status, const json& body,
                                                JobListDecoder& records) {
  // Whatever the answer, the decoder is empty afterwards.
  PackedJobList out;
  absl::Status first_error;
  absl::StatusOr<JobsEnvelope> envelope = ReadJobsEnvelope(http_status, body, records.records());
  if (envelope.ok() && !envelope->list.unchanged) {
    // Records decoded as they streamed in came from jobs[] (which then
    // stays, emptied): they count as its first elements.
    if (envelope->jobs != nullptr) {
      for (const json& record : *envelope->jobs) records.Add(record);
    }
    first_error = records.first_error();
    if (first_error.ok()) out = records.TakeJobs();
  }
  records.Restart();
  if (!envelope.ok()) return envelope.status();
  if (!first_error.ok()) return first_error;
  JobList& head = envelope->list;
  out.unchanged = head.unchanged;
  out.warnings = std::move(head.warnings);
  out.last_update = head.last_update;
  return out;
}

namespace {

// Of the records that `keep`, the latest submission; on a tie, the later record.
template <typename Keep>
std::optional<JobInfo> LatestSubmission(const std::vector<JobInfo>& records, Keep keep) {
  const JobInfo* latest = nullptr;
  for (const JobInfo& info : records) {
    if (!keep(info)) continue;
    if (latest == nullptr ||
        info.submit_time.value_or(Time()) >= latest->submit_time.value_or(Time())) {
      latest = &info;
    }
  }
  if (latest == nullptr) return std::nullopt;
  return *latest;
}

// What accounting says of job `job_id` among `records` (decoded, not
// folded): an array's tasks folded into its one record (array_folding.h);
// else, of the records of this job id (requeues give several), the latest
// submission; nullopt when no record is this job's.
std::optional<JobInfo> PickDbRecord(const std::vector<JobInfo>& records, int64_t job_id) {
  std::vector<JobInfo> tasks;
  for (const JobInfo& info : records) {
    if (info.array_job_id == job_id) tasks.push_back(info);
  }
  if (!tasks.empty()) return FoldArrayRecords(std::move(tasks)).front();
  return LatestSubmission(records, [job_id](const JobInfo& info) { return info.job_id == job_id; });
}

}  // namespace

absl::StatusOr<JobLookup> ParseSlurmdbJobResponse(int http_status, const json& body, int64_t job_id,
                                                  SlurmdbExitCodes exit_codes) {
  Messages m = ReadMessages(body);
  if (IsUnknownPath(http_status, body)) return RejectionStatus(http_status, body, m.errors);
  // dbv0.0.38: 200 + error 9003 "Nothing found"; v0.0.40+: 200 + warning
  // "slurmdb_jobs_get(0x...) found nothing".
  if (http_status == 404 || ContainsErrorNumber(m.errors, kErrorNothingFound) ||
      ContainsText(m.warnings, "found nothing") || ContainsText(m.warnings, "nothing found")) {
    std::vector<SlurmMessage> warnings;
    for (SlurmMessage& w : m.warnings) {
      if (!MentionsText(w, "found nothing") && !MentionsText(w, "nothing found")) {
        warnings.push_back(std::move(w));
      }
    }
    m.warnings = std::move(warnings);
    m.errors = Without(std::move(m.errors), kErrorNothingFound);
    return JobLookup{std::nullopt, Surfaced(std::move(m))};
  }
  const json* jobs = JobsArray(body);
  const bool has_jobs = jobs != nullptr && !jobs->empty();
  if (http_status >= 400 || (!m.errors.empty() && !has_jobs)) {
    return RejectionStatus(http_status, body, m.errors);
  }
  if (jobs == nullptr) return MalformedResponse("slurmdb job query answered without a jobs array");
  if (!has_jobs) return JobLookup{std::nullopt, Surfaced(std::move(m))};

  std::vector<JobInfo> records;
  records.reserve(jobs->size());
  for (const json& record : *jobs) {
    absl::StatusOr<JobInfo> info = DecodeSlurmdbJob(record, exit_codes);
    if (!info.ok()) return info.status();
    records.push_back(*std::move(info));
  }
  std::optional<JobInfo> picked = PickDbRecord(records, job_id);
  if (!picked) picked = LatestSubmission(records, [](const JobInfo&) { return true; });
  return JobLookup{std::move(picked), Surfaced(std::move(m))};
}

namespace {

// Every record of a /slurmdb/.../jobs answer, decoded and not folded
// ("nothing found" -> none); `m` keeps the messages to surface.
absl::StatusOr<std::vector<JobInfo>> DecodeDbRecords(int http_status, const json& body,
                                                     SlurmdbExitCodes exit_codes, Messages& m) {
  m = ReadMessages(body);
  if (IsUnknownPath(http_status, body)) return RejectionStatus(http_status, body, m.errors);
  std::vector<JobInfo> records;
  if (http_status == 404 || ContainsErrorNumber(m.errors, kErrorNothingFound) ||
      ContainsText(m.warnings, "found nothing") || ContainsText(m.warnings, "nothing found")) {
    m = Messages{};  // they are the answer itself
    return records;
  }
  const json* jobs = JobsArray(body);
  const bool has_jobs = jobs != nullptr && !jobs->empty();
  if (http_status >= 400 || (!m.errors.empty() && !has_jobs)) {
    return RejectionStatus(http_status, body, m.errors);
  }
  if (jobs == nullptr) return MalformedResponse("slurmdb jobs query answered without a jobs array");
  records.reserve(jobs->size());
  for (const json& record : *jobs) {
    absl::StatusOr<JobInfo> info = DecodeSlurmdbJob(record, exit_codes);
    if (!info.ok()) return info.status();
    records.push_back(*std::move(info));
  }
  return records;
}

}  // namespace

absl::StatusOr<JobList> ParseSlurmdbJobsResponse(int http_status, const json& body,
                                                 SlurmdbExitCodes exit_codes) {
  Messages m;
  absl::StatusOr<std::vector<JobInfo>> records = DecodeDbRecords(http_status, body, exit_codes, m);
  if (!records.ok()) return records.status();
  JobList out;
  out.jobs = FoldArrayRecords(*std::move(records));
  out.warnings = Surfaced(std::move(m));
  return out;
}

absl::StatusOr<DbRecordsById> ParseSlurmdbJobsByIdResponse(int http_status, const json& body,
                                                           const std::vector<int64_t>& job_ids,
                                                           SlurmdbExitCodes exit_codes) {
  Messages m;
  absl::StatusOr<std::vector<JobInfo>> records = DecodeDbRecords(http_status, body, exit_codes, m);
  if (!records.ok()) return records.status();
  DbRecordsById out;
  for (int64_t id : job_ids) {
    if (std::optional<JobInfo> picked = PickDbRecord(*records, id)) {
      out.jobs.emplace(id, *std::move(picked));
    }
  }
  out.warnings = Surfaced(std::move(m));
  return out;
}

absl::StatusOr<UpdateResponse> ParseUpdateResponse(int http_status, const json& body) {
  Messages m = ReadMessages(body);
  if (IsUnknownPath(http_status, body)) return RejectionStatus(http_status, body, m.errors);
  UpdateResponse out;
  std::vector<SlurmMessage> other_errors;
  for (SlurmMessage& e : m.errors) {
    if (e.error_number == kErrorInvalidJobId) {
      out.unknown_job = true;
    } else if (e.error_number == 2084) {  // ESLURM_JOB_FINISHED, seen on 22.05.8
      out.already_finished = true;
    } else {
      other_errors.push_back(std::move(e));
    }
  }
  if (http_status == 404) out.unknown_job = true;
  if ((http_status >= 400 || !other_errors.empty()) && !out.unknown_job && !out.already_finished) {
    return RejectionStatus(http_status, body, other_errors);
  }
  out.warnings = std::move(m.warnings);
  return out;
}

absl::StatusOr<CancelResponse> ParseCancelResponse(int http_status, const json& body,
                                                   int64_t job_id) {
  Messages m = ReadMessages(body);
  if (IsUnknownPath(http_status, body)) return RejectionStatus(http_status, body, m.errors);
  CancelResponse out;
  // 24.11+ (v0.0.40+): 200 + status[] with one element per job whose signal
  // failed; 2021 = already finished, 2017 = unknown/purged.
  std::vector<SlurmMessage> failures;
  if (const json* status = FindMember(body, "status"); status != nullptr && status->is_array()) {
    for (const json& element : *status) {
      SlurmMessage msg = ParseSlurmMessage(element);
      if (!msg.error_number.has_value() || *msg.error_number == 0) continue;
      if (*msg.error_number == kErrorInvalidJobId) {
        out.unknown_job = true;
      } else if (*msg.error_number == kErrorAlreadyDone) {
        out.already_finished = true;
      } else {
        failures.push_back(std::move(msg));
      }
    }
  }
  if (!failures.empty()) return RejectionStatus(http_status, body, failures);
  // 22.05: 500 + 2017; 23.02.4-24.05: 404 + 2017; 23.02-24.05 finished job:
  // 200 + warning "Job was already sent signal Killed". The messages that
  // say so are the answer, not warnings.
  std::vector<SlurmMessage> other_errors;
  for (SlurmMessage& e : m.errors) {
    if (e.error_number == kErrorInvalidJobId) {
      out.unknown_job = true;
    } else if (e.error_number == kErrorAlreadyDone || MentionsText(e, "already")) {
      out.already_finished = true;
    } else {
      other_errors.push_back(std::move(e));
    }
  }
  if (http_status == 404) out.unknown_job = true;
  const bool settled = out.unknown_job || out.already_finished;
  if ((http_status >= 400 || !other_errors.empty()) && !settled) {
    return RejectionStatus(http_status, body, other_errors);
  }
  for (SlurmMessage& w : m.warnings) {
    if (MentionsText(w, "already")) {
      out.already_finished = true;
    } else {
      out.warnings.push_back(std::move(w));
    }
  }
  for (SlurmMessage& e : other_errors) out.warnings.push_back(std::move(e));
  return out;
}

}  // namespace slurmop::slurm
