// File: controller/slurm/rest_dialect.h
//
// The one Dialect implementation, parameterised by a WireFormat: paths carry
// the version, RenderSubmit follows WireFormat::submit, and the parsers
// (controller/slurm/response_parsing.h) read every version's shapes, with
// WireFormat::slurmdb_exit_codes deciding whether slurmdb exit codes are
// believed. Any exception escaping the JSON library is turned into kInternal.

#ifndef SLURMOP_CONTROLLER_SLURM_REST_DIALECT_H_
#define SLURMOP_CONTROLLER_SLURM_REST_DIALECT_H_

#include "controller/slurm/dialect.h"
#include "controller/slurm/wire_format.h"

namespace slurmop::slurm {

class RestDialect final : public Dialect {
 public:
  explicit RestDialect(WireFormat format) : format_(format) {}

  const WireFormat& wire_format() const { return format_; }

  std::string_view version() const override { return format_.version; }
  std::string SubmitPath() const override;
  std::string JobPath(int64_t job_id) const override;
  std::string JobsPath(std::optional<int64_t> update_time) const override;
  std::string DbJobsPath(std::string_view job_name, int64_t start_time) const override;
  std::string CancelPath(int64_t job_id) const override;
  std::string DbJobPath(int64_t job_id) const override;
  std::string DbJobsByIdPath(const std::vector<int64_t>& job_ids) const override;
  std::string PingPath() const override;
  std::string UpdatePath(int64_t job_id) const override;
  absl::StatusOr<nlohmann::json> RenderUpdate(const JobUpdate& update) const override;
  absl::StatusOr<UpdateResponse> ParseUpdate(int http_status,
                                             const nlohmann::json& body) const override;

  absl::StatusOr<nlohmann::json> RenderSubmit(const JobDescriptor& job) const override;
  absl::StatusOr<SubmitResponse> ParseSubmit(int http_status,
                                             const nlohmann::json& body) const override;
  absl::StatusOr<JobLookup> ParseJob(int http_status, const nlohmann::json& body,
                                     int64_t job_id) const override;
  absl::StatusOr<JobList> ParseJobs(int http_status, const nlohmann::json& body) const override;
  absl::StatusOr<PackedJobList> ParseJobs(int http_status, const nlohmann::json& body,
                                          JobListDecoder& records) const override;
  const std::vector<std::string>& JobRecordKeys() const override;
  absl::StatusOr<JobList> ParseDbJobs(int http_status, const nlohmann::json& body) const override;
  absl::StatusOr<JobLookup> ParseDbJob(int http_status, const nlohmann::json& body,
                                       int64_t job_id) const override;
  absl::StatusOr<DbRecordsById> ParseDbJobsById(int http_status, const nlohmann::json& body,
                                                const std::vector<int64_t>& job_ids) const override;
  absl::StatusOr<CancelResponse> ParseCancel(int http_status, const nlohmann::json& body,
                                             int64_t job_id) const override;

 private:
  WireFormat format_;
};

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_REST_DIALECT_H_
