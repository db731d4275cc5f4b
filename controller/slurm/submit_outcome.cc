// File: controller/slurm/submit_outcome.cc

#include "controller/slurm/submit_outcome.h"

#include <vector>

#include "controller/slurm/slurm_errors.h"

namespace slurmop::slurm {
namespace {

// job_allocate()'s non-fatal errors: slurmctld queued the job and says why it
// does not start yet (SchedMD/slurm slurmctld/jobs.c nonfatal_errors[] @
// slurm-24-11-7-1; numbers from slurm/slurm_errno.h at the same tag).
constexpr int kQueuedAnyway[] = {
    2015,  // ESLURM_REQUESTED_PART_CONFIG_UNAVAILABLE
    2016,  // ESLURM_NODES_BUSY
    2040,  // ESLURM_LICENSES_UNAVAILABLE
    2042,  // ESLURM_JOB_HELD
    2050,  // ESLURM_ACCOUNTING_POLICY
    2055,  // ESLURM_RESERVATION_BUSY
    2056,  // ESLURM_RESERVATION_NOT_USABLE
    2059,  // ESLURM_PORTS_BUSY
    2068,  // ESLURM_NODE_NOT_AVAIL
    2074,  // ESLURM_QOS_THRES
    2100,  // ESLURM_BURST_BUFFER_WAIT
    2101,  // ESLURM_PARTITION_DOWN
};
constexpr int kEslurmInternal = 2090;

bool IsQueuedAnyway(int n) {
  for (int q : kQueuedAnyway) {
    if (q == n) return true;
  }
  return false;
}

// The RPC's fate is unknown: it may have reached slurmctld.
bool IsAmbiguousNumber(int n) {
  return (n >= 1000 && n <= 1999) || (n >= 5000 && n <= 5999) || (n >= 7000 && n <= 7999) ||
         n == kEslurmInternal || IsQueuedAnyway(n);
}

// slurmctld (or slurmrestd's parser) refused the job before creating it.
bool IsRefusalNumber(int n) {
  return (n >= 2000 && n <= 2999) || (n >= 9000 && n <= 9002) || (n >= 9200 && n <= 9299);
}

// slurmrestd answered without asking slurmctld to queue anything.
bool IsRequestRefusedByRestd(int http_status) {
  switch (http_status) {
    case 400:
    case 401:
    case 403:
    case 404:
    case 405:
    case 413:
    case 415:
    case 422:
      return true;
    default:
      return false;
  }
}

}  // namespace

SubmitDelivery ClassifySubmitFailure(int http_status, const nlohmann::json& body) {
  if (http_status == 502 || http_status == 503 || http_status == 504) {
    return SubmitDelivery::kMaybeDelivered;
  }
  const std::vector<SlurmMessage> errors = MessagesMember(body, "errors");
  bool refusal = false;
  for (const SlurmMessage& m : errors) {
    if (!m.error_number.has_value()) continue;
    if (IsAmbiguousNumber(*m.error_number)) return SubmitDelivery::kMaybeDelivered;
    refusal = refusal || IsRefusalNumber(*m.error_number);
  }
  if (IsRequestRefusedByRestd(http_status) || refusal) return SubmitDelivery::kRefused;
  return SubmitDelivery::kMaybeDelivered;
}

}  // namespace slurmop::slurm
