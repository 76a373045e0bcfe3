// The umbrella header: everything a weft program needs.
#ifndef WEFT_WEFT_H_
#define WEFT_WEFT_H_

#include "weft/attr.h"
#include "weft/chrome_trace.h"
#include "weft/container.h"
#include "weft/dtype_dispatch.h"
#include "weft/file_status.h"
#include "weft/graph.h"
#include "weft/graph_io.h"
#include "weft/kernel.h"
#include "weft/machine.h"
#include "weft/model.h"
#include "weft/onnx.h"
#include "weft/op_registry.h"
#include "weft/options.h"
#include "weft/parallel_for.h"
#include "weft/session.h"
#include "weft/status.h"
#include "weft/suggest.h"
#include "weft/tensor.h"
#include "weft/thread_pool.h"
#include "weft/threading.h"
#include "weft/tune.h"
#include "weft/warnings.h"

#endif  // WEFT_WEFT_H_
