// File: controller/reconcile/executor.cc

#include "controller/reconcile/executor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "controller/api/json_codec.h"
#include "controller/api/resources.h"
#include "controller/api/types.h"
#include "controller/http/http_transport.h"
#include "controller/kube/resource_types.h"
#include "controller/reconcile/cluster_status.h"
#include "controller/reconcile/conditions.h"
#include "controller/reconcile/resource_types.h"
#include "controller/reconcile/runs.h"
#include "controller/server/metrics.h"
#include "controller/slurm/dialects.h"
#include "glog/logging.h"
#include "google/protobuf/util/message_differencer.h"

namespace slurmop::reconcile {
namespace {

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
  }
  return "?";
}

std::vector<std::string> Finalizers(const nlohmann::json& obj) {
  std::vector<std::string> out;
  const auto& meta = obj.value("metadata", nlohmann::json::object());
  if (auto it = meta.find("finalizers"); it != meta.end() && it->is_array()) {
    for (const auto& f : *it) {
      if (f.is_string()) out.push_back(f.get<std::string>());
    }
  }
  return out;
}

std::string MetaString(const nlohmann::json& obj, const char* field) {
  const auto& meta = obj.value("metadata", nlohmann::json::object());
  auto it = meta.find(field);
  return it != meta.end() && it->is_string() ? it->get<std::string>() : "";
}

// JobFacts from a SlurmJob object. A spec the codec cannot read (wrong types
// that an older CRD let through) is reported as an error for the user.
absl::StatusOr<JobFacts> FactsFromObject(const nlohmann::json& obj) {
  absl::StatusOr<v1alpha1::SlurmJob> job = api::SlurmJobFromObject(obj);
  if (!job.ok()) return job.status();
  JobFacts f;
  f.id.ns = MetaString(obj, "namespace");
  f.id.name = MetaString(obj, "name");
  f.id.uid = MetaString(obj, "uid");
  const auto& meta = obj.value("metadata", nlohmann::json::object());
  f.generation = meta.value("generation", int64_t{0});
  f.deleting = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
  std::vector<std::string> fins = Finalizers(obj);
  f.has_finalizer = std::find(fins.begin(), fins.end(), api::kSlurmJobFinalizer) != fins.end();
  f.spec = job->spec();
  f.status = job->status();
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

ClusterFacts ResolveCluster(const ObjectCache& clusters, const std::string& ns,
                            const v1alpha1::SlurmJobSpec& spec,
                            const std::string& default_cluster) {
  ClusterFacts c;
  c.name = spec.cluster_ref().name().empty() ? default_cluster : spec.cluster_ref().name();
  if (c.name.empty()) {
    c.kind = ClusterFacts::Kind::kUnspecified;
    return c;
  }
  std::shared_ptr<const nlohmann::json> obj = clusters.Get(ns, c.name);
  if (!obj) {
    c.kind = ClusterFacts::Kind::kNotFound;
    return c;
  }
  absl::StatusOr<v1alpha1::SlurmCluster> cluster = api::SlurmClusterFromObject(*obj);
  if (!cluster.ok()) {
    // Unreadable: treat as found with an empty spec so that validation
    // explains what is missing.
    LOG(WARNING) << "SlurmCluster " << ns << "/" << c.name
                 << " cannot be read: " << cluster.status();
    c.kind = ClusterFacts::Kind::kFound;
    return c;
  }
  c.kind = ClusterFacts::Kind::kFound;
  c.generation = obj->value("metadata", nlohmann::json::object()).value("generation", int64_t{0});
  c.spec = cluster->spec();
  return c;
}

// "/slurm/v0.0.42/job/123" -> "/slurm/v0.0.42/job/{id}", query dropped: a
// bounded label set.
std::string PathTemplate(const std::string& path) {
  std::string out;
  const std::string p = path.substr(0, path.find('?'));
  size_t i = 0;
  while (i <= p.size()) {
    size_t slash = p.find('/', i);
    std::string seg = p.substr(i, slash == std::string::npos ? std::string::npos : slash - i);
    bool digits = !seg.empty() && seg.find_first_not_of("0123456789_") == std::string::npos;
    out += digits ? "{id}" : seg;
    if (slash == std::string::npos) break;
    out += '/';
    i = slash + 1;
  }
  return out;
}

void RecordSlurmCall(agentplatform::HttpMethod method, const std::string& path,
                     const absl::StatusOr<agentplatform::SlurmResponse>& r, Duration took) {
  server::Labels labels = {{"method", std::string(agentplatform::HttpMethodName(method))},
                           {"path", PathTemplate(path)}};
  server::Labels with_code = labels;
  with_code["code"] =
      r.ok() ? std::to_string(r->status) : absl::StatusCodeToString(r.status().code());
  server::GlobalMetrics().Add("slurmjob_operator_slurm_api_requests_total", with_code);
  server::GlobalMetrics().Observe("slurmjob_operator_slurm_api_request_duration_seconds", labels,
                                  std::chrono::duration<double>(took).count());
}

// Queue wait (start - submit) and run time (end - start) of a job that just ended.
void RecordFinishedJob(const v1alpha1::SlurmJobStatus& s) {
  if (s.has_submit_time() && s.has_start_time() &&
      s.start_time().seconds() >= s.submit_time().seconds()) {
    server::GlobalMetrics().Observe("slurmjob_operator_job_queue_wait_seconds", {},
                                    s.start_time().seconds() - s.submit_time().seconds());
  }
  if (s.has_start_time() && s.has_end_time() &&
      s.end_time().seconds() >= s.start_time().seconds()) {
    server::GlobalMetrics().Observe("slurmjob_operator_job_run_seconds", {{"state", s.job_state()}},
                                    s.end_time().seconds() - s.start_time().seconds());
  }
}

agentplatform::ClusterName ClusterNameOf(const v1alpha1::SlurmClusterSpec& spec) {
  agentplatform::ClusterName n;
  n.endpoint = spec.endpoint();
  n.project_id = spec.project_id();
  n.region = spec.region();
  n.cluster_id = spec.cluster_id();
  return n;
}

}  // namespace

Executor::Executor(kube::Client& kube, const ObjectCache& jobs, const ObjectCache& clusters,
                   agentplatform::SlurmApi& slurm_api, CredentialsResolver& credentials,
                   EventSink& events, const Clock& clock, ExecutorOptions options)
    : kube_(kube),
      jobs_(jobs),
      clusters_(clusters),
      slurm_api_(slurm_api),
      credentials_(credentials),
      events_(events),
      clock_(clock),
      options_([&] {
        ExecutorOptions o = std::move(options);
        if (o.decide.process_start == Time{}) o.decide.process_start = clock.Now();
        return o;
      }()) {}

absl::StatusOr<agentplatform::SlurmResponse> Executor::CallSlurm(
    const agentplatform::ClusterName& where, agentplatform::TokenSource& credentials,
    agentplatform::HttpMethod method, const std::string& path, const nlohmann::json* body,
    const agentplatform::CallOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<agentplatform::SlurmResponse> r =
      slurm_api_.Call(where, credentials, method, path, body, options);
  RecordSlurmCall(method, path, r, std::chrono::steady_clock::now() - started);
  return r;
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

ReconcileResult Executor::Reconcile(const std::string& key) {
  size_t slash = key.find('/');
  if (slash == std::string::npos) {
    LOG(ERROR) << "malformed key " << key;
    return {};
  }
  return Run(key.substr(0, slash), key.substr(slash + 1));
}

ReconcileResult Executor::Run(const std::string& ns, const std::string& name) {
  const std::string key = absl::StrCat(ns, "/", name);
  const kube::ResourceType& jobs_rt = SlurmJobsResource();

  std::shared_ptr<const nlohmann::json> cached = jobs_.Get(ns, name);
  if (!cached) {
    // Gone: nothing to do (the finalizer guaranteed the cancel happened first).
    if (tracker_) tracker_->Untrack(key);
    std::lock_guard<std::mutex> lock(mu_);
    memos_.erase(key);
    changed_.erase(key);
    return {};
  }
  nlohmann::json object = *cached;
  absl::StatusOr<JobFacts> facts = FactsFromObject(object);
  if (!facts.ok()) {
    LOG(WARNING) << key << ": unreadable SlurmJob: " << facts.status();
    events_.Record(object, {"Warning", "InvalidSpec", "Validate",
                            absl::StrCat("The SlurmJob cannot be read: ", facts.status().message(),
                                         ". Fix the field named above.")});
    return {};
  }

  Memo memo = TakeMemo(key);
  Outcomes out;
  ScriptFacts script;
  ClusterFacts cluster = ResolveCluster(clusters_, ns, facts->spec, options_.default_cluster);
  ResolveDependencies(jobs_, &*facts);
  // Outcomes belong to one run: a status that moved to another run (ours or
  // a re-read) starts them afresh.
  int32_t outcomes_run = CurrentRun(facts->status);

  // Re-reads the object after a conflict, keeping what this reconcile learned.
  auto refresh = [&]() -> bool {
    absl::StatusOr<nlohmann::json> fresh = kube_.Get(jobs_rt, ns, name);
    if (!fresh.ok()) {
      LOG(INFO) << key << ": re-read failed: " << fresh.status();
      return false;
    }
    absl::StatusOr<JobFacts> f = FactsFromObject(*fresh);
    if (!f.ok()) return false;
    object = std::move(*fresh);
    facts = std::move(f);
    cluster = ResolveCluster(clusters_, ns, facts->spec, options_.default_cluster);
    ResolveDependencies(jobs_, &*facts);
    return true;
  };
  auto adopt_response = [&](nlohmann::json response) {
    absl::StatusOr<JobFacts> f = FactsFromObject(response);
    if (f.ok()) {
      object = std::move(response);
      facts = std::move(f);
      ResolveDependencies(jobs_, &*facts);
    }
  };
  auto record = [&](const std::vector<EventSpec>& events) {
    for (const EventSpec& e : events) events_.Record(object, e);
  };
  auto finish = [&](ReconcileResult r) {
    PutMemo(key, memo);
    if (tracker_ && !facts->deleting) {
      if (facts->status.job_id() == 0 || IsFinalJobState(facts->status.job_state())) {
        tracker_->Untrack(key);
      } else if (r.requeue_after && !r.retry_with_backoff &&
                 cluster.kind == ClusterFacts::Kind::kFound) {
        // Follow the job through the cluster's list: the tracker wakes this
        // key when the list shows a change; the timer is only a safety net.
        absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> creds =
            credentials_.For(ns, cluster.spec);
        const std::string version =
            cluster.spec.slurm_api_version().empty() ? "v0.0.42" : cluster.spec.slurm_api_version();
        if (creds.ok()) {
          tracker_->Track(ClusterEndpoint{absl::StrCat(ns, "/", cluster.name), version,
                                          ClusterNameOf(cluster.spec), *creds},
                          facts->status.job_id(), key, *r.requeue_after);
          r.requeue_after = std::max(*r.requeue_after, options_.tracked_requeue);
        }
      }
    }
    return r;
  };

  for (int step = 0; step < options_.max_steps; ++step) {
    Time now = clock_.Now();
    if (CurrentRun(facts->status) != outcomes_run) {
      const bool started_run = out.started_run;
      out = Outcomes{};
      out.started_run = started_run && CurrentRun(facts->status) > outcomes_run;
      outcomes_run = CurrentRun(facts->status);
    }
    UpdateMemo(&memo, out, *facts, cluster, now, options_.decide);
    Decision d = Decide(*facts, cluster, script, out, memo, now, options_.decide);
    VLOG(1) << key << ": " << ActionName(d.action) << " (" << d.why << ")";

    switch (d.action) {
      case Action::kNone:
        record(d.events);
        return finish({d.requeue_after, d.retry_with_backoff});

      case Action::kAddFinalizer:
      case Action::kRemoveFinalizer: {
        std::vector<std::string> fins = Finalizers(object);
        fins.erase(std::remove(fins.begin(), fins.end(), api::kSlurmJobFinalizer), fins.end());
        if (d.action == Action::kAddFinalizer) fins.emplace_back(api::kSlurmJobFinalizer);
        // The resourceVersion makes the patch conditional: it fails with a
        // conflict instead of dropping someone else's finalizer.
        nlohmann::json patch = {
            {"metadata",
             {{"finalizers", fins}, {"resourceVersion", MetaString(object, "resourceVersion")}}}};
        absl::StatusOr<nlohmann::json> r =
            kube_.Patch(jobs_rt, ns, name, kube::PatchType::kMerge, patch);
        if (r.ok()) {
          record(d.events);
          if (d.action == Action::kRemoveFinalizer && facts->deleting) {
            LOG(INFO) << key << ": finalizer removed; " << d.why;
            if (tracker_) tracker_->Untrack(key);
            std::lock_guard<std::mutex> lock(mu_);
            memos_.erase(key);
            changed_.erase(key);
            return {};
          }
          if (d.action == Action::kAddFinalizer) out.added_finalizer = true;
          adopt_response(std::move(*r));
          continue;
        }
        if (kube::IsNotFound(r.status())) return finish({});
        if (kube::IsConflict(r.status()) && refresh()) continue;
        LOG(WARNING) << key << ": " << ActionName(d.action) << " failed: " << r.status();
        return finish({std::nullopt, true});
      }

      case Action::kLoadScript: {
        const auto& ref = facts->spec.script_from().config_map_key_ref();
        absl::StatusOr<nlohmann::json> cm = kube_.Get(kube::ConfigMaps(), ns, ref.name());
        if (!cm.ok()) {
          if (!kube::IsNotFound(cm.status())) {
            LOG(WARNING) << key << ": reading ConfigMap " << ref.name() << ": " << cm.status();
            return finish({std::nullopt, true});
          }
          script.kind = ScriptFacts::Kind::kMissing;
          script.error =
              absl::StrCat("ConfigMap \"", ref.name(),
                           "\" (spec.scriptFrom) does not exist in namespace \"", ns, "\"");
          continue;
        }
        const nlohmann::json data = cm->value("data", nlohmann::json::object());
        if (auto it = data.find(ref.key()); it != data.end() && it->is_string()) {
          script.kind = ScriptFacts::Kind::kLoaded;
          script.text = it->get<std::string>();
        } else {
          script.kind = ScriptFacts::Kind::kMissing;
          script.error = absl::StrCat("ConfigMap \"", ref.name(), "\" has no key \"", ref.key(),
                                      "\" (spec.scriptFrom.configMapKeyRef.key)");
        }
        continue;
      }

      case Action::kSubmit:
      case Action::kFindByTag:
      case Action::kQuery:
      case Action::kUpdateJob:
      case Action::kCancel: {
        absl::StatusOr<const slurm::Dialect*> dialect = slurm::DialectFor(d.api_version);
        absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> creds =
            dialect.ok()
                ? credentials_.For(ns, cluster.spec)
                : absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>>(dialect.status());
        const agentplatform::ClusterName where = ClusterNameOf(cluster.spec);
        auto call =
            [&](agentplatform::HttpMethod m, const std::string& path,
                const nlohmann::json* body) -> absl::StatusOr<agentplatform::SlurmResponse> {
          if (!creds.ok()) return creds.status();
          return CallSlurm(where, **creds, m, path, body);
        };
        auto warn = [&](const std::vector<slurm::SlurmMessage>& warnings, const char* action) {
          for (const auto& w : warnings) {
            events_.Record(object, {"Warning", "SlurmWarning", action, w.ToString()});
          }
        };

        if (d.action == Action::kSubmit) {
          absl::StatusOr<nlohmann::json> body = (*dialect)->RenderSubmit(d.descriptor);
          if (!body.ok()) {
            out.submit = body.status();
            continue;
          }
          // A search made before this submit says nothing about it.
          out.tag_lookup.reset();
          out.submit_sent_at = clock_.Now();
          absl::StatusOr<agentplatform::SlurmResponse> r =
              call(agentplatform::HttpMethod::kPost, (*dialect)->SubmitPath(), &*body);
          if (!r.ok()) {
            out.submit = r.status();
            out.submit_may_have_been_delivered =
                creds.ok() &&
                SubmitMayHaveReachedSlurm(r.status(), http::MayHaveBeenDelivered(r.status()));
            LOG(WARNING) << key << ": submit failed: " << r.status()
                         << (out.submit_may_have_been_delivered ? " (outcome unknown)" : "");
            continue;
          }
          absl::StatusOr<slurm::SubmitResponse> parsed =
              (*dialect)->ParseSubmit(r->status, r->body);
          if (parsed.ok()) {
            out.submit = parsed->job_id;
            LOG(INFO) << key << ": submitted as Slurm job " << parsed->job_id;
            warn(parsed->warnings, "Submit");
          } else {
            out.submit = parsed.status();
            LOG(INFO) << key << ": Slurm rejected the submit: " << parsed.status();
          }
          continue;
        }
        if (d.action == Action::kFindByTag) {
          out.tag_lookup_at = clock_.Now();
          absl::StatusOr<agentplatform::SlurmResponse> r =
              call(agentplatform::HttpMethod::kGet, (*dialect)->JobsPath(std::nullopt), nullptr);
          if (!r.ok()) {
            out.tag_lookup = r.status();
            continue;
          }
          absl::StatusOr<slurm::JobList> list = (*dialect)->ParseJobs(r->status, r->body);
          if (!list.ok()) {
            out.tag_lookup = list.status();
            continue;
          }
          const std::string tag = SubmissionTag(facts->id, CurrentRun(facts->status));
          std::optional<int64_t> found;
          for (const slurm::JobInfo& j : list->jobs) {
            if (j.comment == tag && (!found || j.job_id > *found)) found = j.job_id;
          }
          if (!found) {
            // Not in the live queue: it may have finished and been purged
            // while no operator was watching. Accounting keeps it (with its
            // comment, given AccountingStoreFlags=job_comment).
            const std::string job_name =
                facts->spec.name().empty() ? facts->id.name : facts->spec.name();
            r = call(agentplatform::HttpMethod::kGet, (*dialect)->DbJobsPath(job_name), nullptr);
            if (!r.ok()) {
              out.tag_lookup = r.status();
              continue;
            }
            absl::StatusOr<slurm::JobList> db = (*dialect)->ParseDbJobs(r->status, r->body);
            if (!db.ok()) {
              out.tag_lookup = db.status();
              continue;
            }
            for (const slurm::JobInfo& j : db->jobs) {
              if (j.comment == tag && (!found || j.job_id > *found)) found = j.job_id;
            }
          }
          LOG(INFO) << key << ": tag search "
                    << (found ? absl::StrCat("found job ", *found) : "found nothing");
          out.tag_lookup = found;
          continue;
        }
        if (d.action == Action::kUpdateJob) {
          absl::StatusOr<nlohmann::json> body = (*dialect)->RenderUpdate(d.update);
          if (!body.ok()) {
            out.update = body.status();
            continue;
          }
          absl::StatusOr<agentplatform::SlurmResponse> r =
              call(agentplatform::HttpMethod::kPost, (*dialect)->UpdatePath(d.job_id), &*body);
          if (!r.ok()) {
            out.update = r.status();
          } else {
            out.update = (*dialect)->ParseUpdate(r->status, r->body);
          }
          if (out.update->ok()) {
            LOG(INFO) << key << ": Slurm job " << d.job_id << " updated (" << d.why << ")";
          }
          continue;
        }
        if (d.action == Action::kQuery) {
          if (tracker_ && creds.ok()) {
            // The cluster's shared list answers, when recent enough.
            ClusterEndpoint endpoint{absl::StrCat(ns, "/", cluster.name), d.api_version, where,
                                     *creds};
            const Duration poll =
                d.max_age > Duration::zero()
                    ? d.max_age
                    : std::chrono::duration_cast<Duration>(options_.decide.min_poll);
            tracker_->Track(endpoint, d.job_id, key, poll);
            absl::StatusOr<JobTracker::Answer> a =
                tracker_->Get(endpoint, d.job_id, now - d.max_age);
            if (!a.ok()) {
              out.query = a.status();
              continue;
            }
            if (a->job) {
              out.query = SlurmView{a->job};
              continue;
            }
          } else {
            absl::StatusOr<agentplatform::SlurmResponse> r =
                call(agentplatform::HttpMethod::kGet, (*dialect)->JobPath(d.job_id), nullptr);
            if (!r.ok()) {
              out.query = r.status();
              continue;
            }
            absl::StatusOr<slurm::JobLookup> live =
                (*dialect)->ParseJob(r->status, r->body, d.job_id);
            if (!live.ok()) {
              out.query = live.status();
              continue;
            }
            if (live->job) {
              out.query = SlurmView{live->job};
              continue;
            }
          }
          // Not in the live queue any more: accounting has finished jobs.
          absl::StatusOr<agentplatform::SlurmResponse> r =
              call(agentplatform::HttpMethod::kGet, (*dialect)->DbJobPath(d.job_id), nullptr);
          if (!r.ok()) {
            out.query = r.status();
            continue;
          }
          absl::StatusOr<slurm::JobLookup> db =
              (*dialect)->ParseDbJob(r->status, r->body, d.job_id);
          if (!db.ok()) {
            out.query = db.status();
            continue;
          }
          out.query = SlurmView{db->job};
          continue;
        }
        // kCancel
        absl::StatusOr<agentplatform::SlurmResponse> r =
            call(agentplatform::HttpMethod::kDelete, (*dialect)->CancelPath(d.job_id), nullptr);
        if (!r.ok()) {
          out.cancel = r.status();
        } else {
          out.cancel = (*dialect)->ParseCancel(r->status, r->body, d.job_id);
        }
        if (out.cancel->ok()) {
          record(d.events);
          LOG(INFO) << key << ": cancel of Slurm job " << d.job_id << " accepted";
        }
        // Whatever the cancel said, look again before deciding.
        out.query.reset();
        continue;
      }

      case Action::kWriteStatus: {
        nlohmann::json updated = object;
        updated["status"] = api::StatusToJson(d.status);
        absl::StatusOr<nlohmann::json> r = kube_.UpdateStatus(jobs_rt, updated);
        if (r.ok()) {
          record(d.events);
          if (IsFinalJobState(d.status.job_state()) &&
              !IsFinalJobState(facts->status.job_state())) {
            RecordFinishedJob(d.status);
          }
          if (CurrentRun(d.status) > CurrentRun(facts->status)) out.started_run = true;
          adopt_response(std::move(*r));
          continue;
        }
        if (kube::IsNotFound(r.status())) return finish({});
        if (kube::IsConflict(r.status()) && refresh()) continue;
        LOG(WARNING) << key << ": status write failed: " << r.status();
        // A 429 says when to come back; honour it rather than the per-key backoff.
        if (std::optional<Duration> after = kube::RetryAfter(r.status())) {
          return finish({*after, false});
        }
        return finish({std::nullopt, true});
      }
    }
  }
  LOG(ERROR) << key << ": no decision to stop after " << options_.max_steps
             << " steps; retrying with backoff";
  return finish({std::nullopt, true});
}

ReconcileResult Executor::ReconcileCluster(const std::string& key) {
  size_t slash = key.find('/');
  if (slash == std::string::npos) return {};
  const std::string ns = key.substr(0, slash);
  const std::string name = key.substr(slash + 1);
  std::shared_ptr<const nlohmann::json> cached = clusters_.Get(ns, name);
  if (!cached) {
    if (tracker_) tracker_->ForgetCluster(key);
    return {};
  }
  absl::StatusOr<v1alpha1::SlurmCluster> cluster = api::SlurmClusterFromObject(*cached);
  if (!cluster.ok()) {
    events_.Record(*cached,
                   {"Warning", "InvalidSpec", "Validate",
                    absl::StrCat("The SlurmCluster cannot be read: ", cluster.status().message())});
    return {};
  }
  const auto& meta = cached->value("metadata", nlohmann::json::object());
  const int64_t generation = meta.value("generation", int64_t{0});

  ProbeOutcome probe;
  probe.spec = ValidateClusterSpec(cluster->spec());
  if (probe.spec.ok()) {
    const std::string version = cluster->spec().slurm_api_version().empty()
                                    ? "v0.0.42"
                                    : cluster->spec().slurm_api_version();
    absl::StatusOr<const slurm::Dialect*> dialect = slurm::DialectFor(version);
    absl::StatusOr<std::shared_ptr<agentplatform::TokenSource>> creds =
        credentials_.For(ns, cluster->spec());
    if (!creds.ok()) {
      probe.call = creds.status();
    } else {
      if (tracker_ && dialect.ok()) {
        // Swept for orphaned jobs from now on.
        tracker_->RegisterCluster(
            ClusterEndpoint{key, version, ClusterNameOf(cluster->spec()), *creds});
      }
      const auto started = std::chrono::steady_clock::now();
      absl::StatusOr<agentplatform::SlurmResponse> r =
          slurm_api_.Call(ClusterNameOf(cluster->spec()), **creds, agentplatform::HttpMethod::kGet,
                          (*dialect)->PingPath(), nullptr);
      RecordSlurmCall(agentplatform::HttpMethod::kGet, (*dialect)->PingPath(), r,
                      std::chrono::steady_clock::now() - started);
      if (!r.ok()) {
        probe.call = r.status();
      } else {
        probe.slurm_http_status = r->status;
        if (r->status != 200) {
          probe.slurm_detail = r->body.is_string() ? r->body.get<std::string>()
                               : r->body.is_null() ? ""
                                                   : r->body.dump();
          if (probe.slurm_detail.size() > 300) probe.slurm_detail.resize(300);
        }
      }
    }
  }
  const Time now = clock_.Now();
  v1alpha1::SlurmClusterStatus desired =
      ClusterStatusFromProbe(cluster->status(), cluster->spec(), probe, generation, now);
  if (!google::protobuf::util::MessageDifferencer::Equals(desired, cluster->status())) {
    const bool was_ready = IsConditionTrue(cluster->status().conditions(), kReady);
    const bool ready = IsConditionTrue(desired.conditions(), kReady);
    nlohmann::json updated = *cached;
    updated["status"] = api::StatusToJson(desired);
    absl::StatusOr<nlohmann::json> w = kube_.UpdateStatus(SlurmClustersResource(), updated);
    if (!w.ok()) {
      if (kube::IsNotFound(w.status())) return {};
      LOG(WARNING) << "SlurmCluster " << key << ": status write failed: " << w.status();
      return {std::nullopt, true};
    }
    if (ready != was_ready || !ready) {
      const v1alpha1::Condition* c = FindCondition(desired.conditions(), kReady);
      events_.Record(*w, {ready ? "Normal" : "Warning", c ? c->reason() : "Probe", "Probe",
                          c ? c->message() : ""});
    }
    LOG(INFO) << "SlurmCluster " << key << ": " << (ready ? "ready" : "not ready");
  }
  return {NextProbe(desired), false};
}

}  // namespace slurmop::reconcile
