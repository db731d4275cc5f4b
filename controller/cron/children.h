// File: controller/cron/children.h
//
// The SlurmJobs of a SlurmCronJob, both ways: the facts the decisions need about the SlurmJobs it
// owns, and the SlurmJob object to create for one scheduled time.
//
// Contract:
//  * OwnedBy: the SlurmJob has a controller ownerReference of kind SlurmCronJob with `cron_uid`
//    (a SlurmJob merely carrying the label, or owned by an earlier SlurmCronJob of the same name,
//    is not a child).
//  * ChildFromObject: the scheduled time comes from the annotation kScheduledTimeAnnotation, else
//    from the name's `-<unix minutes>` suffix after the SlurmCronJob's name; phase and end time
//    from the status; being_deleted from metadata.deletionTimestamp.
//  * NewChildObject: the template's labels plus kCronJobNameLabel (the SlurmCronJob's name), the
//    template's annotations plus kScheduledTimeAnnotation, a controller ownerReference to the
//    SlurmCronJob (blockOwnerDeletion), and the template's spec.

#ifndef SLURMOP_CONTROLLER_CRON_CHILDREN_H_
#define SLURMOP_CONTROLLER_CRON_CHILDREN_H_

#include <nlohmann/json.hpp>
#include <string>

#include "controller/common/clock.h"
#include "controller/cron/decide.h"

namespace slurmop::cron {

bool OwnedBy(const nlohmann::json& slurm_job, const std::string& cron_uid);

Child ChildFromObject(const nlohmann::json& slurm_job, const std::string& cron_name);

// `cron` is the SlurmCronJob object (metadata: name, namespace, uid).
nlohmann::json NewChildObject(const nlohmann::json& cron,
                              const v1alpha1::SlurmJobTemplateSpec& job_template,
                              const ChildToCreate& child);

}  // namespace slurmop::cron

#endif  // SLURMOP_CONTROLLER_CRON_CHILDREN_H_
