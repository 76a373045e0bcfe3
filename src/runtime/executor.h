// The executor: runs one RunState to completion on the inter-op pool (or in
// the calling thread).
//
// Algorithm outline (docs/architecture.md, "Executor"):
//  - One start task is dispatched: Schedule()d on the inter-op pool, or
//    queued for the calling thread when there is none. It resets the Run's
//    counters and makes every root ready. When every root is cheap, the
//    calling thread runs the start task itself and keeps the cheap nodes,
//    handing expensive ones to the pool.
//  - A thread running node N executes its kernel, releases the inputs no
//    later node reads, then decrements the pending count of every consumer;
//    those reaching zero are ready. Of the ready nodes, cheap ones (measured
//    cost below inline_node_cost_ns, not blocking) run next on this thread,
//    one expensive node continues on this thread after them, and the other
//    expensive ones are dispatched, so independent branches spread over the
//    pool.
//  - outstanding counts dispatched tasks not yet finished; a task counts the
//    tasks it dispatches before it finishes, so it reaches zero exactly
//    once, when nothing can run any more.
//  - The first kernel error (or a deadline, or Close) aborts the Run: nodes
//    not started are skipped and no successor becomes ready.
#ifndef WEFT_SRC_RUNTIME_EXECUTOR_H_
#define WEFT_SRC_RUNTIME_EXECUTOR_H_

#include <chrono>
#include <memory>

#include "runtime/run_state.h"

namespace weft::internal {

// Starts the Run and returns once it completes. With a deadline, a Run still
// going at the deadline is aborted with deadline->Exceeded() (nodes check
// cancellation); the call still returns only once no node of it runs.
void ExecuteRun(RunState& run, std::optional<RunDeadline> deadline);

// Runs `run` to completion from inside a kernel of another Run (a subgraph:
// If's branch, Loop's body) on the same pools. On a worker of the Run's
// inter-op pool the calling thread starts the Run itself and, while it
// waits, runs queued tasks of that pool, this Run's nodes among them: with
// one inter-op thread it is the only thread that could, so a plain wait
// would deadlock. Elsewhere it is ExecuteRun, with the Run's
// config().deadline in the caller-thread mode (inter = -1). The
// calling kernel's core is given back while it waits (CoreBudget::Waiting)
// and counted again for each node it runs.
void ExecuteNestedRun(RunState& run);

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_EXECUTOR_H_
