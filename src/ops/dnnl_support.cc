#include "ops/dnnl_support.h"

#include <memory>

namespace weft::internal {

dnnl::engine& DnnlCpuEngine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

namespace {

// Whether oneDNN's effective ISA (its bit mask) includes all of `isa`.
bool EffectiveIsaIncludes(dnnl::cpu_isa isa) {
  const auto effective = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto wanted = static_cast<unsigned>(isa);
  return (effective & wanted) == wanted;
}

}  // namespace

bool DnnlHasAvx512Core() {
  static const bool has = EffectiveIsaIncludes(dnnl::cpu_isa::avx512_core);
  return has;
}

bool DnnlHasAvx2() {
  static const bool has = EffectiveIsaIncludes(dnnl::cpu_isa::avx2);
  return has;
}

const dnnl::stream& DnnlThreadStream() {
  thread_local const dnnl::stream stream(DnnlCpuEngine());
  return stream;
}

void* DnnlThreadScratch(size_t bytes) {
  constexpr size_t kAlignment = 64;
  // Grown by replacing, not resizing: the old contents are not wanted, and
  // a std::vector's resize copied them and zeroed the rest, a write of
  // every new page before oneDNN's own (16% of the page faults in
  // ResNet-18's first Run, 2026-12-03).
  struct Scratch {
    std::unique_ptr<char[]> data;
    size_t size = 0;
  };
  thread_local Scratch scratch;
  if (scratch.size < bytes + kAlignment) {
    scratch.data.reset();  // The old one goes before the new comes.
    scratch.size = 0;      // Until the new one is there (it may throw).
    scratch.data = std::make_unique_for_overwrite<char[]>(bytes + kAlignment);
    scratch.size = bytes + kAlignment;
  }
  void* start = scratch.data.get();
  size_t space = scratch.size;
  return std::align(kAlignment, bytes, start, space);
}

void DnnlExecute(const dnnl::primitive& primitive, const dnnl::stream& stream,
                 const dnnl_exec_arg_t* args, int count) {
  const dnnl_status_t status =
      dnnl_primitive_execute(primitive.get(), stream.get(), count, args);
  if (status != dnnl_success) {
    throw dnnl::error(status, "could not execute a oneDNN primitive");
  }
}

}  // namespace weft::internal
