// Cache(): the first full pass is kept, in memory or in a file; later
// passes replay it instead of running the stages before it.
//
// The file holds "weft-cache 1\n", then per element: u32 component count,
// then per component: u32 dtype, u32 rank, rank × i64 dims, then the data
// (raw bytes; strings as u64 length + bytes), all little-endian as the
// machine writes them. A pass writes to PATH.partial and renames it to PATH
// only when it reached the end, so an interrupted pass leaves no cache that
// would replay a truncated sequence.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "data/dataset_node.h"
#include "threading/mutex.h"

namespace weft::data {
namespace {

using internal::IteratorEnv;
using internal::StageIterator;
using internal::StageOr;
using internal::Stages;
using weft::internal::Mutex;
using weft::internal::MutexLock;

constexpr char kMagic[] = "weft-cache 1\n";

struct MemoryCache {
  Mutex mu;
  bool complete WEFT_GUARDED_BY(mu) = false;
  std::shared_ptr<const std::vector<Element>> elements WEFT_GUARDED_BY(mu);
};

template <class T>
void Put(std::ofstream& out, T value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof(value));
}

template <class T>
bool Get(std::ifstream& in, T* value) {
  return static_cast<bool>(
      in.read(reinterpret_cast<char*>(value), sizeof(*value)));
}

void WriteElement(std::ofstream& out, const Element& element) {
  Put<uint32_t>(out, static_cast<uint32_t>(element.size()));
  for (const Tensor& t : element) {
    Put<uint32_t>(out, static_cast<uint32_t>(t.dtype()));
    Put<uint32_t>(out, static_cast<uint32_t>(t.shape().rank()));
    for (int d = 0; d < t.shape().rank(); ++d)
      Put<int64_t>(out, t.shape().dim(d));
    if (t.dtype() == DataType::kString) {
      for (int64_t i = 0; i < t.NumElements(); ++i) {
        const std::string& s = t.data<std::string>()[i];
        Put<uint64_t>(out, s.size());
        out.write(s.data(), static_cast<std::streamsize>(s.size()));
      }
    } else {
      out.write(static_cast<const char*>(t.raw_data()),
                static_cast<std::streamsize>(t.size_bytes()));
    }
  }
}

// Reads one element; *end at a clean end of file.
Status ReadElement(std::ifstream& in, const std::string& path, Element* out,
                   bool* end) {
  Status corrupt =
      InvalidArgumentError("cache file " + path + " is truncated or corrupt");
  uint32_t count = 0;
  if (!Get(in, &count)) {
    *end = in.eof();
    return *end ? Status::OK() : corrupt;
  }
  out->clear();
  for (uint32_t c = 0; c < count; ++c) {
    uint32_t dtype = 0, rank = 0;
    if (!Get(in, &dtype) || !Get(in, &rank) ||
        dtype > static_cast<uint32_t>(kLastTensorType) || rank > 64) {
      return corrupt;
    }
    std::vector<int64_t> dims(rank);
    for (int64_t& d : dims) {
      if (!Get(in, &d)) return corrupt;
    }
    StatusOr<Tensor> t =
        Tensor::Create(static_cast<DataType>(dtype), Shape(dims));
    if (!t.ok()) return corrupt;
    if (t->dtype() == DataType::kString) {
      for (int64_t i = 0; i < t->NumElements(); ++i) {
        uint64_t size = 0;
        if (!Get(in, &size) || size > (uint64_t{1} << 40)) return corrupt;
        std::string& s = t->data<std::string>()[i];
        s.resize(size);
        if (!in.read(s.data(), static_cast<std::streamsize>(size))) {
          return corrupt;
        }
      }
    } else if (!in.read(static_cast<char*>(t->raw_data()),
                        static_cast<std::streamsize>(t->size_bytes()))) {
      return corrupt;
    }
    out->push_back(std::move(t).value());
  }
  return Status::OK();
}

// Passes elements through, keeping them; commits them when the input ends.
class FillStage final : public StageIterator {
 public:
  FillStage(Stages inputs, std::shared_ptr<MemoryCache> memory,
            std::string path)
      : StageIterator("Cache", std::move(inputs)),
        memory_(std::move(memory)),
        path_(std::move(path)) {
    if (!path_.empty()) {
      file_.open(path_ + ".partial", std::ios::binary | std::ios::trunc);
      file_ << kMagic;
    }
  }

  ~FillStage() override {
    if (file_.is_open()) {
      file_.close();
      std::remove((path_ + ".partial").c_str());
    }
  }

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    if (!path_.empty() && !file_.is_open()) {
      return InvalidArgumentError("cache: cannot create " + path_ + ".partial");
    }
    Status s = InputNext(0, out, end);
    if (*end) return Commit();
    if (!s.ok()) return s;  // Failed elements are not kept.
    if (!path_.empty()) {
      WriteElement(file_, *out);
    } else {
      kept_.push_back(*out);
    }
    return Status::OK();
  }

 private:
  Status Commit() {
    if (!path_.empty()) {
      file_.close();
      std::error_code error;
      std::filesystem::rename(path_ + ".partial", path_, error);
      if (!file_.good() || error) {
        return InternalError("cache: cannot write " + path_);
      }
      return Status::OK();
    }
    MutexLock lock(memory_->mu);
    if (!memory_->complete) {
      memory_->complete = true;
      memory_->elements =
          std::make_shared<const std::vector<Element>>(std::move(kept_));
    }
    return Status::OK();
  }

  std::shared_ptr<MemoryCache> memory_;
  std::string path_;
  std::ofstream file_;
  std::vector<Element> kept_;
};

class MemoryReplayStage final : public StageIterator {
 public:
  MemoryReplayStage(Stages inputs,
                    std::shared_ptr<const std::vector<Element>> elements)
      : StageIterator("Cache", std::move(inputs)),
        elements_(std::move(elements)) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    if (next_ == elements_->size()) {
      *end = true;
      return Status::OK();
    }
    *out = (*elements_)[next_++];
    return Status::OK();
  }

 private:
  std::shared_ptr<const std::vector<Element>> elements_;
  size_t next_ = 0;
};

class FileReplayStage final : public StageIterator {
 public:
  FileReplayStage(Stages inputs, std::string path)
      : StageIterator("Cache", std::move(inputs)),
        path_(std::move(path)),
        file_(path_, std::ios::binary) {}

 protected:
  Status DoGetNext(Element* out, bool* end) override {
    if (!checked_) {
      checked_ = true;
      std::string magic(sizeof(kMagic) - 1, '\0');
      file_.read(magic.data(), static_cast<std::streamsize>(magic.size()));
      if (!file_ || magic != kMagic) {
        return InvalidArgumentError("cache file " + path_ +
                                    " is not a weft cache");
      }
    }
    return ReadElement(file_, path_, out, end);
  }

 private:
  std::string path_;
  std::ifstream file_;
  bool checked_ = false;
};

}  // namespace

Dataset Dataset::Cache(std::string path) const {
  auto memory = std::make_shared<MemoryCache>();
  return Dataset(internal::MakeNode(
      "Cache", {node()},
      [memory, path = std::move(path)](const IteratorEnv&,
                                       Stages in) -> StageOr {
        if (!path.empty()) {
          if (std::filesystem::exists(path)) {
            return internal::NewStage<FileReplayStage>(std::move(in), path);
          }
          return internal::NewStage<FillStage>(std::move(in), memory, path);
        }
        MutexLock lock(memory->mu);
        if (memory->complete) {
          return internal::NewStage<MemoryReplayStage>(std::move(in),
                                                       memory->elements);
        }
        return internal::NewStage<FillStage>(std::move(in), memory, path);
      }));
}

}  // namespace weft::data
