// Load generators for serving benchmarks: a closed loop (C clients, each sending its next request
// when the previous one is answered) and an open loop (Poisson arrivals at a fixed rate, answered
// or not). What a request is — an HTTP POST, a Pipeline::Submit — is the caller's function, so
// the HTTP and the in-process measurements share one driver and compare like for like.
#pragma once

#include <cstdint>
#include <functional>

#include "bench/latency_stats.h"

namespace mogserve::bench {

// Sends request number `i` (any thread) and blocks until it is answered; true when it
// succeeded. The driver times the call.
using SendFunction = std::function<bool(uint64_t i)>;

struct LoadResult {
  double seconds = 0;  // measured window
  int64_t sent = 0;    // in the window
  int64_t ok = 0;
  int64_t failed = 0;
  double throughput_per_s = 0;  // ok / seconds
  LatencyStats latency;         // successful requests only
  // Closed loop: the clients that completed at least one request in the window (a server that
  // serves some clients and starves the others shows it here, not in the latencies); -1 for
  // the open loop.
  int clients_served = -1;
};

// `concurrency` clients for `seconds`; the first `warmup_seconds` are not counted. Every request
// that ends inside the window counts (with its whole latency, also when it started before the
// window): the steady-state throughput, even when a round trip is a large part of the window.
LoadResult RunClosedLoop(int concurrency, double seconds, double warmup_seconds,
                         const SendFunction& send);

// Poisson arrivals at `rate_per_s` for `seconds` (deterministic seed), each request on its own
// thread from a pool of at most `max_in_flight`; an arrival finding every thread busy counts as
// failed (the client would have queued it; we report it rather than hide the overload).
LoadResult RunOpenLoop(double rate_per_s, double seconds, int max_in_flight,
                       const SendFunction& send);

}  // namespace mogserve::bench
