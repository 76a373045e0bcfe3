// The one-input stages that run in the consumer's thread: sequential Map,
// Filter, Take, Skip, Repeat, Enumerate, IgnoreErrors, Shuffle, Interleave.
#include <atomic>
#include <deque>

#include "data/dataset_node.h"
#include "framework/seeded_random.h"

namespace weft::data {
namespace {

using internal::DatasetNode;
using internal::IteratorEnv;
using internal::StageIterator;
using internal::StageOr;
using internal::Stages;

class MapStage final : public StageIterator {
 public:
  MapStage(Stages inputs, MapFn fn)
      : StageIterator("Map", std::move(inputs)), fn_(std::move(fn)) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    Element in;
    WEFT_RETURN_IF_ERROR(InputNext(0, &in, end));
    if (*end) return Status::OK();
    WEFT_ASSIGN_OR_RETURN(*out, fn_(std::move(in)));
    return Status::OK();
  }

 private:
  MapFn fn_;
};

class FilterStage final : public StageIterator {
 public:
  FilterStage(Stages inputs, PredicateFn predicate)
      : StageIterator("Filter", std::move(inputs)),
        predicate_(std::move(predicate)) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    while (true) {
      WEFT_RETURN_IF_ERROR(InputNext(0, out, end));
      if (*end) return Status::OK();
      WEFT_ASSIGN_OR_RETURN(bool keep, predicate_(*out));
      if (keep) return Status::OK();
    }
  }

 private:
  PredicateFn predicate_;
};

// Take (count elements, then the end) and Skip (drop count first).
class CountStage final : public StageIterator {
 public:
  CountStage(Stages inputs, int64_t count, bool take)
      : StageIterator(take ? "Take" : "Skip", std::move(inputs)),
        count_(count),
        take_(take) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    if (take_) {
      if (count_ >= 0 && seen_ >= count_) {
        *end = true;
        return Status::OK();
      }
      ++seen_;
      return InputNext(0, out, end);
    }
    while (count_ < 0 || seen_ < count_) {
      ++seen_;
      // A skipped element's error is skipped with it.
      (void)InputNext(0, out, end);
      if (*end) return Status::OK();
    }
    return InputNext(0, out, end);
  }

 private:
  int64_t count_;
  int64_t seen_ = 0;
  bool take_;
};

class RepeatStage final : public StageIterator {
 public:
  RepeatStage(Stages inputs, std::shared_ptr<const DatasetNode> input,
              IteratorEnv env, int64_t count)
      : StageIterator("Repeat", std::move(inputs)),
        input_(std::move(input)),
        env_(std::move(env)),
        count_(count) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    while (count_ < 0 || round_ < count_) {
      Status s = InputNext(0, out, end);
      if (!*end) {
        produced_in_round_ = true;
        return s;
      }
      ++round_;
      // An input with no elements would make `repeat()` spin forever.
      if (!produced_in_round_) break;
      produced_in_round_ = false;
      if (count_ >= 0 && round_ >= count_) break;
      WEFT_ASSIGN_OR_RETURN(std::unique_ptr<StageIterator> next,
                            input_->MakeIterator(env_));
      ReplaceInput(0, std::move(next));
    }
    *end = true;
    return Status::OK();
  }

 private:
  std::shared_ptr<const DatasetNode> input_;
  IteratorEnv env_;
  int64_t count_;
  int64_t round_ = 0;
  bool produced_in_round_ = false;
};

class EnumerateStage final : public StageIterator {
 public:
  EnumerateStage(Stages inputs, int64_t start)
      : StageIterator("Enumerate", std::move(inputs)), next_(start) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    Element in;
    Status s = InputNext(0, &in, end);
    if (*end) return Status::OK();
    const int64_t index = next_++;
    WEFT_RETURN_IF_ERROR(s);
    out->clear();
    out->push_back(Tensor::Scalar<int64_t>(index));
    out->insert(out->end(), in.begin(), in.end());
    return Status::OK();
  }

 private:
  int64_t next_;
};

class IgnoreErrorsStage final : public StageIterator {
 public:
  explicit IgnoreErrorsStage(Stages inputs)
      : StageIterator("IgnoreErrors", std::move(inputs)) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    while (true) {
      if (InputNext(0, out, end).ok() || *end) return Status::OK();
      counters().AddSkipped();
    }
  }
};

class ShuffleStage final : public StageIterator {
 public:
  ShuffleStage(Stages inputs, int64_t buffer_size, uint64_t seed, uint64_t pass)
      : StageIterator("Shuffle", std::move(inputs)),
        buffer_size_(buffer_size),
        random_(seed, pass) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    while (!input_done_ &&
           static_cast<int64_t>(buffer_.size()) < buffer_size_) {
      Element next;
      bool input_end = false;
      WEFT_RETURN_IF_ERROR(InputNext(0, &next, &input_end));
      if (input_end) {
        input_done_ = true;
        break;
      }
      buffer_.push_back(std::move(next));
    }
    if (buffer_.empty()) {
      *end = true;
      return Status::OK();
    }
    const size_t pick = random_.Below(buffer_.size());
    *out = std::move(buffer_[pick]);
    if (pick + 1 != buffer_.size()) buffer_[pick] = std::move(buffer_.back());
    buffer_.pop_back();
    return Status::OK();
  }

 private:
  int64_t buffer_size_;
  weft::internal::SeededRandom random_;
  std::vector<Element> buffer_;
  bool input_done_ = false;
};

class InterleaveStage final : public StageIterator {
 public:
  InterleaveStage(Stages inputs, IteratorEnv env,
                  std::function<StatusOr<Dataset>(Element)> fn,
                  int cycle_length, int block_length)
      : StageIterator("Interleave", std::move(inputs)),
        env_(std::move(env)),
        fn_(std::move(fn)),
        cycle_(cycle_length),
        block_length_(block_length) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    while (true) {
      if (!input_done_ && !cycle_[slot_]) {
        WEFT_RETURN_IF_ERROR(OpenSlot(slot_));
      }
      if (cycle_[slot_]) {
        Status s = cycle_[slot_]->GetNext(out, end);
        if (!*end) {
          if (++taken_in_block_ == block_length_) Advance();
          return s;
        }
        cycle_[slot_].reset();
      } else if (input_done_ && AllEmpty()) {
        *end = true;
        return Status::OK();
      }
      Advance();
    }
  }

 private:
  Status OpenSlot(size_t slot) {
    Element in;
    bool input_end = false;
    WEFT_RETURN_IF_ERROR(InputNext(0, &in, &input_end));
    if (input_end) {
      input_done_ = true;
      return Status::OK();
    }
    WEFT_ASSIGN_OR_RETURN(Dataset inner, fn_(std::move(in)));
    WEFT_ASSIGN_OR_RETURN(cycle_[slot], inner.node()->MakeIterator(env_));
    return Status::OK();
  }
  void Advance() {
    taken_in_block_ = 0;
    slot_ = (slot_ + 1) % cycle_.size();
  }
  bool AllEmpty() const {
    for (const auto& it : cycle_) {
      if (it) return false;
    }
    return true;
  }

  IteratorEnv env_;
  std::function<StatusOr<Dataset>(Element)> fn_;
  std::vector<std::unique_ptr<StageIterator>> cycle_;
  int block_length_;
  size_t slot_ = 0;
  int taken_in_block_ = 0;
  bool input_done_ = false;
};

Dataset Chain(const Dataset& input, std::string name,
              std::function<StageOr(const IteratorEnv&, Stages)> maker) {
  return Dataset(
      internal::MakeNode(std::move(name), {input.node()}, std::move(maker)));
}

}  // namespace

Dataset Dataset::Filter(PredicateFn predicate) const {
  return Chain(*this, "Filter",
               [predicate = std::move(predicate)](const IteratorEnv&,
                                                  Stages in) -> StageOr {
                 return internal::NewStage<FilterStage>(std::move(in),
                                                        predicate);
               });
}

Dataset Dataset::Take(int64_t count) const {
  return Chain(
      *this, "Take", [count](const IteratorEnv&, Stages in) -> StageOr {
        return internal::NewStage<CountStage>(std::move(in), count, true);
      });
}

Dataset Dataset::Skip(int64_t count) const {
  return Chain(
      *this, "Skip", [count](const IteratorEnv&, Stages in) -> StageOr {
        return internal::NewStage<CountStage>(std::move(in), count, false);
      });
}

Dataset Dataset::Repeat(int64_t count) const {
  auto input = node();
  return Chain(*this, "Repeat",
               [input, count](const IteratorEnv& env, Stages in) -> StageOr {
                 return internal::NewStage<RepeatStage>(std::move(in), input,
                                                        env, count);
               });
}

Dataset Dataset::Enumerate(int64_t start) const {
  return Chain(
      *this, "Enumerate", [start](const IteratorEnv&, Stages in) -> StageOr {
        return internal::NewStage<EnumerateStage>(std::move(in), start);
      });
}

Dataset Dataset::IgnoreErrors() const {
  return Chain(*this, "IgnoreErrors",
               [](const IteratorEnv&, Stages in) -> StageOr {
                 return internal::NewStage<IgnoreErrorsStage>(std::move(in));
               });
}

Dataset Dataset::Shuffle(int64_t buffer_size, uint64_t seed,
                         bool reshuffle_each_iteration) const {
  auto passes = std::make_shared<std::atomic<uint64_t>>(0);
  return Chain(*this, "Shuffle", [=](const IteratorEnv&, Stages in) -> StageOr {
    if (buffer_size <= 0) {
      return InvalidArgumentError(
          "shuffle: buffer_size must be positive, not " +
          std::to_string(buffer_size));
    }
    const uint64_t pass = reshuffle_each_iteration ? passes->fetch_add(1) : 0;
    return internal::NewStage<ShuffleStage>(std::move(in), buffer_size, seed,
                                            pass);
  });
}

Dataset Dataset::Interleave(std::function<StatusOr<Dataset>(Element)> fn,
                            int cycle_length, int block_length) const {
  return Chain(*this, "Interleave",
               [fn = std::move(fn), cycle_length, block_length](
                   const IteratorEnv& env, Stages in) -> StageOr {
                 if (cycle_length <= 0 || block_length <= 0) {
                   return InvalidArgumentError(
                       "interleave: cycle_length and block_length must be "
                       "positive");
                 }
                 return internal::NewStage<InterleaveStage>(
                     std::move(in), env, fn, cycle_length, block_length);
               });
}

namespace internal {
// Map with num_parallel_calls = 0: in the consumer's thread.
StageOr MakeSequentialMap(Stages inputs, MapFn fn) {
  return internal::NewStage<MapStage>(std::move(inputs), std::move(fn));
}
}  // namespace internal

}  // namespace weft::data
