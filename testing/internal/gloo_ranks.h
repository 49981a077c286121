// The Gloo side of run_on_ranks: the test (parent) starts its own binary once
// per rank with --gtest_filter naming the running test; in those processes
// the same run_on_ranks call runs the body as one rank of a Gloo job.
//   if (auto id = gloo_rank_call(); is_gloo_rank_process(id)) run_gloo_rank(config, fn, options);
//   else launch_gloo_job(config, id, options);
#pragma once

#include <functional>
#include <string>

#include "backends/world.h"
#include "testing/ranks.h"

namespace dtensor::testing::internal {

// Note [Gloo rank processes]
// Each Gloo run_on_ranks call of a test gets an id "<Suite.Name>#<k>" (k
// counts the test's Gloo calls). The parent starts the binary with
// --gtest_filter=<Suite.Name> and DTENSOR_TESTING_GLOO_CALL=<id>, through
// backends/launch (RANK, WORLD_SIZE, MASTER_* set; killed together; a timeout).
// In a rank process, the calls of that test before the one with the id return
// at once (fake calls still run); the call with the id runs the body on a
// Gloo world, prints "[rank R] ..." for each failure, prints a done marker
// and ends the process (exit 0, or 1 after a failure) without running the
// rest of the test. The parent checks every rank exited 0 and printed the
// marker (so a test that did not reach the call cannot pass by accident).

/// The id of the next Gloo call of the running test (advances the count).
std::string next_gloo_call_id();

/// True in a process started for a Gloo call of this test; `id`: this call.
bool in_gloo_rank_process();
bool is_gloo_rank_process_for(const std::string& id);

/// Runs fn as this process's rank and ends the process (never returns).
[[noreturn]] void run_gloo_rank(const RankConfig& config, const std::function<void(World&)>& fn,
                                const RunOptions& options);

/// Starts config.world_size() rank processes for call `id`, waits for them
/// and adds a gtest failure with the job's report unless all succeeded.
void launch_gloo_job(const RankConfig& config, const std::string& id, const RunOptions& options);

}  // namespace dtensor::testing::internal
