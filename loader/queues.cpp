// loader/queues.cpp: map tasks to workers and order each worker's queue.
//
// Why this never deadlocks, whatever W is. simulate_counters() returns a valid sequential
// execution order S: every task's waits are met by tasks earlier in S, and it respects each SM's
// queue order. Each worker runs its tasks in S order. Suppose the workers were stuck with tasks
// left; take the earliest remaining task t in S. Every task of t's worker that precedes t in S
// precedes it in S, so has completed: t is at the head of its queue. Every producer that t's waits
// need precedes t in S, so has completed too: t can run. Contradiction. Hence merging several SMs
// into one worker (W below the SM count) only adds ordering, and with W >= the SM count each queue
// is exactly that SM's task-list queue. Tasks sharing an sm share a worker (s % W), so SMEM and
// REGISTER buffers, whose tasks all carry one sm (validate(): onchip.sm), stay on one worker.
#include "loader/queues.h"

#include <algorithm>

#include "ir/graph.h"

namespace amk::loader {

Result<WorkerQueues> build_queues(const ir::Program& program, int requested) {
  if (requested < 0 || requested > kMaxWorkers)
    return Status(StatusCode::InvalidArgument, "workers = " + std::to_string(requested) + " is outside [0, " +
                                                   std::to_string(kMaxWorkers) + "] (0 = the program's SM count)");
  const size_t n = program.tasks.size();
  int32_t max_sm = -1;
  for (const ir::Task& t : program.tasks)
    if (t.sm) max_sm = std::max(max_sm, *t.sm);
  if (requested == 0 && max_sm >= kMaxWorkers)
    return Status(StatusCode::InvalidArgument, "a task has sm " + std::to_string(max_sm) + ", more workers than " +
                                                   std::to_string(kMaxWorkers) + ": set LoadOptions.workers");
  WorkerQueues q;
  q.workers = requested > 0 ? requested : max_sm + 1 > 0 ? max_sm + 1 : 1;

  // rank[id]: position in the simulated order; tasks it leaves out come after, in list order.
  std::vector<int64_t> rank(n, -1);
  const ir::CounterSimulation sim = ir::simulate_counters(program);
  int64_t next = 0;
  for (ir::TaskId id : sim.order)
    if (id.value >= 0 && static_cast<size_t>(id.value) < n && rank[id.value] < 0) rank[id.value] = next++;
  for (const ir::Task& t : program.tasks)
    if (rank[t.id.value] < 0) rank[t.id.value] = next++;
  std::vector<int32_t> by_rank(n);
  for (const ir::Task& t : program.tasks) by_rank[static_cast<size_t>(rank[t.id.value])] = t.id.value;

  std::vector<const ir::Task*> task_by_id(n);
  for (const ir::Task& t : program.tasks) task_by_id[t.id.value] = &t;
  q.worker_of.assign(n, 0);
  std::vector<int32_t> count(static_cast<size_t>(q.workers), 0);
  int64_t round_robin = 0;
  for (int32_t id : by_rank) {
    const ir::Task& t = *task_by_id[id];
    const int32_t w = t.sm ? *t.sm % q.workers : static_cast<int32_t>(round_robin++ % q.workers);
    q.worker_of[id] = w;
    ++count[w];
  }
  q.offsets.assign(static_cast<size_t>(q.workers) + 1, 0);
  for (int w = 0; w < q.workers; ++w) q.offsets[w + 1] = q.offsets[w] + count[w];
  q.queue.assign(n, -1);
  std::vector<int32_t> fill(q.offsets.begin(), q.offsets.end() - 1);
  for (int32_t id : by_rank) q.queue[fill[q.worker_of[id]]++] = id;  // stable: keeps S order per worker
  return q;
}

}  // namespace amk::loader
