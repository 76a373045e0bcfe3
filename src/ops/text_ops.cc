// TfIdfVectorizer (ONNX): counts, per row of token ids, the n-grams of a
// pool, optionally with skips between their items, and scales the counts
// as term frequencies (TF), inverse document frequencies (IDF: the weight
// where the count is non-zero) or both (TFIDF). Integer tokens; the string
// form needs the STRING dtype, which weft does not have. Each row is
// counted by one thread, so results do not depend on the thread count.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"

namespace weft::internal {
namespace {

enum class TfIdfMode { kTf, kIdf, kTfIdf };

class TfIdfVectorizerKernel : public OpKernel {
 public:
  static StatusOr<std::unique_ptr<OpKernel>> Create(
      const KernelConstruction& c) {
    auto k =
        std::unique_ptr<TfIdfVectorizerKernel>(new TfIdfVectorizerKernel());
    const std::string& mode = c.attr<std::string>("mode");
    k->min_gram_ = c.attr<int64_t>("min_gram_length");
    k->max_gram_ = c.attr<int64_t>("max_gram_length");
    k->max_skip_ = c.attr<int64_t>("max_skip_count");
    const auto& counts = c.attr<std::vector<int64_t>>("ngram_counts");
    const auto& indexes = c.attr<std::vector<int64_t>>("ngram_indexes");
    const auto& pool = c.attr<std::vector<int64_t>>("pool_int64s");
    k->weights_ = c.attr<std::vector<double>>("weights");
    WEFT_RETURN_IF_ERROR(c.status());
    if (mode == "TF") {
      k->mode_ = TfIdfMode::kTf;
    } else if (mode == "IDF") {
      k->mode_ = TfIdfMode::kIdf;
    } else if (mode == "TFIDF") {
      k->mode_ = TfIdfMode::kTfIdf;
    } else {
      return InvalidArgumentError("mode \"" + mode +
                                  "\" is not one of TF, IDF, TFIDF");
    }
    if (k->min_gram_ < 1 || k->max_gram_ < k->min_gram_ || k->max_skip_ < 0) {
      return InvalidArgumentError(
          "needs 1 <= min_gram_length <= max_gram_length and "
          "max_skip_count >= 0");
    }
    // ngram_counts[i]: where the (i + 1)-grams start in the pool.
    int64_t id = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      const int64_t n = static_cast<int64_t>(i) + 1;
      const int64_t begin = counts[i];
      const int64_t end = i + 1 < counts.size()
                              ? counts[i + 1]
                              : static_cast<int64_t>(pool.size());
      if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) ||
          (end - begin) % n != 0) {
        return InvalidArgumentError(
            "ngram_counts " + std::to_string(i) + " (" + std::to_string(begin) +
            ") does not cut the pool of " + std::to_string(pool.size()) +
            " items into " + std::to_string(n) + "-grams");
      }
      for (int64_t at = begin; at < end; at += n, ++id) {
        if (id >= static_cast<int64_t>(indexes.size())) {
          return InvalidArgumentError("ngram_indexes has " +
                                      std::to_string(indexes.size()) +
                                      " entries for more n-grams");
        }
        if (indexes[id] < 0) {
          return InvalidArgumentError("ngram_indexes holds a negative index");
        }
        k->grams_[std::vector<int64_t>(pool.begin() + at,
                                       pool.begin() + at + n)] = indexes[id];
        k->width_ = std::max(k->width_, indexes[id] + 1);
      }
    }
    if (!k->weights_.empty() &&
        static_cast<int64_t>(k->weights_.size()) < k->width_) {
      return InvalidArgumentError(
          "weights has " + std::to_string(k->weights_.size()) +
          " entries for " + std::to_string(k->width_) + " outputs");
    }
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int rank = x.shape().rank();
    if (rank != 1 && rank != 2) {
      return InvalidArgumentError("X must be [C] or [N, C], got " +
                                  x.shape().ToString());
    }
    const int64_t rows = rank == 1 ? 1 : x.shape().dim(0);
    const int64_t cols = x.shape().dim(rank - 1);
    std::vector<int64_t> tokens(static_cast<size_t>(x.NumElements()));
    if (x.dtype() == DataType::kInt32) {
      std::copy_n(x.data<int32_t>(), tokens.size(), tokens.begin());
    } else {
      std::copy_n(x.data<int64_t>(), tokens.size(), tokens.begin());
    }
    const Shape out_shape = rank == 1 ? Shape{width_} : Shape{rows, width_};
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, out_shape));
    float* out = y->data<float>();
    ctx.ParallelFor(
        rows, static_cast<double>(cols * (max_skip_ + 1) * max_gram_ * 20),
        [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            CountRow(tokens.data() + r * cols, cols, out + r * width_);
          }
        });
    return Status::OK();
  }

 private:
  TfIdfVectorizerKernel() = default;

  void CountRow(const int64_t* row, int64_t cols, float* out) const {
    std::vector<int64_t> gram;
    for (int64_t start = 0; start < cols; ++start) {
      for (int64_t skip = 0; skip <= max_skip_; ++skip) {
        const int64_t step = skip + 1;
        for (int64_t n = min_gram_; n <= max_gram_; ++n) {
          if (n == 1 && skip > 0) continue;  // A 1-gram has no gaps.
          if (start + (n - 1) * step >= cols) break;
          gram.clear();
          for (int64_t j = 0; j < n; ++j) gram.push_back(row[start + j * step]);
          if (auto it = grams_.find(gram); it != grams_.end()) {
            out[it->second] += 1;
          }
        }
      }
    }
    for (int64_t i = 0; i < width_; ++i) {
      const float weight =
          weights_.empty() ? 1.0f : static_cast<float>(weights_[i]);
      if (mode_ == TfIdfMode::kIdf) {
        out[i] = out[i] > 0 ? weight : 0.0f;
      } else if (mode_ == TfIdfMode::kTfIdf) {
        out[i] *= weight;
      }
    }
  }

  TfIdfMode mode_ = TfIdfMode::kTf;
  int64_t min_gram_ = 1, max_gram_ = 1, max_skip_ = 0;
  int64_t width_ = 0;
  std::vector<double> weights_;
  std::map<std::vector<int64_t>, int64_t> grams_;  // n-gram -> output index.
};

}  // namespace

void RegisterTextOps(OpRegistry& registry) {
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("TfIdfVectorizer")
          .Input(ArgDef::Typed("X", "T"))
          .Output(ArgDef::Fixed("Y", DataType::kFloat32))
          .Attr("T", AttrType::kType, std::nullopt,
                {DataType::kInt32, DataType::kInt64})
          .Attr("mode", AttrType::kString)
          .Attr("min_gram_length", AttrType::kInt)
          .Attr("max_gram_length", AttrType::kInt)
          .Attr("max_skip_count", AttrType::kInt)
          .Attr("ngram_counts", AttrType::kListInt)
          .Attr("ngram_indexes", AttrType::kListInt)
          .Attr("pool_int64s", AttrType::kListInt)
          .Attr("weights", AttrType::kListFloat, std::vector<double>{})
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            ctx.set_output(0, PartialShape::UnknownRank());
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel("TfIdfVectorizer",
                                          &TfIdfVectorizerKernel::Create));
}

}  // namespace weft::internal
