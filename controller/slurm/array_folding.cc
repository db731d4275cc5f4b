// File: controller/slurm/array_folding.cc

#include "controller/slurm/array_folding.h"

#include <algorithm>
#include <map>

#include "controller/slurm/array_indexes.h"

namespace slurmop::slurm {
namespace {

ArrayTask TaskOf(const JobInfo& r) {
  ArrayTask t;
  t.index = *r.array_task_id;
  t.job_id = r.job_id;
  t.state = r.state;
  t.flags = r.flags;
  t.state_reason = r.state_reason;
  t.exit_code = r.exit_code;
  t.signal = r.signal;
  t.start_time = r.start_time;
  t.end_time = r.end_time;
  return t;
}

// The remainder's expression without the throttle, e.g. "4-7%2" -> {4..7}.
std::optional<IndexSet> RemainderIndexes(const std::string& text) {
  absl::StatusOr<ArrayExpression> parsed = ParseArrayExpression(text);
  if (!parsed.ok()) return std::nullopt;
  return parsed->indexes;
}

// The record whose job id is the array's (the meta record), else the first.
const JobInfo& HeadRecord(const std::vector<JobInfo>& records) {
  const JobInfo* head = &records.front();
  for (const JobInfo& r : records) {
    if (r.job_id == r.array_job_id) head = &r;
  }
  return *head;
}

// The array's tasks from its records: one per index (the newest record of a
// requeued task), the tasks that ended inside the meta record's remainder,
// and the indexes still pending in it. Also the earliest submit time.
struct CollectedTasks {
  ArrayJob array;
  std::optional<Time> submit_time;
  bool unreadable_remainder = false;  // a remainder expression did not parse
};

CollectedTasks CollectTasks(const std::vector<JobInfo>& records) {
  CollectedTasks c;
  std::map<int32_t, ArrayTask> tasks;
  std::map<int32_t, std::optional<Time>> task_seen;  // submit time of the kept record
  std::vector<ArrayTask> ended_in_remainder;
  IndexSet pending;
  for (const JobInfo& r : records) {
    c.array.max_running = std::max(c.array.max_running, r.array_max_tasks);
    if (r.submit_time && (!c.submit_time || *r.submit_time < *c.submit_time)) {
      c.submit_time = r.submit_time;
    }
    if (!r.array_task_id) {
      std::optional<IndexSet> rest = RemainderIndexes(r.array_task_string);
      if (!rest) {
        c.unreadable_remainder = true;
      } else if (r.IsFinal()) {
        // Tasks that never left the meta record ended with it (cancelled or past their
        // deadline while pending): each of them ended in its state.
        for (int32_t index : *rest) {
          JobInfo task = r;
          task.array_task_id = index;
          ended_in_remainder.push_back(TaskOf(task));
        }
      } else {
        pending.insert(rest->begin(), rest->end());
      }
      continue;
    }
    auto it = task_seen.find(*r.array_task_id);
    if (it != task_seen.end() && r.submit_time.value_or(Time()) < it->second.value_or(Time())) {
      continue;  // an older record of a requeued task
    }
    task_seen[*r.array_task_id] = r.submit_time;
    tasks[*r.array_task_id] = TaskOf(r);
  }
  for (ArrayTask& t : ended_in_remainder) tasks.try_emplace(t.index, t);
  for (auto& [index, task] : tasks) {
    pending.erase(index);
    c.array.tasks.push_back(task);
  }
  c.array.pending_indexes.assign(pending.begin(), pending.end());
  return c;
}

// The array's state from its tasks: running or pending until every task is
// final (and nothing is pending or unreadable), then COMPLETED, or the state
// of the first task that did not complete; the earliest start, the latest end.
void SetArrayState(const JobInfo& head, const CollectedTasks& c, JobInfo& out) {
  bool any_running = false;
  bool all_final = !c.unreadable_remainder && c.array.pending_indexes.empty();
  const ArrayTask* first_failure = nullptr;
  std::optional<Time> latest_end;
  for (const ArrayTask& t : c.array.tasks) {
    if (t.start_time && (!out.start_time || *t.start_time < *out.start_time)) {
      out.start_time = t.start_time;
    }
    if (!t.IsFinal()) {
      all_final = false;
      any_running |= t.state == BaseState::kRunning || IsTerminalState(t.state);
      continue;
    }
    if (t.end_time && (!latest_end || *t.end_time > *latest_end)) latest_end = t.end_time;
    if (t.state != BaseState::kCompleted && first_failure == nullptr) first_failure = &t;
  }
  if (!all_final) {
    out.state = any_running ? BaseState::kRunning : BaseState::kPending;
    out.state_reason = head.state_reason;
  } else if (first_failure == nullptr) {
    out.state = BaseState::kCompleted;
    out.exit_code = 0;
    out.signal = 0;
    out.end_time = latest_end;
  } else {
    out.state = first_failure->state;
    out.state_reason = first_failure->state_reason;
    out.exit_code = first_failure->exit_code;
    out.signal = first_failure->signal;
    out.end_time = latest_end;
  }
}

JobInfo Fold(const std::vector<JobInfo>& records) {
  const JobInfo& head = HeadRecord(records);
  JobInfo out;
  out.job_id = head.array_job_id;
  out.array_job_id = head.array_job_id;
  out.name = head.name;
  out.comment = head.comment;
  out.partition = head.partition;
  out.account = head.account;
  out.standard_output = head.standard_output;
  out.standard_error = head.standard_error;
  CollectedTasks c = CollectTasks(records);
  out.submit_time = c.submit_time;
  SetArrayState(head, c, out);
  out.array = std::move(c.array);
  return out;
}

}  // namespace

std::vector<JobInfo> FoldArrayRecords(std::vector<JobInfo> jobs) {
  bool any = false;
  for (const JobInfo& j : jobs) any |= j.array_job_id != 0;
  if (!any) return jobs;
  std::map<int64_t, std::vector<JobInfo>> arrays;
  std::vector<JobInfo> out;
  out.reserve(jobs.size());
  for (JobInfo& j : jobs) {
    if (j.array_job_id == 0) {
      out.push_back(std::move(j));
      continue;
    }
    auto [it, inserted] = arrays.try_emplace(j.array_job_id);
    if (inserted) {
      JobInfo placeholder;
      placeholder.array_job_id = j.array_job_id;
      placeholder.job_id = -1;
      out.push_back(std::move(placeholder));
    }
    it->second.push_back(std::move(j));
  }
  for (JobInfo& j : out) {
    if (j.job_id == -1) j = Fold(arrays[j.array_job_id]);
  }
  return out;
}

}  // namespace slurmop::slurm
