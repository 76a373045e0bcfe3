// The stages that start a pipeline: tensor slices, ranges, file lists,
// generators, and Zip (which joins pipelines).
#include <glob.h>

#include <algorithm>
#include <atomic>

#include "data/dataset_node.h"
#include "data/element_ops.h"
#include "framework/seeded_random.h"

namespace weft::data {
namespace {

using internal::IteratorEnv;
using internal::StageIterator;
using internal::Stages;

class SlicesStage final : public StageIterator {
 public:
  explicit SlicesStage(std::shared_ptr<const std::vector<Tensor>> components)
      : StageIterator("FromTensorSlices", {}),
        components_(std::move(components)) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    if (next_ == (*components_)[0].shape().dim(0)) {
      *end = true;
      return Status::OK();
    }
    out->clear();
    for (const Tensor& c : *components_) {
      out->push_back(internal::SliceRow(c, next_));
    }
    ++next_;
    return Status::OK();
  }

 private:
  std::shared_ptr<const std::vector<Tensor>> components_;
  int64_t next_ = 0;
};

class RangeStage final : public StageIterator {
 public:
  RangeStage(int64_t start, int64_t stop, int64_t step)
      : StageIterator("Range", {}), next_(start), stop_(stop), step_(step) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    if (step_ > 0 ? next_ >= stop_ : next_ <= stop_) {
      *end = true;
      return Status::OK();
    }
    *out = {Tensor::Scalar<int64_t>(next_)};
    // Saturating: a range ending near INT64_MAX must not wrap.
    if (__builtin_add_overflow(next_, step_, &next_)) next_ = stop_;
    return Status::OK();
  }

 private:
  int64_t next_, stop_, step_;
};

class FilesStage final : public StageIterator {
 public:
  explicit FilesStage(std::vector<std::string> paths)
      : StageIterator("ListFiles", {}), paths_(std::move(paths)) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    if (next_ == paths_.size()) {
      *end = true;
      return Status::OK();
    }
    *out = {Tensor::Scalar<std::string>(paths_[next_++])};
    return Status::OK();
  }

 private:
  std::vector<std::string> paths_;
  size_t next_ = 0;
};

class GeneratorStage final : public StageIterator {
 public:
  explicit GeneratorStage(GeneratorFn generator)
      : StageIterator("FromGenerator", {}), generator_(std::move(generator)) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    if (done_) {
      *end = true;
      return Status::OK();
    }
    WEFT_ASSIGN_OR_RETURN(std::optional<Element> next, generator_());
    if (!next) {
      done_ = true;
      *end = true;
      return Status::OK();
    }
    *out = std::move(*next);
    return Status::OK();
  }

 private:
  GeneratorFn generator_;
  bool done_ = false;
};

class ZipStage final : public StageIterator {
 public:
  explicit ZipStage(Stages inputs) : StageIterator("Zip", std::move(inputs)) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    out->clear();
    Status first_error;
    for (size_t i = 0; i < num_inputs(); ++i) {
      Element part;
      bool input_end = false;
      Status s = InputNext(i, &part, &input_end);
      if (input_end) {
        *end = true;
        return Status::OK();
      }
      if (!s.ok() && first_error.ok()) first_error = s;
      out->insert(out->end(), part.begin(), part.end());
    }
    return first_error;
  }
};

}  // namespace

StatusOr<std::vector<std::string>> MatchFiles(const std::string& pattern) {
  glob_t matches{};
  const int rc = glob(pattern.c_str(), GLOB_ERR, nullptr, &matches);
  std::vector<std::string> paths;
  for (size_t i = 0; rc == 0 && i < matches.gl_pathc; ++i) {
    paths.emplace_back(matches.gl_pathv[i]);
  }
  globfree(&matches);
  if (rc == GLOB_NOMATCH || (rc == 0 && paths.empty())) {
    return NotFoundError("list_files: no file matches '" + pattern + "'");
  }
  if (rc != 0) {
    return NotFoundError("list_files: cannot read the directories of '" +
                         pattern + "'");
  }
  // Byte order, whatever the locale: the same order on every machine.
  std::sort(paths.begin(), paths.end());
  return paths;
}

StatusOr<Dataset> Dataset::FromTensorSlices(std::vector<Tensor> components) {
  if (components.empty()) {
    return InvalidArgumentError("from_tensor_slices: no tensors given");
  }
  for (size_t i = 0; i < components.size(); ++i) {
    const Tensor& c = components[i];
    if (!c.IsInitialized() || IsContainerType(c.dtype()) ||
        c.shape().rank() == 0) {
      return InvalidArgumentError(
          "from_tensor_slices: component " + std::to_string(i) +
          " has no first dimension to slice (a scalar or a container)");
    }
    if (c.shape().dim(0) != components[0].shape().dim(0)) {
      return InvalidArgumentError(
          "from_tensor_slices: component " + std::to_string(i) + " has " +
          std::to_string(c.shape().dim(0)) + " rows, component 0 has " +
          std::to_string(components[0].shape().dim(0)));
    }
  }
  auto shared =
      std::make_shared<const std::vector<Tensor>>(std::move(components));
  return Dataset(internal::MakeNode(
      "FromTensorSlices", {},
      [shared](const IteratorEnv&,
               const Stages&) -> StatusOr<std::unique_ptr<StageIterator>> {
        return internal::NewStage<SlicesStage>(shared);
      }));
}

StatusOr<Dataset> Dataset::Range(int64_t start, int64_t stop, int64_t step) {
  if (step == 0) return InvalidArgumentError("range: step must not be 0");
  return Dataset(internal::MakeNode(
      "Range", {},
      [=](const IteratorEnv&,
          const Stages&) -> StatusOr<std::unique_ptr<StageIterator>> {
        return internal::NewStage<RangeStage>(start, stop, step);
      }));
}

StatusOr<Dataset> Dataset::ListFiles(const std::string& pattern, bool shuffle,
                                     uint64_t seed) {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> paths, MatchFiles(pattern));
  auto shared = std::make_shared<const std::vector<std::string>>(paths);
  auto passes = std::make_shared<std::atomic<uint64_t>>(0);
  return Dataset(internal::MakeNode(
      "ListFiles", {},
      [=](const IteratorEnv&,
          const Stages&) -> StatusOr<std::unique_ptr<StageIterator>> {
        std::vector<std::string> order = *shared;
        if (shuffle) {
          weft::internal::SeededRandom(seed, passes->fetch_add(1))
              .Shuffle(order);
        }
        return internal::NewStage<FilesStage>(std::move(order));
      }));
}

Dataset Dataset::FromGenerator(GeneratorFactory factory) {
  return Dataset(internal::MakeNode(
      "FromGenerator", {},
      [factory = std::move(factory)](const IteratorEnv&, const Stages&)
          -> StatusOr<std::unique_ptr<StageIterator>> {
        return internal::NewStage<GeneratorStage>(factory());
      }));
}

StatusOr<Dataset> Dataset::Zip(const std::vector<Dataset>& datasets) {
  if (datasets.empty()) return InvalidArgumentError("zip: no datasets given");
  std::vector<std::shared_ptr<const internal::DatasetNode>> inputs;
  for (const Dataset& d : datasets) inputs.push_back(d.node());
  return Dataset(internal::MakeNode(
      "Zip", std::move(inputs),
      [](const IteratorEnv&,
         Stages stages) -> StatusOr<std::unique_ptr<StageIterator>> {
        return internal::NewStage<ZipStage>(std::move(stages));
      }));
}

}  // namespace weft::data
