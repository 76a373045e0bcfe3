// The memory plan of one ExecutionPlan (issue 15, item 5): where in a
// per-Run arena each intermediate tensor lives, so that a steady Run takes
// its intermediate buffers from memory it already holds instead of the heap.
//
// Like ONNX Runtime's memory pattern (SessionOptions.enable_mem_pattern),
// the sizes come from a Run: the plan's first successful Run records the
// bytes each node output allocated (RunState observes them), and the plan is
// then built once from those sizes and the graph's structure. Later Runs
// that allocate no more than the recorded bytes for a value use its slot;
// anything else (a larger feed, a second allocation of one output) goes to
// the heap as before.
//
// Safety does not rest on the plan alone. Values share a slot only when the
// graph orders them: every node that reads the earlier one is an ancestor
// of the node that produces the later one, so under any schedule the
// executor has dropped the earlier tensor before the later one is
// allocated. A tensor can outlive that moment (a Reshape's output is the
// same buffer; a fetch may return an alias; a kernel may keep a tensor), so
// every slot also carries a busy flag that its buffer clears when its last
// handle goes: a slot still busy is skipped and the allocation goes to the
// heap. The arena's memory is freed only when its owner and every buffer
// in it have let go, so a tensor that escaped a Run stays valid after the
// session is gone.
#ifndef WEFT_SRC_RUNTIME_MEMORY_PLAN_H_
#define WEFT_SRC_RUNTIME_MEMORY_PLAN_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "framework/large_buffer.h"
#include "runtime/compiled_graph.h"
#include "runtime/execution_plan.h"
#include "weft/tensor.h"

namespace weft::internal {

class MemoryPlan {
 public:
  // Graphs of more nodes than this get no plan: the ancestor sets take
  // nodes^2 / 8 bytes while the plan is built (4096 nodes: 2 MiB).
  static constexpr int kMaxNodes = 4096;
  // Every slot starts on this boundary and has a tensor header before its
  // data (Tensor's layout: 64-byte header, 64-byte aligned data).
  static constexpr int64_t kAlignment = 64;
  static constexpr int64_t kHeaderBytes = 64;  // Tensor::AllocateIn checks.

  // From the recorded Run: `observed_bytes[v]`, the bytes the producer of
  // value v allocated (0: none, or not through KernelContext::Allocate*);
  // `observed_alias[v]`, the input value whose buffer v's producer passed
  // on as v (a Reshape), or -1. A buffer is placed with the lives of every
  // value holding it; one that a fetch returns gets no slot. Null when no
  // value gets one, or the graph is too large.
  static std::shared_ptr<const MemoryPlan> Build(
      const CompiledGraph& graph, const ExecutionPlan& plan,
      const std::vector<int64_t>& observed_bytes,
      const std::vector<int>& observed_alias);

  // The slot of value v, or -1.
  int slot_of(int value) const { return slot_of_value_[value]; }
  // Data bytes the slot holds (without its header).
  int64_t slot_bytes(int slot) const { return slots_[slot].bytes; }
  // Byte offset of the slot's header in the arena.
  int64_t slot_offset(int slot) const { return slots_[slot].offset; }
  int num_slots() const { return static_cast<int>(slots_.size()); }
  // The arena's size: every slot with its header.
  int64_t total_bytes() const { return total_bytes_; }
  // The bytes the planned values would take each in a buffer of its own.
  int64_t unshared_bytes() const { return unshared_bytes_; }

 private:
  struct Slot {
    int64_t bytes = 0;
    int64_t offset = 0;
  };
  std::vector<int> slot_of_value_;
  std::vector<Slot> slots_;
  int64_t total_bytes_ = 0;
  int64_t unshared_bytes_ = 0;
};

// One Run's memory for a MemoryPlan. Created held once, for its owner (a
// RunState), who lets go with Unhold; every buffer placed in it holds it
// too, until ReturnSlot. Freed by the last of them.
class MemoryArena {
 public:
  // Held once, for the caller.
  static MemoryArena* Create(std::shared_ptr<const MemoryPlan> plan);

  const MemoryPlan& plan() const { return *plan_; }

  // Where a tensor of `bytes` data bytes for value v goes: the header
  // address of v's slot, now busy, or null (no slot, too small, or still
  // held by an earlier tensor). Any thread.
  void* Take(int value, int64_t bytes);
  // For Tensor's buffers: the buffer in `slot` of `arena` (a MemoryArena)
  // has no handle left. Any thread.
  static void ReturnSlot(void* arena, int slot);
  // The owner's release. The memory goes when nothing else holds it.
  void Unhold();

 private:
  explicit MemoryArena(std::shared_ptr<const MemoryPlan> plan);
  ~MemoryArena();

  std::shared_ptr<const MemoryPlan> plan_;
  // Made once and kept while the plan is the same: from 2 MiB on huge
  // pages, whose first Run faults once per 2 MiB, not per 4 KiB.
  LargeBuffer memory_;
  std::unique_ptr<std::atomic<uint8_t>[]> busy_;
  std::atomic<int64_t> holders_{1};
};

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_MEMORY_PLAN_H_
