// MergeRun: copies one run's rows and artifacts from another run store into this one, ids kept.
//
// The Slurm executor gives each array element its own store (<run_dir>/slurm/tasks/<i>/) and
// merges it into the bench's store when the element has finished: SQLite needs its WAL's shared
// memory on one host, so one store written from several nodes of a cluster over NFS is not safe,
// while a store per element written by one process is. Merging is idempotent: rows already
// present (by id) are skipped, so a merge repeated after a resubmission or a resume adds only
// what is new.
#ifndef KFORGE_EXEC_STORE_MERGE_H_
#define KFORGE_EXEC_STORE_MERGE_H_

#include <string>

#include "kforge/core/error.h"
#include "kforge/store/run_store.h"

namespace kforge::exec {

struct MergeCounts {
  int tasks = 0;
  int candidates = 0;
  int evaluations = 0;
  int llm_calls = 0;
  int recommendations = 0;
  int artifacts = 0;
};

// Merges run `run_id` of `from` into `into` (where the run row must exist). Errors: a task name
// present in both under different ids, a store failure.
Result<MergeCounts> MergeRun(store::RunStore& from, store::RunStore& into,
                             const std::string& run_id);

}  // namespace kforge::exec

#endif  // KFORGE_EXEC_STORE_MERGE_H_
