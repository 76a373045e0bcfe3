// weft predict on a Dask cluster (--scheduler, --local-workers).
#ifndef WEFT_TOOLS_WEFT_PREDICT_CLUSTER_H_
#define WEFT_TOOLS_WEFT_PREDICT_CLUSTER_H_

#include <string>
#include <vector>

#include "commands.h"

namespace weft::cli {

// Runs the job of `args` over `inputs` (expanded, in order) on the cluster
// the flags name; returns the command's exit status.
int PredictOnCluster(const PredictArgs& args,
                     const std::vector<std::string>& inputs);

}  // namespace weft::cli

#endif  // WEFT_TOOLS_WEFT_PREDICT_CLUSTER_H_
