// File: controller/reconcile/slurmjob_packer.h
//
// The packer of the SlurmJob informers' caches (kube/object_packer.h): its
// dictionary is a typical SlurmJob as this operator writes it (finalizer,
// tag, submit target, the five conditions and their usual reasons), so a
// cached SlurmJob keeps mostly what is its own (names, uid, times, ids).
// The sample only decides how small packed SlurmJobs are, never what they
// unpack to: a SlurmJob unlike it packs correctly, only larger.

#ifndef SLURMOP_CONTROLLER_RECONCILE_SLURMJOB_PACKER_H_
#define SLURMOP_CONTROLLER_RECONCILE_SLURMJOB_PACKER_H_

#include <memory>
#include <nlohmann/json.hpp>

#include "controller/kube/object_packer.h"

namespace slurmop::reconcile {

// The sample the dictionary is made of.
const nlohmann::json& TypicalSlurmJob();

// One packer shared by every SlurmJob informer of the process.
std::shared_ptr<const kube::ObjectPacker> SlurmJobPacker();

}  // namespace slurmop::reconcile

#endif  // SLURMOP_CONTROLLER_RECONCILE_SLURMJOB_PACKER_H_
