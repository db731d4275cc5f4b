// File: controller/slurm/submit_outcome.h
//
// Whether a submit that Slurm answered without a job id may still have
// queued the job. The answer decides between "refused: safe to send again
// once fixed" and "maybe queued: search for the job's tag first, never a
// blind second submit" (issue #13, "ambiguous means maybe").
//
// Only a DEFINITIVE refusal counts as not delivered:
//  * slurmrestd refused the request itself: HTTP 400, 401, 403, 404, 405,
//    413, 415 or 422 (parsing, validation, rest_auth, unknown path/method);
//  * slurmctld refused the job: an ESLURM_* number 2000-2999 (invalid
//    partition, account, QOS, time limit, access denied, ...) or a REST
//    request error 9000-9002 / 9200-9299.
// Everything else may have queued the job, in particular
//  * HTTP 502/503/504 (slurmrestd timed out on slurmctld's reply: Slurm maps
//    SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT to 504, a lost reply to 502);
//  * protocol and communication errors 1000-1999 (1001-1004, 1800-1804, and
//    1007, which a failed check of slurmctld's REPLY also gives), socket
//    errors 5000-5999, database connection errors 7000-7999, ESLURM_INTERNAL;
//  * the codes slurmctld returns for a job it DID queue (job_allocate's
//    non-fatal errors, e.g. 2016 nodes busy, 2042 held, 2074 QOS threshold:
//    SchedMD/slurm src/slurmrestd/plugins/openapi/slurmctld/jobs.c
//    `nonfatal_errors[]` @ slurm-24-11-7-1), when they come without a job id;
//  * a 2xx without job_id, a 500 without a recognised error, anything else.
// An ambiguous signal wins over a definitive one in the same answer.

#ifndef SLURMOP_CONTROLLER_SLURM_SUBMIT_OUTCOME_H_
#define SLURMOP_CONTROLLER_SLURM_SUBMIT_OUTCOME_H_

#include "nlohmann/json.hpp"

namespace slurmop::slurm {

enum class SubmitDelivery {
  kRefused,         // definitively not queued
  kMaybeDelivered,  // the job may exist: search for its tag
};

// `http_status` and `body` are Slurm's answer (the envelope's status and
// body) to POST /slurm/vX/job/submit that carried no job id.
SubmitDelivery ClassifySubmitFailure(int http_status, const nlohmann::json& body);

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_SUBMIT_OUTCOME_H_
