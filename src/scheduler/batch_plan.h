// The plain structs that cross from the scheduler to the pipeline: what the engines look like
// now (EngineState), and what to do next (BatchPlan inside a Decision).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "scheduler/outcome.h"
#include "scheduler/request.h"

namespace mogserve::scheduler {

// The pipeline's view of its engine instances when it asks for the next decision.
struct EngineState {
  int idle = 0;  // instances free to take a batch now
  int busy = 0;  // instances running a batch
};

// One batch for one idle engine. The scheduler has already removed these requests from its
// queues: from here on the pipeline owns them and must end each one (done or failed).
struct BatchPlan {
  int bucket = -1;
  std::vector<uint64_t> ids;  // execution order: row i of the batch is ids[i]
  int batch_size = 0;         // ids.size()
  // The planned size the engine should run (rows batch_size..padded-1 are padding); equal to
  // batch_size when no planned sizes are configured.
  int padded_batch_size = 0;
  int64_t pixels = 0;  // sum of the members' pixel_cost
};

struct Decision {
  enum class Kind {
    kDispatch,  // run `plan` on one idle engine, then ask again (another engine may be idle)
    kWait,      // nothing to run yet; ask again at `wake_at` or on any event, whichever is first
    kIdle,      // nothing will change until an event (admission, cancel, batch completion)
  };
  Kind kind = Kind::kIdle;
  BatchPlan plan;                        // kDispatch only
  TimePoint wake_at = TimePoint::max();  // kWait only
  // Requests removed by this call because they could no longer meet their deadline; always
  // reported, whatever the kind. They were never part of any plan.
  std::vector<Ended> ended;
};

// Queue depth, for metrics (mogserve_queue_depth) and for the pipeline's backpressure.
struct QueueDepth {
  int64_t requests = 0;
  int64_t bytes = 0;
};
struct QueueStats {
  QueueDepth total;
  std::array<QueueDepth, kNumPriorities> by_priority{};  // indexed by Priority's value
  std::vector<QueueDepth> by_bucket;
};

}  // namespace mogserve::scheduler
