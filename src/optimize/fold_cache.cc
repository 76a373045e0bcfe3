#include "optimize/fold_cache.h"

#include <unordered_set>

#include "optimize/attr_key.h"

namespace weft::internal {
namespace {

// A buffer's address with the dtype and shape read from it: two tensors
// with equal keys hold the same value.
std::string BufferKey(const Tensor& value) {
  return std::to_string(reinterpret_cast<uintptr_t>(value.raw_data())) +
         DataTypeName(value.dtype()) + value.shape().ToString();
}

}  // namespace

FoldCache::FoldCache(const Graph& graph) {
  MutexLock lock(mu_);
  for (const NodeDef& node : graph.nodes()) {
    if (node.op != "Const") continue;
    auto value = node.attrs.find("value");
    if (value == node.attrs.end()) continue;
    if (const Tensor* tensor = value->second.get_if<Tensor>()) {
      PinLocked(*tensor);
    }
  }
}

int64_t FoldCache::PinLocked(const Tensor& value) {
  auto [it, added] = pinned_.try_emplace(BufferKey(value), next_id_, value);
  if (added) ++next_id_;
  return it->second.first;
}

int64_t FoldCache::ConstantId(const Tensor& value) const {
  MutexLock lock(mu_);
  auto it = pinned_.find(BufferKey(value));
  return it == pinned_.end() ? kUnknown : it->second.first;
}

int64_t FoldCache::NodeId(const NodeDef& node,
                          const std::vector<std::pair<int64_t, int>>& inputs) {
  std::optional<std::string> attrs = AttrKey(node.attrs, TensorAttrs::kRefused);
  if (!attrs) return kUnknown;
  std::string key = node.op + '\0' + node.device + '\0' + *attrs + '\0';
  for (const auto& [id, slot] : inputs) {
    if (id == kUnknown) return kUnknown;
    key += std::to_string(id) + ':' + std::to_string(slot) + ',';
  }
  MutexLock lock(mu_);
  auto [it, added] = nodes_.try_emplace(std::move(key), next_id_);
  if (added) ++next_id_;
  return it->second;
}

std::optional<Tensor> FoldCache::Find(int64_t id) const {
  MutexLock lock(mu_);
  auto it = values_.find(id);
  if (it == values_.end()) return std::nullopt;
  ++hits_;
  return it->second;
}

void FoldCache::Insert(int64_t id, const Tensor& value) {
  MutexLock lock(mu_);
  values_.try_emplace(id, value);
  // A Const of this value in a later compile reads as this node.
  pinned_.try_emplace(BufferKey(value), id, value);
}

void FoldCache::KeepOnlyWhatTheGraphHolds(const std::vector<int64_t>& ids,
                                          const Graph& graph) {
  std::unordered_set<const void*> held;
  for (const NodeDef& node : graph.nodes()) {
    if (node.op != "Const") continue;
    auto value = node.attrs.find("value");
    if (value == node.attrs.end()) continue;
    if (const Tensor* tensor = value->second.get_if<Tensor>()) {
      held.insert(tensor->raw_data());
    }
  }
  MutexLock lock(mu_);
  for (int64_t id : ids) {
    auto it = values_.find(id);
    if (it == values_.end() || held.count(it->second.raw_data()) > 0) {
      continue;
    }
    auto pin = pinned_.find(BufferKey(it->second));
    if (pin != pinned_.end() && pin->second.first == id) pinned_.erase(pin);
    values_.erase(it);
  }
}

size_t FoldCache::size() const {
  MutexLock lock(mu_);
  return values_.size();
}

int64_t FoldCache::hits() const {
  MutexLock lock(mu_);
  return hits_;
}

}  // namespace weft::internal
