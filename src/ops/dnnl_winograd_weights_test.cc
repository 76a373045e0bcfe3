// PackWinogradWeights: the same bytes as oneDNN's reorder for every
// Winograd layout oneDNN's kernels pick on this CPU, and nothing written for
// a layout it does not handle.
#include "ops/dnnl_winograd_weights.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernels/one_openmp_thread.h"
#include "ops/dnnl_support.h"

namespace weft::internal {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Dt = memory::data_type;

struct Layer {
  int64_t c, k, plane;
};

// The weights layout oneDNN's Winograd convolution takes for a 3 x 3
// stride-1 layer over one image in 16-channel blocks (as NhwcConv's
// Winograd pieces are), or nullopt where it has no such kernel here.
std::optional<memory::desc> WinogradLayout(const Layer& l) {
  OneOpenMpThread one_thread;
  const memory::desc src({1, l.c, l.plane, l.plane}, Dt::f32, Tag::nChw16c);
  const memory::desc dst({1, l.k, l.plane, l.plane}, Dt::f32, Tag::nChw16c);
  const memory::desc weights({l.k, l.c, 3, 3}, Dt::f32, Tag::any);
  try {
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference,
        dnnl::algorithm::convolution_winograd, src, weights, dst, {1, 1},
        {0, 0}, {1, 1}, {1, 1});
    const dnnl::convolution_forward::primitive_desc pd(desc, DnnlCpuEngine());
    if (pd.weights_desc().data.format_kind != dnnl_format_kind_wino) {
      return std::nullopt;
    }
    return pd.weights_desc();
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

// Weights of every sign and scale, zeros of both signs among them.
std::vector<float> SomeWeights(const Layer& l) {
  std::mt19937 rng(static_cast<uint32_t>(l.c * 131 + l.k * 7 + l.plane));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(l.k * l.c * 9));
  for (size_t i = 0; i < w.size(); ++i) {
    switch (i % 11) {
      case 3:
        w[i] = -0.0f;
        break;
      case 5:
        w[i] = 0.0f;
        break;
      case 7:
        w[i] = normal(rng) * 1e-30f;
        break;
      default:
        w[i] = normal(rng) * (i % 2 == 0 ? 1.0f : 1e3f);
    }
  }
  return w;
}

TEST(PackWinogradWeightsTest, WritesTheBytesOfOneDnnsReorder) {
  const Layer layers[] = {
      {64, 64, 56},    // ResNet's first stage.
      {64, 64, 8},     // A row piece of it.
      {128, 128, 28},  // The second stage.
      {256, 128, 14},  // A block of output channels of the third.
      {512, 128, 7},   // ... and of the fourth.
      {24, 40, 20},    // Channels the layout pads up to its blocks.
      {48, 32, 9},    {3, 16, 12},  // Fewer input channels than a block.
  };
  std::set<int> formats;
  for (const Layer& l : layers) {
    SCOPED_TRACE(testing::Message()
                 << "C " << l.c << ", K " << l.k << ", plane " << l.plane);
    const std::optional<memory::desc> layout = WinogradLayout(l);
    if (!layout) continue;
    const std::vector<float> w = SomeWeights(l);
    std::vector<char> ours(layout->get_size(), 0x5a);
    if (!PackWinogradWeights(*layout, w.data(), l.k, l.c, ours.data())) {
      // A layout weft leaves to oneDNN: nothing may have been written.
      EXPECT_EQ(ours, std::vector<char>(layout->get_size(), 0x5a));
      continue;
    }
    formats.insert(layout->data.format_desc.wino_desc.wino_format);
    OneOpenMpThread one_thread;
    dnnl::stream stream(DnnlCpuEngine());
    memory plain(memory::desc({l.k, l.c, 3, 3}, Dt::f32, Tag::oihw),
                 DnnlCpuEngine(), const_cast<float*>(w.data()));
    memory theirs(*layout, DnnlCpuEngine());
    dnnl::reorder(plain, theirs).execute(stream, plain, theirs);
    stream.wait();
    const auto* expected = static_cast<const char*>(theirs.get_data_handle());
    size_t differing = 0;
    for (size_t i = 0; i < ours.size(); ++i)
      differing += ours[i] != expected[i];
    EXPECT_EQ(differing, 0u) << "of " << ours.size() << " bytes";
  }
  if (formats.empty()) {
    // Where oneDNN runs its AVX-512 kernels, NhwcConv's Winograd layers
    // take these layouts: the test must have checked one there.
    ASSERT_FALSE(DnnlHasAvx512Core())
        << "oneDNN has AVX-512 here, yet no layer got a layout weft writes";
    GTEST_SKIP() << "oneDNN has no float32 Winograd kernel on this CPU";
  }
  std::string seen;
  for (int f : formats) seen += " " + std::to_string(f);
  RecordProperty("wino_formats", seen);
}

TEST(PackWinogradWeightsTest, LeavesEveryOtherLayoutToOneDnn) {
  const std::vector<float> w(16 * 16 * 9, 1.0f);
  for (const Tag tag : {Tag::oihw, Tag::OIhw16i16o, Tag::Ohwi16o}) {
    const memory::desc layout({16, 16, 3, 3}, Dt::f32, tag);
    std::vector<char> out(layout.get_size(), 0x5a);
    EXPECT_FALSE(PackWinogradWeights(layout, w.data(), 16, 16, out.data()));
    EXPECT_EQ(out, std::vector<char>(layout.get_size(), 0x5a));
  }
}

}  // namespace
}  // namespace weft::internal
