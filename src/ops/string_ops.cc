// The string ops of ONNX opset 20:
//   StringConcat: element-wise concatenation with NumPy broadcasting;
//   RegexFullMatch: whether each string matches a pattern as a whole, with
//     RE2 (Debian's libre2): RE2 syntax, as ONNX specifies, and time linear
//     in the string whatever the pattern, so a hostile pattern or string
//     cannot hang a Run;
//   StringSplit: each string split on a delimiter, or on runs of white
//     space, at most `maxsplit` times, as Python's str.split (ONNX's
//     reference): the pieces padded with "" to the longest count, and the
//     counts.
// Every output element is computed from its own input element by one
// thread, so results do not depend on the thread count.
#include <re2/re2.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "framework/op_registry_impl.h"
#include "ops/broadcast.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// A string op's cost per element, for ParallelFor: a few hundred bytes
// copied or scanned.
constexpr double kStringCost = 200.0;

class StringConcatKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    WEFT_ASSIGN_OR_RETURN(Tensor * out, AllocateBroadcastOutput(ctx, a, b));
    BroadcastBinary<std::string, std::string>(
        ctx, a, b, out,
        [](const std::string& x, const std::string& y) { return x + y; });
    return Status::OK();
  }
};

class RegexFullMatchKernel : public OpKernel {
 public:
  static StatusOr<std::unique_ptr<OpKernel>> Create(
      const KernelConstruction& c) {
    const std::string& pattern = c.attr<std::string>("pattern");
    WEFT_RETURN_IF_ERROR(c.status());
    RE2::Options options;
    options.set_log_errors(false);  // The error goes into the Status.
    auto regex = std::make_unique<RE2>(pattern, options);
    if (!regex->ok()) {
      return InvalidArgumentError(
          "pattern \"" + pattern +
          "\" is not a valid RE2 expression: " + regex->error());
    }
    return std::unique_ptr<OpKernel>(
        new RegexFullMatchKernel(std::move(regex)));
  }

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, x.shape()));
    const std::string* in = x.data<std::string>();
    bool* out = y->data<bool>();
    // RE2 matches from many threads at once on one compiled expression.
    ctx.ParallelFor(x.NumElements(), kStringCost, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = RE2::FullMatch(in[i], *regex_);
    });
    return Status::OK();
  }

 private:
  explicit RegexFullMatchKernel(std::unique_ptr<RE2> regex)
      : regex_(std::move(regex)) {}
  std::unique_ptr<RE2> regex_;
};

// Python's white space in UTF-8 (str.isspace, which ONNX's reference
// str.split uses): the ASCII ones, the four separators 0x1c-0x1f, and
// U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F,
// U+3000. The length of the white-space character at s[i], or 0.
size_t WhiteSpaceAt(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) {
    return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u;
  };
  const unsigned c = byte(i);
  if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) {
    return 1;
  }
  if (c == 0xc2 && (byte(i + 1) == 0x85 || byte(i + 1) == 0xa0)) return 2;
  if (c == 0xe1 && byte(i + 1) == 0x9a && byte(i + 2) == 0x80) return 3;
  if (c == 0xe2 && byte(i + 1) == 0x80) {
    const unsigned d = byte(i + 2);
    if ((d >= 0x80 && d <= 0x8a) || d == 0xa8 || d == 0xa9 || d == 0xaf) {
      return 3;
    }
  }
  if (c == 0xe2 && byte(i + 1) == 0x81 && byte(i + 2) == 0x9f) return 3;
  if (c == 0xe3 && byte(i + 1) == 0x80 && byte(i + 2) == 0x80) return 3;
  return 0;
}

// str.split(delimiter, maxsplit) for a non-empty delimiter: every
// occurrence cuts, so neighbouring delimiters leave "" between them.
// maxsplit < 0: no limit.
std::vector<std::string> SplitOn(std::string_view s, std::string_view delimiter,
                                 int64_t maxsplit) {
  std::vector<std::string> pieces;
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(pieces.size()) < maxsplit) {
    const size_t at = s.find(delimiter, start);
    if (at == std::string_view::npos) break;
    pieces.emplace_back(s.substr(start, at - start));
    start = at + delimiter.size();
  }
  pieces.emplace_back(s.substr(start));
  return pieces;
}

// str.split(None, maxsplit): runs of white space cut, leading and trailing
// white space gives no piece, and once maxsplit cuts are made the rest
// (from its first non-space character, trailing space kept) is the last.
std::vector<std::string> SplitOnWhiteSpace(std::string_view s,
                                           int64_t maxsplit) {
  std::vector<std::string> pieces;
  size_t i = 0;
  const auto skip_space = [&] {
    while (i < s.size()) {
      const size_t n = WhiteSpaceAt(s, i);
      if (n == 0) break;
      i += n;
    }
  };
  skip_space();
  while (i < s.size()) {
    if (maxsplit >= 0 && static_cast<int64_t>(pieces.size()) == maxsplit) {
      pieces.emplace_back(s.substr(i));
      break;
    }
    const size_t start = i;
    while (i < s.size() && WhiteSpaceAt(s, i) == 0) ++i;
    pieces.emplace_back(s.substr(start, i - start));
    skip_space();
  }
  return pieces;
}

class StringSplitKernel : public OpKernel {
 public:
  explicit StringSplitKernel(const KernelConstruction& c)
      : delimiter_(c.attr<std::string>("delimiter")),
        maxsplit_(c.attr<int64_t>("maxsplit")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t n = x.NumElements();
    const std::string* in = x.data<std::string>();
    std::vector<std::vector<std::string>> pieces(static_cast<size_t>(n));
    ctx.ParallelFor(n, kStringCost, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        pieces[i] = delimiter_.empty() ? SplitOnWhiteSpace(in[i], maxsplit_)
                                       : SplitOn(in[i], delimiter_, maxsplit_);
      }
    });
    int64_t widest = 0;
    for (const auto& p : pieces) {
      widest = std::max(widest, static_cast<int64_t>(p.size()));
    }
    std::vector<int64_t> dims = x.shape().dims();
    dims.push_back(widest);
    WEFT_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, Shape(dims)));
    WEFT_ASSIGN_OR_RETURN(Tensor * z, ctx.AllocateOutput(1, x.shape()));
    std::string* out = y->data<std::string>();  // Every element "".
    int64_t* counts = z->data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      auto& p = pieces[i];
      counts[i] = static_cast<int64_t>(p.size());
      std::move(p.begin(), p.end(), out + i * widest);
    }
    return Status::OK();
  }

 private:
  const std::string delimiter_;
  const int64_t maxsplit_;
};

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"RegexFullMatch", "whether each string matches an RE2 pattern whole"},
    {"StringConcat", "element-wise string concatenation with broadcasting"},
    {"StringSplit",
     "split strings on a delimiter or white space, padded with \"\", and "
     "the counts"},
};

}  // namespace

void RegisterStringOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("StringConcat")
                              .Input(ArgDef::Fixed("X", DataType::kString))
                              .Input(ArgDef::Fixed("Y", DataType::kString))
                              .Output(ArgDef::Fixed("Z", DataType::kString))
                              .SetShapeFn(shape_fns::Broadcast)
                              .Build()));
  CheckRegistered(registry.RegisterKernel(
      "StringConcat", KernelFactoryFor<StringConcatKernel>()));
  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("RegexFullMatch")
                              .Input(ArgDef::Fixed("X", DataType::kString))
                              .Output(ArgDef::Fixed("Y", DataType::kBool))
                              .Attr("pattern", AttrType::kString)
                              .SetShapeFn(shape_fns::SameAsInput0)
                              .Build()));
  CheckRegistered(
      registry.RegisterKernel("RegexFullMatch", &RegexFullMatchKernel::Create));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("StringSplit")
          .Input(ArgDef::Fixed("X", DataType::kString))
          .Output(ArgDef::Fixed("Y", DataType::kString))
          .Output(ArgDef::Fixed("Z", DataType::kInt64))
          .Attr("delimiter", AttrType::kString, std::string(""))
          .Attr("maxsplit", AttrType::kInt, int64_t{-1})
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const PartialShape& x = ctx.input_shape(0);
            if (x.rank_known()) {
              std::vector<int64_t> dims(x.rank() + 1, -1);
              for (int d = 0; d < x.rank(); ++d) dims[d] = x.dim(d);
              ctx.set_output(0, PartialShape(dims));
            } else {
              ctx.set_output(0, PartialShape::UnknownRank());
            }
            ctx.set_output(1, x);
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "StringSplit", KernelFactoryFor<StringSplitKernel>()));
}

}  // namespace weft::internal
