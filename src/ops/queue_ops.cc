// FIFO queues: QueueEnqueue, QueueDequeue, QueueClose, QueueSize.
//
// A queue is named by the `queue` attribute and belongs to the session: every
// Run of the session sees the same queue. Every queue op carries the queue's
// definition — `component_types` (one dtype per component), `capacity` (-1:
// unbounded) and optionally `shapes` (one per component) — and the first op
// to run creates the queue; a later op with another definition is an error.
//
// Enqueue waits while the queue is full and Dequeue while it is empty: both
// are blocking ops, run on the blocking pool (runtime/blocking_pool.h), so a
// waiting queue op holds no inter-op worker. A wait ends when the Run is
// cancelled (deadline, error elsewhere, Close) within kCancelPoll.
// Dequeue from a closed, empty queue fails with OutOfRange; Enqueue to a
// closed queue with Cancelled (as TensorFlow's FIFOQueue).
#include <chrono>
#include <deque>

#include "framework/op_registry_impl.h"
#include "framework/resources.h"
#include "ops/registry.h"
#include "runtime/kernel_services.h"
#include "threading/mutex.h"

namespace weft::internal {
namespace {

constexpr auto kCancelPoll = std::chrono::milliseconds(5);

struct QueueDefinition {
  int64_t capacity = -1;
  std::vector<DataType> types;
  std::vector<Shape> shapes;  // Empty: any shape.

  bool operator==(const QueueDefinition& o) const {
    return capacity == o.capacity && types == o.types && shapes == o.shapes;
  }
  std::string ToString() const {
    std::string out = "capacity " + std::to_string(capacity) + ", types [";
    for (size_t i = 0; i < types.size(); ++i) {
      out += (i ? ", " : "") + std::string(DataTypeName(types[i]));
    }
    return out + "]";
  }
};

class FifoQueue final : public Resource {
 public:
  FifoQueue(std::string name, QueueDefinition def)
      : name_(std::move(name)), def_(std::move(def)) {}
  const char* kind() const override { return "FIFO queue"; }
  const QueueDefinition& definition() const { return def_; }

  Status Enqueue(KernelContext& ctx, std::vector<Tensor> element) {
    for (size_t i = 0; i < def_.shapes.size(); ++i) {
      if (!(element[i].shape() == def_.shapes[i])) {
        return InvalidArgumentError(
            "component " + std::to_string(i) + " of the element has shape " +
            element[i].shape().ToString() + "; queue '" + name_ +
            "' holds shape " + def_.shapes[i].ToString());
      }
    }
    MutexLock lock(mu_);
    CoreReleasedWhileBlocked blocked;  // A waiting kernel holds no core.
    while (!closed_ && def_.capacity >= 0 &&
           static_cast<int64_t>(elements_.size()) >= def_.capacity) {
      WEFT_RETURN_IF_ERROR(WaitForChange(ctx, lock, "enqueue to"));
    }
    if (closed_) {
      return CancelledError("queue '" + name_ + "' is closed");
    }
    elements_.push_back(std::move(element));
    changed_.NotifyAll();
    return Status::OK();
  }

  StatusOr<std::vector<Tensor>> Dequeue(KernelContext& ctx) {
    MutexLock lock(mu_);
    CoreReleasedWhileBlocked blocked;
    while (!closed_ && elements_.empty()) {
      WEFT_RETURN_IF_ERROR(WaitForChange(ctx, lock, "dequeue from"));
    }
    if (elements_.empty()) {
      return OutOfRangeError("queue '" + name_ + "' is closed and empty");
    }
    std::vector<Tensor> element = std::move(elements_.front());
    elements_.pop_front();
    changed_.NotifyAll();
    return element;
  }

  void Close() {
    MutexLock lock(mu_);
    closed_ = true;
    changed_.NotifyAll();
  }

  int64_t Size() {
    MutexLock lock(mu_);
    return static_cast<int64_t>(elements_.size());
  }

 private:
  // Waits under `lock` for a change of the queue or kCancelPoll, whichever
  // comes first; an error once the Run is cancelled.
  Status WaitForChange(KernelContext& ctx, MutexLock& lock, const char* what) {
    if (ctx.IsCancelled()) {
      return CancelledError(std::string("cancelled while waiting to ") + what +
                            " queue '" + name_ + "'");
    }
    changed_.WaitFor(lock, kCancelPoll);
    return Status::OK();
  }

  const std::string name_;
  const QueueDefinition def_;
  Mutex mu_;
  CondVar changed_;
  std::deque<std::vector<Tensor>> elements_ WEFT_GUARDED_BY(mu_);
  bool closed_ WEFT_GUARDED_BY(mu_) = false;
};

// The definition a queue op's attributes give. Checked by the shape
// function, so the kernel can trust it.
StatusOr<QueueDefinition> DefinitionFromAttrs(const AttrMap& attrs) {
  QueueDefinition def;
  def.capacity = *attrs.at("capacity").get_if<int64_t>();
  def.types = *attrs.at("component_types").get_if<std::vector<DataType>>();
  const auto& shapes = *attrs.at("shapes").get_if<std::vector<PartialShape>>();
  if (def.capacity == 0 || def.capacity < -1) {
    return InvalidArgumentError(
        "attribute 'capacity' must be -1 (unbounded) or >= 1, got " +
        std::to_string(def.capacity));
  }
  if (def.types.empty()) {
    return InvalidArgumentError("attribute 'component_types' is empty");
  }
  if (!shapes.empty() && shapes.size() != def.types.size()) {
    return InvalidArgumentError(
        "attribute 'shapes' has " + std::to_string(shapes.size()) +
        " entries for " + std::to_string(def.types.size()) + " components");
  }
  for (const PartialShape& shape : shapes) {
    if (!shape.IsFullyDefined() || !shape.ToShape().IsValid()) {
      return InvalidArgumentError("attribute 'shapes' holds " +
                                  shape.ToString() +
                                  "; queue shapes must be fully defined");
    }
    def.shapes.push_back(shape.ToShape());
  }
  if (const std::string& name = *attrs.at("queue").get_if<std::string>();
      name.empty()) {
    return InvalidArgumentError(
        "attribute 'queue' (the queue's name) is empty");
  }
  return def;
}

// Every queue op: the queue named by its attributes, created on first use.
class QueueKernel : public OpKernel {
 public:
  explicit QueueKernel(const KernelConstruction& c)
      : name_(c.attr<std::string>("queue")),
        def_(DefinitionFromAttrs(c.attrs()).value()) {}

 protected:
  StatusOr<std::shared_ptr<FifoQueue>> GetQueue(KernelContext& ctx) const {
    ResourceMgr* resources = SessionResources(ctx);
    if (resources == nullptr) {
      return FailedPreconditionError("queues need a session");
    }
    WEFT_ASSIGN_OR_RETURN(
        std::shared_ptr<FifoQueue> queue,
        resources->LookupOrCreate<FifoQueue>(
            name_, [&]() -> StatusOr<std::shared_ptr<FifoQueue>> {
              return std::make_shared<FifoQueue>(name_, def_);
            }));
    if (!(queue->definition() == def_)) {
      return InvalidArgumentError("queue '" + name_ + "' exists with " +
                                  queue->definition().ToString() +
                                  "; this op declares " + def_.ToString());
    }
    return queue;
  }

  const std::string name_;
  const QueueDefinition def_;
};

class EnqueueKernel final : public QueueKernel {
 public:
  using QueueKernel::QueueKernel;
  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<FifoQueue> queue, GetQueue(ctx));
    std::vector<Tensor> element;
    for (int i = 0; i < ctx.num_inputs(); ++i) element.push_back(ctx.input(i));
    return queue->Enqueue(ctx, std::move(element));
  }
};

class DequeueKernel final : public QueueKernel {
 public:
  using QueueKernel::QueueKernel;
  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<FifoQueue> queue, GetQueue(ctx));
    WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> element, queue->Dequeue(ctx));
    for (size_t i = 0; i < element.size(); ++i) {
      WEFT_RETURN_IF_ERROR(
          ctx.SetOutput(static_cast<int>(i), std::move(element[i])));
    }
    return Status::OK();
  }
};

class CloseKernel final : public QueueKernel {
 public:
  using QueueKernel::QueueKernel;
  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<FifoQueue> queue, GetQueue(ctx));
    queue->Close();
    return Status::OK();
  }
};

class SizeKernel final : public QueueKernel {
 public:
  using QueueKernel::QueueKernel;
  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<FifoQueue> queue, GetQueue(ctx));
    WEFT_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, Shape{}));
    *out->data<int64_t>() = queue->Size();
    return Status::OK();
  }
};

// The attributes every queue op declares.
OpDefBuilder QueueOp(const char* name) {
  return std::move(
      OpDefBuilder(name)
          .Attr("queue", AttrType::kString)
          .Attr("component_types", AttrType::kListType)
          .Attr("capacity", AttrType::kInt, int64_t{-1})
          .Attr("shapes", AttrType::kListShape, std::vector<PartialShape>{})
          .SetStateful());
}

Status CheckDefinition(InferenceContext& ctx) {
  return DefinitionFromAttrs(ctx.attrs()).status();
}

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"QueueClose", "close a FIFO queue: waiting dequeues end"},
    {"QueueDequeue", "take the oldest element of a FIFO queue (blocking)"},
    {"QueueEnqueue", "append an element to a FIFO queue (blocking when full)"},
    {"QueueSize", "the number of elements in a FIFO queue"},
};

}  // namespace

void RegisterQueueOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      QueueOp("QueueEnqueue")
          .Input(ArgDef::TypeList("components", "component_types"))
          .SetBlocking()
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            WEFT_ASSIGN_OR_RETURN(QueueDefinition def,
                                  DefinitionFromAttrs(ctx.attrs()));
            for (size_t i = 0; i < def.shapes.size(); ++i) {
              const PartialShape& in = ctx.input_shape(static_cast<int>(i));
              if (!in.IsCompatibleWith(def.shapes[i])) {
                return InvalidArgumentError("component " + std::to_string(i) +
                                            " has shape " + in.ToString() +
                                            "; the queue holds shape " +
                                            def.shapes[i].ToString());
              }
            }
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel("QueueEnqueue",
                                          KernelFactoryFor<EnqueueKernel>()));
  CheckRegistered(registry.RegisterOp(
      QueueOp("QueueDequeue")
          .Output(ArgDef::TypeList("components", "component_types"))
          .SetBlocking()
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            WEFT_ASSIGN_OR_RETURN(QueueDefinition def,
                                  DefinitionFromAttrs(ctx.attrs()));
            for (size_t i = 0; i < def.shapes.size(); ++i) {
              ctx.set_output(static_cast<int>(i), def.shapes[i]);
            }
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel("QueueDequeue",
                                          KernelFactoryFor<DequeueKernel>()));
  CheckRegistered(registry.RegisterOp(
      QueueOp("QueueClose").SetShapeFn(CheckDefinition).Build()));
  CheckRegistered(
      registry.RegisterKernel("QueueClose", KernelFactoryFor<CloseKernel>()));
  CheckRegistered(
      registry.RegisterOp(QueueOp("QueueSize")
                              .Output(ArgDef::Fixed("size", DataType::kInt64))
                              .SetShapeFn([](InferenceContext& ctx) -> Status {
                                WEFT_RETURN_IF_ERROR(CheckDefinition(ctx));
                                ctx.set_output(0, Shape{});
                                return Status::OK();
                              })
                              .Build()));
  CheckRegistered(
      registry.RegisterKernel("QueueSize", KernelFactoryFor<SizeKernel>()));
}

}  // namespace weft::internal
