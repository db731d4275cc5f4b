// File: bench/agentplatform_client_bench.cc
//
// The Agent Platform client's own cost per call (time and heap allocations),
// without the server's time.
//
// Part 1, in process: N GETs and N submits through NewSlurmApiClient() over a
// Transport that returns a canned response at once. That transport's own cost
// (copying the canned response) is measured by calling it directly N times and
// subtracted. Also: rendering the v0.0.42 submit body and parsing the job
// answer with the v0.0.42 dialect (ParseJob), per call.
//
// Part 2, loopback: the same client over the real CpprestTransport against
// the Python stand-in tests/fakes/agent_platform.py (started here as a
// subprocess), with a token from the stand-in's metadata server
// (MetadataServerCredentials). Reports the round trip per call and the
// client-side share, measured two ways in the same run: (a) the client alone,
// replayed in process (as in part 1) on the exact answers the stand-in sent,
// divided by the round trip; (b) the wall time spent outside the transport's
// Send() (a timing decorator around the transport) over the round trip.
//
// Part 3, job lists (issue #7): a v0.0.42 list of --list-jobs jobs (records
// as tests/fakes/slurm_sim.py renders them), pretty and compact, decoded by
// the protobuf Struct path the client used before (a copy is kept below), by
// DecodeResponse() unfiltered and with the dialect's JobRecordKeys() filter,
// and by nlohmann's parse() with a key callback; then the compact answer read
// over loopback by the old Send() (extract_vector() + copy) and by
// CpprestTransport::Send(). Time, peak live heap bytes, the result's size and
// the bytes allocated, one run each.
//
// Allocations are counted by replacing the global operator new/delete of this
// binary with an atomic counter (all threads, so part 2's figures include
// cpprestsdk's own allocations); live bytes (malloc_usable_size) and their
// peak are tracked the same way.
//
//   agentplatform_client_bench [--n=20000] [--reps=1] [--rt-get=1000]
//                              [--rt-post=200] [--no-loopback]
//                              [--list-jobs=10000] [--list-only] [--no-callback]

#include <cpprest/http_client.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agentplatform/v1beta1/slurm_rest.pb.h"
#include "controller/agentplatform/client.h"
#include "controller/agentplatform/credentials.h"
#include "controller/agentplatform/envelope.h"
#include "controller/http/cpprest_transport.h"
#include "controller/http/http_transport.h"
#include "controller/http/spare_connection_client.h"
#include "controller/http/spare_connection_transport.h"
#include "controller/slurm/dialects.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "tests/http/test_http_server.h"

// ------------------------------------------------------------ allocations

namespace {
std::atomic<uint64_t> g_allocs{0};
std::atomic<uint64_t> g_alloc_bytes{0};
// Heap bytes held through operator new (as malloc counts them), and the
// highest value since the last reset.
std::atomic<int64_t> g_live_bytes{0};
std::atomic<int64_t> g_peak_bytes{0};

void* NoteAlloc(void* p) {
  if (p == nullptr) return p;
  const int64_t size = static_cast<int64_t>(malloc_usable_size(p));
  const int64_t live = g_live_bytes.fetch_add(size, std::memory_order_relaxed) + size;
  int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
  while (live > peak && !g_peak_bytes.compare_exchange_weak(peak, live)) {
  }
  return p;
}
void Free(void* p) {
  if (p == nullptr) return;
  g_live_bytes.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}
void* CountedAlloc(std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  g_alloc_bytes.fetch_add(n, std::memory_order_relaxed);
  return NoteAlloc(std::malloc(n == 0 ? 1 : n));
}
void* CountedAlignedAlloc(std::size_t n, std::align_val_t al) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  g_alloc_bytes.fetch_add(n, std::memory_order_relaxed);
  const std::size_t a = static_cast<std::size_t>(al);
  const std::size_t size = ((n == 0 ? 1 : n) + a - 1) / a * a;
  return NoteAlloc(std::aligned_alloc(a, size));
}
}  // namespace

void* operator new(std::size_t n) {
  if (void* p = CountedAlloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = CountedAlloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return CountedAlloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return CountedAlloc(n); }
void* operator new(std::size_t n, std::align_val_t al) {
  if (void* p = CountedAlignedAlloc(n, al)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t al) {
  if (void* p = CountedAlignedAlloc(n, al)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  return CountedAlignedAlloc(n, al);
}
void* operator new[](std::size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  return CountedAlignedAlloc(n, al);
}
void operator delete(void* p) noexcept { Free(p); }
void operator delete[](void* p) noexcept { Free(p); }
void operator delete(void* p, std::size_t) noexcept { Free(p); }
void operator delete[](void* p, std::size_t) noexcept { Free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { Free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { Free(p); }
void operator delete(void* p, std::align_val_t) noexcept { Free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { Free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { Free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { Free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { Free(p); }

namespace slurmop::bench {
namespace {

using Clock = std::chrono::steady_clock;
namespace ap = ::slurmop::agentplatform;

struct Options {
  int n = 20000;
  int reps = 1;
  int rt_get = 1000;
  int rt_post = 200;
  bool loopback = true;
  int list_jobs = 10000;
  bool list_only = false;
  bool list_callback = true;
};

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&](const char* flag) -> const char* {
      const size_t len = std::strlen(flag);
      return a.compare(0, len, flag) == 0 ? a.c_str() + len : nullptr;
    };
    if (const char* v = val("--n=")) {
      o.n = std::atoi(v);
    } else if (const char* v = val("--reps=")) {
      o.reps = std::max(1, std::atoi(v));
    } else if (const char* v = val("--rt-get=")) {
      o.rt_get = std::atoi(v);
    } else if (const char* v = val("--rt-post=")) {
      o.rt_post = std::atoi(v);
    } else if (a == "--no-loopback") {
      o.loopback = false;
    } else if (const char* v = val("--list-jobs=")) {
      o.list_jobs = std::atoi(v);
    } else if (a == "--list-only") {
      o.list_only = true;
    } else if (a == "--no-callback") {
      o.list_callback = false;
    } else {
      std::cerr << "unknown argument " << a << "\n";
      std::exit(2);
    }
  }
  return o;
}

// One measured loop: nanoseconds and allocations per call.
struct Sample {
  double ns = 0;
  double allocs = 0;
  double bytes = 0;
};

template <typename F>
Sample MeasureOnce(int n, F&& f) {
  const uint64_t a0 = g_allocs.load();
  const uint64_t b0 = g_alloc_bytes.load();
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) f();
  const auto t1 = Clock::now();
  const uint64_t a1 = g_allocs.load();
  const uint64_t b1 = g_alloc_bytes.load();
  Sample s;
  s.ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
  s.allocs = static_cast<double>(a1 - a0) / n;
  s.bytes = static_cast<double>(b1 - b0) / n;
  return s;
}

// Warm-up, then `reps` loops of n calls; the fastest loop (the least
// disturbed by other processes; allocations are the same in every loop).
template <typename F>
Sample Measure(int n, int reps, F&& f) {
  MeasureOnce(std::max(1, n / 20), f);
  std::vector<Sample> samples;
  for (int r = 0; r < reps; ++r) samples.push_back(MeasureOnce(n, f));
  std::sort(samples.begin(), samples.end(),
            [](const Sample& a, const Sample& b) { return a.ns < b.ns; });
  return samples.front();
}

// ------------------------------------------------------------ canned data

constexpr char kMeta42[] =
    R"("meta": {"plugin": {"type": "openapi/slurmctld", "name": "Slurm OpenAPI slurmctld", )"
    R"("data_parser": "data_parser/v0.0.42", "accounting_storage": "accounting_storage/slurmdbd"}, )"
    R"("client": {"source": "[unix]:/run/slurmrestd.socket", "user": "alice", "group": "alice"}, )"
    R"("command": [], "slurm": {"version": {"major": "24", "micro": "7", "minor": "11"}, )"
    R"("release": "24.11.7", "cluster": "cluster"}})";

// GET /slurm/v0.0.42/job/42 for a running job (slurm-rest-versions.md §5).
std::string JobAnswer() {
  return absl::StrCat(
      R"({"jobs": [{"job_id": 42, "name": "train", "account": "acct", )"
      R"("comment": "slurmjob-operator:3f2a9c1e-0b7d-4e55-9a63-1c2d3e4f5a6b", )"
      R"("partition": "gpu", "job_state": ["RUNNING"], "state_reason": "None", )"
      R"("state_description": "", "exit_code": {"status": ["SUCCESS"], "return_code": )"
      R"({"set": true, "infinite": false, "number": 0}, "signal": {"id": {"set": false, )"
      R"("infinite": false, "number": 0}, "name": ""}}, "derived_exit_code": {"status": )"
      R"(["SUCCESS"], "return_code": {"set": true, "infinite": false, "number": 0}, "signal": )"
      R"({"id": {"set": false, "infinite": false, "number": 0}, "name": ""}}, "submit_time": )"
      R"({"set": true, "infinite": false, "number": 1700000000}, "eligible_time": {"set": )"
      R"(true, "infinite": false, "number": 1700000000}, "start_time": {"set": true, )"
      R"("infinite": false, "number": 1700000005}, "end_time": {"set": true, "infinite": )"
      R"(false, "number": 1700007205}, "time_limit": {"set": true, "infinite": false, )"
      R"("number": 120}, "nodes": "node1", "user_name": "alice", )"
      R"("current_working_directory": "/home/alice", "standard_output": )"
      R"("/home/alice/train-%j.out", "flags": ["JOB_WAS_RUNNING"]}], "last_backfill": )"
      R"({"set": true, "infinite": false, "number": 1700000010}, "last_update": {"set": )"
      R"(true, "infinite": false, "number": 1700000017}, )",
      kMeta42, R"(, "errors": [], "warnings": []})");
}

std::string SubmitAnswer() {
  return absl::StrCat(R"({"job_id": 42, "step_id": "batch", "job_submit_user_msg": "", )", kMeta42,
                      R"(, "errors": [], "warnings": []})");
}

http::Response Envelope(const std::string& slurm_json) {
  http::Response r;
  r.status = 200;
  r.headers["content-type"] = "application/json; charset=UTF-8";
  r.body = absl::StrCat(R"({"status": 200, "structuredBody": )", slurm_json, "}");
  return r;
}

slurm::JobDescriptor Descriptor(const std::string& script, const std::string& partition) {
  slurm::JobDescriptor d;
  d.script = script;
  d.name = "train";
  d.partition = partition;
  d.current_working_directory = "/tmp";
  d.tasks_per_node = 1;
  d.minimum_nodes = 1;
  d.time_limit_minutes = 120;
  d.environment = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"OMP_NUM_THREADS", "8"}};
  d.comment = "slurmjob-operator:3f2a9c1e-0b7d-4e55-9a63-1c2d3e4f5a6b";
  return d;
}

constexpr char kScript[] =
    "#!/bin/bash\n#SBATCH --output=/home/alice/train-%j.out\nset -euo pipefail\n"
    "source /shared/venv/bin/activate\nsrun python /shared/train.py --epochs 10\n";

// Returns a canned response instantly.
class CannedTransport : public http::Transport {
 public:
  void Set(const http::Response* r) { current_ = r; }
  absl::StatusOr<http::Response> Send(const http::Request&) override { return *current_; }
  absl::StatusOr<http::Response> Stream(const http::Request&, const http::LineCallback&,
                                        std::shared_ptr<http::StreamHandle>) override {
    return absl::UnimplementedError("Stream");
  }

 private:
  const http::Response* current_ = nullptr;
};

// Measures the time spent inside the wrapped transport.
class TimingTransport : public http::Transport {
 public:
  explicit TimingTransport(http::Transport* inner) : inner_(inner) {}
  absl::StatusOr<http::Response> Send(const http::Request& request) override {
    const auto t0 = Clock::now();
    absl::StatusOr<http::Response> r = inner_->Send(request);
    inside_ns_ += std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    if (capture_ && r.ok()) captured_ = *r;
    return r;
  }
  // Keeps a copy of every response from now on (the last one is kept).
  void Capture() { capture_ = true; }
  const http::Response& captured() const { return captured_; }
  absl::StatusOr<http::Response> Stream(const http::Request& r, const http::LineCallback& cb,
                                        std::shared_ptr<http::StreamHandle> h) override {
    return inner_->Stream(r, cb, std::move(h));
  }
  double inside_ns() const { return inside_ns_; }
  void Reset() { inside_ns_ = 0; }

 private:
  http::Transport* inner_;
  double inside_ns_ = 0;  // single caller thread
  bool capture_ = false;
  http::Response captured_;
};

class FixedToken : public ap::TokenSource {
 public:
  absl::StatusOr<std::string> Token() override { return token_; }
  void Invalidate() override {}
  std::string Describe() const override { return "bench token"; }

 private:
  std::string token_ = "ya29.bench-token-0123456789abcdefghijklmnopqrstuvwxyz0123456789";
};

void Row(const char* what, const Sample& s) {
  std::printf("  %-44s %10.0f ns %9.1f allocs %10.0f bytes\n", what, s.ns, s.allocs, s.bytes);
}

Sample Minus(const Sample& a, const Sample& b) {
  return {a.ns - b.ns, a.allocs - b.allocs, a.bytes - b.bytes};
}

void Check(const absl::StatusOr<ap::SlurmResponse>& r, const char* what) {
  if (!r.ok() || r->status != 200) {
    std::cerr << what << " failed: "
              << (r.ok() ? absl::StrCat("status ", r->status) : std::string(r.status().message()))
              << "\n";
    std::exit(1);
  }
}

struct InProcess {
  Sample get, post, render, parse;
};

InProcess RunInProcess(const Options& o) {
  const slurm::Dialect* dialect = *slurm::DialectFor("v0.0.42");
  const http::Response get_resp = Envelope(JobAnswer());
  const http::Response post_resp = Envelope(SubmitAnswer());
  CannedTransport transport;
  ap::ClientOptions co;
  co.transport = &transport;
  co.budget.requests_per_minute = 0;  // the limiter would throttle the loop
  std::unique_ptr<ap::SlurmApi> client = ap::NewSlurmApiClient(co);
  FixedToken token;
  ap::ClusterName cluster;
  cluster.project_id = "proj";
  cluster.region = "us-central1";
  cluster.cluster_id = "c1";
  const std::string get_path = dialect->JobPath(42);
  const nlohmann::json submit_body = *dialect->RenderSubmit(Descriptor(kScript, "gpu"));

  std::printf("In process (canned answers, N=%d per row, fastest of %d loop(s))\n", o.n, o.reps);
  std::printf("  GET answer %zu bytes, submit body %zu bytes, submit answer %zu bytes\n",
              get_resp.body.size(), submit_body.dump().size(), post_resp.body.size());

  // The fake transport's own cost, with requests like the client's.
  http::Request req;
  req.method = "POST";
  req.url = cluster.CallUrl();
  req.headers = {{"Authorization", "Bearer x"}, {"Content-Type", "application/json"}};
  transport.Set(&get_resp);
  Sample fake_get = Measure(o.n, std::max(3, o.reps), [&] { (void)transport.Send(req); });
  transport.Set(&post_resp);
  Sample fake_post = Measure(o.n, std::max(3, o.reps), [&] { (void)transport.Send(req); });

  transport.Set(&get_resp);
  Check(client->Call(cluster, token, ap::HttpMethod::kGet, get_path, nullptr), "GET");
  Sample get_total = Measure(o.n, o.reps, [&] {
    (void)client->Call(cluster, token, ap::HttpMethod::kGet, get_path, nullptr);
  });
  transport.Set(&post_resp);
  Check(client->Call(cluster, token, ap::HttpMethod::kPost, dialect->SubmitPath(), &submit_body),
        "POST");
  Sample post_total = Measure(o.n, o.reps, [&] {
    (void)client->Call(cluster, token, ap::HttpMethod::kPost, dialect->SubmitPath(), &submit_body);
  });
  // Where the client's time goes: the envelope through protobuf's JSON mapping
  // (N/10 calls each, to keep the run short).
  Sample encode_get = Measure(
      o.n / 10, o.reps, [&] { (void)ap::EncodeRequest(ap::HttpMethod::kGet, get_path, nullptr); });
  Sample encode_post = Measure(o.n / 10, o.reps, [&] {
    (void)ap::EncodeRequest(ap::HttpMethod::kPost, dialect->SubmitPath(), &submit_body);
  });
  Sample decode_get = Measure(o.n / 10, o.reps, [&] { (void)ap::DecodeResponse(get_resp.body); });
  Sample decode_post = Measure(o.n / 10, o.reps, [&] { (void)ap::DecodeResponse(post_resp.body); });
  // For scale: the same GET answer through nlohmann::json alone.
  size_t sink = 0;
  Sample plain_parse =
      Measure(o.n / 10, o.reps, [&] { sink += nlohmann::json::parse(get_resp.body).size(); });
  if (sink == 0) std::printf("(nothing parsed)\n");
  const slurm::JobDescriptor desc = Descriptor(kScript, "gpu");
  Sample render = Measure(o.n, o.reps, [&] { (void)dialect->RenderSubmit(desc); });
  const nlohmann::json answer = nlohmann::json::parse(JobAnswer());
  if (!dialect->ParseJob(200, answer, 42).ok()) {
    std::cerr << "ParseJob failed\n";
    std::exit(1);
  }
  Sample parse = Measure(o.n, o.reps, [&] { (void)dialect->ParseJob(200, answer, 42); });

  InProcess out{Minus(get_total, fake_get), Minus(post_total, fake_post), render, parse};
  std::printf("  %-44s %13s %16s %16s\n", "", "time/call", "allocations/call", "bytes/call");
  Row("fake transport alone (GET answer copy)", fake_get);
  Row("fake transport alone (submit answer copy)", fake_post);
  Row("client GET job, incl. fake", get_total);
  Row("client POST submit, incl. fake", post_total);
  Row("=> client GET job (client only)", out.get);
  Row("=> client POST submit v0.0.42 (client only)", out.post);
  Row("  part: EncodeRequest, GET envelope (N/10)", encode_get);
  Row("  part: DecodeResponse, GET answer (N/10)", decode_get);
  Row("  part: EncodeRequest, POST envelope (N/10)", encode_post);
  Row("  part: DecodeResponse, submit answer (N/10)", decode_post);
  Row("  (for scale: nlohmann::json::parse, GET answer)", plain_parse);
  Row("v0.0.42 RenderSubmit (body for the POST)", render);
  Row("v0.0.42 ParseJob (job answer -> JobInfo)", parse);
  Row("=> GET job + ParseJob",
      {out.get.ns + parse.ns, out.get.allocs + parse.allocs, out.get.bytes + parse.bytes});
  return out;
}

// ------------------------------------------------------------ job lists

// The callSlurmRestApi decoding before issue #7, kept here to compare with:
// the envelope through protobuf's JSON mapping into
// CallSlurmRestApiResponse (google.protobuf.Struct), then converted to
// nlohmann::json.
namespace legacy {

constexpr double kMaxSafeInteger = 9007199254740992.0;  // 2^53

nlohmann::json FromProtoStruct(const google::protobuf::Struct& s);

nlohmann::json FromProtoValue(const google::protobuf::Value& v) {
  switch (v.kind_case()) {
    case google::protobuf::Value::kNullValue:
    case google::protobuf::Value::KIND_NOT_SET:
      return nullptr;
    case google::protobuf::Value::kBoolValue:
      return v.bool_value();
    case google::protobuf::Value::kNumberValue: {
      const double d = v.number_value();
      if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) <= kMaxSafeInteger) {
        return static_cast<int64_t>(d);
      }
      return d;
    }
    case google::protobuf::Value::kStringValue:
      return v.string_value();
    case google::protobuf::Value::kStructValue:
      return FromProtoStruct(v.struct_value());
    case google::protobuf::Value::kListValue: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : v.list_value().values()) out.push_back(FromProtoValue(item));
      return out;
    }
  }
  return nullptr;
}

nlohmann::json FromProtoStruct(const google::protobuf::Struct& s) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : s.fields()) out[key] = FromProtoValue(value);
  return out;
}

absl::StatusOr<ap::SlurmResponse> DecodeResponse(std::string_view json) {
  slurmop::agentplatform::v1beta1::CallSlurmRestApiResponse response;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &response, options);
  if (!status.ok()) return absl::InternalError(status.message().ToString());
  if (response.status() == 0) return absl::InternalError("no status");
  ap::SlurmResponse out;
  out.status = response.status();
  if (response.has_structured_body()) {
    out.body = FromProtoStruct(response.structured_body());
  } else if (response.has_body()) {
    const google::protobuf::Value& body = response.body();
    if (body.kind_case() == google::protobuf::Value::kStringValue && body.string_value().empty()) {
      out.body = nullptr;
    } else if (body.kind_case() == google::protobuf::Value::kStringValue) {
      nlohmann::json parsed = nlohmann::json::parse(body.string_value(), nullptr, false);
      out.body = parsed.is_discarded() ? nlohmann::json(body.string_value()) : std::move(parsed);
    } else {
      out.body = FromProtoValue(body);
    }
  }
  return out;
}

}  // namespace legacy

// The same filter through nlohmann's parse() callback (returning false on a
// `key` event drops the key and its value), for comparison: in nlohmann 3.11
// every object that ends while a callback is set rescans its parent for a
// discarded value, so a list of n jobs costs O(n^2) steps.
nlohmann::json CallbackParse(const std::string& text, const std::vector<std::string>& keep) {
  std::vector<std::string> path(8);
  bool in_structured_jobs = false;
  nlohmann::json envelope = nlohmann::json::parse(
      text, [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        if (event != nlohmann::json::parse_event_t::key) return true;
        const std::string& key = parsed.get_ref<const std::string&>();
        if (depth < static_cast<int>(path.size())) path[depth] = key;
        if (depth == 1 || depth == 2) {
          in_structured_jobs = path[1] == "structuredBody" && path[2] == "jobs";
        }
        if (depth == 4 && in_structured_jobs) {
          return std::find(keep.begin(), keep.end(), key) != keep.end();
        }
        return true;
      });
  return std::move(envelope["structuredBody"]);
}

// One record as tests/fakes/slurm_sim.py renders a running job for
// /slurm/v0.0.42/jobs/ (67 keys, 2.5 KB compact).
constexpr char kSimJob42[] =
    R"({"account":"","accrue_time":{"set":true,"infinite":false,"number":1700000000},)"
    R"("admin_comment":"","array_job_id":{"set":true,"infinite":false,"number":0},)"
    R"("array_task_id":{"set":false,"infinite":false,"number":0},)"
    R"("array_max_tasks":{"set":true,"infinite":false,"number":0},"array_task_string":"",)"
    R"("association_id":0,"batch_features":"","batch_flag":true,"batch_host":"node-0",)"
    R"("flags":["JOB_WAS_RUNNING"],"burst_buffer":"","burst_buffer_state":"",)"
    R"("cluster":"cluster","cluster_features":"","command":"",)"
    R"("comment":"slurmjob-operator:team-a/3f2a9c1e-0b7d-4e55-9a63-1c2d3e4f5a6b/1",)"
    R"("container":"","contiguous":false,"cpus":{"set":true,"infinite":false,"number":1},)"
    R"("cpus_per_task":{"set":true,"infinite":false,"number":1},)"
    R"("current_working_directory":"/home/alice","deadline":{"set":true,"infinite":false,)"
    R"("number":0},"dependency":"","derived_exit_code":{"status":["SUCCESS"],)"
    R"("return_code":{"set":true,"infinite":false,"number":0},"signal":{"id":{"set":false,)"
    R"("infinite":false,"number":0},"name":""}},"eligible_time":{"set":true,"infinite":false,)"
    R"("number":1700000000},"end_time":{"set":true,"infinite":false,"number":1700007200},)"
    R"("excluded_nodes":"","exit_code":{"status":["SUCCESS"],"return_code":{"set":true,)"
    R"("infinite":false,"number":0},"signal":{"id":{"set":false,"infinite":false,"number":0},)"
    R"("name":""}},"features":"","group_id":11529,"group_name":"alice","job_id":1000,)"
    R"("job_state":["RUNNING"],"last_sched_evaluation":{"set":true,"infinite":false,)"
    R"("number":1700000000},"licenses":"","max_cpus":{"set":true,"infinite":false,)"
    R"("number":0},"max_nodes":{"set":true,"infinite":false,"number":0},"name":"train-0001",)"
    R"("nice":0,"node_count":{"set":true,"infinite":false,"number":1},"nodes":"node-0",)"
    R"("partition":"debug","priority":{"set":true,"infinite":false,"number":4294901759},)"
    R"("qos":"normal","requeue":false,"restart_cnt":0,"resv_name":"",)"
    R"("standard_error":"/home/alice/slurm-1000.out","standard_input":"/dev/null",)"
    R"("standard_output":"/home/alice/slurm-1000.out","start_time":{"set":true,)"
    R"("infinite":false,"number":1700000000},"state_description":"","state_reason":"None",)"
    R"("submit_time":{"set":true,"infinite":false,"number":1700000000},)"
    R"("suspend_time":{"set":true,"infinite":false,"number":0},"system_comment":"",)"
    R"("tasks":{"set":true,"infinite":false,"number":1},"tasks_per_node":{"set":false,)"
    R"("infinite":false,"number":0},"time_limit":{"set":true,"infinite":false,"number":120},)"
    R"("time_minimum":{"set":true,"infinite":false,"number":0},"tres_req_str":"cpu=1,node=1,)"
    R"(billing=1","tres_alloc_str":"cpu=1,node=1,billing=1","user_id":11529,)"
    R"("user_name":"alice","wckey":""})";

// {"status": 200, "structuredBody": <a v0.0.42 list of n jobs>}, as the
// envelope of tests/fakes/agent_platform.py; `indent` 2 is Google's default
// (pretty) output, -1 the compact one of ?prettyPrint=false.
std::string JobListEnvelope(int n, int indent) {
  const nlohmann::json job = nlohmann::json::parse(kSimJob42);
  nlohmann::json body = nlohmann::json::parse(absl::StrCat("{", kMeta42, "}"));
  body["errors"] = nlohmann::json::array();
  body["warnings"] = nlohmann::json::array();
  body["last_backfill"] = {{"set", true}, {"infinite", false}, {"number", 1700000000}};
  body["last_update"] = {{"set", true}, {"infinite", false}, {"number", 1700000017}};
  nlohmann::json& jobs = body["jobs"] = nlohmann::json::array();
  for (int i = 0; i < n; ++i) {
    nlohmann::json j = job;
    const int64_t id = 1000 + i;
    j["job_id"] = id;
    j["name"] = absl::StrCat("train-", i);
    j["comment"] =
        absl::StrCat("slurmjob-operator:team-a/3f2a9c1e-0b7d-4e55-9a63-", 100000000000 + i, "/1");
    j["standard_output"] = j["standard_error"] = absl::StrCat("/home/alice/slurm-", id, ".out");
    j["job_state"] = nlohmann::json::array({i % 3 == 0 ? "PENDING" : "RUNNING"});
    jobs.push_back(std::move(j));
  }
  return nlohmann::json{{"status", 200}, {"structuredBody", std::move(body)}}.dump(indent);
}

// One run of `f`: wall time, the peak of live heap bytes above what was live
// before, what `f` left allocated (its result), and the bytes allocated.
struct PeakSample {
  double ms = 0;
  int64_t peak = 0;
  int64_t kept = 0;
  uint64_t allocated = 0;
};

template <typename F>
PeakSample MeasurePeak(F&& f) {
  const int64_t live0 = g_live_bytes.load();
  g_peak_bytes.store(live0);
  const uint64_t b0 = g_alloc_bytes.load();
  const auto t0 = Clock::now();
  f();
  const auto t1 = Clock::now();
  PeakSample s;
  s.ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  s.peak = g_peak_bytes.load() - live0;
  s.kept = g_live_bytes.load() - live0;
  s.allocated = g_alloc_bytes.load() - b0;
  return s;
}

void PeakRow(const std::string& what, const PeakSample& s) {
  std::printf("  %-58s %9.0f ms %9.1f MB %9.1f MB %10.1f MB\n", what.c_str(), s.ms, s.peak / 1e6,
              s.kept / 1e6, s.allocated / 1e6);
}

void RunJobList(const Options& o) {
  const slurm::Dialect* dialect = *slurm::DialectFor("v0.0.42");
  ap::CallOptions filter;
  filter.job_fields = dialect->JobRecordKeys();
  std::printf("\nDecoding a v0.0.42 list of %d jobs (GET /slurm/v0.0.42/jobs/), one run each\n",
              o.list_jobs);
  std::printf("  %-58s %12s %12s %12s %13s\n", "", "time", "peak heap", "result", "allocated");
  for (int indent : {2, -1}) {
    const std::string text = JobListEnvelope(o.list_jobs, indent);
    std::printf("  %s answer: %.1f MB\n", indent >= 0 ? "pretty (indent 2)" : "compact",
                text.size() / 1e6);
    auto check = [&](const absl::StatusOr<ap::SlurmResponse>& r) {
      absl::StatusOr<slurm::JobList> list = r.ok() ? dialect->ParseJobs(r->status, r->body)
                                                   : absl::StatusOr<slurm::JobList>(r.status());
      if (!list.ok() || static_cast<int>(list->jobs.size()) != o.list_jobs) {
        std::fprintf(stderr, "the list did not decode: %s\n",
                     list.ok() ? "wrong size" : std::string(list.status().message()).c_str());
        std::exit(1);
      }
    };
    {
      absl::StatusOr<ap::SlurmResponse> r;
      PeakSample s = MeasurePeak([&] { r = legacy::DecodeResponse(text); });
      check(r);
      PeakRow("before: protobuf Struct -> nlohmann::json", s);
    }
    {
      absl::StatusOr<ap::SlurmResponse> r;
      PeakSample s = MeasurePeak([&] { r = ap::DecodeResponse(text); });
      check(r);
      PeakRow("after: DecodeResponse, unfiltered", s);
    }
    {
      absl::StatusOr<ap::SlurmResponse> r;
      PeakSample s = MeasurePeak([&] { r = ap::DecodeResponse(text, filter); });
      check(r);
      PeakRow("after: DecodeResponse, job_fields = JobRecordKeys()", s);
    }
    {
      absl::StatusOr<slurm::JobList> list;
      PeakSample s = MeasurePeak([&] {
        absl::StatusOr<ap::SlurmResponse> r = ap::DecodeResponse(text, filter);
        list = dialect->ParseJobs(r->status, r->body);
      });
      PeakRow("after: the tracker's list (filtered decode + ParseJobs)", s);
    }
    {
      absl::StatusOr<slurm::JobList> list;
      PeakSample s = MeasurePeak([&] {
        absl::StatusOr<ap::SlurmResponse> r = legacy::DecodeResponse(text);
        list = dialect->ParseJobs(r->status, r->body);
      });
      PeakRow("before: the tracker's list (decode + ParseJobs)", s);
    }
    if (o.list_callback) {
      nlohmann::json body;
      PeakSample s = MeasurePeak([&] { body = CallbackParse(text, filter.job_fields); });
      PeakRow("for comparison: nlohmann parse() with a key callback", s);
    }
  }
}

// A compact list served over loopback, read by the old Send() (cpprest's
// extract_vector(), then a copy into the string) and by CpprestTransport.
void RunJobListTransfer(const Options& o) {
  const std::string text = JobListEnvelope(o.list_jobs, -1);
  testing::TestHttpServer server([&](const testing::ReceivedRequest& r, testing::Connection& c) {
    const std::string_view body(text);
    if (r.target == "/chunked") {
      c.StartChunked(200, {{"Content-Type", "application/json; charset=UTF-8"}});
      for (size_t at = 0; at < body.size(); at += 256 * 1024) {
        if (!c.WriteChunk(body.substr(at, 256 * 1024))) return;
      }
      c.EndChunked();
      return;
    }
    // Written in place: WriteResponse() would copy the body.
    c.Write(absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=UTF-8\r\n",
                         "Content-Length: ", body.size(), "\r\n\r\n"));
    c.Write(body);
  });
  std::printf("\nReading that compact answer (%.1f MB) over loopback, one run each\n",
              text.size() / 1e6);
  std::printf("  %-58s %12s %12s %12s %13s\n", "", "time", "peak heap", "result", "allocated");
  for (const char* path : {"/length", "/chunked"}) {
    const std::string url = server.url() + path;
    {
      web::http::client::http_client client(server.url());
      std::string body;
      PeakSample s = MeasurePeak([&] {
        web::http::http_response response = client.request(web::http::methods::GET, path).get();
        std::vector<unsigned char> bytes = response.extract_vector().get();
        body.assign(bytes.begin(), bytes.end());
      });
      if (body != text) std::printf("  (the old read returned %zu bytes)\n", body.size());
      PeakRow(absl::StrCat("before: extract_vector() + copy, ", path + 1), s);
    }
    {
      absl::StatusOr<std::unique_ptr<http::CpprestTransport>> transport =
          http::CpprestTransport::Create({});
      http::Request request;
      request.url = url;
      absl::StatusOr<http::Response> response;
      PeakSample s = MeasurePeak([&] { response = (*transport)->Send(request); });
      if (!response.ok() || response->body != text) std::printf("  (Send() failed)\n");
      PeakRow(absl::StrCat("after: CpprestTransport::Send(), ", path + 1), s);
    }
  }
}

// ------------------------------------------------------------ loopback

class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& log) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Child() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 50; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  bool ok() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// POST submits on a fresh connection (CpprestTransport: a new client per
// non-replay-safe request) and on a spare (SpareConnectionTransport),
// interleaved 10 ms apart, so that the spare is back before the next one and
// the machine's noise falls on both alike. Prints p50 / p99 of each.
void CompareSubmitConnections(int n, const ap::EndpointPolicy& policy,
                              const ap::ClusterName& cluster, ap::TokenSource& creds,
                              const std::string& path, const nlohmann::json& body) {
  absl::StatusOr<std::unique_ptr<http::CpprestTransport>> fresh_transport =
      http::CpprestTransport::Create({});
  absl::StatusOr<std::unique_ptr<http::CpprestTransport>> others =
      http::CpprestTransport::Create({});
  absl::StatusOr<std::unique_ptr<http::SpareConnectionClient>> spares =
      http::SpareConnectionClient::Create({});
  if (!fresh_transport.ok() || !others.ok() || !spares.ok()) return;
  http::SpareConnectionTransport spare_transport(*std::move(others), *std::move(spares));
  auto make_client = [&](http::Transport* transport) {
    ap::ClientOptions options;
    options.transport = transport;
    options.budget.requests_per_minute = 0;
    options.endpoint_policy = policy;
    return ap::NewSlurmApiClient(options);
  };
  std::unique_ptr<ap::SlurmApi> clients[2] = {make_client(fresh_transport->get()),
                                              make_client(&spare_transport)};
  std::vector<double> micros[2];
  int failures = 0;
  for (int i = 0; i < n + 5; ++i) {
    for (int which = 0; which < 2; ++which) {
      const auto start = Clock::now();
      absl::StatusOr<ap::SlurmResponse> r =
          clients[which]->Call(cluster, creds, ap::HttpMethod::kPost, path, &body);
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
      failures += !r.ok();
      if (i >= 5 && r.ok()) micros[which].push_back(us);  // the first 5: warm-up
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  auto pct = [](std::vector<double> v, double p) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * v.size()))];
  };
  std::printf(
      "\nPOST submit, connection setup on or off the critical path (%d each, "
      "interleaved 10 ms apart; %d failures)\n",
      n, failures);
  const char* names[2] = {"fresh connection (cpprest)", "spare connection (Beast)"};
  for (int which = 0; which < 2; ++which) {
    std::printf("  %-28s p50 %8.0f us   p99 %8.0f us\n", names[which], pct(micros[which], 50),
                pct(micros[which], 99));
  }
}

void RunLoopback(const Options& o, const InProcess& inproc) {
  char dir_template[] = "/tmp/ap-bench-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string port_file = dir + "/port";
  const std::string log = dir + "/agent_platform.log";
  Child server(
      {"/usr/bin/python3", std::string(SLURMOP_SOURCE_DIR) + "/tests/fakes/agent_platform.py",
       "--port", "0", "--port-file", port_file},
      log);
  if (!server.ok()) {
    std::printf("Loopback: cannot start the stand-in\n");
    return;
  }
  int port = 0;
  for (int i = 0; i < 300 && port == 0; ++i) {
    port = std::atoi(ReadAll(port_file).c_str());
    if (port == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (port == 0) {
    std::printf("Loopback: the stand-in did not start; log:\n%s\n", ReadAll(log).c_str());
    return;
  }
  absl::StatusOr<std::unique_ptr<http::CpprestTransport>> cpprest =
      http::CpprestTransport::Create({});
  if (!cpprest.ok()) {
    std::printf("Loopback: %s\n", std::string(cpprest.status().message()).c_str());
    return;
  }
  ap::CredentialsOptions cred_opts;
  cred_opts.transport = cpprest->get();
  cred_opts.metadata_host = absl::StrCat("127.0.0.1:", port);
  absl::StatusOr<std::shared_ptr<ap::TokenSource>> creds = ap::MetadataServerCredentials(cred_opts);
  if (!creds.ok()) {
    std::printf("Loopback: %s\n", std::string(creds.status().message()).c_str());
    return;
  }
  TimingTransport timing(cpprest->get());
  ap::ClientOptions co;
  co.transport = &timing;
  co.budget.requests_per_minute = 0;
  // The stand-in is on loopback: allowed only when listed, as in the operator.
  co.endpoint_policy = *ap::EndpointPolicy::Create({absl::StrCat("127.0.0.1:", port)});
  std::unique_ptr<ap::SlurmApi> client = ap::NewSlurmApiClient(co);
  ap::ClusterName cluster;
  cluster.endpoint = absl::StrCat("http://127.0.0.1:", port);
  cluster.project_id = "demo-project";
  cluster.region = "us-central1";
  cluster.cluster_id = "demo-cluster";
  const slurm::Dialect* dialect = *slurm::DialectFor("v0.0.42");
  const nlohmann::json long_job =
      *dialect->RenderSubmit(Descriptor("#!/bin/bash\nsleep 3600\n", "debug"));

  absl::StatusOr<ap::SlurmResponse> first =
      client->Call(cluster, **creds, ap::HttpMethod::kPost, dialect->SubmitPath(), &long_job);
  Check(first, "loopback submit");
  absl::StatusOr<slurm::SubmitResponse> sub = dialect->ParseSubmit(first->status, first->body);
  if (!sub.ok()) {
    std::printf("Loopback: submit refused: %s\n", std::string(sub.status().message()).c_str());
    return;
  }
  const std::string get_path = dialect->JobPath(sub->job_id);

  auto run = [&](int n, ap::HttpMethod m, const std::string& path, const nlohmann::json* body) {
    for (int i = 0; i < std::max(1, n / 10); ++i)
      (void)client->Call(cluster, **creds, m, path, body);
    timing.Reset();
    int failures = 0;
    Sample s = MeasureOnce(n, [&] {
      absl::StatusOr<ap::SlurmResponse> r = client->Call(cluster, **creds, m, path, body);
      failures += !r.ok() || r->status != 200;
    });
    const double inside = timing.inside_ns() / n;
    return std::make_tuple(s, inside, failures);
  };
  auto [get_s, get_inside, get_fail] =
      run(o.rt_get, ap::HttpMethod::kGet, get_path, static_cast<const nlohmann::json*>(nullptr));
  auto [post_s, post_inside, post_fail] =
      run(o.rt_post, ap::HttpMethod::kPost, dialect->SubmitPath(), &long_job);
  // Parse what came back, once, to make sure it is a job; keep the raw
  // answers to replay them in process.
  timing.Capture();
  Check(client->Call(cluster, **creds, ap::HttpMethod::kPost, dialect->SubmitPath(), &long_job),
        "loopback submit");
  const http::Response post_raw = timing.captured();
  absl::StatusOr<ap::SlurmResponse> last =
      client->Call(cluster, **creds, ap::HttpMethod::kGet, get_path, nullptr);
  Check(last, "loopback GET");
  const http::Response get_raw = timing.captured();

  // (a): the client alone on exactly these answers, in process.
  CannedTransport canned;
  ap::ClientOptions cco;
  cco.transport = &canned;
  cco.budget.requests_per_minute = 0;
  cco.endpoint_policy = co.endpoint_policy;
  std::unique_ptr<ap::SlurmApi> replay = ap::NewSlurmApiClient(cco);
  FixedToken fixed;
  const int nr = std::max(1, o.n / 10);
  canned.Set(&get_raw);
  Sample rg = Measure(
      nr, 1, [&] { (void)replay->Call(cluster, fixed, ap::HttpMethod::kGet, get_path, nullptr); });
  Sample rg_fake = Measure(nr, 3, [&] { (void)canned.Send(http::Request()); });
  canned.Set(&post_raw);
  Sample rp = Measure(nr, 1, [&] {
    (void)replay->Call(cluster, fixed, ap::HttpMethod::kPost, dialect->SubmitPath(), &long_job);
  });
  Sample rp_fake = Measure(nr, 3, [&] { (void)canned.Send(http::Request()); });
  const Sample replay_get = Minus(rg, rg_fake);
  const Sample replay_post = Minus(rp, rp_fake);
  const bool parsed = dialect->ParseJob(last->status, last->body, sub->job_id).ok();
  const size_t get_answer_bytes = last->body.dump().size();

  std::printf(
      "\nLoopback: real CpprestTransport -> tests/fakes/agent_platform.py on 127.0.0.1:%d\n", port);
  std::printf(
      "  (token from the stand-in's metadata server; GETs reuse a pooled connection, "
      "each POST opens its own)\n");
  std::printf("  %-34s %8s %14s %14s %14s %12s %10s\n", "", "calls", "round trip", "in transport",
              "client (b)", "allocs/call", "failures");
  std::printf("  %-34s %8d %11.0f ns %11.0f ns %11.0f ns %12.1f %10d\n", "GET job", o.rt_get,
              get_s.ns, get_inside, get_s.ns - get_inside, get_s.allocs, get_fail);
  std::printf("  %-34s %8d %11.0f ns %11.0f ns %11.0f ns %12.1f %10d\n", "POST submit (v0.0.42)",
              o.rt_post, post_s.ns, post_inside, post_s.ns - post_inside, post_s.allocs, post_fail);
  std::printf("  GET answer (Slurm JSON) %zu bytes, parsed as a job: %s\n", get_answer_bytes,
              parsed ? "yes" : "NO");
  std::printf("  client alone on these exact answers, in process (N/10 = %d calls):\n", nr);
  Row("  GET job (stand-in's answer)", replay_get);
  Row("  POST submit (stand-in's answer)", replay_post);
  std::printf("\nRatios (this run)\n");
  std::printf(
      "  client-only share of a GET round trip:  (a) in process, same answer %.1f%%   "
      "(b) wall time outside Send() %.1f%%\n",
      100.0 * replay_get.ns / get_s.ns, 100.0 * (get_s.ns - get_inside) / get_s.ns);
  std::printf(
      "  client-only share of a POST round trip: (a) in process, same answer %.1f%%   "
      "(b) wall time outside Send() %.1f%%\n",
      100.0 * replay_post.ns / post_s.ns, 100.0 * (post_s.ns - post_inside) / post_s.ns);
  std::printf("  GET + ParseJob (canned answer) / GET round trip: %.1f%%\n",
              100.0 * (inproc.get.ns + inproc.parse.ns) / get_s.ns);
  std::printf("  round trip / client-only time (a): GET %.1fx, POST %.1fx\n",
              get_s.ns / replay_get.ns, post_s.ns / replay_post.ns);
  CompareSubmitConnections(o.rt_post, co.endpoint_policy, cluster, **creds, dialect->SubmitPath(),
                           long_job);
  std::string rm = "rm -rf " + dir;
  if (std::system(rm.c_str()) != 0) std::printf("(could not remove %s)\n", dir.c_str());
}

}  // namespace
}  // namespace slurmop::bench

int main(int argc, char** argv) {
  using namespace slurmop::bench;
  const Options o = ParseArgs(argc, argv);
  const auto t0 = Clock::now();
  if (!o.list_only) {
    InProcess inproc = RunInProcess(o);
    if (o.loopback) RunLoopback(o, inproc);
  }
  if (o.list_jobs > 0) {
    RunJobList(o);
    if (o.loopback) RunJobListTransfer(o);
  }
  std::printf("\nTotal bench time %.1f s\n",
              std::chrono::duration<double>(Clock::now() - t0).count());
  return 0;
}
