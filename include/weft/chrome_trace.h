// Chrome trace event format (chrome://tracing, Perfetto) from RunMetadata.
#ifndef WEFT_CHROME_TRACE_H_
#define WEFT_CHROME_TRACE_H_

#include <string>

#include "weft/options.h"

namespace weft {

// One complete ("X") event per node on the OS thread that ran it, one per
// intra-op block on the thread that ran the block, thread-name metadata for
// every thread seen, and per-node args: op, device, pool, output shapes,
// queue wait (µs from ready to start), intra-op shards. Times are µs from the
// Run's start.
std::string ChromeTraceJson(const RunMetadata& metadata);

}  // namespace weft

#endif  // WEFT_CHROME_TRACE_H_
