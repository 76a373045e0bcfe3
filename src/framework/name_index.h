// Implementation detail of Graph and the compiled graph; not part of the API.
//
// NameIndex maps names to positions 0..n-1 of a sequence of names that its
// owner keeps (a graph's nodes): it stores a 32-bit hash and a position per
// entry, never the names. A graph of a million nodes thus indexes in 16 to
// 32 MB of one flat array, where a std::unordered_map<std::string, size_t>
// took a separately allocated node and a copy of every name (~100 MB), and
// a lookup costs one probe of that array plus one name comparison.
#ifndef WEFT_SRC_FRAMEWORK_NAME_INDEX_H_
#define WEFT_SRC_FRAMEWORK_NAME_INDEX_H_

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "weft/check.h"

namespace weft::internal {

class NameIndex {
 public:
  // The position of `name`, or -1. name_of(position) returns the name at a
  // position, as a std::string_view or anything convertible to one.
  template <class NameOf>
  int Find(std::string_view name, const NameOf& name_of) const {
    if (slots_.empty()) return -1;
    const uint32_t hash = Hash(name);
    for (size_t i = hash & mask();; i = (i + 1) & mask()) {
      const Slot& slot = slots_[i];
      if (slot.position < 0) return -1;
      if (slot.hash == hash &&
          std::string_view(name_of(slot.position)) == name) {
        return slot.position;
      }
    }
  }

  // Adds name -> position unless the name is present. Returns false (and
  // changes nothing) when it is. REQUIRES: position >= 0, and name_of
  // returns `name` for it from now on.
  template <class NameOf>
  bool Insert(std::string_view name, int position, const NameOf& name_of) {
    WEFT_DCHECK(position >= 0, "a name's position is >= 0");
    if (Find(name, name_of) >= 0) return false;
    if (2 * (size_ + 1) > slots_.size()) Rehash(slots_.size() * 2);
    Place({Hash(name), position});
    ++size_;
    return true;
  }

  // Makes room for n names without rehashing.
  void Reserve(size_t n) {
    if (2 * n > slots_.size()) Rehash(2 * n);
  }

  size_t size() const { return size_; }

 private:
  struct Slot {
    uint32_t hash = 0;
    int32_t position = -1;  // -1: empty.
  };

  static uint32_t Hash(std::string_view name) {
    const uint64_t h = std::hash<std::string_view>{}(name);
    return static_cast<uint32_t>(h ^ (h >> 32));
  }

  size_t mask() const { return slots_.size() - 1; }

  void Place(Slot entry) {
    size_t i = entry.hash & mask();
    while (slots_[i].position >= 0) i = (i + 1) & mask();
    slots_[i] = entry;
  }

  // Grows to the power of two >= max(wanted, 16); the stored hashes place
  // every entry again without reading a name.
  void Rehash(size_t wanted) {
    size_t capacity = 16;
    while (capacity < wanted) capacity *= 2;
    std::vector<Slot> old(capacity);
    old.swap(slots_);
    for (const Slot& slot : old) {
      if (slot.position >= 0) Place(slot);
    }
  }

  std::vector<Slot> slots_;  // Linear probing; at most half full.
  size_t size_ = 0;
};

// The name_of for NameIndex over a sequence of records with a `name`
// member (NodeDefs, compiled nodes). The sequence must outlive the result.
template <class Records>
auto NameMember(const Records& records) {
  return [&records](int i) -> std::string_view { return records[i].name; };
}

}  // namespace weft::internal

#endif  // WEFT_SRC_FRAMEWORK_NAME_INDEX_H_
