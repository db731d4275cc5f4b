// File: controller/slurm/array_folding.h
//
// An array job is many records in Slurm's job lists (slurmctld's GET /jobs
// and accounting alike): one per task that left the pending state (each with
// its own job_id, array_job_id = the array's id, array_task_id = its index),
// and, while tasks are still pending, one record for all of them (job_id =
// array_job_id, array_task_id unset, array_task_string e.g. "4-7%2"); the
// last task to leave it keeps the array's own job id. The operator reasons
// about one Slurm job per run: its tag is on every task, its id is the
// array's, cancelling that id cancels every task. So every place that reads
// a list or a lookup folds an array's records into one record first.
//
// Contract of FoldArrayRecords:
//  * Records that are not array records (array_job_id 0) are kept, in order.
//  * The records of one array_job_id become one JobInfo at the place of the
//    first of them: job_id = array_job_id; name, partition, comment, user
//    fields from the record whose job_id is the array's (else the first);
//    `array` lists each task (by index; a task seen twice keeps the record
//    with the later submit/start, i.e. a requeue's), the remainder's pending
//    indexes and the throttle.
//  * Its state: while any task is not final (or indexes are pending) RUNNING
//    if a task runs (or completes), else PENDING; once all are final,
//    COMPLETED when every task completed, else the state, reason, exit code
//    and signal of the lowest failed index. submit_time is the earliest,
//    start_time the earliest start, end_time the latest end once final.
//  * A remainder record in a final state (the array cancelled, or its
//    deadline passed, while those tasks were pending) ends each of its
//    indexes in that state, unstarted.
//  * A remainder whose array_task_string cannot be read keeps the folded
//    record non-final (PENDING), never final: the operator never concludes
//    an array ended from a record it did not understand.

#ifndef SLURMOP_CONTROLLER_SLURM_ARRAY_FOLDING_H_
#define SLURMOP_CONTROLLER_SLURM_ARRAY_FOLDING_H_

#include <vector>

#include "controller/slurm/job_model.h"

namespace slurmop::slurm {

std::vector<JobInfo> FoldArrayRecords(std::vector<JobInfo> jobs);

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_ARRAY_FOLDING_H_
