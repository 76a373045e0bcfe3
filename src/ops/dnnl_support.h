// What the kernels that call oneDNN share (NhwcConv, the products with a
// constant weight): the CPU engine, the per-CPU rule and its override
// variables, and kept sets of memory handles. Every call into oneDNN runs
// under OneOpenMpThread (kernels/one_openmp_thread.h).
#ifndef WEFT_SRC_OPS_DNNL_SUPPORT_H_
#define WEFT_SRC_OPS_DNNL_SUPPORT_H_

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <utility>
#include <vector>

#include "kernels/one_openmp_thread.h"

namespace weft::internal {

// The one CPU engine every oneDNN object in the process is made on.
dnnl::engine& DnnlCpuEngine();

// Whether oneDNN runs its AVX-512 kernels here (its effective ISA includes
// avx512_core): the CPU rule behind NhwcConv and the oneDNN products.
bool DnnlHasAvx512Core();
// Whether its AVX2 kernels run (effective ISA includes avx2).
bool DnnlHasAvx2();

// Sets of oneDNN memory handles (a kernel's Handles: one per primitive of
// its plan), one per loop of calls running at a time: a loop takes one,
// points its handles at each call's buffers (set_data_handle) and gives it
// back when it ends. Made per call, the handles and the C++ API's argument
// map cost about twenty small allocations; their freed chunks then made a
// Run's next large malloc consolidate glibc's fastbins (docs/kernels.md).
template <class Handles>
class DnnlHandleSets {
 public:
  using Made = std::unique_ptr<Handles>;

  // A free set, or one made by `make`.
  template <class Make>
  Made Take(const Make& make) const {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        Made set = std::move(free_.back());
        free_.pop_back();
        return set;
      }
    }
    return make();
  }
  void GiveBack(Made set) const {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(set));
  }

  // Takes a set for one scope and gives it back however the scope ends.
  class Lease {
   public:
    template <class Make>
    Lease(const DnnlHandleSets& sets, const Make& make)
        : sets_(sets), set_(sets.Take(make)) {}
    ~Lease() { sets_.GiveBack(std::move(set_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Handles& operator*() const { return *set_; }
    Handles* operator->() const { return set_.get(); }

   private:
    const DnnlHandleSets& sets_;
    Made set_;
  };

 private:
  mutable std::mutex mu_;
  mutable std::vector<Made> free_;
};

// One loop's memory handles for a plan of up to N primitive kinds (a full
// tile and its partial ones): a source, destination and scratch memory per
// kind, made without data (each call points them at its buffers).
template <size_t N>
struct DnnlKindHandles {
  std::array<dnnl::memory, N> src, dst, scratch;

  // Handles for each kind that is `present`, from its descriptors.
  static std::unique_ptr<DnnlKindHandles> Make(
      const std::array<bool, N>& present,
      const std::array<dnnl::memory::desc, N>& src_descs,
      const std::array<dnnl::memory::desc, N>& dst_descs,
      const std::array<dnnl::memory::desc, N>& scratch_descs) {
    auto made = std::make_unique<DnnlKindHandles>();
    for (size_t kind = 0; kind < N; ++kind) {
      if (!present[kind]) continue;
      void* none = static_cast<void*>(DNNL_MEMORY_NONE);
      made->src[kind] = dnnl::memory(src_descs[kind], DnnlCpuEngine(), none);
      made->dst[kind] = dnnl::memory(dst_descs[kind], DnnlCpuEngine(), none);
      made->scratch[kind] =
          dnnl::memory(scratch_descs[kind], DnnlCpuEngine(), none);
    }
    return made;
  }
};

// This thread's stream on DnnlCpuEngine(), made on first use.
const dnnl::stream& DnnlThreadStream();

// A scratchpad of at least `bytes` for one call on this thread, 64-byte
// aligned as oneDNN's own buffers are: a buffer the thread keeps between
// calls (every oneDNN kernel's), valid until its next call here.
void* DnnlThreadScratch(size_t bytes);

// Runs `primitive` with these arguments (the C API: no argument map to
// allocate); throws dnnl::error as the C++ API's execute would.
void DnnlExecute(const dnnl::primitive& primitive, const dnnl::stream& stream,
                 const dnnl_exec_arg_t* args, int count);

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_DNNL_SUPPORT_H_
