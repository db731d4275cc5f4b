// File: controller/cron/cron_executor.cc

#include "controller/cron/cron_executor.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controller/api/cron_types.h"
#include "controller/api/json_codec.h"
#include "controller/api/types.h"
#include "controller/common/time_format.h"
#include "controller/cron/children.h"
#include "controller/cron/cron_resource.h"
#include "controller/kube/errors.h"
#include "controller/reconcile/resource_types.h"
#include "controller/reconcile/write_refusal.h"
#include "glog/logging.h"

namespace slurmop::cron {
namespace {

using reconcile::ReconcileResult;

ReconcileResult Failed(const std::string& key, const std::string& what, const absl::Status& s) {
  LOG(WARNING) << key << ": " << what << ": " << s;
  ReconcileResult r;
  r.retry_with_backoff = true;
  r.api_server_unreachable = kube::IsUnreachable(s);
  return r;
}

}  // namespace

CronExecutor::CronExecutor(kube::Client& kube, const reconcile::ObjectCache& crons,
                           ChildLister children, reconcile::EventSink& events, const Clock& clock)
    : kube_(kube), crons_(crons), children_(std::move(children)), events_(events), clock_(clock) {}

CronFacts CronExecutor::ReadFacts(const nlohmann::json& cron) const {
  CronFacts f;
  f.name = api::MetadataString(cron, "name");
  f.ns = api::MetadataString(cron, "namespace");
  f.uid = api::MetadataString(cron, "uid");
  f.generation = cron.value("metadata", nlohmann::json::object()).value("generation", int64_t{0});
  // The API server always sets it; without it, no time before now counts as missed.
  f.creation_time =
      ParseRfc3339(api::MetadataString(cron, "creationTimestamp")).value_or(clock_.Now());
  f.being_deleted = !api::MetadataString(cron, "deletionTimestamp").empty();
  for (const std::shared_ptr<const nlohmann::json>& job : children_(f.ns, f.name)) {
    if (job && OwnedBy(*job, f.uid)) f.children.push_back(ChildFromObject(*job, f.name));
  }
  return f;
}

absl::Status CronExecutor::DeleteChildren(const nlohmann::json& cron,
                                          const std::vector<ChildToDelete>& deletes) {
  const std::string ns = api::MetadataString(cron, "namespace");
  for (const ChildToDelete& d : deletes) {
    absl::StatusOr<nlohmann::json> r = kube_.Delete(reconcile::SlurmJobsResource(), ns, d.name,
                                                    kube::DeleteOptions{d.uid, "Background"});
    if (!r.ok() && !kube::IsNotFound(r.status())) return r.status();
    events_.Record(cron, {reconcile::kNormal, "SuccessfulDelete", "Delete",
                          absl::StrCat("deleted SlurmJob ", d.name, ": ", d.why)});
  }
  return absl::OkStatus();
}

absl::Status CronExecutor::CreateChild(const nlohmann::json& cron, const CronFacts& facts,
                                       const ChildToCreate& child,
                                       v1alpha1::SlurmCronJobStatus* status) {
  const nlohmann::json object = NewChildObject(cron, facts.spec.job_template(), child);
  absl::StatusOr<nlohmann::json> r = kube_.Create(reconcile::SlurmJobsResource(), facts.ns, object);
  if (!r.ok() && !kube::IsAlreadyExists(r.status())) return r.status();
  const std::string when = FormatRfc3339(child.scheduled_time);
  if (!r.ok()) {
    LOG(INFO) << facts.ns << "/" << facts.name << ": SlurmJob " << child.name
              << " already exists: scheduled time " << when << " counts as started";
    return absl::OkStatus();
  }
  for (v1alpha1::ObjectReference& ref : *status->mutable_active()) {
    if (ref.name() == child.name) ref.set_uid(api::MetadataString(*r, "uid"));
  }
  events_.Record(cron, {reconcile::kNormal, "SuccessfulCreate", "Create",
                        absl::StrCat("created SlurmJob ", child.name, " for ", when)});
  return absl::OkStatus();
}

absl::Status CronExecutor::WriteStatus(const nlohmann::json& cron, const std::string& key,
                                       const v1alpha1::SlurmCronJobStatus& current,
                                       const v1alpha1::SlurmCronJobStatus& status) {
  const nlohmann::json wanted = api::StatusToJson(status);
  if (wanted == api::StatusToJson(current)) return absl::OkStatus();
  nlohmann::json object = cron;
  object["status"] = wanted;
  absl::StatusOr<nlohmann::json> r = kube_.UpdateStatus(SlurmCronJobsResource(), object);
  if (!r.ok()) return r.status();
  Remember(key, api::MetadataString(cron, "uid"), status);
  return absl::OkStatus();
}

void CronExecutor::Remember(const std::string& key, const std::string& uid,
                            const v1alpha1::SlurmCronJobStatus& status) {
  if (!status.has_last_schedule_time()) return;
  std::lock_guard<std::mutex> lock(mu_);
  Recorded& r = recorded_[key];
  if (r.uid != uid) r = Recorded{uid, {}};
  if (r.last_schedule_time.seconds() < status.last_schedule_time().seconds()) {
    r.last_schedule_time = status.last_schedule_time();
  }
}

void CronExecutor::ApplyRecorded(const std::string& key, CronFacts* facts) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = recorded_.find(key);
  if (it == recorded_.end() || it->second.uid != facts->uid) return;
  const google::protobuf::Timestamp& ours = it->second.last_schedule_time;
  if (!facts->status.has_last_schedule_time() ||
      facts->status.last_schedule_time().seconds() < ours.seconds()) {
    *facts->status.mutable_last_schedule_time() = ours;  // our write, not yet cached
  }
}

void CronExecutor::TellRefusal(const nlohmann::json& cron, std::string_view what,
                               const absl::Status& s) {
  if (reconcile::RefusedForGood(s)) {
    events_.Record(cron, reconcile::WriteRefusedEvent(s, what, "SlurmCronJob"));
  }
}

ReconcileResult CronExecutor::Reconcile(const std::string& key) {
  const std::vector<std::string> parts = absl::StrSplit(key, absl::MaxSplits('/', 1));
  std::shared_ptr<const nlohmann::json> cron =
      parts.size() == 2 ? crons_.Get(parts[0], parts[1]) : nullptr;
  if (!cron) {
    std::lock_guard<std::mutex> lock(mu_);
    recorded_.erase(key);  // gone
    return {};
  }
  absl::StatusOr<v1alpha1::SlurmCronJob> typed = api::SlurmCronJobFromObject(*cron);
  if (!typed.ok()) {
    // Its status is not writable as the type either: the Event is what tells the user. A change
    // of the object brings it back here.
    LOG(WARNING) << key << ": cannot read the SlurmCronJob: " << typed.status();
    events_.Record(*cron,
                   {reconcile::kWarning, "InvalidSpec", "Validate",
                    absl::StrCat("The SlurmCronJob cannot be read: ", typed.status().message(),
                                 ". Nothing is scheduled until it is fixed.")});
    return {};
  }
  CronFacts facts = ReadFacts(*cron);
  facts.spec = typed->spec();
  facts.status = typed->status();
  ApplyRecorded(key, &facts);
  CronPlan plan = DecideCron(facts, clock_.Now());
  for (const reconcile::EventSpec& e : plan.events) events_.Record(*cron, e);
  if (absl::Status s = DeleteChildren(*cron, plan.replace); !s.ok()) {
    TellRefusal(*cron, "deletion of an active SlurmJob (concurrencyPolicy Replace)", s);
    return Failed(key, "deleting an active SlurmJob (Replace)", s);
  }
  if (plan.create) {
    if (absl::Status s = CreateChild(*cron, facts, *plan.create, &plan.status); !s.ok()) {
      events_.Record(
          *cron, {reconcile::kWarning, "FailedCreate", "Create",
                  absl::StrCat("cannot create SlurmJob ", plan.create->name, ": ", s.message())});
      // The condition stays when the Event is gone (or refused: a namespace being deleted).
      const v1alpha1::SlurmCronJobStatus failed =
          StatusAfterFailedCreate(facts, *plan.create, s, clock_.Now());
      if (absl::Status w = WriteStatus(*cron, key, typed->status(), failed); !w.ok()) {
        TellRefusal(*cron, "status write", w);
        LOG(WARNING) << key << ": writing the failed create's status: " << w;
      }
      return Failed(key, "creating SlurmJob " + plan.create->name, s);
    }
  }
  if (absl::Status s = WriteStatus(*cron, key, typed->status(), plan.status); !s.ok()) {
    TellRefusal(*cron, "status write", s);
    return Failed(key, "writing the status", s);
  }
  if (absl::Status s = DeleteChildren(*cron, plan.history); !s.ok()) {
    TellRefusal(*cron, "deletion of a SlurmJob beyond the history limit", s);
    return Failed(key, "deleting a SlurmJob beyond the history limit", s);
  }
  return ReconcileResult{plan.requeue_after};
}

}  // namespace slurmop::cron
