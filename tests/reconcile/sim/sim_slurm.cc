// File: tests/reconcile/sim/sim_slurm.cc

#include "tests/reconcile/sim/sim_slurm.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace slurmop::reconcile::sim {
namespace {

using nlohmann::json;

constexpr char kPrefix[] = "/slurm/v0.0.42/";
constexpr char kDbPrefix[] = "/slurmdb/v0.0.42/";

int64_t Seconds(Time t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

json NoVal(int64_t n, bool set = true) {
  return {{"set", set}, {"infinite", false}, {"number", set ? n : 0}};
}

json Error(int number, const std::string& error, const std::string& description) {
  return {{"error_number", number},
          {"error", error},
          {"description", description},
          {"source", "simulated slurmrestd"}};
}

SlurmAnswer UnknownJob(int64_t id) {
  return {404,
          {{"jobs", json::array()},
           {"errors", {Error(2017, "Invalid job id specified", absl::StrCat("JobId=", id))}},
           {"warnings", json::array()}}};
}

SlurmAnswer NotServed() { return {404, "Unable find requested URL"}; }

std::optional<int64_t> IdAfter(const std::string& path, const std::string& prefix) {
  int64_t id = 0;
  if (!absl::StartsWith(path, prefix) || !absl::SimpleAtoi(path.substr(prefix.size()), &id)) {
    return std::nullopt;
  }
  return id;
}

json ExitCode(const std::string& state) {
  const bool cancelled = state == "CANCELLED";
  const std::string status = state == "FAILED" ? "ERROR" : cancelled ? "SIGNALED" : "SUCCESS";
  return {
      {"status", {status}},
      {"return_code", NoVal(state == "FAILED" ? 1 : 0, !cancelled)},
      {"signal", {{"id", NoVal(cancelled ? 9 : 0, cancelled)}, {"name", cancelled ? "KILL" : ""}}}};
}

// A job's state and times (epoch seconds, 0: not yet) at `now`.
struct JobTimes {
  std::string state;
  int64_t submit = 0, start = 0, end = 0;
};

JobTimes TimesOf(const SimJob& j, Time now) {
  std::optional<Time> ended = j.EndedAt(now);
  return {j.State(now), Seconds(j.visible_at), j.Started(now) ? Seconds(j.start_at) : 0,
          ended ? Seconds(*ended) : 0};
}

}  // namespace

std::optional<Time> SimJob::EndedAt(Time now) const {
  std::optional<Time> end;
  if (cancelled_at && *cancelled_at < end_at) {
    end = *cancelled_at;
  } else {
    end = end_at;
  }
  if (*end > now) return std::nullopt;
  return end;
}

std::string SimJob::State(Time now) const {
  if (!Visible(now)) return "";
  if (EndedAt(now)) {
    if (cancelled_at && *cancelled_at < end_at) return "CANCELLED";
    return fails ? "FAILED" : "COMPLETED";
  }
  return now < start_at ? "PENDING" : "RUNNING";
}

bool SimJob::Started(Time now) const {
  return start_at <= now && !(cancelled_at && *cancelled_at < start_at);
}

bool SimSlurm::IsSubmit(const std::string& method, const std::string& path) {
  return method == "POST" && path == absl::StrCat(kPrefix, "job/submit");
}

const SimJob* SimSlurm::Find(int64_t id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

bool SimSlurm::InLiveQueue(const SimJob& j, Time now) const {
  if (!j.Visible(now)) return false;
  std::optional<Time> ended = j.EndedAt(now);
  return !ended || now < *ended + min_job_age_;
}

int64_t SimSlurm::LastUpdate(Time now) const {
  int64_t last = 1;
  for (const auto& [id, j] : jobs_) {
    if (!j.Visible(now)) continue;
    last = std::max(last, Seconds(j.visible_at));
    if (j.start_at <= now) last = std::max(last, Seconds(j.start_at));
    if (std::optional<Time> e = j.EndedAt(now)) {
      last = std::max(last, Seconds(*e));
      if (*e + min_job_age_ <= now) last = std::max(last, Seconds(*e + min_job_age_));
    }
    if (j.comment_changed_at) last = std::max(last, Seconds(*j.comment_changed_at));
  }
  return last;
}

json SimSlurm::LiveRecord(const SimJob& j, Time now) const {
  const JobTimes t = TimesOf(j, now);
  return {{"job_id", j.id},
          {"name", j.name},
          {"partition", "gpu"},
          {"comment", j.comment},
          {"job_state", {t.state}},
          {"state_reason", t.state == "PENDING" ? "Priority" : "None"},
          {"state_description", ""},
          {"submit_time", NoVal(t.submit)},
          {"start_time", NoVal(t.start)},
          {"end_time", NoVal(t.end)},
          {"exit_code", ExitCode(t.state)},
          {"user_name", "alice"},
          {"nodes", t.start > 0 ? "node1" : ""}};
}

json SimSlurm::DbRecord(const SimJob& j, Time now) const {
  const JobTimes t = TimesOf(j, now);
  return {{"job_id", j.id},
          {"name", j.name},
          {"partition", "gpu"},
          {"comment", {{"administrator", ""}, {"job", j.comment}, {"system", ""}}},
          {"state", {{"current", {t.state}}, {"reason", "None"}}},
          {"time", {{"submission", t.submit}, {"start", t.start}, {"end", t.end}}},
          {"exit_code", ExitCode(t.state)}};
}

SlurmAnswer SimSlurm::Handle(const std::string& method, const std::string& path, const json& body,
                             Time now) {
  if (IsSubmit(method, path)) return Submit(body, now);
  if (std::optional<int64_t> id = IdAfter(path, absl::StrCat(kPrefix, "job/"))) {
    if (method == "GET") return GetJob(*id, now);
    if (method == "DELETE") return Cancel(*id, now);
    if (method == "POST") return Update(*id, body, now);
  }
  if (method == "GET" && path == absl::StrCat(kPrefix, "jobs/")) {
    return ListJobs(std::nullopt, now);
  }
  const std::string with_time = absl::StrCat(kPrefix, "jobs/?update_time=");
  if (method == "GET" && absl::StartsWith(path, with_time)) {
    int64_t t = 0;
    if (!absl::SimpleAtoi(path.substr(with_time.size()), &t)) return NotServed();
    return ListJobs(t, now);
  }
  if (std::optional<int64_t> id = IdAfter(path, absl::StrCat(kDbPrefix, "job/"))) {
    if (method == "GET") return DbJob(*id, now);
  }
  const std::string search = absl::StrCat(kDbPrefix, "jobs?");
  if (method == "GET" && absl::StartsWith(path, search)) {
    return DbSearch(path.substr(search.size()), now);
  }
  return NotServed();
}

SlurmAnswer SimSlurm::Submit(const json& body, Time now) {
  if (!body.is_object() || !body.contains("job") || !body["job"].is_object() ||
      !body.value("script", json()).is_string()) {
    return {400, {{"errors", {Error(9001, "Failed to parse", "no job or script")}}}};
  }
  const json& job = body["job"];
  SimJob j;
  j.id = next_id_++;
  j.name = job.value("name", "");
  j.comment = job.value("comment", "");
  j.origin = ParseSubmissionTag(j.comment);
  j.visible_at = now + next_life_.land_delay;
  j.start_at = j.visible_at + next_life_.pending;
  j.end_at = j.start_at + next_life_.running;
  j.fails = next_life_.fails;
  jobs_[j.id] = j;
  next_life_ = Life{};
  return {200,
          {{"job_id", j.id},
           {"step_id", "batch"},
           {"job_submit_user_msg", ""},
           {"errors", json::array()},
           {"warnings", json::array()}}};
}

int64_t SimSlurm::AddForeignJob(const std::string& name, const std::string& comment, Time now,
                                Duration pending, Duration running) {
  SimJob j;
  j.id = next_id_++;
  j.name = name;
  j.comment = comment;
  j.origin = ParseSubmissionTag(comment);
  j.visible_at = now;
  j.start_at = now + pending;
  j.end_at = j.start_at + running;
  jobs_[j.id] = j;
  return j.id;
}

SlurmAnswer SimSlurm::GetJob(int64_t id, Time now) const {
  const SimJob* j = Find(id);
  if (j == nullptr || !InLiveQueue(*j, now)) return UnknownJob(id);
  return {200,
          {{"jobs", {LiveRecord(*j, now)}},
           {"last_backfill", NoVal(Seconds(now))},
           {"last_update", NoVal(LastUpdate(now))},
           {"errors", json::array()},
           {"warnings", json::array()}}};
}

SlurmAnswer SimSlurm::ListJobs(std::optional<int64_t> update_time, Time now) const {
  const int64_t last = LastUpdate(now);
  if (update_time && *update_time > last) {
    return {200,
            {{"jobs", json::array()},
             {"errors", json::array()},
             {"warnings",
              {{{"description", "No job changes since update_time"}, {"source", "_job_list"}}}}}};
  }
  json list = json::array();
  for (const auto& [id, j] : jobs_) {
    if (InLiveQueue(j, now)) list.push_back(LiveRecord(j, now));
  }
  return {200,
          {{"jobs", list},
           {"last_backfill", NoVal(Seconds(now))},
           {"last_update", NoVal(last)},
           {"errors", json::array()},
           {"warnings", json::array()}}};
}

SlurmAnswer SimSlurm::DbJob(int64_t id, Time now) const {
  const SimJob* j = Find(id);
  if (j == nullptr || !j->Visible(now)) {
    return {200,
            {{"jobs", json::array()},
             {"errors", json::array()},
             {"warnings", {{{"description", "slurmdb_jobs_get(0x1) found nothing"}}}}}};
  }
  return {200,
          {{"jobs", {DbRecord(*j, now)}}, {"errors", json::array()}, {"warnings", json::array()}}};
}

namespace {

// A /slurmdb/.../jobs answer: the records, or data_parser's "found nothing".
SlurmAnswer DbJobsAnswer(json list) {
  if (list.empty()) {
    return {200,
            {{"jobs", list},
             {"errors", json::array()},
             {"warnings", {{{"description", "slurmdb_jobs_get(0x1) found nothing"}}}}}};
  }
  return {200, {{"jobs", list}, {"errors", json::array()}, {"warnings", json::array()}}};
}

}  // namespace

SlurmAnswer SimSlurm::DbSearch(const std::string& query, Time now) const {
  std::string name;
  int64_t start = -1;
  std::vector<int64_t> ids;  // step=<id>, repeated (data_parser v0.0.42)
  for (absl::string_view kv : absl::StrSplit(query, '&')) {
    if (absl::ConsumePrefix(&kv, "job_name=")) name = std::string(kv);
    if (absl::ConsumePrefix(&kv, "start_time=uts") && !absl::SimpleAtoi(kv, &start)) start = -1;
    if (absl::ConsumePrefix(&kv, "step=")) {
      int64_t id = 0;
      if (!absl::SimpleAtoi(kv, &id)) {
        return {500, {{"errors", {Error(9000, "Rejecting request", "_op_handler_jobs")}}}};
      }
      ids.push_back(id);
    }
  }
  if (!ids.empty()) return DbRecordsOf(ids, now);
  if (name.empty() || start < 0) {
    return {400, {{"errors", {Error(9001, "Failed to parse", "job_name and start_time=uts<N>")}}}};
  }
  json list = json::array();
  for (const auto& [id, j] : jobs_) {
    if (!j.Visible(now) || j.name != name) continue;
    std::optional<Time> ended = j.EndedAt(now);
    if (ended && Seconds(*ended) < start) continue;
    list.push_back(DbRecord(j, now));
  }
  return DbJobsAnswer(std::move(list));
}

SlurmAnswer SimSlurm::DbRecordsOf(const std::vector<int64_t>& ids, Time now) const {
  json list = json::array();
  for (int64_t id : ids) {
    const SimJob* j = Find(id);
    if (j != nullptr && j->Visible(now)) list.push_back(DbRecord(*j, now));
  }
  return DbJobsAnswer(std::move(list));
}

SlurmAnswer SimSlurm::Cancel(int64_t id, Time now) {
  actions_.push_back({"cancel", id, now, nullptr});
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !InLiveQueue(it->second, now)) return UnknownJob(id);
  SimJob& j = it->second;
  if (j.EndedAt(now)) {
    return {200,
            {{"status",
              {{{"error_number", 2021},
                {"error", "Job/step already completing or completed"},
                {"job_id", id}}}},
             {"errors", json::array()},
             {"warnings", json::array()}}};
  }
  j.cancelled_at = now;
  return {200, {{"status", json::array()}, {"errors", json::array()}, {"warnings", json::array()}}};
}

SlurmAnswer SimSlurm::Update(int64_t id, const json& body, Time now) {
  actions_.push_back({"update", id, now, body});
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !InLiveQueue(it->second, now)) return UnknownJob(id);
  SimJob& j = it->second;
  if (!body.is_object() || body.empty()) {
    return {400, {{"errors", {Error(9001, "Failed to parse", "empty update")}}}};
  }
  if (j.EndedAt(now)) {
    return {
        200,
        {{"errors", {Error(2084, "Job has already finished", "")}}, {"warnings", json::array()}}};
  }
  if (body.contains("comment") && body["comment"].is_string()) {
    j.comment = body["comment"].get<std::string>();
    j.comment_changed_at = now;
  }
  return {200,
          {{"job_id", id},
           {"step_id", "batch"},
           {"job_submit_user_msg", ""},
           {"errors", json::array()},
           {"warnings", json::array()}}};
}

}  // namespace slurmop::reconcile::sim
