// TfIdfVectorizer (ONNX): counts, per row of tokens, the n-grams of a
// pool, optionally with skips between their items, and scales the counts
// as term frequencies (TF), inverse document frequencies (IDF: the weight
// where the count is non-zero) or both (TFIDF). Integer tokens against
// pool_int64s, or strings against pool_strings (each distinct string of
// the pool numbered, a token outside it matching nothing). Each row is
// counted by one thread, so results do not depend on the thread count.
//
// StringNormalizer (ONNX): removes stop words from a [C] or [1, C] string
// tensor, then changes case.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "ops/registry.h"

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
    std::vector<int64_t> pool = c.attr<std::vector<int64_t>>("pool_int64s");
    const auto& pool_strings = c.attr<std::vector<std::string>>("pool_strings");
    k->weights_ = c.attr<std::vector<double>>("weights");
    WEFT_RETURN_IF_ERROR(c.status());
    const bool strings = c.input_dtypes()[0] == DataType::kString;
    if (!pool.empty() && !pool_strings.empty()) {
      return InvalidArgumentError(
          "sets both pool_int64s and pool_strings; give one");
    }
    if (strings && !pool.empty()) {
      return InvalidArgumentError("string tokens need pool_strings");
    }
    if (!strings && !pool_strings.empty()) {
      return InvalidArgumentError("integer tokens need pool_int64s");
    }
    if (strings) {
      for (const std::string& word : pool_strings) {
        auto [it, added] =
            k->ids_.emplace(word, static_cast<int64_t>(k->ids_.size()));
        pool.push_back(it->second);
      }
    }
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
        if (indexes[id] < 0 || indexes[id] >= (int64_t{1} << 40)) {
          return InvalidArgumentError("ngram_indexes holds " +
                                      std::to_string(indexes[id]) +
                                      ": an output index must be in [0, 2^40)");
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
    if (x.dtype() == DataType::kString) {
      const std::string* words = x.data<std::string>();
      for (size_t i = 0; i < tokens.size(); ++i) {
        auto it = ids_.find(words[i]);
        tokens[i] = it == ids_.end() ? -1 : it->second;  // -1: in no n-gram.
      }
    } else if (x.dtype() == DataType::kInt32) {
      std::copy_n(x.data<int32_t>(), tokens.size(), tokens.begin());
    } else {
      std::copy_n(x.data<int64_t>(), tokens.size(), tokens.begin());
    }
    const Shape out_shape = rank == 1 ? Shape{width_} : Shape{rows, width_};
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, out_shape));
    float* out = y->data<float>();
    ctx.ParallelFor(rows,
                    static_cast<double>(cols) *
                        (static_cast<double>(std::min(max_skip_, cols)) + 1) *
                        static_cast<double>(std::min(max_gram_, cols)) * 20,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t r = begin; r < end; ++r) {
                        CountRow(tokens.data() + r * cols, cols,
                                 out + r * width_);
                      }
                    });
    return Status::OK();
  }

 private:
  TfIdfVectorizerKernel() = default;

  void CountRow(const int64_t* row, int64_t cols, float* out) const {
    std::vector<int64_t> gram;
    // A skip of cols or more leaves no room for a second item: larger
    // max_skip_count values (up to 2^63 - 1) change nothing.
    const int64_t max_skip = std::min(max_skip_, cols);
    for (int64_t start = 0; start < cols; ++start) {
      for (int64_t skip = 0; skip <= max_skip; ++skip) {
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
  std::map<std::string, int64_t> ids_;  // pool_strings: word -> token id.
};

enum class CaseChange { kNone, kLower, kUpper };

// ASCII case mapping: the locales weft accepts (StringNormalizerKernel)
// change the case of ASCII letters only.
std::string ChangeCase(std::string s, CaseChange change) {
  for (char& ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (change == CaseChange::kLower) ch = static_cast<char>(std::tolower(u));
    if (change == CaseChange::kUpper) ch = static_cast<char>(std::toupper(u));
  }
  return s;
}

class StringNormalizerKernel : public OpKernel {
 public:
  static StatusOr<std::unique_ptr<OpKernel>> Create(
      const KernelConstruction& c) {
    auto k =
        std::unique_ptr<StringNormalizerKernel>(new StringNormalizerKernel());
    const std::string& action = c.attr<std::string>("case_change_action");
    const std::string& locale = c.attr<std::string>("locale");
    k->case_sensitive_ = c.attr<int64_t>("is_case_sensitive") != 0;
    const auto& stopwords = c.attr<std::vector<std::string>>("stopwords");
    WEFT_RETURN_IF_ERROR(c.status());
    if (action == "NONE") {
      k->change_ = CaseChange::kNone;
    } else if (action == "LOWER") {
      k->change_ = CaseChange::kLower;
    } else if (action == "UPPER") {
      k->change_ = CaseChange::kUpper;
    } else {
      return InvalidArgumentError("case_change_action \"" + action +
                                  "\" is not one of NONE, LOWER, UPPER");
    }
    // Case rules beyond ASCII depend on the locale; weft implements the
    // ASCII ones and refuses a locale that would need others.
    static const std::set<std::string> kAsciiLocales = {
        "", "C", "POSIX", "en_US", "en_US.UTF-8", "en_US.utf8"};
    if (!kAsciiLocales.count(locale)) {
      return UnimplementedError("locale \"" + locale +
                                "\" is not supported (weft changes the "
                                "case of ASCII letters: en_US, C)");
    }
    for (const std::string& word : stopwords) {
      k->stopwords_.insert(
          k->case_sensitive_ ? word : ChangeCase(word, CaseChange::kLower));
    }
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& shape = x.shape();
    if (!(shape.rank() == 1 || (shape.rank() == 2 && shape.dim(0) == 1))) {
      return InvalidArgumentError("X must be [C] or [1, C], got " +
                                  shape.ToString());
    }
    std::vector<std::string> kept;
    const std::string* words = x.data<std::string>();
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      const std::string key =
          case_sensitive_ ? words[i] : ChangeCase(words[i], CaseChange::kLower);
      if (!stopwords_.count(key)) kept.push_back(ChangeCase(words[i], change_));
    }
    // Every word a stop word: one empty string, as ONNX specifies.
    if (kept.empty()) kept.emplace_back();
    const int64_t n = static_cast<int64_t>(kept.size());
    const Shape out_shape = shape.rank() == 1 ? Shape{n} : Shape{1, n};
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, out_shape));
    std::move(kept.begin(), kept.end(), y->data<std::string>());
    return Status::OK();
  }

 private:
  StringNormalizerKernel() = default;
  CaseChange change_ = CaseChange::kNone;
  bool case_sensitive_ = false;
  std::set<std::string> stopwords_;  // Lower-cased unless case-sensitive.
};

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"StringNormalizer",
     "remove stop words from strings, then change their case"},
    {"TfIdfVectorizer",
     "n-gram counts of token ids or strings, as TF, IDF or TF-IDF"},
};

}  // namespace

void RegisterTextOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("TfIdfVectorizer")
          .Input(ArgDef::Typed("X", "T"))
          .Output(ArgDef::Fixed("Y", DataType::kFloat32))
          .Attr("T", AttrType::kType, std::nullopt,
                {DataType::kInt32, DataType::kInt64, DataType::kString})
          .Attr("mode", AttrType::kString)
          .Attr("min_gram_length", AttrType::kInt)
          .Attr("max_gram_length", AttrType::kInt)
          .Attr("max_skip_count", AttrType::kInt)
          .Attr("ngram_counts", AttrType::kListInt)
          .Attr("ngram_indexes", AttrType::kListInt)
          .Attr("pool_int64s", AttrType::kListInt, std::vector<int64_t>{})
          .Attr("pool_strings", AttrType::kListString,
                std::vector<std::string>{})
          .Attr("weights", AttrType::kListFloat, std::vector<double>{})
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            ctx.set_output(0, PartialShape::UnknownRank());
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel("TfIdfVectorizer",
                                          &TfIdfVectorizerKernel::Create));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("StringNormalizer")
          .Input(ArgDef::Fixed("X", DataType::kString))
          .Output(ArgDef::Fixed("Y", DataType::kString))
          .Attr("case_change_action", AttrType::kString, std::string("NONE"))
          .Attr("is_case_sensitive", AttrType::kInt, int64_t{0})
          .Attr("locale", AttrType::kString, std::string(""))
          .Attr("stopwords", AttrType::kListString, std::vector<std::string>{})
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const PartialShape& x = ctx.input_shape(0);
            ctx.set_output(
                0, x.rank_known()
                       ? PartialShape(std::vector<int64_t>(x.rank(), -1))
                       : PartialShape::UnknownRank());
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel("StringNormalizer",
                                          &StringNormalizerKernel::Create));
}

}  // namespace weft::internal
