#include "ops/dnnl_winograd_weights.h"

#include <cstddef>
#include <cstring>

namespace weft::internal {
namespace {

// The weight transforms G (alpha x 3) oneDNN's kernels pair their input and
// output transforms with: U = G g G^T for each 3 x 3 window g. The F(4 x 4,
// 3 x 3) one is oneDNN's scaled variant, written as the same decimal
// literals so that each float is the same.
constexpr float kG2x3[4][3] = {{1.0f, 0.0f, 0.0f},
                               {0.5f, 0.5f, 0.5f},
                               {0.5f, -0.5f, 0.5f},
                               {0.0f, 0.0f, 1.0f}};
constexpr float kG4x3[6][3] = {
    {1.13777777777778f, 0.f, 0.f},
    {-0.688403361344538f, -0.430252100840336f, -0.26890756302521f},
    {-0.688403361344538f, 0.430252100840336f, -0.26890756302521f},
    {0.119514472455649f, 0.179271708683473f, 0.26890756302521f},
    {0.119514472455649f, -0.179271708683473f, 0.26890756302521f},
    {0.f, 0.f, 1.f}};

constexpr int kWindow = 3;
constexpr int kMaxAlpha = 6;
// Output channels transformed together: one layout block of them.
constexpr int64_t kMaxOcBlock = 64;

// Where the layouts put a transformed weight: element (uh, uw) of the
// alpha x alpha tile for input channel ci and output channel co, the three
// layouts named by their dimension order outermost first (aa: the tile's
// two coordinates; O, B, I: blocks of output channels, of their blocks,
// of input channels; o, i: channels inside a block).
class WinoLayout {
 public:
  explicit WinoLayout(const dnnl_wino_desc_t& d)
      : format_(d.wino_format),
        alpha_(d.alpha),
        oc_block_(d.oc_block),
        ic_block_(d.ic_block),
        oc2_(d.oc2_block),
        ic2_(d.wino_format == dnnl_wino_wei_OBaaIBOIio ? d.ic2_block : 1),
        oc_blocks_(d.oc / d.oc_block),
        ic_blocks_(d.ic / d.ic_block) {}

  // Whether the description is one this class lays out, whole blocks all
  // the way, `size` bytes of float32.
  static bool Handles(const dnnl_wino_desc_t& d, size_t size) {
    const bool two_by_three = d.wino_format == dnnl_wino_wei_aaOio ||
                              d.wino_format == dnnl_wino_wei_aaOBiOo;
    const bool four_by_three = d.wino_format == dnnl_wino_wei_OBaaIBOIio;
    if (!two_by_three && !four_by_three) return false;
    if (d.r != kWindow || d.alpha != (two_by_three ? 4 : 6)) return false;
    if (d.oc_block <= 0 || d.ic_block <= 0 || d.oc_block > kMaxOcBlock ||
        d.oc <= 0 || d.ic <= 0 || d.oc % d.oc_block != 0 ||
        d.ic % d.ic_block != 0) {
      return false;
    }
    const int oc_blocks = d.oc / d.oc_block, ic_blocks = d.ic / d.ic_block;
    if (d.wino_format != dnnl_wino_wei_aaOio &&
        (d.oc2_block <= 0 || oc_blocks % d.oc2_block != 0)) {
      return false;
    }
    if (four_by_three && (d.ic2_block <= 0 || ic_blocks % d.ic2_block != 0)) {
      return false;
    }
    const size_t floats = static_cast<size_t>(d.alpha) * d.alpha * d.oc * d.ic;
    return size == floats * sizeof(float);
  }

  // The offset, in floats, of output channel 0 of output-channel block
  // `ob` (the block's channels follow it one by one).
  size_t Offset(int64_t uh, int64_t uw, int64_t ci, int64_t ob) const {
    const int64_t i = ci % ic_block_, ib = ci / ic_block_;
    int64_t blocks = 0;
    switch (format_) {
      case dnnl_wino_wei_aaOio:
        blocks = (((uh * alpha_ + uw) * oc_blocks_ + ob) * ic_blocks_ + ib) *
                     ic_block_ +
                 i;
        break;
      case dnnl_wino_wei_aaOBiOo: {
        const int64_t occ = ob / oc2_, ob2 = ob % oc2_;
        const int64_t chunks = oc_blocks_ / oc2_;
        blocks = ((((uh * alpha_ + uw) * chunks + occ) * ic_blocks_ + ib) *
                      ic_block_ +
                  i) *
                     oc2_ +
                 ob2;
        break;
      }
      default: {  // OBaaIBOIio
        const int64_t occ = ob / oc2_, ob2 = ob % oc2_;
        const int64_t icc = ib / ic2_, ib2 = ib % ic2_;
        const int64_t ic_chunks = ic_blocks_ / ic2_;
        blocks =
            (((((occ * alpha_ + uh) * alpha_ + uw) * ic_chunks + icc) * oc2_ +
              ob2) *
                 ic2_ +
             ib2) *
                ic_block_ +
            i;
        break;
      }
    }
    return static_cast<size_t>(blocks * oc_block_);
  }

  int alpha() const { return alpha_; }
  int64_t oc_block() const { return oc_block_; }
  int64_t oc_blocks() const { return oc_blocks_; }
  int64_t ic() const { return ic_blocks_ * ic_block_; }

 private:
  dnnl_wino_memory_format_t format_;
  int alpha_;
  int64_t oc_block_, ic_block_, oc2_, ic2_, oc_blocks_, ic_blocks_;
};

}  // namespace

bool PackWinogradWeights(const dnnl::memory::desc& layout, const float* w,
                         int64_t k, int64_t c, void* out) {
  const dnnl_memory_desc_t& md = layout.data;
  if (md.format_kind != dnnl_format_kind_wino || md.data_type != dnnl_f32) {
    return false;
  }
  const dnnl_wino_desc_t& d = md.format_desc.wino_desc;
  if (!WinoLayout::Handles(d, layout.get_size()) || k > d.oc || c > d.ic) {
    return false;
  }
  const WinoLayout at(d);
  const int alpha = at.alpha();
  const float(*g)[kWindow] = alpha == 4 ? kG2x3 : kG4x3;
  const int64_t ocb = at.oc_block();
  auto* dst = static_cast<float*>(out);
  // One block of output channels at a time, the block's channels side by
  // side in every array (the layouts keep them adjacent), so that each
  // step below is one vector operation over the block.
  float window[kWindow * kWindow][kMaxOcBlock];
  float rows[kWindow][kMaxAlpha][kMaxOcBlock];
  float tile[kMaxOcBlock];
  for (int64_t ob = 0; ob < at.oc_blocks(); ++ob) {
    for (int64_t ci = 0; ci < at.ic(); ++ci) {
      // The block's windows; zero for the channels the layout pads on.
      for (int64_t o = 0; o < ocb; ++o) {
        const int64_t co = ob * ocb + o;
        const float* from =
            co < k && ci < c ? w + (co * c + ci) * kWindow * kWindow : nullptr;
        for (int t = 0; t < kWindow * kWindow; ++t) {
          window[t][o] = from != nullptr ? from[t] : 0.0f;
        }
      }
      // g G^T, row by row, then G (g G^T): each sum from 0 in oneDNN's
      // order (0 + (-0) is +0, so the first addition is kept).
      for (int r = 0; r < kWindow; ++r) {
        for (int j = 0; j < alpha; ++j) {
          for (int64_t o = 0; o < ocb; ++o) {
            float sum = 0.0f;
            for (int l = 0; l < kWindow; ++l) {
              sum += window[r * kWindow + l][o] * g[j][l];
            }
            rows[r][j][o] = sum;
          }
        }
      }
      for (int i = 0; i < alpha; ++i) {
        for (int j = 0; j < alpha; ++j) {
          for (int64_t o = 0; o < ocb; ++o) {
            float sum = 0.0f;
            for (int r = 0; r < kWindow; ++r) sum += g[i][r] * rows[r][j][o];
            tile[o] = sum;
          }
          std::memcpy(dst + at.Offset(i, j, ci, ob), tile,
                      static_cast<size_t>(ocb) * sizeof(float));
        }
      }
    }
  }
  return true;
}

}  // namespace weft::internal
