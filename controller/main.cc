// File: controller/main.cc
//
// slurmjob-operator: runs SlurmJobs on Agent Platform Slurm clusters.
//
// Wiring only: flags -> Kubernetes client (kubeconfig or in-cluster) ->
// Agent Platform client and credentials -> controller manager -> gRPC health.
// SIGTERM/SIGINT stop it cleanly: readiness goes NOT_SERVING, the informers
// and workers stop (a reconcile in flight finishes), Events are flushed.

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/agentplatform/client.h"
#include "controller/agentplatform/credentials.h"
#include "controller/agentplatform/endpoint_policy.h"
#include "controller/api/cron_resources.h"
#include "controller/api/resources.h"
#include "controller/common/clock.h"
#include "controller/cron/cron_controller.h"
#include "controller/http/cpprest_transport.h"
#include "controller/http/spare_connection_client.h"
#include "controller/http/spare_connection_transport.h"
#include "controller/kube/client.h"
#include "controller/kube/config.h"
#include "controller/kube/events.h"
#include "controller/kube/leader_election.h"
#include "controller/kube/startup_retry.h"
#include "controller/reconcile/controller_metrics.h"
#include "controller/reconcile/credentials_resolver.h"
#include "controller/reconcile/installation_id.h"
#include "controller/reconcile/manager.h"
#include "controller/reconcile/metered_slurm.h"
#include "controller/reconcile/resource_types.h"
#include "controller/reconcile/shard_coordinator.h"
#include "controller/reconcile/shard_labeller.h"
#include "controller/reconcile/shards.h"
#include "controller/reconcile/slurmjob_packer.h"
#include "controller/reconcile/submit_fence.h"
#include "controller/reconcile/submit_note_key.h"
#include "controller/server/health_server.h"
#include "controller/server/log_format.h"
#include "controller/server/metrics.h"
#include "glog/logging.h"

ABSL_FLAG(std::string, kubeconfig, "",
          "Path to a kubeconfig file. Default: $KUBECONFIG, then the in-cluster service account, "
          "then ~/.kube/config.");
ABSL_FLAG(std::string, context, "", "kubeconfig context to use (default: its current-context).");
ABSL_FLAG(std::string, namespace, "", "Watch only this namespace (default: all namespaces).");
ABSL_FLAG(std::string, health_address, "0.0.0.0", "Address for the gRPC health endpoint.");
ABSL_FLAG(int, health_port, 9090, "Port for the gRPC health endpoint (0 picks a free one).");
ABSL_FLAG(std::string, health_port_file, "",
          "If set, the bound health port is written to this file once listening.");
ABSL_FLAG(int, metrics_port, 0,
          "Port for Prometheus metrics at /metrics; 0 (the default) serves none. deploy/ uses "
          "8080.");
ABSL_FLAG(int, workers, 4, "Number of SlurmJobs reconciled concurrently.");
ABSL_FLAG(int, http_io_threads, 2,
          "Threads that carry the I/O of Kubernetes and Agent Platform requests (cpprestsdk's "
          "pool; each request waits on its caller's thread). cpprestsdk's own default, 40, "
          "made each request's wake-ups pass through dozens of threads (bench/README.md).");
ABSL_FLAG(bool, kube_keep_alive_writes, true,
          "Send the Kubernetes writes that may be re-sent (status writes, patches with a "
          "resourceVersion) on keep-alive connections whose I/O runs on the writing worker's own "
          "thread, instead of through cpprestsdk's I/O threads (bench/README.md, \"Kubernetes "
          "writes on the calling thread\").");
ABSL_FLAG(bool, kube_watch_on_informer_thread, true,
          "Read each Kubernetes watch on its informer's own thread (keep-alive connection, "
          "Boost.Beast), so a watch event needs no hand-off from cpprestsdk's I/O threads "
          "(bench/README.md, \"Watch events on the informer's thread\"). Needs "
          "--kube-keep-alive-writes.");
ABSL_FLAG(int, malloc_trim_seconds, 30,
          "Every so many seconds, hand freed heap pages back to the system (glibc "
          "malloc_trim); 0 never. Bursts (thousands of submits, a relist) leave freed "
          "memory in the heap that would otherwise stay resident.");
ABSL_FLAG(std::string, default_cluster, "",
          "SlurmCluster (in the SlurmJob's namespace) used when spec.clusterRef.name is empty.");
ABSL_FLAG(double, min_poll_seconds, 1.0, "Poll interval right after a job is submitted.");
ABSL_FLAG(double, max_poll_seconds, 30.0, "Longest poll interval for long-running jobs.");
ABSL_FLAG(double, agent_platform_requests_per_minute, 480,
          "Client-side budget of callSlurmRestApi requests per minute per Agent Platform "
          "project and region, shared by every SlurmCluster in it (Agent Platform allows about "
          "600 per minute per project and region; the default keeps 20% for other clients). "
          "Submits and cancels go ahead of tracking, tracking ahead of probes; 0 = no limit.");
ABSL_FLAG(double, agent_platform_qps, -1,
          "Deprecated: the budget is now per project and region "
          "(--agent-platform-requests-per-minute); when set, N means N*60 requests per minute.");
ABSL_FLAG(bool, agent_platform_spare_connections, true,
          "Send requests that must never be re-sent (the Slurm submit and other POST/PATCH to "
          "Agent Platform and token endpoints) on a connection opened ahead of time and used "
          "once (one spare per endpoint, kept while the endpoint had such a request in the last "
          "10 minutes, none older than 30 s), instead of opening a fresh one on the request's "
          "critical path. false: a fresh cpprestsdk connection per such request.");
ABSL_FLAG(bool, leader_elect, false,
          "Run leader election on a coordination.k8s.io/v1 Lease so that only one replica "
          "reconciles; the others wait as hot standbys.");
ABSL_FLAG(std::string, leader_elect_namespace, "",
          "Namespace of the Lease (default: $POD_NAMESPACE, else the in-cluster namespace, else "
          "slurmjob-operator-system).");
ABSL_FLAG(std::string, leader_elect_lease_name, "slurmjob-operator", "Name of the Lease.");
ABSL_FLAG(std::string, leader_elect_identity, "",
          "This replica's identity in the Lease (default: $POD_NAME, else hostname_pid).");
ABSL_FLAG(double, leader_elect_lease_duration_seconds, 15.0,
          "How long a standby waits after the last renewal before taking over.");
ABSL_FLAG(double, leader_elect_renew_deadline_seconds, 10.0,
          "How long the leader retries renewing before it gives up leading.");
ABSL_FLAG(double, leader_elect_retry_period_seconds, 2.0, "Interval between Lease attempts.");
ABSL_FLAG(int, shards, 1,
          "Split the work over replicas: S shards, each SlurmCluster and ClusterSlurmCluster (and "
          "the SlurmJobs naming it) in one, by the label hpc.slurmoperator.dev/shard; each shard "
          "is held by one replica through the Lease <leader-elect-lease-name>-shard-<k>, and a "
          "replica watches only the shards it holds. 1 (the default): one replica reconciles "
          "everything, as without the flag. Implies Leases even without --leader-elect.");
ABSL_FLAG(std::string, allowed_endpoint_hosts, "",
          "Comma-separated host[:port] list of endpoints other than Google's API hosts that "
          "SlurmCluster.spec.endpoint and the token URLs of credentialsSecretRef Secrets may "
          "name (http or https; \"host\" allows every port). Nothing else is ever sent a "
          "request; loopback is not special.");
ABSL_FLAG(std::string, allowed_endpoint_hosts_file, "",
          "A file listing more allowed endpoint hosts (one or more per line, '#' comments); "
          "read once at start.");
ABSL_FLAG(int, verbosity, 0, "Verbose logging level (glog VLOG).");
ABSL_FLAG(std::string, log_format, "text",
          "Log format on stderr: text (glog lines) or json (one JSON object per line with time, "
          "severity, message, caller and, where they apply, namespace, name, uid, run, jobId, "
          "cluster, controller and reconcileID).");
ABSL_FLAG(bool, batched_tracking, true,
          "Follow jobs with one GET /slurm/<v>/jobs/ per SlurmCluster per tick (false: one GET "
          "per job).");
ABSL_FLAG(bool, prioritize_submits, true,
          "Reconcile SlurmJobs that have no Slurm job yet before the others (a tracking tick "
          "that reports many jobs changed queues their status writes; a new SlurmJob does not "
          "wait behind them). false: one first-in, first-out work queue for all.");
ABSL_FLAG(int, workers_kept_for_submits, 1,
          "With --prioritize-submits and more --workers than this, this many workers take only "
          "SlurmJobs that have no Slurm job yet: a new SlurmJob starts at once instead of after "
          "a worker finishes one of the status writes a tracking tick queued. 0: every worker "
          "takes any work.");
ABSL_FLAG(std::string, submit_note_key_file, "",
          "A file holding the submit-note key (at least 32 bytes, e.g. `openssl rand -hex 32`, "
          "from a Secret only the operator reads); takes precedence over "
          "--submit-note-key-secret. With a key, a new SlurmJob's first submit target is "
          "recorded in the finalizer patch, as an HMAC-signed annotation, rather than in a status "
          "write of its own: one API round trip less before each first submit. Every replica "
          "needs the same key; change it only with the operator stopped.");
ABSL_FLAG(std::string, submit_note_key_secret, slurmop::reconcile::kDefaultNoteKeySecret,
          "The Secret in the operator's namespace (--operator-namespace) whose data.key is the "
          "submit-note key, when --submit-note-key-file is not given. Created with a random key "
          "(immutable) when it does not exist, so every replica shares one key that survives "
          "restarts; to change the key, delete it with the operator stopped. When the operator "
          "may not read or create it, notes are off and the log says why. Empty: off.");
ABSL_FLAG(double, submit_settle_seconds, 60.0,
          "How long a submit may still be in flight after it was sent (or after a restart): a "
          "search for the job's tag that finds nothing sooner does not allow a second submit.");
ABSL_FLAG(bool, allow_operator_identity_for_namespaced_clusters, false,
          "Call namespaced SlurmClusters without credentialsSecretRef with the operator's own "
          "Google identity. Off (the default): such a SlurmCluster is not Ready and nothing is "
          "sent to it, so no namespace tenant can borrow the operator's identity; tenants bring "
          "credentials, or use ClusterSlurmClusters the installer set up. Turn it on for "
          "single-team installs where every namespace is trusted.");
ABSL_FLAG(std::string, operator_namespace, "",
          "The operator's own namespace, where the Secrets named by ClusterSlurmClusters' "
          "credentialsSecretRef live (default: $POD_NAMESPACE, else the in-cluster namespace, "
          "else slurmjob-operator-system).");
ABSL_FLAG(bool, orphan_sweep, true,
          "Cancel running Slurm jobs that carry this installation's tag but whose SlurmJob no "
          "longer exists (jobs of SlurmJobs deleted with deletionPolicy Orphan, jobs a "
          "SlurmJob's status names, and other installations' jobs are never touched).");
ABSL_FLAG(double, orphan_sweep_interval_seconds, 60.0,
          "How often a cluster's job list is swept for orphans (a job is cancelled when two "
          "sweeps in a row find it orphaned).");
ABSL_FLAG(int, accounting_batch, 100,
          "Jobs whose end a cluster's job list first shows are looked up in accounting "
          "(slurmdbd) this many per call (GET /slurmdb/<v>/jobs?step=<ids>), for their usage, "
          "instead of one GET per job; 0 = one GET per job.");
ABSL_FLAG(std::string, installation_id, "",
          "This installation's id, carried in every Slurm job's tag so that installations "
          "sharing a Slurm cluster never touch each other's jobs (default: the UID of Namespace "
          "kube-system; two installations in one Kubernetes cluster must each set one). 1-63 "
          "of [A-Za-z0-9._-]; never change it while SlurmJobs exist.");

namespace {

using slurmop::Duration;

Duration Seconds(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

// Adapts the Kubernetes EventRecorder to the executor's EventSink.
class RecorderSink final : public slurmop::reconcile::EventSink {
 public:
  explicit RecorderSink(slurmop::kube::EventRecorder& recorder) : recorder_(recorder) {}
  void Record(const nlohmann::json& regarding, const slurmop::reconcile::EventSpec& e) override {
    recorder_.Record(regarding, e.type, e.reason, e.action, e.note);
  }

 private:
  slurmop::kube::EventRecorder& recorder_;
};

std::string EnvOr(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// --operator-namespace, else where the pod runs, else the deploy/ default.
std::string OperatorNamespace() {
  std::string ns = absl::GetFlag(FLAGS_operator_namespace);
  if (!ns.empty()) return ns;
  ns = EnvOr("POD_NAMESPACE", "");
  if (!ns.empty()) return ns;
  FILE* f = std::fopen("/var/run/secrets/kubernetes.io/serviceaccount/namespace", "r");
  if (f != nullptr) {
    char buf[256] = {0};
    size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    if (n > 0) return std::string(buf, n);
  }
  return "slurmjob-operator-system";
}

std::string LeaseNamespace() {
  const std::string ns = absl::GetFlag(FLAGS_leader_elect_namespace);
  return ns.empty() ? OperatorNamespace() : ns;
}

std::string Hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// This replica's identity in Leases: --leader-elect-identity, $POD_NAME, else hostname_pid.
std::string Identity() {
  std::string identity = absl::GetFlag(FLAGS_leader_elect_identity);
  if (identity.empty()) identity = EnvOr("POD_NAME", Hostname() + "_" + std::to_string(getpid()));
  return identity;
}

// Stop signals are taken by a dedicated thread; block them everywhere else
// (threads started later inherit the mask).
sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

// The Kubernetes client: --kubeconfig/--context, else in-cluster.
absl::StatusOr<std::unique_ptr<slurmop::kube::Client>> NewKubeClient() {
  absl::StatusOr<slurmop::kube::ClientConfig> kube_config =
      slurmop::kube::ResolveConfig(absl::GetFlag(FLAGS_kubeconfig), absl::GetFlag(FLAGS_context));
  if (!kube_config.ok()) {
    return absl::Status(
        kube_config.status().code(),
        absl::StrCat("cannot configure the Kubernetes client: ", kube_config.status().message()));
  }
  // Sharded replicas say who they are (as client-go's user agent names the binary and host), so
  // that an API server's audit log tells their requests apart.
  if (absl::GetFlag(FLAGS_shards) > 1) {
    kube_config->user_agent = absl::StrCat(kube_config->user_agent, " (", Identity(), ")");
  }
  kube_config->keep_alive_writes = absl::GetFlag(FLAGS_kube_keep_alive_writes);
  kube_config->watches_on_informer_thread = absl::GetFlag(FLAGS_kube_watch_on_informer_thread);
  absl::StatusOr<std::unique_ptr<slurmop::kube::Client>> kube =
      slurmop::kube::NewClientFromConfig(*kube_config);
  if (!kube.ok()) {
    return absl::Status(kube.status().code(), absl::StrCat("cannot create the Kubernetes client: ",
                                                           kube.status().message()));
  }
  return kube;
}

// Agent Platform: the callSlurmRestApi client and the transport it and the
// Google credentials share (TLS verified against the system's CA bundle).
struct AgentPlatform {
  std::unique_ptr<slurmop::http::Transport> transport;
  std::unique_ptr<slurmop::agentplatform::SlurmApi> slurm_api;
  slurmop::agentplatform::CredentialsOptions credentials;
};

// CpprestTransport, with requests that must not be re-sent routed to spare
// connections (SpareConnectionTransport) unless --agent-platform-spare-connections=false.
absl::StatusOr<std::unique_ptr<slurmop::http::Transport>> NewAgentPlatformTransport() {
  absl::StatusOr<std::unique_ptr<slurmop::http::CpprestTransport>> cpprest =
      slurmop::http::CpprestTransport::Create({});
  if (!cpprest.ok()) return cpprest.status();
  if (!absl::GetFlag(FLAGS_agent_platform_spare_connections)) return *std::move(cpprest);
  absl::StatusOr<std::unique_ptr<slurmop::http::SpareConnectionClient>> spares =
      slurmop::http::SpareConnectionClient::Create({});
  if (!spares.ok()) return spares.status();
  return std::make_unique<slurmop::http::SpareConnectionTransport>(*std::move(cpprest),
                                                                   *std::move(spares));
}

absl::StatusOr<AgentPlatform> NewAgentPlatform(const slurmop::Clock& clock) {
  absl::StatusOr<std::unique_ptr<slurmop::http::Transport>> transport = NewAgentPlatformTransport();
  if (!transport.ok()) {
    return absl::Status(
        transport.status().code(),
        absl::StrCat("cannot create the HTTP transport: ", transport.status().message()));
  }
  absl::StatusOr<slurmop::agentplatform::EndpointPolicy> endpoints =
      slurmop::agentplatform::EndpointPolicyFromFlags(
          absl::GetFlag(FLAGS_allowed_endpoint_hosts),
          absl::GetFlag(FLAGS_allowed_endpoint_hosts_file));
  if (!endpoints.ok()) {
    return absl::Status(endpoints.status().code(),
                        absl::StrCat("bad allowed endpoint hosts: ", endpoints.status().message()));
  }
  LOG(INFO) << "endpoints allowed: " << endpoints->Describe();
  AgentPlatform ap;
  ap.transport = std::move(*transport);
  slurmop::agentplatform::ClientOptions api_options;
  api_options.transport = ap.transport.get();
  api_options.endpoint_policy = *endpoints;
  api_options.clock = &clock;
  api_options.budget.requests_per_minute = absl::GetFlag(FLAGS_agent_platform_requests_per_minute);
  if (const double qps = absl::GetFlag(FLAGS_agent_platform_qps); qps >= 0) {
    LOG(WARNING) << "--agent-platform-qps is deprecated; using it as "
                    "--agent-platform-requests-per-minute="
                 << qps * 60 << " (now one budget per project and region)";
    api_options.budget.requests_per_minute = qps * 60;
  }
  ap.slurm_api = slurmop::agentplatform::NewSlurmApiClient(api_options);
  slurmop::reconcile::RegisterCallBudgetMetrics(*ap.slurm_api);
  ap.credentials.transport = ap.transport.get();
  ap.credentials.endpoint_policy = *endpoints;  // for Secrets' credentials
  ap.credentials.clock = &clock;
  return ap;
}

slurmop::reconcile::ManagerOptions ManagerOptionsFromFlags() {
  slurmop::reconcile::ManagerOptions options;
  options.watch_namespace = absl::GetFlag(FLAGS_namespace);
  options.workers = absl::GetFlag(FLAGS_workers);
  options.executor.default_cluster = absl::GetFlag(FLAGS_default_cluster);
  options.executor.decide.min_poll = Seconds(absl::GetFlag(FLAGS_min_poll_seconds));
  options.executor.decide.max_poll = Seconds(absl::GetFlag(FLAGS_max_poll_seconds));
  options.batched_tracking = absl::GetFlag(FLAGS_batched_tracking);
  options.prioritize_submits = absl::GetFlag(FLAGS_prioritize_submits);
  options.workers_kept_for_submits = absl::GetFlag(FLAGS_workers_kept_for_submits);
  options.executor.decide.submit_settle = Seconds(absl::GetFlag(FLAGS_submit_settle_seconds));
  options.tracker.sweep = absl::GetFlag(FLAGS_orphan_sweep);
  options.tracker.sweep_interval = Seconds(absl::GetFlag(FLAGS_orphan_sweep_interval_seconds));
  options.tracker.accounting_batch = std::max(0, absl::GetFlag(FLAGS_accounting_batch));
  options.executor.access.allow_operator_identity_for_namespaced_clusters =
      absl::GetFlag(FLAGS_allow_operator_identity_for_namespaced_clusters);
  options.executor.access.operator_namespace = OperatorNamespace();
  return options;
}

// The gRPC health endpoint and the Prometheus metrics.
struct Servers {
  slurmop::server::HealthServer health;
  slurmop::server::MetricsServer metrics{slurmop::server::GlobalMetrics()};
};

// gRPC health (always) and Prometheus metrics (with --metrics-port).
absl::Status StartServers(Servers& servers) {
  slurmop::server::HealthServer& health = servers.health;
  slurmop::server::MetricsServer& metrics = servers.metrics;
  if (absl::Status s =
          health.Start(absl::GetFlag(FLAGS_health_address), absl::GetFlag(FLAGS_health_port));
      !s.ok()) {
    return s;
  }
  LOG(INFO) << "gRPC health on port " << health.port();
  if (const std::string f = absl::GetFlag(FLAGS_health_port_file); !f.empty()) {
    FILE* out = std::fopen(f.c_str(), "w");
    if (out) {
      std::fprintf(out, "%d\n", health.port());
      std::fclose(out);
    }
  }
  if (const int port = absl::GetFlag(FLAGS_metrics_port); port > 0) {
    if (absl::Status s = metrics.Start(absl::GetFlag(FLAGS_health_address), port); !s.ok()) {
      return s;
    }
    LOG(INFO) << "metrics on port " << port << " at /metrics";
  }
  return absl::OkStatus();
}

// What the main loop waits on: a stop signal, leadership gained or lost.
struct Lifecycle {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;  // mu
  std::atomic<bool> leading{false};
  std::atomic<bool> lost_leadership{false};
  std::atomic<bool> shutting_down{false};
  // Runs on the elector thread when leadership starts, before `leading` is set.
  std::function<void()> before_leading;
};

slurmop::kube::LeaderElectionConfig LeaderElectionFromFlags(Lifecycle& life) {
  slurmop::kube::LeaderElectionConfig le;
  le.lease_namespace = LeaseNamespace();
  le.lease_name = absl::GetFlag(FLAGS_leader_elect_lease_name);
  le.identity = Identity();
  le.lease_duration = Seconds(absl::GetFlag(FLAGS_leader_elect_lease_duration_seconds));
  le.renew_deadline = Seconds(absl::GetFlag(FLAGS_leader_elect_renew_deadline_seconds));
  le.retry_period = Seconds(absl::GetFlag(FLAGS_leader_elect_retry_period_seconds));
  le.on_started_leading = [&life] {
    LOG(INFO) << "became the leader";
    if (life.before_leading) life.before_leading();
    life.leading = true;
    life.cv.notify_all();
  };
  le.on_stopped_leading = [&life] {
    if (life.shutting_down) return;  // our own release on SIGTERM
    // As client-go advises: a replica that lost the Lease exits, so that
    // nothing it still has in flight races the new leader.
    LOG(ERROR) << "lost the leader Lease; exiting";
    life.lost_leadership = true;
    life.cv.notify_all();
  };
  le.on_new_leader = [](const std::string& who) { LOG(INFO) << "leader is now " << who; };
  return le;
}

// With --leader-elect: the started elector; without: nullptr (and leading).
absl::StatusOr<std::unique_ptr<slurmop::kube::LeaderElector>> StartLeaderElection(
    slurmop::kube::Client& kube, const slurmop::Clock& clock, Lifecycle& life) {
  if (!absl::GetFlag(FLAGS_leader_elect) && absl::GetFlag(FLAGS_shards) <= 1) {
    life.leading = true;
    return nullptr;
  }
  slurmop::kube::LeaderElectionConfig le = LeaderElectionFromFlags(life);
  absl::StatusOr<std::unique_ptr<slurmop::kube::LeaderElector>> elector =
      slurmop::kube::LeaderElector::Create(kube, clock, le);
  if (!elector.ok()) {
    return absl::Status(elector.status().code(),
                        absl::StrCat("leader election: ", elector.status().message()));
  }
  LOG(INFO) << "leader election on Lease " << le.lease_namespace << "/" << le.lease_name << " as "
            << le.identity;
  (*elector)->Start();
  return elector;
}

// Gives the free heap back to the system every --malloc-trim-seconds (0:
// never). Measured with bench/load at 10,000 SlurmJobs: the heap in use is a
// fraction of the resident set after the submit burst.
class PeriodicTrim {
 public:
  PeriodicTrim()
      : every_(std::chrono::seconds(absl::GetFlag(FLAGS_malloc_trim_seconds))),
        last_(std::chrono::steady_clock::now()) {}
  // `lock` (held) is released while trimming.
  void MaybeTrim(std::unique_lock<std::mutex>& lock) {
    if (every_.count() <= 0 || std::chrono::steady_clock::now() - last_ < every_) return;
    lock.unlock();
    malloc_trim(0);
    lock.lock();
    last_ = std::chrono::steady_clock::now();
  }

 private:
  const std::chrono::seconds every_;
  std::chrono::steady_clock::time_point last_;
};

// Waits for a stop signal on its own thread (the signals are blocked in every
// other thread: BlockStopSignals), then sets life.stop.
std::thread StartSignalWaiter(sigset_t stop_signals, Lifecycle& life) {
  return std::thread([stop_signals, &life]() mutable {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    LOG(INFO) << "received signal " << sig << "; shutting down";
    std::lock_guard<std::mutex> lock(life.mu);
    life.stop = true;
    life.cv.notify_all();
  });
}

// The end of both modes, after the main loop: readiness NOT_SERVING,
// `stop_controllers` (a reconcile in flight finishes), the leader Lease
// released, Events flushed, the servers stopped. After a lost Lease the
// process exits 1 at once (the signal thread still waits in sigwait).
int Shutdown(Lifecycle& life, slurmop::kube::LeaderElector* elector,
             slurmop::kube::EventRecorder& recorder, Servers& servers, std::thread& signal_thread,
             const std::function<void()>& stop_controllers) {
  life.shutting_down = true;
  servers.health.SetReady(false);
  stop_controllers();
  if (elector != nullptr) elector->Stop();  // releases the Lease if held
  recorder.Flush();
  servers.metrics.Stop();
  servers.health.Shutdown();
  if (life.lost_leadership) {
    LOG(ERROR) << "stopped after losing leadership";
    std::_Exit(1);
  }
  signal_thread.join();
  LOG(INFO) << "stopped";
  return 0;
}

// What the main loop of a run mode does besides waiting: the duties it starts
// once this replica leads, and when it is ready.
struct MainLoop {
  const char* what = "informers";  // logged with a change of readiness
  // Once, the first time this replica leads.
  std::function<void()> start_leading;
  // Whether the caches are synced, given whether start_leading ran.
  std::function<bool(bool leading_started)> synced;
  // Each turn of the loop (empty: nothing), under life.mu.
  std::function<void()> each_turn;
};

// The main loop of both modes: starts the leader's duties once leading and
// keeps readiness in step with the caches, until a stop signal or a lost
// Lease. Wakes every 200 ms (and gives the free heap back at its pace).
void RunUntilStopped(Lifecycle& life, slurmop::server::HealthServer& health, const MainLoop& loop) {
  bool leading_started = false;
  bool ready = false;
  PeriodicTrim trim;
  std::unique_lock<std::mutex> lock(life.mu);
  while (!life.stop && !life.lost_leadership) {
    trim.MaybeTrim(lock);
    if (life.leading && !leading_started) {
      loop.start_leading();
      leading_started = true;
    }
    if (const bool synced = loop.synced(leading_started); synced != ready) {
      ready = synced;
      health.SetReady(ready);
      LOG(INFO) << loop.what << (ready ? " synced; ready" : " not synced; not ready");
    }
    if (loop.each_turn) loop.each_turn();
    life.cv.wait_for(lock, std::chrono::milliseconds(200));
  }
}

// One replica for everything: the manager and the SlurmCronJob controller
// start once leading; ready when both caches are synced.
MainLoop SingleLoop(slurmop::reconcile::Manager& manager, slurmop::cron::CronController& cron) {
  return {.what = "informers",
          .start_leading =
              [&manager, &cron] {
                manager.Start();
                cron.Start();
              },
          .synced =
              [&manager, &cron](bool leading_started) {
                return leading_started && manager.Synced() && cron.Synced();
              },
          .each_turn = {}};
}

// Submits only while the Lease has more than leaseDuration - renewDeadline
// left; none without leader election (nullptr: no fence).
std::unique_ptr<slurmop::reconcile::LeaseSubmitFence> NewSubmitFence(
    slurmop::kube::LeaderElector* elector) {
  if (elector == nullptr) return nullptr;
  return std::make_unique<slurmop::reconcile::LeaseSubmitFence>(
      [elector] { return elector->LeaseValidUntil(); },
      Seconds(absl::GetFlag(FLAGS_leader_elect_lease_duration_seconds)) -
          Seconds(absl::GetFlag(FLAGS_leader_elect_renew_deadline_seconds)));
}

// The managers of the shards held now, for the scrape-time gauges (Manager::RegisterGauges).
class ShardManagers {
 public:
  void Add(const std::shared_ptr<slurmop::reconcile::Manager>& m) {
    std::lock_guard<std::mutex> lock(mu_);
    managers_.push_back(m);
  }
  // Alive ones, kept alive by the caller while it reads them.
  std::vector<std::shared_ptr<const slurmop::reconcile::Manager>> List() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::shared_ptr<const slurmop::reconcile::Manager>> out;
    std::erase_if(managers_, [](const auto& w) { return w.expired(); });
    for (const auto& w : managers_) {
      if (auto m = w.lock()) out.push_back(std::move(m));
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::weak_ptr<slurmop::reconcile::Manager>> managers_;
};

class ShardManager final : public slurmop::reconcile::ShardRunner {
 public:
  explicit ShardManager(std::shared_ptr<slurmop::reconcile::Manager> m) : manager_(std::move(m)) {}
  bool Synced() const override { return manager_->Synced(); }
  void Stop() override { manager_->Stop(); }

 private:
  std::shared_ptr<slurmop::reconcile::Manager> manager_;
};

// What a shard's Manager is built from (StartShard).
struct ShardDeps {
  slurmop::kube::Client& kube;
  slurmop::agentplatform::SlurmApi& slurm_api;
  slurmop::reconcile::CredentialsResolver& credentials;
  slurmop::reconcile::EventSink& events;
  const slurmop::Clock& clock;
  const slurmop::reconcile::ManagerOptions& manager_options;
  slurmop::reconcile::ShardLabeller& labeller;
  ShardManagers& shard_managers;
};

// ShardCoordinatorOptions::start: the Manager of shard k, restricted to the shard's label, once
// this replica holds the shard's Lease (acquired at `acquired`; submits fenced by `fence`).
std::unique_ptr<slurmop::reconcile::ShardRunner> StartShard(
    const ShardDeps& d, int k, slurmop::Time acquired,
    const slurmop::reconcile::SubmitFence* fence) {
  namespace rc = slurmop::reconcile;
  rc::ManagerOptions options = d.manager_options;
  options.label_selector = rc::ShardSelector(k);
  options.register_metrics = false;
  auto m = std::make_shared<rc::Manager>(d.kube, d.slurm_api, d.credentials, d.events, d.clock,
                                         std::move(options));
  m->SetSubmitFence(fence);
  // A submit the shard's previous holder sent may land until now + submit settle.
  m->AnchorSettleWindow(acquired);
  // Objects whose label went stale (a clusterRef changed, a new shard count) move on.
  rc::ShardLabeller& labeller = d.labeller;
  m->SetJobObserver(
      [&labeller](const std::string& type, const std::shared_ptr<const nlohmann::json>& obj) {
        if (type != slurmop::kube::kDeleted) labeller.Offer(slurmop::api::kSlurmJobKind, obj);
      });
  m->SetClusterObserver([&labeller](bool cluster_scoped, const std::string& type,
                                    const std::shared_ptr<const nlohmann::json>& obj) {
    if (type == slurmop::kube::kDeleted) return;
    labeller.Offer(
        cluster_scoped ? slurmop::api::kClusterSlurmClusterKind : slurmop::api::kSlurmClusterKind,
        obj);
  });
  m->Start();
  d.shard_managers.Add(m);
  return std::make_unique<ShardManager>(std::move(m));
}

slurmop::reconcile::ShardCoordinatorOptions ShardCoordinatorOptionsFromFlags() {
  slurmop::reconcile::ShardCoordinatorOptions co;
  co.shards = absl::GetFlag(FLAGS_shards);
  co.lease_namespace = LeaseNamespace();
  co.lease_base = absl::GetFlag(FLAGS_leader_elect_lease_name);
  co.identity = Identity();
  co.lease_duration = Seconds(absl::GetFlag(FLAGS_leader_elect_lease_duration_seconds));
  co.renew_deadline = Seconds(absl::GetFlag(FLAGS_leader_elect_renew_deadline_seconds));
  co.retry_period = Seconds(absl::GetFlag(FLAGS_leader_elect_retry_period_seconds));
  co.fence_spare = co.lease_duration - co.renew_deadline;
  return co;
}

// With --shards > 1 the SlurmCronJob controller runs on the leader only, over its own informer
// of the SlurmJobs a SlurmCronJob made (they carry its label, whatever their shard).
class ShardedCron {
 public:
  ShardedCron(slurmop::kube::Client& kube, slurmop::reconcile::EventSink& events,
              const slurmop::Clock& clock, const std::string& ns)
      : children_(
            kube, slurmop::reconcile::SlurmJobsResource(), ns,
            [this](const std::string& type, const std::shared_ptr<const nlohmann::json>& obj) {
              if (cron_) cron_->OnJobEvent(type, obj);
            },
            clock, ChildrenOptions()) {
    cron_ = std::make_unique<slurmop::cron::CronController>(
        kube, events, clock, ns, [this] { return children_.HasSynced(); });
  }
  void Start() {
    children_.Start();
    cron_->Start();
  }
  bool Synced() const { return children_.HasSynced() && cron_->Synced(); }
  void Stop() {
    cron_->Stop();
    children_.Stop();
  }

 private:
  static slurmop::kube::InformerOptions ChildrenOptions() {
    slurmop::kube::InformerOptions o;
    o.label_selector = std::string(slurmop::api::kCronJobNameLabel);
    o.compact_cache = true;
    o.packer = slurmop::reconcile::SlurmJobPacker();
    return o;
  }

  std::unique_ptr<slurmop::cron::CronController> cron_;  // before children_: outlives its events
  slurmop::kube::Informer children_;
};

// --shards > 1: the leader also labels new objects and runs the SlurmCronJob
// controller; readiness follows the shards held here (a replica holding none
// is a ready standby), whose changes are logged.
MainLoop ShardedLoop(slurmop::reconcile::ShardCoordinator& coordinator,
                     slurmop::reconcile::ShardLabeller& labeller, ShardedCron& cron, int shards) {
  return {.what = "shards",
          .start_leading =
              [&labeller, &cron] {
                labeller.WatchUnlabelled();
                cron.Start();
              },
          .synced =
              [&coordinator, &labeller, &cron](bool leading_started) {
                return coordinator.Synced() &&
                       (!leading_started || (labeller.Synced() && cron.Synced()));
              },
          .each_turn =
              [&coordinator, shards, held = std::vector<int>()]() mutable {
                if (std::vector<int> now = coordinator.Held(); now != held) {
                  held = std::move(now);
                  LOG(INFO) << "sharding: holding shards [" << absl::StrJoin(held, ",") << "] of "
                            << shards;
                }
              }};
}

// --shards > 1: one Manager per shard this replica holds (shard_coordinator.h); the holder of
// the leader Lease also labels new objects (shard_labeller.h) and runs the SlurmCronJob
// controller (ShardedCron).
int RunSharded(slurmop::kube::Client& kube, slurmop::agentplatform::SlurmApi& slurm_api,
               slurmop::reconcile::CredentialsResolver& credentials,
               slurmop::reconcile::EventSink& events, slurmop::kube::EventRecorder& recorder,
               const slurmop::Clock& clock, sigset_t stop_signals,
               const slurmop::reconcile::ManagerOptions& manager_options) {
  namespace rc = slurmop::reconcile;
  const int shards = absl::GetFlag(FLAGS_shards);
  const std::string ns = absl::GetFlag(FLAGS_namespace);
  // The shard managers add to the operator's counters and histograms; the scrape-time gauges
  // (queue depth, SlurmJobs by phase, ...) sum over the shards held at the time of the scrape.
  rc::Manager::DeclareMetrics();
  ShardManagers shard_managers;
  rc::Manager::RegisterGauges([&shard_managers] { return shard_managers.List(); });
  rc::ShardLabeller labeller(kube, clock, events, shards, ns,
                             manager_options.executor.default_cluster);
  labeller.Start();
  ShardedCron cron(kube, events, clock, ns);

  Servers servers;
  if (absl::Status s = StartServers(servers); !s.ok()) {
    LOG(ERROR) << s;
    return 2;
  }
  Lifecycle life;
  absl::StatusOr<std::unique_ptr<slurmop::kube::LeaderElector>> elector =
      StartLeaderElection(kube, clock, life);
  if (!elector.ok()) {
    LOG(ERROR) << elector.status();
    return 2;
  }
  rc::ShardCoordinatorOptions co = ShardCoordinatorOptionsFromFlags();
  const ShardDeps deps{kube,  slurm_api,       credentials, events,
                       clock, manager_options, labeller,    shard_managers};
  co.start = [deps](int k, slurmop::Time acquired, const rc::SubmitFence* fence) {
    return StartShard(deps, k, acquired, fence);
  };
  rc::ShardCoordinator coordinator(kube, clock, co);
  if (absl::Status s = coordinator.Start(); !s.ok()) {
    LOG(ERROR) << "sharding: " << s;
    return 2;
  }
  std::thread signal_thread = StartSignalWaiter(stop_signals, life);

  RunUntilStopped(life, servers.health, ShardedLoop(coordinator, labeller, cron, shards));

  return Shutdown(life, elector->get(), recorder, servers, signal_thread, [&] {
    cron.Stop();
    coordinator.Stop();  // stops each shard's manager, then releases its Lease
    labeller.Stop();
  });
}

// The two reads the operator cannot start without, the installation id and the submit-note key,
// into `options`. Each waits out an API server that does not answer for a moment
// (startup_retry.h) rather than exit.
absl::Status ResolveStartupReads(slurmop::kube::Client& kube, const slurmop::Clock& clock,
                                 slurmop::reconcile::ManagerOptions* options) {
  namespace rc = slurmop::reconcile;
  const slurmop::kube::StartupRetry startup{
      .clock = clock, .sleep = [](slurmop::Duration d) { std::this_thread::sleep_for(d); }};
  absl::StatusOr<std::string> installation = slurmop::kube::RetryWhileUnanswered<std::string>(
      startup, "installation id",
      [&] { return rc::ResolveInstallationId(kube, absl::GetFlag(FLAGS_installation_id)); });
  if (!installation.ok()) return installation.status();
  LOG(INFO) << "installation id " << *installation;
  options->executor.installation = *installation;
  absl::StatusOr<rc::SubmitNoteKey> note_key =
      slurmop::kube::RetryWhileUnanswered<rc::SubmitNoteKey>(startup, "submit-note key", [&] {
        return rc::ResolveSubmitNoteKey(
            kube,
            {absl::GetFlag(FLAGS_submit_note_key_file), OperatorNamespace(),
             absl::GetFlag(FLAGS_submit_note_key_secret)},
            rc::NewRandomNoteKey);
      });
  if (!note_key.ok()) return note_key.status();
  if (!note_key->off_reason.empty()) LOG(WARNING) << note_key->off_reason;
  if (!note_key->key.empty()) LOG(INFO) << "submit-note key from " << note_key->origin;
  options->executor.submit_note_key = std::move(note_key->key);
  return absl::OkStatus();
}

// One Manager for every SlurmJob (the leader's, with --leader-elect), and the SlurmCronJob
// controller reading SlurmJobs from the manager's informer (one watch of SlurmJobs).
int RunSingle(slurmop::kube::Client& kube, slurmop::agentplatform::SlurmApi& slurm_api,
              slurmop::reconcile::CredentialsResolver& credentials,
              slurmop::reconcile::EventSink& events, slurmop::kube::EventRecorder& recorder,
              const slurmop::Clock& clock, sigset_t stop_signals,
              slurmop::reconcile::ManagerOptions manager_options) {
  slurmop::reconcile::Manager manager(kube, slurm_api, credentials, events, clock,
                                      std::move(manager_options));
  // SlurmCronJobs: creates their SlurmJobs at the scheduled times (leader only, like the manager).
  slurmop::cron::CronController cron(kube, events, clock, absl::GetFlag(FLAGS_namespace),
                                     [&manager] { return manager.JobsSynced(); });
  manager.SetJobObserver(
      [&cron](const std::string& type, const std::shared_ptr<const nlohmann::json>& obj) {
        cron.OnJobEvent(type, obj);
      });

  Servers servers;
  if (absl::Status s = StartServers(servers); !s.ok()) {
    LOG(ERROR) << s;
    return 2;
  }
  Lifecycle life;
  // A submit the previous leader sent may land until takeover + submit settle.
  life.before_leading = [&] { manager.AnchorSettleWindow(clock.Now()); };
  absl::StatusOr<std::unique_ptr<slurmop::kube::LeaderElector>> elector =
      StartLeaderElection(kube, clock, life);
  if (!elector.ok()) {
    LOG(ERROR) << elector.status();
    return 2;
  }
  // Set before the manager starts, which happens once leading.
  std::unique_ptr<slurmop::reconcile::LeaseSubmitFence> submit_fence =
      NewSubmitFence(elector->get());
  if (submit_fence) manager.SetSubmitFence(submit_fence.get());
  std::thread signal_thread = StartSignalWaiter(stop_signals, life);

  RunUntilStopped(life, servers.health, SingleLoop(manager, cron));

  return Shutdown(life, elector->get(), recorder, servers, signal_thread, [&] {
    cron.Stop();
    manager.Stop();
  });
}

int Run() {
  const slurmop::Clock& clock = slurmop::RealClock::Get();
  sigset_t stop_signals = BlockStopSignals();
  // After the mask: the pool's threads start now and inherit it (a thread
  // without it would take SIGTERM's default action, bypassing the shutdown).
  if (absl::Status s = slurmop::http::SetCpprestIoThreads(
          static_cast<size_t>(std::max(absl::GetFlag(FLAGS_http_io_threads), 0)));
      !s.ok()) {
    LOG(ERROR) << "--http-io-threads: " << s.message();
    return 2;
  }
  // Before any Kubernetes client, queue or elector runs (its hooks are not synchronised).
  slurmop::reconcile::InstallControllerMetrics(slurmop::server::GlobalMetrics());

  absl::StatusOr<std::unique_ptr<slurmop::kube::Client>> kube = NewKubeClient();
  if (!kube.ok()) {
    LOG(ERROR) << kube.status();
    return 2;
  }
  absl::StatusOr<AgentPlatform> ap = NewAgentPlatform(clock);
  if (!ap.ok()) {
    LOG(ERROR) << ap.status();
    return 2;
  }
  slurmop::reconcile::SecretCredentialsResolver credentials(**kube, ap->credentials);
  slurmop::kube::EventRecorder recorder(**kube, clock, "slurmjob-operator",
                                        "slurmjob-operator-" + Hostname());
  RecorderSink events(recorder);
  slurmop::reconcile::ManagerOptions manager_options = ManagerOptionsFromFlags();
  if (absl::Status s = ResolveStartupReads(**kube, clock, &manager_options); !s.ok()) {
    LOG(ERROR) << s;
    return 2;
  }
  if (absl::GetFlag(FLAGS_shards) > 1) {
    return RunSharded(**kube, *ap->slurm_api, credentials, events, recorder, clock, stop_signals,
                      manager_options);
  }
  return RunSingle(**kube, *ap->slurm_api, credentials, events, recorder, clock, stop_signals,
                   std::move(manager_options));
}
}  // namespace

// Kubernetes tools spell flags with dashes (--health-port); Abseil with
// underscores. Accept both by rewriting the name part of each "--flag[=v]".
void NormalizeFlagNames(int argc, char** argv, std::vector<std::string>* storage) {
  storage->reserve(argc);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) == 0 && arg.size() > 2) {
      size_t end = arg.find('=');
      if (end == std::string::npos) end = arg.size();
      for (size_t j = 2; j < end; ++j) {
        if (arg[j] == '-') arg[j] = '_';
      }
    }
    storage->push_back(std::move(arg));
    argv[i] = storage->back().data();
  }
}

int main(int argc, char** argv) {
  // One malloc arena: the operator's threads mostly wait on the network,
  // and each further arena kept its own high-water mark and fragments
  // (bench/load at 10,000 SlurmJobs: 77.8 MB resident with two arenas, 71.7 MB
  // with one, at the same throughput; bench/README.md). MALLOC_ARENA_MAX, when
  // set, is glibc's to apply and is left alone.
  if (getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 1);
  // glog stamps every line with the local time; with TZ unset glibc stats
  // /etc/localtime again for each one (a syscall per log line, 4.1 against
  // 2.2 us a line here). The same zone, read once. A TZ that is set is kept.
  if (getenv("TZ") == nullptr) setenv("TZ", ":/etc/localtime", /*overwrite=*/0);
  std::vector<std::string> normalized;
  NormalizeFlagNames(argc, argv, &normalized);
  // --help lists the flags defined in this file (Abseil's default looks for
  // a file named after the binary, and so listed none); --helpfull lists
  // every library's too.
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "controller/main.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  absl::SetProgramUsageMessage(
      "Kubernetes operator that runs SlurmJobs on Agent Platform Slurm clusters.\n"
      "Usage: slurmjob-operator [--kubeconfig=PATH] [--namespace=NS] [--health-port=9090]");
  absl::ParseCommandLine(argc, argv);
  FLAGS_logtostderr = true;
  FLAGS_v = absl::GetFlag(FLAGS_verbosity);
  google::InitGoogleLogging(argv[0]);
  if (absl::Status s = slurmop::server::SetLogFormat(absl::GetFlag(FLAGS_log_format)); !s.ok()) {
    LOG(ERROR) << s.message();
    return 2;
  }
  return Run();
}
