// File: controller/reconcile/executor.cc

#include "controller/reconcile/executor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "controller/api/finalizers.h"
#include "controller/api/json_codec.h"
#include "controller/api/resources.h"
#include "controller/api/types.h"
#include "controller/common/log_context.h"
#include "controller/http/http_transport.h"
#include "controller/kube/resource_types.h"
#include "controller/reconcile/accounting_search.h"
#include "controller/reconcile/conditions.h"
#include "controller/reconcile/job_lifetime.h"
#include "controller/reconcile/job_usage.h"
#include "controller/reconcile/ownership.h"
#include "controller/reconcile/read_grant.h"
#include "controller/reconcile/resource_types.h"
#include "controller/reconcile/runs.h"
#include "controller/reconcile/secret_env.h"
#include "controller/reconcile/submit_target_note.h"
#include "controller/reconcile/tag_search.h"
#include "controller/reconcile/tracking_policy.h"
#include "controller/reconcile/write_refusal.h"
#include "controller/server/metric_names.h"
#include "controller/server/metrics.h"
#include "controller/slurm/dialects.h"
#include "controller/slurm/slurm_errors.h"
#include "controller/slurm/submit_outcome.h"
#include "glog/logging.h"

namespace slurmop::reconcile {
namespace {

// Slurm's folded warnings, leaving room in an Event's 1 KiB note for the count before them.
constexpr size_t kMaxWarningNoteBytes = 960;

// The shortest retry delay of this reconcile's Slurm calls that the
// project's call budget held back (never sent), if any.
template <typename T>
void NoteHeldBack(const std::optional<absl::StatusOr<T>>& outcome, std::optional<Duration>* min) {
  if (!outcome || outcome->ok() || !agentplatform::HeldBackByBudget(outcome->status())) return;
  const Duration d =
      agentplatform::RetryDelay(outcome->status()).value_or(std::chrono::milliseconds(100));
  if (!*min || d < **min) *min = d;
}

std::optional<Duration> HeldBackDelay(const Outcomes& out) {
  std::optional<Duration> min;
  NoteHeldBack(out.submit, &min);
  NoteHeldBack(out.tag_lookup, &min);
  NoteHeldBack(out.query, &min);
  NoteHeldBack(out.cancel, &min);
  NoteHeldBack(out.update, &min);
  return min;
}

const char* ActionName(Action a) {
  switch (a) {
    case Action::kNone:
      return "stop";
    case Action::kAddFinalizer:
      return "add-finalizer";
    case Action::kRemoveFinalizer:
      return "remove-finalizer";
    case Action::kLoadScript:
      return "load-script";
    case Action::kLoadSecrets:
      return "load-secrets";
    case Action::kSubmit:
      return "submit";
    case Action::kFindByTag:
      return "find-by-tag";
    case Action::kQuery:
      return "query";
    case Action::kCancel:
      return "cancel";
    case Action::kUpdateJob:
      return "update-job";
    case Action::kWriteStatus:
      return "write-status";
    case Action::kDeleteJob:
      return "delete-job";
    case Action::kReread:
      return "reread";
  }
  return "?";
}

// The string values of metadata.labels or metadata.annotations.
std::map<std::string, std::string> StringMap(const nlohmann::json& meta, const char* field) {
  std::map<std::string, std::string> out;
  auto it = meta.find(field);
  if (it == meta.end() || !it->is_object()) return out;
  for (const auto& [key, value] : it->items()) {
    if (value.is_string()) out[key] = value.get<std::string>();
  }
  return out;
}

// JobFacts from a SlurmJob object. A spec the codec cannot read (wrong types
// that an older CRD let through) is reported as an error for the user.
absl::StatusOr<JobFacts> FactsFromObject(const nlohmann::json& obj,
                                         const ExecutorOptions& options) {
  const std::string& installation = options.installation;
  absl::StatusOr<v1alpha1::SlurmJob> job = api::SlurmJobFromObject(obj);
  if (!job.ok()) return job.status();
  JobFacts f;
  f.id.installation = installation;
  f.id.ns = api::MetadataString(obj, "namespace");
  f.id.name = api::MetadataString(obj, "name");
  f.id.uid = api::MetadataString(obj, "uid");
  const auto& meta = obj.value("metadata", nlohmann::json::object());
  f.generation = meta.value("generation", int64_t{0});
  f.deleting = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
  std::vector<std::string> fins = api::Finalizers(obj);
  f.has_finalizer = std::find(fins.begin(), fins.end(), api::kSlurmJobFinalizer) != fins.end();
  f.labels = StringMap(meta, "labels");
  f.annotations = StringMap(meta, "annotations");
  f.spec = job->spec();
  f.status = job->status();
  f.noted_target = VerifiedSubmitTarget(options.submit_note_key, f);
  return f;
}

// The SlurmJobs named in spec.dependsOn, as the cache shows them.
void ResolveDependencies(const ObjectCache& jobs, JobFacts* facts) {
  facts->dependencies.clear();
  for (const auto& dep : facts->spec.depends_on()) {
    DependencyFacts d;
    d.name = dep.name();
    d.condition = dep.condition();
    if (std::shared_ptr<const nlohmann::json> obj = jobs.Get(facts->id.ns, dep.name())) {
      d.found = true;
      const auto& status = obj->value("status", nlohmann::json::object());
      if (auto id = status.find("jobId"); id != status.end() && id->is_number_integer()) {
        d.job_id = id->get<int64_t>();
      }
      d.job_state = status.value("jobState", "");
    }
    facts->dependencies.push_back(std::move(d));
  }
}

// Queue wait (start - submit) and run time (end - start) of a job that just ended.
void RecordFinishedJob(const v1alpha1::SlurmJobStatus& s) {
  if (s.has_submit_time() && s.has_start_time() &&
      s.start_time().seconds() >= s.submit_time().seconds()) {
    server::GlobalMetrics().Observe(server::metric::kJobQueueWaitSeconds, {},
                                    s.start_time().seconds() - s.submit_time().seconds());
  }
  if (s.has_start_time() && s.has_end_time() &&
      s.end_time().seconds() >= s.start_time().seconds()) {
    server::GlobalMetrics().Observe(server::metric::kJobRunSeconds, {{"state", s.job_state()}},
                                    s.end_time().seconds() - s.start_time().seconds());
  }
}

// The CPU- and GPU-seconds of the runs whose usage the write from `before` to `after` recorded
// first: once per run (job_usage.h).
void CountNewUsage(const v1alpha1::SlurmJobStatus& before, const v1alpha1::SlurmJobStatus& after,
                   const std::string& ns) {
  for (const v1alpha1::JobUsage& u : NewlyRecordedUsage(before, after)) {
    const server::Labels labels = {{"namespace", ns},
                                   {"cluster", after.cluster()},
                                   {"partition", u.partition()},
                                   {"account", u.account()}};
    server::GlobalMetrics().Add(server::metric::kAllocatedCpuSecondsTotal, labels,
                                static_cast<double>(u.cpu_seconds()));
    server::GlobalMetrics().Add(server::metric::kAllocatedGpuSecondsTotal, labels,
                                static_cast<double>(u.gpu_seconds()));
  }
}

}  // namespace

Executor::Executor(kube::Client& kube, const ObjectCache& jobs, const ObjectCache& clusters,
                   agentplatform::SlurmApi& slurm_api, CredentialsResolver& credentials,
                   EventSink& events, const Clock& clock, ExecutorOptions options)
    : kube_(kube),
      jobs_(jobs),
      clusters_(clusters),
      caches_{&clusters, nullptr, nullptr},
      slurm_(slurm_api),
      credentials_(credentials),
      events_(events),
      clock_(clock),
      options_([&] {
        ExecutorOptions o = std::move(options);
        if (o.decide.process_start == Time{}) o.decide.process_start = clock.Now();
        o.decide.note_target_with_finalizer = !o.submit_note_key.empty();
        return o;
      }()),
      cache_lag_(clock, options_.cache_patience) {}

absl::StatusOr<agentplatform::SlurmResponse> Executor::CallSlurm(
    const agentplatform::ClusterName& where, agentplatform::TokenSource& credentials,
    agentplatform::HttpMethod method, const std::string& path, const nlohmann::json* body,
    const agentplatform::CallOptions& options) {
  return slurm_.Call(where, credentials, method, path, body, options);
}

void Executor::MarkChanged(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  changed_.insert(key);
}

size_t Executor::MemoCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return memos_.size();
}

Memo Executor::TakeMemo(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = memos_.find(key);
  if (it == memos_.end()) return Memo{};
  Memo memo = it->second;
  // The cluster's list shows a change: look now, whatever the poll interval.
  if (changed_.erase(key) > 0) memo.last_query_at.reset();
  return memo;
}

void Executor::PutMemo(const std::string& key, Memo memo) {
  std::lock_guard<std::mutex> lock(mu_);
  memos_[key] = std::move(memo);
}

void Executor::Forget(const std::string& key) {
  if (tracker_) tracker_->Untrack(key);
  cache_lag_.Forget(key);
  std::lock_guard<std::mutex> lock(mu_);
  memos_.erase(key);
  changed_.erase(key);
  settle_anchors_.erase(key);
}

void Executor::AnchorSettleWindowFor(const std::string& key, Time t) {
  std::lock_guard<std::mutex> lock(mu_);
  settle_anchors_[key] = t;
}

DecideOptions Executor::DecideOptionsFor(const std::string& key) const {
  DecideOptions o = options_.decide;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = settle_anchors_.find(key); it != settle_anchors_.end()) {
    o.process_start = std::max(o.process_start, it->second);
  }
  return o;
}

// One reconcile of one SlurmJob: the facts, the memo and this reconcile's
// outcomes, and one method per Action. A method returns nullopt to ask
// Decide() for the next step, or the result that ends the reconcile.
class Executor::Attempt {
 public:
  Attempt(Executor& ex, std::string ns, std::string name, nlohmann::json object, JobFacts facts)
      : ex_(ex),
        ns_(std::move(ns)),
        name_(std::move(name)),
        key_(absl::StrCat(ns_, "/", name_)),
        object_(std::move(object)),
        facts_(std::move(facts)),
        memo_(ex.TakeMemo(key_)),
        decide_(ex.DecideOptionsFor(key_)),
        outcomes_run_(CurrentRun(facts_.status)) {
    Resolve();
  }

  ReconcileResult Run() {
    for (int step = 0; step < ex_.options_.max_steps; ++step) {
      const Time now = ex_.clock_.Now();
      StartOutcomesForRun();
      UpdateMemo(&memo_, out_, facts_, cluster_, now, decide_);
      Decision d = Decide(facts_, cluster_, script_, out_, memo_, now, decide_);
      VLOG(1) << key_ << ": " << ActionName(d.action) << " (" << d.why << ")";
      if (std::optional<ReconcileResult> done = Perform(d, now)) return *done;
    }
    LOG(ERROR) << key_ << ": no decision to stop after " << ex_.options_.max_steps
               << " steps; retrying with backoff";
    return Finish({std::nullopt, true});
  }

 private:
  using Next = std::optional<ReconcileResult>;
  static constexpr std::nullopt_t kDecideAgain = std::nullopt;

  Next Perform(const Decision& d, Time now) {
    switch (d.action) {
      case Action::kNone:
        Record(d.events);
        return Finish({d.requeue_after, d.retry_with_backoff});
      case Action::kAddFinalizer:
      case Action::kRemoveFinalizer:
        return PatchFinalizer(d);
      case Action::kLoadScript:
        return LoadScript();
      case Action::kLoadSecrets:
        return LoadSecrets();
      case Action::kSubmit:
        return Submit(d);
      case Action::kFindByTag:
        return FindByTag(d);
      case Action::kQuery:
        return Query(d, now);
      case Action::kCancel:
        return Cancel(d);
      case Action::kUpdateJob:
        return UpdateJob(d);
      case Action::kWriteStatus:
        return WriteStatus(d);
      case Action::kDeleteJob:
        return DeleteJob(d);
      case Action::kReread:
        return Reread();
    }
    return Finish({std::nullopt, true});
  }

  // ---- Kubernetes ----------------------------------------------------------

  Next PatchFinalizer(const Decision& d) {
    std::vector<std::string> fins = api::Finalizers(object_);
    fins.erase(std::remove(fins.begin(), fins.end(), api::kSlurmJobFinalizer), fins.end());
    if (d.action == Action::kAddFinalizer) fins.emplace_back(api::kSlurmJobFinalizer);
    // The resourceVersion makes the patch conditional: it fails with a
    // conflict instead of dropping someone else's finalizer.
    nlohmann::json patch = {
        {"metadata",
         {{"finalizers", fins},
          {"resourceVersion", api::MetadataString(object_, "resourceVersion")}}}};
    if (d.note_target) {
      patch["metadata"]["annotations"][std::string(kSubmitTargetAnnotation)] =
          EncodeSubmitTargetNote(ex_.options_.submit_note_key, facts_.id.uid,
                                 CurrentRun(facts_.status), *d.note_target);
    }
    absl::StatusOr<nlohmann::json> r =
        ex_.kube_.Patch(SlurmJobsResource(), ns_, name_, kube::PatchType::kMerge, patch);
    if (!r.ok()) return WriteFailed(r.status(), ActionName(d.action), /*honour_retry_after=*/false);
    Record(d.events);
    if (d.action == Action::kRemoveFinalizer && facts_.deleting) {
      LOG(INFO) << key_ << ": finalizer removed; " << d.why;
      ex_.Forget(key_);
      return ReconcileResult{};
    }
    if (d.action == Action::kAddFinalizer) out_.added_finalizer = true;
    AdoptResponse(std::move(*r));
    return kDecideAgain;
  }

  Next LoadScript() {
    const auto& ref = facts_.spec.script_from().config_map_key_ref();
    absl::StatusOr<nlohmann::json> cm = ex_.kube_.Get(kube::ConfigMaps(), ns_, ref.name());
    if (!cm.ok()) {
      script_.kind = ScriptFacts::Kind::kMissing;
      if (kube::IsNotFound(cm.status())) {
        script_.error =
            absl::StrCat("ConfigMap \"", ref.name(),
                         "\" (spec.scriptFrom) does not exist in namespace \"", ns_, "\"");
      } else if (cm.status().code() == absl::StatusCode::kPermissionDenied) {
        // A refusal does not pass by itself: the user is to grant the read, and is told how.
        script_.error =
            MayNotRead(absl::StrCat("ConfigMap \"", ref.name(), "\" (spec.scriptFrom)"), ns_);
      } else {
        script_.kind = ScriptFacts::Kind::kNotLoaded;
        LOG(WARNING) << key_ << ": reading ConfigMap " << ref.name() << ": " << cm.status();
        return Finish({std::nullopt, true});
      }
      return kDecideAgain;
    }
    const nlohmann::json data = cm->value("data", nlohmann::json::object());
    if (auto it = data.find(ref.key()); it != data.end() && it->is_string()) {
      script_.kind = ScriptFacts::Kind::kLoaded;
      script_.text = it->get<std::string>();
    } else {
      script_.kind = ScriptFacts::Kind::kMissing;
      script_.error = absl::StrCat("ConfigMap \"", ref.name(), "\" has no key \"", ref.key(),
                                   "\" (spec.scriptFrom.configMapKeyRef.key)");
    }
    return kDecideAgain;
  }

  Next WriteStatus(const Decision& d) {
    nlohmann::json updated = object_;
    updated["status"] = api::StatusToJson(d.status);
    absl::StatusOr<nlohmann::json> r = ex_.kube_.UpdateStatus(SlurmJobsResource(), updated);
    if (!r.ok()) {
      // What this reconcile's look saw is not in the status: the next
      // reconcile looks again instead of counting it as recent (#13 item 9).
      if (out_.query && out_.query->ok()) memo_.look_unrecorded = true;
      return WriteFailed(r.status(), "status write", /*honour_retry_after=*/true);
    }
    Record(d.events);
    if (IsFinalJobState(d.status.job_state()) && !IsFinalJobState(facts_.status.job_state())) {
      RecordFinishedJob(d.status);
    }
    CountNewUsage(facts_.status, d.status, ns_);
    if (CurrentRun(d.status) > CurrentRun(facts_.status)) out_.started_run = true;
    AdoptResponse(std::move(*r));
    return kDecideAgain;
  }

  // DELETE of this incarnation only (a SlurmJob re-created under the name
  // meanwhile is a conflict: re-read and decide again). Its finalizer then
  // comes off through the deletion stages, in this reconcile.
  Next DeleteJob(const Decision& d) {
    const kube::DeleteOptions opts{d.uid, "Background"};
    absl::StatusOr<nlohmann::json> r = ex_.kube_.Delete(SlurmJobsResource(), ns_, name_, opts);
    if (!r.ok()) return WriteFailed(r.status(), ActionName(d.action), /*honour_retry_after=*/false);
    Record(d.events);
    LOG(INFO) << key_ << ": deleted; " << d.why;
    if (r->value("kind", "") == "Status") {  // deleted at once: no finalizer was left
      ex_.Forget(key_);
      return ReconcileResult{};
    }
    AdoptResponse(std::move(*r));
    return kDecideAgain;
  }

  // A failed write: gone (stop), a conflict (re-read and decide again with
  // the outcomes kept), or an error (backoff; for a status write, a 429 says
  // when to come back, and that is honoured rather than the per-key backoff).
  // `what` names the write for the log and the Event: "status write", or the action's name.
  Next WriteFailed(const absl::Status& s, std::string_view what, bool honour_retry_after) {
    if (kube::IsNotFound(s)) return Finish({});
    if (kube::IsConflict(s) && Refresh().ok()) return kDecideAgain;
    write_failed_ = true;
    if (RefusedForGood(s)) Record({WriteRefusedEvent(s, what, "SlurmJob")});
    // Applied but unanswered, it is in no view of ours: stage kConfirmingWrite reads it back.
    if (kube::MayHaveBeenApplied(s)) memo_.write_outcome_unknown = true;
    LOG(WARNING) << key_ << ": " << what << " failed: " << s;
    std::optional<Duration> after = honour_retry_after ? kube::RetryAfter(s) : std::nullopt;
    if (after) return Finish({*after, false});
    // No answer at all: the retry waits for the API server to answer again,
    // not out the key's backoff (ReconcileResult::api_server_unreachable).
    return Finish({std::nullopt, true, kube::IsUnreachable(s)});
  }

  // The values of spec.environment[].valueFrom.secretKeyRef: they go into the submit's
  // descriptor only; errors name Secrets and keys, never values.
  Next LoadSecrets() {
    out_.secret_env = LoadSecretEnv(ex_.kube_, ns_, facts_.spec);
    if (!out_.secret_env->ok()) LOG(INFO) << key_ << ": " << out_.secret_env->status().message();
    return kDecideAgain;
  }

  // ---- Slurm ---------------------------------------------------------------

  // The dialect and credentials of the decision's cluster, resolved once
  // per call.
  struct Slurm {
    absl::StatusOr<const slurm::Dialect*> dialect;
    absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> creds;
    agentplatform::ClusterName where;
    // The first problem before any call: no dialect, or no credentials.
    absl::Status ready() const { return !dialect.ok() ? dialect.status() : creds.status(); }
  };
  Slurm SlurmFor(const Decision& d) {
    Slurm s{slurm::DialectFor(d.api_version), absl::UnknownError("unset"),
            ClusterNameOf(cluster_.spec, cluster_.key)};
    s.creds = s.dialect.ok()
                  ? ex_.credentials_.For(cluster_.identity)
                  : absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>>(s.dialect.status());
    return s;
  }
  absl::StatusOr<agentplatform::SlurmResponse> Call(const Slurm& s, agentplatform::HttpMethod m,
                                                    const std::string& path,
                                                    const nlohmann::json* body) {
    if (!s.creds.ok()) return s.creds.status();
    return ex_.slurm_.Call(s.where, **s.creds, m, path, body);
  }
  // Slurm's warnings as one Event: one per warning would let a remote fill the recorder's
  // queue, which every SlurmJob shares, and crowd out the Events of others.
  void Warn(const std::vector<slurm::SlurmMessage>& warnings, const char* action) {
    if (warnings.empty()) return;
    const std::string text = slurm::FoldMessages(warnings, kMaxWarningNoteBytes);
    ex_.events_.Record(
        object_,
        {kWarning, "SlurmWarning", action,
         warnings.size() == 1 ? text
                              : absl::StrCat("Slurm warned ", warnings.size(), " times: ", text)});
  }

  Next Submit(const Decision& d) {
    if (ex_.submit_fence_ != nullptr) {
      if (absl::Status fenced = ex_.submit_fence_->MaySubmit(ex_.clock_.Now()); !fenced.ok()) {
        out_.submit = fenced;  // nothing was sent
        LOG(WARNING) << key_ << ": submit not sent: " << fenced;
        return kDecideAgain;
      }
    }
    const Slurm s = SlurmFor(d);
    // A search made before this submit says nothing about it.
    out_.tag_lookup.reset();
    out_.submit_sent_at = ex_.clock_.Now();
    if (!s.dialect.ok()) {
      out_.submit = s.dialect.status();
      return kDecideAgain;
    }
    absl::StatusOr<agentplatform::SlurmResponse> r =
        Call(s, agentplatform::HttpMethod::kPost, (*s.dialect)->SubmitPath(), &d.submit_body);
    if (!r.ok()) {
      out_.submit = r.status();
      out_.submit_may_have_been_delivered =
          s.creds.ok() &&
          SubmitMayHaveReachedSlurm(r.status(), http::MayHaveBeenDelivered(r.status()));
      if (agentplatform::HeldBackByBudget(r.status())) {
        out_.submit_held_back =
            agentplatform::RetryDelay(r.status()).value_or(std::chrono::milliseconds(100));
        if (agentplatform::HeldBackWhileSilent(r.status())) {
          out_.submit_held_back_why = std::string(r.status().message());
        }
        VLOG(1) << key_ << ": submit held back: " << r.status();
        return kDecideAgain;
      }
      LOG(WARNING) << key_ << ": submit failed: " << r.status()
                   << (out_.submit_may_have_been_delivered ? " (outcome unknown)" : "");
      return kDecideAgain;
    }
    absl::StatusOr<slurm::SubmitResponse> parsed = (*s.dialect)->ParseSubmit(r->status, r->body);
    if (!parsed.ok()) {
      out_.submit = parsed.status();
      // Only a definitive refusal proves the job was not queued.
      out_.submit_may_have_been_delivered = slurm::ClassifySubmitFailure(r->status, r->body) ==
                                            slurm::SubmitDelivery::kMaybeDelivered;
      LOG(INFO) << key_ << ": Slurm did not confirm the submit: " << parsed.status()
                << (out_.submit_may_have_been_delivered ? " (outcome unknown)" : "");
      return kDecideAgain;
    }
    out_.submit = parsed->job_id;
    SetLogField("jobId", std::to_string(parsed->job_id));  // for the JSON log lines
    LOG(INFO) << key_ << ": submitted as Slurm job " << parsed->job_id;
    Warn(parsed->warnings, "Submit");
    return kDecideAgain;
  }

  // The jobs of `source` that carry one of `tags`. The live queue is read
  // from the tracker's shared list of the cluster when there is a tracker (a
  // list sent no earlier than d.search_not_before, which then dates the
  // search: out_.tag_lookup_at), else with a GET of its own.
  absl::StatusOr<std::vector<slurm::JobInfo>> FindTagged(const Slurm& s, const Decision& d,
                                                         TagSource source,
                                                         const std::vector<std::string>& tags) {
    const slurm::Dialect& dialect = **s.dialect;
    // The tracker's shared list is of where the SlurmCluster points now; a
    // search elsewhere (Decision::search_at) asks that cluster itself.
    if (source == TagSource::kLiveQueue && ex_.tracker_ && !SearchesElsewhere(d)) {
      ClusterEndpoint endpoint{cluster_.key, d.api_version, s.where, *s.creds};
      absl::StatusOr<JobTracker::LiveJobs> live = ex_.tracker_->FindLive(
          endpoint, [&](const slurm::JobInfo& j) { return IsTagged(j, tags); }, d.search_not_before,
          key_);
      if (!live.ok()) return live.status();
      out_.tag_lookup_at = std::min(out_.tag_lookup_at, live->listed_at);
      return std::move(live->jobs);
    }
    const bool live = source == TagSource::kLiveQueue;
    absl::StatusOr<agentplatform::SlurmResponse> r =
        Call(s, agentplatform::HttpMethod::kGet,
             live ? dialect.JobsPath(std::nullopt)
                  : dialect.DbJobsPath(AccountingSearchName(facts_),
                                       AccountingSearchStart(object_, ex_.clock_.Now())),
             nullptr);
    if (!r.ok()) return r.status();
    absl::StatusOr<slurm::JobList> list =
        live ? dialect.ParseJobs(r->status, r->body) : dialect.ParseDbJobs(r->status, r->body);
    if (!list.ok()) return list.status();
    return std::move(list->jobs);
  }

  // The search looks somewhere the SlurmCluster no longer points (Decision::search_at).
  bool SearchesElsewhere(const Decision& d) const {
    return d.search_at && !SameLocation(*d.search_at, LocationOf(cluster_.spec));
  }

  Next FindByTag(const Decision& d) {
    out_.tag_lookup_at = ex_.clock_.Now();
    Slurm s = SlurmFor(d);
    if (d.search_at) {
      s.where.project_id = d.search_at->project_id();
      s.where.region = d.search_at->region();
      s.where.cluster_id = d.search_at->cluster_id();
      out_.tag_lookup_where = *d.search_at;
    }
    out_.tag_lookup_unsent = false;
    out_.tag_lookup_held_back.reset();
    if (absl::Status ready = s.ready(); !ready.ok()) {
      out_.tag_lookup = ready;
      out_.tag_lookup_unsent = true;
      return kDecideAgain;
    }
    const std::vector<std::string> tags = RunTags(facts_);
    std::optional<int64_t> found;
    for (TagSource source : kTagSearchOrder) {
      absl::StatusOr<std::vector<slurm::JobInfo>> jobs = FindTagged(s, d, source, tags);
      if (!jobs.ok()) {
        out_.tag_lookup = jobs.status();
        if (agentplatform::HeldBackByBudget(jobs.status())) {
          out_.tag_lookup_held_back =
              agentplatform::RetryDelay(jobs.status()).value_or(std::chrono::milliseconds(100));
        }
        return kDecideAgain;
      }
      if ((found = PickTaggedJob(*jobs, tags))) break;
    }
    // (The place is named only when it is not where the SlurmCluster points.)
    LOG(INFO) << key_ << ": tag search "
              << (found ? absl::StrCat("found job ", *found) : "found nothing")
              << (SearchesElsewhere(d) ? absl::StrCat(" on ", DescribeLocation(*d.search_at)) : "");
    out_.tag_lookup = found;
    return kDecideAgain;
  }

  Next UpdateJob(const Decision& d) {
    const Slurm s = SlurmFor(d);
    out_.update = [&]() -> absl::StatusOr<slurm::UpdateResponse> {
      if (!s.dialect.ok()) return s.dialect.status();
      absl::StatusOr<nlohmann::json> body = (*s.dialect)->RenderUpdate(d.update);
      if (!body.ok()) return body.status();
      absl::StatusOr<agentplatform::SlurmResponse> r =
          Call(s, agentplatform::HttpMethod::kPost, (*s.dialect)->UpdatePath(d.job_id), &*body);
      if (!r.ok()) return r.status();
      return (*s.dialect)->ParseUpdate(r->status, r->body);
    }();
    if (out_.update->ok()) {
      LOG(INFO) << key_ << ": Slurm job " << d.job_id << " updated (" << d.why << ")";
    }
    return kDecideAgain;
  }

  // The live queue's answer: the cluster's shared list when batched (a
  // nullopt job: not in the live queue; with the tracker's batched
  // accounting of a job that ended), else a GET of the job.
  absl::StatusOr<JobTracker::Answer> LookLive(const Slurm& s, const Decision& d, Time now) {
    if (ex_.tracker_ && s.creds.ok()) {
      ClusterEndpoint endpoint{cluster_.key, d.api_version, s.where, *s.creds};
      ex_.tracker_->Track(endpoint, d.job_id, key_, QueryPoll(d, ex_.options_.decide));
      return ex_.tracker_->Get(endpoint, d.job_id, now - d.max_age, key_);
    }
    absl::StatusOr<agentplatform::SlurmResponse> r =
        Call(s, agentplatform::HttpMethod::kGet, (*s.dialect)->JobPath(d.job_id), nullptr);
    if (!r.ok()) return r.status();
    absl::StatusOr<slurm::JobLookup> live = (*s.dialect)->ParseJob(r->status, r->body, d.job_id);
    if (!live.ok()) return live.status();
    return JobTracker::Answer{std::move(live->job), std::nullopt, std::nullopt};
  }

  // The allocation of a job the live queue shows final, from its accounting record when that
  // already shows the job final too (slurmdbd learns it asynchronously): the tracker's batched
  // look when it made one, else a GET of the record; else nothing: the status then records the
  // run's end without usage (and looks again later: stage kAwaitingUsage).
  void AddAccountedAllocation(const Slurm& s, int64_t job_id,
                              const std::optional<AccountingLook>& batched, slurm::JobInfo* job) {
    if (batched) {
      job->allocation = batched->allocation;
      job->account = batched->account;
      return;
    }
    absl::StatusOr<agentplatform::SlurmResponse> r =
        Call(s, agentplatform::HttpMethod::kGet, (*s.dialect)->DbJobPath(job_id), nullptr);
    if (!r.ok()) return;
    absl::StatusOr<slurm::JobLookup> db = (*s.dialect)->ParseDbJob(r->status, r->body, job_id);
    if (!db.ok() || !db->job || !db->job->IsFinal() || !db->job->allocation) return;
    job->allocation = db->job->allocation;
    job->account = db->job->account;
  }

  // Live queue first; a job that left it is read from accounting (and only
  // accounting when the decision asks for that alone).
  Next Query(const Decision& d, Time now) {
    const Slurm s = SlurmFor(d);
    out_.query = [&]() -> absl::StatusOr<SlurmView> {
      if (!s.dialect.ok()) return s.dialect.status();
      if (d.accounting_only) return LookInAccounting(s, d.job_id);
      absl::StatusOr<JobTracker::Answer> live = LookLive(s, d, now);
      if (!live.ok()) return live.status();
      if (live->job) {
        // A run that just ended: its usage comes from accounting (job_usage.h).
        if (live->job->IsFinal() && !UsageRecorded(facts_.status, CurrentRun(facts_.status))) {
          AddAccountedAllocation(s, d.job_id, live->accounting, &*live->job);
        }
        return SlurmView{std::move(live->job), false};
      }
      // Left the queue: the tracker's batched look when it found the end.
      if (live->left_record) return SlurmView{std::move(live->left_record), true};
      return LookInAccounting(s, d.job_id);
    }();
    out_.query_held_back =
        !out_.query->ok() && agentplatform::HeldBackByBudget(out_.query->status());
    return kDecideAgain;
  }

  absl::StatusOr<SlurmView> LookInAccounting(const Slurm& s, int64_t job_id) {
    absl::StatusOr<agentplatform::SlurmResponse> r =
        Call(s, agentplatform::HttpMethod::kGet, (*s.dialect)->DbJobPath(job_id), nullptr);
    if (!r.ok()) return r.status();
    absl::StatusOr<slurm::JobLookup> db = (*s.dialect)->ParseDbJob(r->status, r->body, job_id);
    if (!db.ok()) return db.status();
    return SlurmView{db->job, true};
  }

  Next Cancel(const Decision& d) {
    const Slurm s = SlurmFor(d);
    out_.cancel = [&]() -> absl::StatusOr<slurm::CancelResponse> {
      if (!s.dialect.ok()) return s.dialect.status();
      absl::StatusOr<agentplatform::SlurmResponse> r =
          Call(s, agentplatform::HttpMethod::kDelete, (*s.dialect)->CancelPath(d.job_id), nullptr);
      if (!r.ok()) return r.status();
      return (*s.dialect)->ParseCancel(r->status, r->body, d.job_id);
    }();
    if (out_.cancel->ok()) {
      Record(d.events);
      LOG(INFO) << key_ << ": cancel of Slurm job " << d.job_id << " accepted";
    }
    // Whatever the cancel said, look again before deciding.
    out_.query.reset();
    out_.query_held_back = false;
    return kDecideAgain;
  }

  // ---- Facts ---------------------------------------------------------------

  void Resolve() {
    cluster_ = ResolveJobCluster(ex_.caches_, ns_, facts_.spec.cluster_ref(),
                                 ex_.options_.default_cluster, ex_.options_.access);
    ResolveDependencies(ex_.jobs_, &facts_);
  }

  // Outcomes belong to one run: a status that moved to another run (ours or
  // a re-read) starts them afresh.
  void StartOutcomesForRun() {
    const int32_t run = CurrentRun(facts_.status);
    if (run == outcomes_run_) return;
    const bool started_run = out_.started_run;
    out_ = Outcomes{};
    out_.started_run = started_run && run > outcomes_run_;
    outcomes_run_ = run;
  }

  // Re-reads the object after a conflict, keeping what this reconcile learned.
  absl::Status Refresh() {
    absl::StatusOr<nlohmann::json> fresh = ex_.kube_.Get(SlurmJobsResource(), ns_, name_);
    if (!fresh.ok()) {
      LOG(INFO) << key_ << ": re-read failed: " << fresh.status();
      return fresh.status();
    }
    absl::StatusOr<JobFacts> f = FactsFromObject(*fresh, ex_.options_);
    if (!f.ok()) return f.status();
    NoteSuperseded(*fresh);
    object_ = std::move(*fresh);
    facts_ = std::move(*f);
    memo_.write_outcome_unknown = false;  // the stored object, after any write of ours
    Resolve();
    return absl::OkStatus();
  }

  // Stage kConfirmingWrite: the stored object replaces this reconcile's view. Without an
  // answer, the key waits for the API server rather than out its backoff.
  Next Reread() {
    const absl::Status read = Refresh();
    if (read.ok()) return kDecideAgain;
    return Finish({std::nullopt, true, kube::IsUnreachable(read)});
  }

  // Our own write's response is the object from now on.
  void AdoptResponse(nlohmann::json response) {
    absl::StatusOr<JobFacts> f = FactsFromObject(response, ex_.options_);
    if (!f.ok()) return;
    // A conditional write answered: the store held the version it was based on, so an earlier
    // write without an answer either landed before it (and is in it) or never will.
    memo_.write_outcome_unknown = false;
    NoteSuperseded(response);
    object_ = std::move(response);
    facts_ = std::move(*f);
    ResolveDependencies(ex_.jobs_, &facts_);
  }

  // `newer` replaces object_: a cache still showing object_'s version is behind.
  void NoteSuperseded(const nlohmann::json& newer) {
    ex_.cache_lag_.Superseded(key_, api::MetadataString(object_, "uid"),
                              api::MetadataString(object_, "resourceVersion"),
                              api::MetadataString(newer, "resourceVersion"));
  }

  void Record(const std::vector<EventSpec>& events) {
    for (const EventSpec& e : events) ex_.events_.Record(object_, e);
  }

  // Keeps the memo and applies the tracking verdict (tracking_policy.h).
  ReconcileResult Finish(ReconcileResult r) {
    ex_.PutMemo(key_, memo_);
    // A call the project's budget held back was never sent: nothing failed,
    // so the retry waits for the budget's room, not for the key's growing
    // backoff (which reached minutes while the budget was busy, #16 item 3).
    std::optional<Duration> held = HeldBackDelay(out_);
    if (held && r.retry_with_backoff) {
      r.retry_with_backoff = false;
      r.requeue_after = std::max(*held, Duration(std::chrono::milliseconds(10)));
    } else {
      held.reset();
    }
    if (!ex_.tracker_) return r;
    const Time now = ex_.clock_.Now();
    const std::optional<Time> deadline = ActiveDeadline(facts_);
    TrackingVerdict v = TrackingAfterReconcile(
        facts_, cluster_, r.requeue_after, r.retry_with_backoff,
        PollInterval(facts_.status, now, ex_.options_.decide), ex_.options_.tracked_requeue,
        deadline ? std::optional<Duration>(*deadline - now) : std::nullopt);
    // Refused: no more lists with that identity for this job.
    if (v.kind == TrackingVerdict::Kind::kUntrack ||
        cluster_.kind == ClusterFacts::Kind::kRefused) {
      ex_.tracker_->Untrack(key_);
      return r;
    }
    if (v.kind != TrackingVerdict::Kind::kTrack) return r;
    // Follow the job through the cluster's list: the tracker wakes this key
    // when the list shows a change; the timer is only a safety net.
    absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> creds =
        ex_.credentials_.For(cluster_.identity);
    if (!creds.ok()) return r;
    ex_.tracker_->Track(
        ClusterEndpoint{cluster_.key, slurm::VersionOrDefault(cluster_.spec.slurm_api_version()),
                        ClusterNameOf(cluster_.spec, cluster_.key), *creds},
        facts_.status.job_id(), key_, v.poll);
    // A failed write's Retry-After is when the API server wants the write
    // again: not stretched to the tracked requeue, since no list change will
    // wake the key to write what is not written (#13 item 9).
    // Nor is a call the budget held back: no list change may come to wake
    // the key (the job may have left the queue already).
    if (!write_failed_ && !held) r.requeue_after = v.requeue;
    return r;
  }

  Executor& ex_;
  const std::string ns_, name_, key_;
  nlohmann::json object_;
  JobFacts facts_;
  Memo memo_;
  const DecideOptions decide_;  // ex_.options_.decide with this key's settle anchor
  Outcomes out_;
  ScriptFacts script_;
  ClusterFacts cluster_;
  int32_t outcomes_run_;
  bool write_failed_ = false;  // this reconcile ends on a failed Kubernetes write
};

ReconcileResult Executor::Reconcile(const std::string& key) {
  size_t slash = key.find('/');
  if (slash == std::string::npos) {
    LOG(ERROR) << "malformed key " << key;
    return {};
  }
  const std::string ns = key.substr(0, slash);
  const std::string name = key.substr(slash + 1);
  std::shared_ptr<const nlohmann::json> cached = jobs_.Get(ns, name);
  if (!cached) {
    // Gone: nothing to do (the finalizer guaranteed the cancel happened first).
    Forget(key);
    return {};
  }
  if (std::optional<Duration> wait =
          cache_lag_.Behind(key, api::MetadataString(*cached, "uid"),
                            api::MetadataString(*cached, "resourceVersion"))) {
    VLOG(1) << key << ": the cache does not show this process's last write yet; waiting for it";
    return {*wait, false};
  }
  absl::StatusOr<JobFacts> facts = FactsFromObject(*cached, options_);
  if (!facts.ok()) {
    LOG(WARNING) << key << ": unreadable SlurmJob: " << facts.status();
    events_.Record(*cached, {kWarning, "InvalidSpec", "Validate",
                             absl::StrCat("The SlurmJob cannot be read: ", facts.status().message(),
                                          ". Fix the field named above.")});
    return {};
  }
  return Attempt(*this, ns, name, *cached, std::move(*facts)).Run();
}

}  // namespace slurmop::reconcile
