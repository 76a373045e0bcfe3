// Dataset's iterator, its description, and the map functions for common
// steps (reading files, running a graph).
#include "data/autotune.h"
#include "data/dataset_node.h"
#include "runtime/core_budget.h"
#include "weft/file_status.h"
#include "weft/npy.h"
#include "weft/session.h"

namespace weft::data {
namespace {

void DescribeInto(const internal::DatasetNode& node, std::string* out) {
  if (node.inputs().size() > 1) {
    *out += node.name() + "(";
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      if (i > 0) *out += ", ";
      DescribeInto(*node.inputs()[i], out);
    }
    *out += ")";
    return;
  }
  if (node.inputs().size() == 1) {
    DescribeInto(*node.inputs()[0], out);
    *out += " -> ";
  }
  *out += node.name();
}

StatusOr<std::string> ScalarPath(const Element& element, const char* who) {
  if (element.size() != 1 || element[0].dtype() != DataType::kString ||
      element[0].shape().rank() != 0) {
    return InvalidArgumentError(std::string(who) +
                                ": the element must be one string scalar "
                                "(a path)");
  }
  return element[0].data<std::string>()[0];
}

}  // namespace

StatusOr<std::unique_ptr<Iterator>> Dataset::MakeIterator(
    IteratorOptions options) const {
  internal::IteratorEnv env;
  env.pool = std::move(options.pool);
  if (env.pool == nullptr) {
    WEFT_ASSIGN_OR_RETURN(env.pool, internal::DefaultPipelinePool());
  }
  env.autotuner = std::make_shared<internal::Autotuner>(
      env.pool == nullptr ? 1 : env.pool->NumThreads(), options.autotune);
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<internal::StageIterator> it,
                        node_->MakeIterator(env));
  return internal::MakeTunedIterator(std::move(it), env.autotuner);
}

std::string Dataset::DebugString() const {
  std::string out;
  DescribeInto(*node_, &out);
  return out;
}

MapFn ReadFileFn() {
  return [](const Element& element) -> StatusOr<Element> {
    WEFT_ASSIGN_OR_RETURN(std::string path, ScalarPath(element, "read_file"));
    WEFT_ASSIGN_OR_RETURN(std::string bytes,
                          ReadFileBytes(path, "read_file: " + path));
    return Element{Tensor::Scalar<std::string>(std::move(bytes))};
  };
}

MapFn ReadNpyFn() {
  return [](const Element& element) -> StatusOr<Element> {
    WEFT_ASSIGN_OR_RETURN(std::string path, ScalarPath(element, "read_npy"));
    StatusOr<Tensor> array = ReadNpy(path);
    if (!array.ok()) {
      return Status(array.status().code(),
                    "read_npy: " + array.status().message());
    }
    return Element{std::move(array).value()};
  };
}

StatusOr<MapFn> GraphFn(Graph graph, std::vector<std::string> inputs,
                        std::vector<std::string> outputs,
                        const SessionOptions& options) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Session> owned,
                        Session::Create(std::move(graph), options));
  std::shared_ptr<Session> session(std::move(owned));
  return MapFn(
      [session, inputs = std::move(inputs),
       outputs = std::move(outputs)](Element element) -> StatusOr<Element> {
        if (element.size() != inputs.size()) {
          return InvalidArgumentError(
              "map: the graph takes " + std::to_string(inputs.size()) +
              " inputs, the element has " + std::to_string(element.size()) +
              " components");
        }
        NamedTensors feeds;
        for (size_t i = 0; i < inputs.size(); ++i) {
          feeds.emplace_back(inputs[i], std::move(element[i]));
        }
        Element result;
        // The graph's kernels count against the core budget themselves:
        // a thread counted for the map call gives its core back while the
        // Run goes on, wherever the Run's kernels compute.
        weft::internal::CoreBudget::PausedHere paused;
        WEFT_RETURN_IF_ERROR(session->Run(feeds, outputs, {}, &result));
        return result;
      });
}

}  // namespace weft::data
