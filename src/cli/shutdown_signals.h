// SIGINT and SIGTERM as requests to stop, received by one thread with sigtimedwait/sigwait.
#pragma once

#include <signal.h>

namespace mogserve::cli {

// Blocks SIGINT and SIGTERM in this thread and every thread it starts afterwards, so that only
// the thread waiting for them receives them (no handler runs on a random thread mid-request).
// Returns the set, for sigtimedwait. Call before starting any thread.
sigset_t BlockShutdownSignals();

}  // namespace mogserve::cli
