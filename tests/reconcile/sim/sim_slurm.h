// File: tests/reconcile/sim/sim_slurm.h
//
// SimSlurm: the ground truth of one simulated Slurm cluster for the
// deterministic simulation (simulation_test.cc), answering the Slurm REST
// paths of v0.0.42 (slurmrestd 24.11) with the JSON slurmrestd writes, so
// that the REAL dialect parses every answer.
//
// Contract:
//  * Jobs have ids (from a seeded base), name, comment, and a life computed
//    from the simulated clock: visible from `visible_at` (a delayed submit
//    lands later), PENDING until `start_at`, RUNNING until `end_at`, then
//    COMPLETED or FAILED; a cancel of a live job makes it CANCELLED at once.
//    An ended job stays in the live queue `min_job_age`, then only
//    accounting (/slurmdb) knows it.
//  * Strict like slurmrestd: an id slurmctld does not know (never queued,
//    not landed yet, purged) is error 2017 with HTTP 404; a cancel of an
//    ended job is error 2021 in status[]; an update of an ended job 2084; a
//    path it does not serve is the text 404 "Unable find requested URL".
//  * GET /jobs/?update_time=N answers "No job changes since update_time"
//    when nothing changed in or after second N (slurm_load_jobs), else the
//    whole queue with last_update.
//  * Every job ever queued and every cancel and update received is kept
//    (the invariants read them); `origin` is the tag the job was queued
//    with.
//  * Not thread-safe by itself: the simulation runs one thing at a time.

#ifndef SLURMOP_TESTS_RECONCILE_SIM_SIM_SLURM_H_
#define SLURMOP_TESTS_RECONCILE_SIM_SIM_SLURM_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controller/common/clock.h"
#include "controller/reconcile/job_descriptor.h"
#include "nlohmann/json.hpp"

namespace slurmop::reconcile::sim {

struct SimJob {
  int64_t id = 0;
  std::string name;
  std::string comment;              // now (an update may change it)
  std::optional<ParsedTag> origin;  // the tag it was queued with
  Time visible_at{}, start_at{}, end_at{};
  bool fails = false;                // ends FAILED (else COMPLETED)
  std::optional<Time> cancelled_at;  // a cancel reached it while live
  std::optional<Time> comment_changed_at;

  // When it ended (ran out or was cancelled); nullopt while live at `now`.
  std::optional<Time> EndedAt(Time now) const;
  bool Visible(Time now) const { return now >= visible_at; }
  // It ran (a cancel before its start kept it from running).
  bool Started(Time now) const;
  // PENDING RUNNING COMPLETED FAILED CANCELLED ("" before it lands).
  std::string State(Time now) const;
};

// One cancel or update request slurmrestd received.
struct SlurmAction {
  std::string kind;  // cancel | update
  int64_t job_id = 0;
  Time at{};
  nlohmann::json body;
};

// What slurmrestd answers: its HTTP status and JSON (a string: text/plain).
struct SlurmAnswer {
  int status = 200;
  nlohmann::json body;
};

class SimSlurm {
 public:
  SimSlurm(int64_t first_id, Duration min_job_age)
      : next_id_(first_id), min_job_age_(min_job_age) {}

  // How a submit that reaches slurmctld lives (set by the schedule before it).
  struct Life {
    Duration land_delay{};  // > 0: a delayed effect
    Duration pending{};
    Duration running{};
    bool fails = false;
  };
  void SetNextLife(const Life& life) { next_life_ = life; }

  // Performs the request (`method` GET/POST/DELETE, the envelope's path and
  // body) at `now`.
  SlurmAnswer Handle(const std::string& method, const std::string& path, const nlohmann::json& body,
                     Time now);

  // Whether `path` with `method` is a submit (the faults differ).
  static bool IsSubmit(const std::string& method, const std::string& path);

  // A job queued by someone else (another installation, a user).
  int64_t AddForeignJob(const std::string& name, const std::string& comment, Time now,
                        Duration pending, Duration running);

  const std::map<int64_t, SimJob>& jobs() const { return jobs_; }
  const std::vector<SlurmAction>& actions() const { return actions_; }
  const SimJob* Find(int64_t id) const;
  // The latest change slurmctld knows of (whole seconds), for last_update.
  int64_t LastUpdate(Time now) const;

 private:
  SlurmAnswer Submit(const nlohmann::json& body, Time now);
  SlurmAnswer GetJob(int64_t id, Time now) const;
  SlurmAnswer ListJobs(std::optional<int64_t> update_time, Time now) const;
  SlurmAnswer DbJob(int64_t id, Time now) const;
  SlurmAnswer DbSearch(const std::string& query, Time now) const;
  // jobs?step=<id>&step=<id>...: the accounting records of those ids.
  SlurmAnswer DbRecordsOf(const std::vector<int64_t>& ids, Time now) const;
  SlurmAnswer Cancel(int64_t id, Time now);
  SlurmAnswer Update(int64_t id, const nlohmann::json& body, Time now);
  bool InLiveQueue(const SimJob& j, Time now) const;
  nlohmann::json LiveRecord(const SimJob& j, Time now) const;
  nlohmann::json DbRecord(const SimJob& j, Time now) const;

  int64_t next_id_;
  Duration min_job_age_;
  Life next_life_;
  std::map<int64_t, SimJob> jobs_;
  std::vector<SlurmAction> actions_;
};

}  // namespace slurmop::reconcile::sim

#endif  // SLURMOP_TESTS_RECONCILE_SIM_SIM_SLURM_H_
