// DnnlWeightProduct (src/ops/dnnl_matmul.h).
#include "ops/dnnl_matmul.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "framework/large_buffer.h"
#include "kernels/int8_gemm.h"
#include "ops/kernel_switches.h"

namespace weft::internal {

using dnnl::memory;

bool DnnlMatMulAvailable() {
  static const bool available =
      KernelSwitchOr(KernelSwitch::kDnnlMatMul, DnnlHasAvx512Core());
  return available;
}

bool DnnlBf16ProductsAvailable() {
  static const bool available = KernelSwitchOr(
      KernelSwitch::kDnnlBf16MatMul,
      CpuHasAmxBf16() && CpuHasBf16Products() && DnnlHasAvx512Core());
  return available;
}

bool DnnlInt8ProductsAvailable() {
  static const bool available =
      KernelSwitchOr(KernelSwitch::kDnnlInt8,
                     CpuHasAmxInt8() && DnnlHasAvx512Core()) &&
      CpuRunsInt8Kernel(Int8Kernel::kAvx512Vnni);
  return available;
}

std::string DescribeInt8ProductKernel() {
  const std::optional<bool> setting =
      KernelSwitchSetting(KernelSwitch::kDnnlInt8);
  if (DnnlInt8ProductsAvailable()) {
    return setting ? "dnnl (WEFT_DNNL_INT8)" : "dnnl (per CPU: AMX-INT8)";
  }
  if (setting == true) {
    return "weft (per CPU: no AVX-512 VNNI, without which oneDNN's int8 "
           "sums are not exact; WEFT_DNNL_INT8=1 not taken)";
  }
  return setting ? "weft (WEFT_DNNL_INT8)" : "weft (per CPU: no AMX-INT8)";
}

std::string DescribeBf16ProductKernel() {
  if (!CpuHasBf16Products()) return "none (precision bf16 refused)";
  const bool forced =
      KernelSwitchSetting(KernelSwitch::kDnnlBf16MatMul).has_value();
  if (DnnlBf16ProductsAvailable()) {
    return forced ? "dnnl (WEFT_DNNL_BF16_MATMUL)" : "dnnl (per CPU: AMX-BF16)";
  }
  return forced ? "weft AVX-512 BF16 (WEFT_DNNL_BF16_MATMUL)"
                : "weft AVX-512 BF16 (per CPU: no AMX-BF16)";
}

bool DnnlDynamicProductsForCpu(const CpuIdentity& cpu) {
  return GemmKernelForCpu(cpu) == GemmKernel::kBlis && cpu.avx512 &&
         cpu.family >= 0x1a;
}

namespace {

GemmKernel ChooseDynamicProductKernel() {
  const std::optional<bool> forced =
      KernelSwitchSetting(KernelSwitch::kDnnlDynamicMatMul);
  if (forced.has_value()) {
    return *forced ? GemmKernel::kDnnl : ActiveGemmKernel();
  }
  if (GemmKernelFromEnvironment()) return ActiveGemmKernel();
  return DnnlDynamicProductsForCpu(ThisCpu()) && DnnlHasAvx512Core()
             ? GemmKernel::kDnnl
             : ActiveGemmKernel();
}

}  // namespace

GemmKernel DynamicProductKernel() {
  static const GemmKernel kernel = ChooseDynamicProductKernel();
  return kernel;
}

std::string DescribeDynamicProductKernel() {
  const std::string name(GemmKernelName(DynamicProductKernel()));
  if (KernelSwitchSetting(KernelSwitch::kDnnlDynamicMatMul).has_value()) {
    return name + " (WEFT_DNNL_DYNAMIC_MATMUL)";
  }
  if (DynamicProductKernel() == ActiveGemmKernel()) {
    return name + " (the product tile kernel)";
  }
  return name + " (per CPU: AMD family 1Ah with AVX-512)";
}

namespace {

// The calling thread's buffer for an int8 tile's sums, kept between calls.
// A function of its own: a thread_local declared in RunInt8 and only named
// in the lambdas its pool threads run would never be constructed (nor
// destroyed) on those threads (ASan's leak check caught it).
std::vector<int32_t>& ThreadTileSums() {
  thread_local std::vector<int32_t> sums;
  return sums;
}

// Tile kinds: a full tile, or the last partial row tile and/or column block.
constexpr int kKinds = 4;

using TileHandles = DnnlKindHandles<kKinds>;

}  // namespace

struct DnnlWeightProduct::Plan {
  DnnlProductPrecision precision = DnnlProductPrecision::kFloat32;
  int64_t rows = 0, k = 0, n = 0;
  int64_t a_stride = 0;  // Elements between A's rows: k, or bf16's pairs.
  int64_t tile_rows = 0, block_cols = 0, row_tiles = 0, col_blocks = 0;
  std::array<bool, kKinds> present{};
  std::array<dnnl::matmul, kKinds> primitives;
  std::array<memory::desc, kKinds> src, dst, scratch, weights;
  std::vector<memory> block_weights;  // One per column block.
  // The blocks' memory, one buffer for all: a large B's packed form lands
  // in huge pages (framework/large_buffer.h), where a oneDNN allocation per
  // block faulted in 4 KiB at a time (the encoder's first Run: about 40 ms).
  LargeBuffer storage;
  DnnlHandleSets<TileHandles> handle_sets;

  static int Kind(bool partial_rows, bool partial_cols) {
    return (partial_rows ? 2 : 0) + (partial_cols ? 1 : 0);
  }

  std::unique_ptr<TileHandles> MakeHandles() const {
    return TileHandles::Make(present, src, dst, scratch);
  }
};

DnnlWeightProduct::DnnlWeightProduct(std::unique_ptr<Plan> plan)
    : plan_(std::move(plan)) {
  for (const memory& w : plan_->block_weights) {
    bytes_ += static_cast<int64_t>(w.get_desc().get_size());
  }
}

DnnlWeightProduct::~DnnlWeightProduct() = default;

int64_t DnnlWeightProduct::rows() const { return plan_->rows; }

std::unique_ptr<const DnnlWeightProduct> DnnlWeightProduct::Make(
    const float* b, bool transposed, int64_t rows, int64_t k, int64_t n,
    DnnlProductPrecision precision) {
  if (precision == DnnlProductPrecision::kInt8) return nullptr;
  return Build(b, transposed, rows, k, n, precision);
}

std::unique_ptr<const DnnlWeightProduct> DnnlWeightProduct::MakeInt8(
    const int8_t* b, int64_t k, int64_t n) {
  return Build(b, /*transposed=*/false, kDnnlTileRows, k, n,
               DnnlProductPrecision::kInt8);
}

std::unique_ptr<const DnnlWeightProduct> DnnlWeightProduct::Build(
    const void* b, bool transposed, int64_t rows, int64_t k, int64_t n,
    DnnlProductPrecision precision) {
  if (rows <= 0 || k <= 0 || n <= 0) return nullptr;
  auto plan = std::make_unique<Plan>();
  Plan& p = *plan;
  const bool bf16 = precision == DnnlProductPrecision::kBf16;
  const bool int8 = precision == DnnlProductPrecision::kInt8;
  const memory::data_type a_type =
      bf16 ? memory::data_type::bf16
           : (int8 ? memory::data_type::u8 : memory::data_type::f32);
  const memory::data_type b_type =
      bf16 ? memory::data_type::bf16
           : (int8 ? memory::data_type::s8 : memory::data_type::f32);
  const memory::data_type b_plain_type =
      int8 ? memory::data_type::s8 : memory::data_type::f32;
  const size_t b_plain_bytes = int8 ? 1 : sizeof(float);
  const memory::data_type c_type =
      int8 ? memory::data_type::s32 : memory::data_type::f32;
  p.precision = precision;
  p.rows = rows;
  p.k = k;
  p.n = n;
  p.a_stride = bf16 ? Bf16Pairs(k) * 2 : k;
  p.tile_rows = std::min(rows, kDnnlTileRows);
  p.block_cols = std::min(n, kDnnlBlockCols);
  p.row_tiles = (rows + p.tile_rows - 1) / p.tile_rows;
  p.col_blocks = (n + p.block_cols - 1) / p.block_cols;
  const int64_t last_rows = rows - (p.row_tiles - 1) * p.tile_rows;
  const int64_t last_cols = n - (p.col_blocks - 1) * p.block_cols;
  try {
    OneOpenMpThread one_thread;
    for (const bool partial_rows : {false, true}) {
      if (partial_rows && last_rows == p.tile_rows) continue;
      for (const bool partial_cols : {false, true}) {
        if (partial_cols && last_cols == p.block_cols) continue;
        const int kind = Plan::Kind(partial_rows, partial_cols);
        const int64_t r = partial_rows ? last_rows : p.tile_rows;
        const int64_t cols = partial_cols ? last_cols : p.block_cols;
        // A's tiles lie in the whole matrix (row stride a_stride); C's in
        // it too, or for an int8 plan in a dense buffer of the thread's
        // (RunInt8): oneDNN 2.6's int8 brgemm kernels take no other.
        const memory::desc src({r, k}, a_type, {p.a_stride, 1});
        const memory::desc dst({r, cols}, c_type, {int8 ? cols : n, 1});
        const memory::desc weights({k, cols}, b_type, memory::format_tag::any);
        dnnl::primitive_attr attr;
        // Each call gets its own scratch memory (a per-thread buffer), so
        // one primitive can run on several threads at once.
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        const dnnl::matmul::primitive_desc pd(
            dnnl::matmul::desc(src, weights, dst), attr, DnnlCpuEngine());
        const std::string impl = pd.impl_info_str();
        if (impl.rfind("ref", 0) == 0) {
          return nullptr;  // oneDNN's reference loops: weft's are faster.
        }
        // Its int8 kernels without VNNI or AMX sum byte pairs in
        // saturating int16: those sums would not be exact.
        if (int8 && impl.find("amx") == std::string::npos &&
            impl.find("vnni") == std::string::npos) {
          return nullptr;
        }
        p.present[kind] = true;
        p.primitives[kind] = dnnl::matmul(pd);
        p.src[kind] = src;
        p.dst[kind] = dst;
        p.scratch[kind] = pd.scratchpad_desc();
        p.weights[kind] = pd.weights_desc();
      }
    }
    // A column block's weights serve its full and partial row tiles: one
    // layout for both, or no plan.
    for (const bool partial_cols : {false, true}) {
      const int full = Plan::Kind(false, partial_cols);
      const int partial = Plan::Kind(true, partial_cols);
      if (p.present[full] && p.present[partial] &&
          p.weights[full] != p.weights[partial]) {
        return nullptr;
      }
    }
    // The first row tile is always full (it is all the rows when there
    // are fewer than kDnnlTileRows).
    const auto block_kind = [&](int64_t block) {
      return Plan::Kind(false,
                        block == p.col_blocks - 1 && last_cols != p.block_cols);
    };
    const auto block_bytes = [&](int64_t block) {
      return (p.weights[block_kind(block)].get_size() + 63) / 64 * 64;
    };
    size_t total = 0;
    for (int64_t block = 0; block < p.col_blocks; ++block) {
      total += block_bytes(block);
    }
    p.storage = LargeBuffer(total);
    if (p.storage.data() == nullptr) throw std::bad_alloc();
    char* next = p.storage.data();
    dnnl::stream stream(DnnlCpuEngine());
    for (int64_t block = 0; block < p.col_blocks; ++block) {
      const int64_t c0 = block * p.block_cols;
      const bool partial_cols =
          block == p.col_blocks - 1 && last_cols != p.block_cols;
      const int kind = block_kind(block);
      const int64_t cols = partial_cols ? last_cols : p.block_cols;
      // op(B)'s columns [c0, c0 + cols) where the tensor holds them.
      const memory::desc plain_desc(
          {k, cols}, b_plain_type,
          transposed ? memory::dims{1, k} : memory::dims{n, 1});
      const char* first = static_cast<const char*>(b) +
                          (transposed ? c0 * k : c0) * b_plain_bytes;
      memory plain(plain_desc, DnnlCpuEngine(), const_cast<char*>(first));
      memory reordered(p.weights[kind], DnnlCpuEngine(), next);
      next += block_bytes(block);
      dnnl::reorder(plain, reordered).execute(stream, plain, reordered);
      p.block_weights.push_back(reordered);
    }
    stream.wait();
  } catch (const dnnl::error&) {
    return nullptr;  // oneDNN refused the shapes: weft's own path.
  }
  return std::unique_ptr<const DnnlWeightProduct>(
      new DnnlWeightProduct(std::move(plan)));
}

bool DnnlWeightProduct::Run(
    KernelContext& ctx, const float* a, float* c,
    FunctionRef<void(int64_t, int64_t, int64_t, int64_t)> finish) const {
  const int64_t n = plan_->n;
  return RunTiles(
      ctx, reinterpret_cast<const char*>(a),
      plan_->a_stride * static_cast<int64_t>(sizeof(float)), plan_->rows,
      [c, n](int64_t r0, int64_t c0) -> void* { return c + r0 * n + c0; },
      finish);
}

bool DnnlWeightProduct::Run(
    KernelContext& ctx, const Bf16Rows& a, float* c,
    FunctionRef<void(int64_t, int64_t, int64_t, int64_t)> finish) const {
  const int64_t n = plan_->n;
  return RunTiles(
      ctx, reinterpret_cast<const char*>(a.row(0)),
      a.stride() * static_cast<int64_t>(sizeof(uint16_t)), plan_->rows,
      [c, n](int64_t r0, int64_t c0) -> void* { return c + r0 * n + c0; },
      finish);
}

bool DnnlWeightProduct::RunInt8(KernelContext& ctx, const uint8_t* a,
                                int64_t rows, Int8TileFn emit) const {
  const Plan& p = *plan_;
  if (p.precision != DnnlProductPrecision::kInt8 || rows % p.tile_rows != 0) {
    return false;  // The plan has whole int8 tiles only.
  }
  // One tile's sums, on the thread that computes and emits it.
  const auto tile_dst = [&p](int64_t, int64_t) -> void* {
    std::vector<int32_t>& tile = ThreadTileSums();
    tile.resize(static_cast<size_t>(p.tile_rows * p.block_cols));
    return tile.data();
  };
  return RunTiles(ctx, reinterpret_cast<const char*>(a), p.a_stride, rows,
                  tile_dst,
                  [&](int64_t r0, int64_t r, int64_t c0, int64_t cols) {
                    emit(r0, r, c0, cols, ThreadTileSums().data(), cols);
                  });
}

bool DnnlWeightProduct::RunTiles(
    KernelContext& ctx, const char* a, int64_t a_row_bytes, int64_t rows,
    FunctionRef<void*(int64_t, int64_t)> tile_dst,
    FunctionRef<void(int64_t, int64_t, int64_t, int64_t)> finish) const {
  const Plan& p = *plan_;
  const int64_t row_tiles = (rows + p.tile_rows - 1) / p.tile_rows;
  const int64_t tiles = row_tiles * p.col_blocks;
  // About 0.017 ns per multiply-add on one core (oneDNN's AVX-512 kernels
  // on an AMD EPYC Zen 4), a quarter of that in bf16 and less in int8
  // (AMX): only the split's grain.
  const double ns_per_multiply_add =
      p.precision == DnnlProductPrecision::kFloat32 ? 0.017 : 0.004;
  const double tile_cost =
      ns_per_multiply_add * static_cast<double>(p.tile_rows) *
      static_cast<double>(p.block_cols) * static_cast<double>(p.k);
  std::atomic<bool> failed{false};
  ctx.ParallelFor(tiles, tile_cost, [&](int64_t begin, int64_t end) {
    OneOpenMpThread one_thread;
    const DnnlHandleSets<TileHandles>::Lease handles(
        p.handle_sets, [&p] { return p.MakeHandles(); });
    try {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t block = t % p.col_blocks;
        const int64_t r0 = t / p.col_blocks * p.tile_rows;
        const int64_t c0 = block * p.block_cols;
        const int64_t r = std::min(p.tile_rows, rows - r0);
        const int64_t cols = std::min(p.block_cols, p.n - c0);
        const int kind = Plan::Kind(r != p.tile_rows, cols != p.block_cols);
        void* scratch_start = DnnlThreadScratch(p.scratch[kind].get_size());
        handles->src[kind].set_data_handle(
            const_cast<char*>(a + r0 * a_row_bytes));
        handles->dst[kind].set_data_handle(tile_dst(r0, c0));
        handles->scratch[kind].set_data_handle(scratch_start);
        const std::array<dnnl_exec_arg_t, 4> args{
            {{DNNL_ARG_SRC, handles->src[kind].get()},
             {DNNL_ARG_WEIGHTS, p.block_weights[block].get()},
             {DNNL_ARG_DST, handles->dst[kind].get()},
             {DNNL_ARG_SCRATCHPAD, handles->scratch[kind].get()}}};
        DnnlExecute(p.primitives[kind], DnnlThreadStream(), args.data(), 4);
        finish(r0, r, c0, cols);
      }
    } catch (const dnnl::error&) {
      failed.store(true, std::memory_order_relaxed);
    }
  });
  return !failed.load();
}

}  // namespace weft::internal
