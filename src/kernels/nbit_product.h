// Products with a weight kept in the 2-, 4- or 8-bit codes of ONNX
// Runtime's MatMulNBits (weight-only block quantization): each code is
// dequantized where it is multiplied, so the weight stays at its stored size
// (4 bits a weight, not the 32 of a folded float weight), and a product with
// few rows, which reads every weight once, reads an eighth of the bytes.
//
// The weight W [K, N] arrives as ONNX Runtime stores it, by columns:
// column n is codes[n][block][bytes], the `bits`-bit codes of K (rounded up
// to whole blocks) weights along K, packed low bits first; weight (k, n) is
//   (code(n, k) - zeros[n][k / block]) * scales[n][k / block].
// NBitPanels repacks it once into panels of 16 columns, the 16 codes of one
// k side by side, so that one vector holds 16 columns' weights at one k.
//
// Summation order, per output element y[m][n]: over the blocks in order,
// each block's sum over its k in order of a[m][k] * (code - zero), then
// that sum times the block's scale added to the total. It depends on K and
// the block size alone, never on the number of rows (a row's outputs are
// bitwise the same alone or in a batch), the columns computed together or
// the thread count. The AVX-512 path fuses each multiply-add; the portable
// loop rounds product and sum apart, so the two may differ in the last
// place.
#ifndef WEFT_SRC_KERNELS_NBIT_PRODUCT_H_
#define WEFT_SRC_KERNELS_NBIT_PRODUCT_H_

#include <cstdint>
#include <vector>

namespace weft::internal {

// The weight as ONNX Runtime stores it (see above).
struct NBitWeight {
  const uint8_t* codes = nullptr;  // [n][blocks][block * bits / 8]
  const float* scales = nullptr;   // [n][blocks]
  const float* zeros = nullptr;    // [n][blocks]
  int64_t k = 0, n = 0;
  int64_t bits = 4;    // 2, 4 or 8
  int64_t block = 32;  // a power of two, at least 16
  int64_t blocks() const { return (k + block - 1) / block; }
  int64_t bytes_per_block() const { return block * bits / 8; }
};

constexpr int64_t kNBitPanelColumns = 16;

// W in panels of kNBitPanelColumns columns (the last padded with zero
// codes, zero scales): for panel p, block b, k = b * block + i, the 16
// columns' codes in 2 * bits bytes (column c at bit c * bits, low first);
// and per (panel, block) the 16 columns' scales and zero points.
class NBitPanels {
 public:
  NBitPanels() = default;
  explicit NBitPanels(const NBitWeight& w);

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  int64_t bits() const { return bits_; }
  int64_t block() const { return block_; }
  int64_t blocks() const { return (k_ + block_ - 1) / block_; }
  int64_t panels() const {
    return (n_ + kNBitPanelColumns - 1) / kNBitPanelColumns;
  }
  int64_t step_bytes() const { return 2 * bits_; }  // one k of a panel
  const uint8_t* codes(int64_t panel, int64_t block) const {
    return codes_.data() + (panel * blocks() + block) * block_ * step_bytes();
  }
  const float* scales(int64_t panel, int64_t block) const {
    return scales_.data() + (panel * blocks() + block) * kNBitPanelColumns;
  }
  const float* zeros(int64_t panel, int64_t block) const {
    return zeros_.data() + (panel * blocks() + block) * kNBitPanelColumns;
  }
  int64_t bytes() const {
    return static_cast<int64_t>(codes_.size() +
                                4 * (scales_.size() + zeros_.size()));
  }

 private:
  int64_t k_ = 0, n_ = 0, bits_ = 4, block_ = 32;
  std::vector<uint8_t> codes_;
  std::vector<float> scales_, zeros_;
};

// Whether the AVX-512 path runs on this CPU (AVX-512 F, BW and VL).
bool NBitVectorPathRuns();

// y[r * ldy + j] = sum over k of a[r * lda + k] * W(k, j), for rows r <
// rows and the columns of panels [first, first + count): on the AVX-512
// path where `vector_path` and NBitVectorPathRuns(), else on the portable
// loop.
void NBitProduct(const NBitPanels& w, const float* a, int64_t lda, int64_t rows,
                 float* y, int64_t ldy, int64_t first, int64_t count,
                 bool vector_path = true);

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_NBIT_PRODUCT_H_
