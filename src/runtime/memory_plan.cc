#include "runtime/memory_plan.h"

#include <algorithm>
#include <new>

namespace weft::internal {
namespace {

int64_t RoundUpTo(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// Strict ancestors of every run node, over the edges that order the
// executor (data and control inputs between run nodes), as bit sets of
// `words` 64-bit words per node; and the run nodes in a topological order.
struct Ancestry {
  int64_t words = 0;
  std::vector<uint64_t> bits;
  std::vector<int> order;

  bool IsAncestor(int a, int of) const {
    return (bits[of * words + a / 64] >> (a % 64)) & 1u;
  }
};

Ancestry AncestorsOf(const CompiledGraph& graph, const ExecutionPlan& plan) {
  const int n = graph.num_nodes();
  Ancestry out;
  out.words = (n + 63) / 64;
  out.bits.assign(static_cast<size_t>(n) * out.words, 0);
  auto runs = [&](int node) { return plan.role[node] == ExecutionPlan::kRun; };
  std::vector<int> pending(n, 0);
  std::vector<int> ready;
  for (int i = 0; i < n; ++i) {
    if (!runs(i)) continue;
    const CompiledNode& node = graph.node(i);
    for (const EdgeRef& in : node.inputs) pending[i] += runs(in.node);
    for (int c : node.control_inputs) pending[i] += runs(c);
    if (pending[i] == 0) ready.push_back(i);
  }
  while (!ready.empty()) {
    const int i = ready.back();
    ready.pop_back();
    out.order.push_back(i);
    uint64_t* mine = &out.bits[static_cast<size_t>(i) * out.words];
    auto reach = [&](int next) {
      if (!runs(next)) return;
      uint64_t* theirs = &out.bits[static_cast<size_t>(next) * out.words];
      for (int64_t w = 0; w < out.words; ++w) theirs[w] |= mine[w];
      theirs[i / 64] |= uint64_t{1} << (i % 64);
      if (--pending[next] == 0) ready.push_back(next);
    };
    const CompiledNode& node = graph.node(i);
    for (const EdgeRef& edge : node.consumers) reach(edge.node);
    for (int c : node.control_consumers) reach(c);
  }
  return out;
}

}  // namespace

std::shared_ptr<const MemoryPlan> MemoryPlan::Build(
    const CompiledGraph& graph, const ExecutionPlan& plan,
    const std::vector<int64_t>& observed_bytes,
    const std::vector<int>& observed_alias) {
  const int n = graph.num_nodes();
  int run_nodes = 0;
  for (int i = 0; i < n; ++i) run_nodes += plan.role[i] == ExecutionPlan::kRun;
  if (run_nodes == 0 || n > kMaxNodes) return nullptr;

  // Per value: its node and output, and the value whose buffer it is (its
  // own index unless it aliased an input, through chains of aliases).
  const int values = graph.num_values();
  std::vector<EdgeRef> owner(values);
  for (int i = 0; i < n; ++i) {
    const CompiledNode& node = graph.node(i);
    for (int k = 0; k < static_cast<int>(node.output_dtypes.size()); ++k) {
      owner[node.first_value + k] = {i, k};
    }
  }
  std::vector<int> root(values);
  for (int v = 0; v < values; ++v) {
    int r = v;
    // Producers run before their readers, so a chain has no cycle; the
    // bound only guards against a malformed record.
    for (int hops = 0; observed_alias[r] >= 0 && hops < values; ++hops) {
      r = observed_alias[r];
    }
    root[v] = r;
  }
  // The values sharing each buffer. A buffer any of them is fetched as is
  // the caller's after the Run: it gets no slot.
  std::vector<std::vector<int>> members(values);
  std::vector<char> escapes(values, 0);
  for (int v = 0; v < values; ++v) members[root[v]].push_back(v);
  for (const EdgeRef& fetch : plan.fetches) {
    escapes[root[graph.node(fetch.node).first_value + fetch.slot]] = 1;
  }

  const Ancestry ancestry = AncestorsOf(graph, plan);
  // Whether buffer `r`'s last handle in the Run is dropped before
  // `producer` starts, in every schedule. For each value holding it: every
  // run node reading it is a strict ancestor of `producer` (a node reading
  // it while producing the next value still holds it), or, when nothing
  // reads it, its own producer is (the executor drops an unread output at
  // once).
  auto dropped_before = [&](int r, int producer) {
    for (int v : members[r]) {
      const EdgeRef made = owner[v];
      bool read = false;
      for (const EdgeRef& edge : graph.node(made.node).consumers) {
        if (plan.role[edge.node] != ExecutionPlan::kRun ||
            graph.node(edge.node).inputs[edge.slot].slot != made.slot) {
          continue;
        }
        read = true;
        if (!ancestry.IsAncestor(edge.node, producer)) return false;
      }
      if (!read && !ancestry.IsAncestor(made.node, producer)) return false;
    }
    return true;
  };

  auto out = std::make_shared<MemoryPlan>();
  out->slot_of_value_.assign(values, -1);
  // The last buffer placed in each slot: a slot's buffers are ordered one
  // after the other, so the last one decides whether the next fits in.
  std::vector<int> last;
  for (int node_index : ancestry.order) {
    const CompiledNode& node = graph.node(node_index);
    for (int k = 0; k < static_cast<int>(node.output_dtypes.size()); ++k) {
      const int v = node.first_value + k;
      const int64_t bytes = observed_bytes[v];
      if (bytes <= 0 || root[v] != v || escapes[v]) continue;
      // The smallest free slot that holds it, else the largest free one
      // (grown), else a new one.
      int fits = -1, largest = -1;
      for (int s = 0; s < out->num_slots(); ++s) {
        if (!dropped_before(last[s], node_index)) continue;
        const int64_t have = out->slots_[s].bytes;
        if (have >= bytes && (fits < 0 || have < out->slots_[fits].bytes)) {
          fits = s;
        }
        if (largest < 0 || have > out->slots_[largest].bytes) largest = s;
      }
      int slot = fits >= 0 ? fits : largest;
      if (slot < 0) {
        slot = out->num_slots();
        out->slots_.push_back({});
        last.push_back(-1);
      }
      out->slots_[slot].bytes = std::max(out->slots_[slot].bytes, bytes);
      last[slot] = v;
      out->slot_of_value_[v] = slot;
      out->unshared_bytes_ += bytes;
    }
  }
  if (out->slots_.empty()) return nullptr;
  int64_t offset = 0;
  for (Slot& slot : out->slots_) {
    slot.offset = offset;
    offset += RoundUpTo(kHeaderBytes + slot.bytes, kAlignment);
  }
  out->total_bytes_ = offset;
  return out;
}

MemoryArena* MemoryArena::Create(std::shared_ptr<const MemoryPlan> plan) {
  return new MemoryArena(std::move(plan));
}

MemoryArena::MemoryArena(std::shared_ptr<const MemoryPlan> plan)
    : plan_(std::move(plan)),
      busy_(new std::atomic<uint8_t>[plan_->num_slots()]) {
  static_assert(MemoryPlan::kAlignment <= 64, "LargeBuffer aligns to 64");
  memory_ = LargeBuffer(
      static_cast<size_t>(std::max<int64_t>(plan_->total_bytes(), 1)));
  if (memory_.data() == nullptr) throw std::bad_alloc();
  for (int s = 0; s < plan_->num_slots(); ++s) {
    busy_[s].store(0, std::memory_order_relaxed);
  }
}

MemoryArena::~MemoryArena() = default;

void* MemoryArena::Take(int value, int64_t bytes) {
  const int slot = plan_->slot_of(value);
  if (slot < 0 || bytes > plan_->slot_bytes(slot)) return nullptr;
  uint8_t idle = 0;
  // Acquire: the previous tensor's last reads happen before this one's
  // writes (its Return released the flag after them).
  if (!busy_[slot].compare_exchange_strong(idle, 1,
                                           std::memory_order_acquire)) {
    return nullptr;
  }
  holders_.fetch_add(1, std::memory_order_relaxed);
  return memory_.data() + plan_->slot_offset(slot);
}

void MemoryArena::ReturnSlot(void* arena, int slot) {
  auto* self = static_cast<MemoryArena*>(arena);
  self->busy_[slot].store(0, std::memory_order_release);
  self->Unhold();
}

void MemoryArena::Unhold() {
  if (holders_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

}  // namespace weft::internal
