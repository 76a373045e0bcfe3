// One line per built-in op, for `weft ops` and docs/ops.md. An op
// registered without a summary takes its line from here
// (OpRegistry::RegisterOp); ops_test.cc checks that every registered op
// has one and that every line here names a registered op.
#include <string>
#include <string_view>

#include "framework/op_registry_impl.h"

namespace weft::internal {
namespace {

struct Summary {
  std::string_view op;
  std::string_view text;
};

constexpr Summary kSummaries[] = {
    {"Abs", "absolute value, element-wise"},
    {"Acos", "arc cosine, element-wise"},
    {"Acosh", "inverse hyperbolic cosine, element-wise"},
    {"Add", "a + b with NumPy broadcasting"},
    {"And", "logical and with broadcasting"},
    {"ArgMax", "index of the largest element along an axis"},
    {"ArgMin", "index of the smallest element along an axis"},
    {"Asin", "arc sine, element-wise"},
    {"Asinh", "inverse hyperbolic sine, element-wise"},
    {"Atan", "arc tangent, element-wise"},
    {"Atanh", "inverse hyperbolic tangent, element-wise"},
    {"AveragePool", "average over sliding windows (N, C, spatial...)"},
    {"BatchNormalization", "inference batch norm with given mean and variance"},
    {"BitShift", "shift unsigned integers left or right, element-wise"},
    {"BlackmanWindow",
     "Blackman window of a given size (periodic or symmetric)"},
    {"Cast", "convert to another dtype"},
    {"Ceil", "round up, element-wise"},
    {"Celu", "continuously differentiable exponential linear unit"},
    {"Clip", "clamp to [min, max] (optional inputs)"},
    {"Compress", "keep the slices a boolean condition selects"},
    {"Concat", "join tensors along an axis"},
    {"Const", "a constant tensor given as an attribute"},
    {"ConstantOfShape", "a tensor of a given shape filled with one value"},
    {"Conv", "N-d convolution with groups, strides, dilations and padding"},
    {"ConvTranspose", "N-d transposed convolution"},
    {"Cos", "cosine, element-wise"},
    {"Cosh", "hyperbolic cosine, element-wise"},
    {"CumSum", "cumulative sum along an axis (exclusive, reverse)"},
    {"CustomOp", "calls a C++ function registered by name"},
    {"DepthToSpace", "move depth blocks into spatial blocks (DCR or CRD)"},
    {"Div", "a / b with broadcasting (integer division by zero fails)"},
    {"Dropout", "identity at inference; optional mask of ones"},
    {"Elu", "exponential linear unit"},
    {"Equal", "a == b with broadcasting"},
    {"Erf", "error function, element-wise"},
    {"Exp", "e to the x, element-wise"},
    {"Expand", "broadcast to a shape"},
    {"EyeLike", "a 2-D tensor with ones on a diagonal"},
    {"Fill", "a tensor of the `shape` attribute, every element `value`"},
    {"Flatten", "reshape to 2-D at an axis"},
    {"Floor", "round down, element-wise"},
    {"GRU", "gated recurrent unit layer (forward, reverse, bidirectional)"},
    {"Gather", "take slices along an axis by index"},
    {"GatherElements", "take elements along an axis by an index tensor"},
    {"GatherND", "take slices by N-d index tuples"},
    {"Gelu", "Gaussian error linear unit (exact or tanh form)"},
    {"Gemm", "alpha * op(A) op(B) + beta * C"},
    {"GlobalAveragePool", "average over all spatial positions"},
    {"GlobalMaxPool", "maximum over all spatial positions"},
    {"Greater", "a > b with broadcasting"},
    {"GreaterOrEqual", "a >= b with broadcasting"},
    {"HammingWindow", "Hamming window of a given size (periodic or symmetric)"},
    {"HannWindow", "Hann window of a given size (periodic or symmetric)"},
    {"HardSigmoid", "max(0, min(1, alpha x + beta))"},
    {"HardSwish", "x * HardSigmoid(x) with alpha 1/6, beta 1/2"},
    {"Hardmax", "one at the largest element along an axis, zero elsewhere"},
    {"Identity", "its input, unchanged"},
    {"InstanceNormalization", "normalize each instance and channel"},
    {"IsInf", "true where infinite (positive, negative or both)"},
    {"IsNaN", "true where NaN"},
    {"LRN", "local response normalization across channels"},
    {"LSTM", "long short-term memory layer (forward, reverse, bidirectional)"},
    {"LayerNormalization", "normalize over the trailing axes, scale and shift"},
    {"LeakyRelu", "x for x >= 0, alpha x below"},
    {"Less", "a < b with broadcasting"},
    {"LessOrEqual", "a <= b with broadcasting"},
    {"Log", "natural logarithm, element-wise"},
    {"LogSoftmax", "log of softmax along an axis"},
    {"MatMul",
     "matrix product with NumPy batching (tiled over intra-op threads)"},
    {"Max", "element-wise maximum of any number of inputs, broadcast"},
    {"MaxPool", "maximum over sliding windows; optional argmax indices"},
    {"Mean", "element-wise mean of any number of inputs, broadcast"},
    {"Min", "element-wise minimum of any number of inputs, broadcast"},
    {"Mod", "remainder with broadcasting (integer or C fmod)"},
    {"Mul", "a * b with broadcasting"},
    {"Neg", "-x, element-wise"},
    {"NegativeLogLikelihoodLoss", "negative log-likelihood loss with weights"},
    {"Not", "logical not, element-wise"},
    {"OneHot", "one-hot vectors from indices, depth and on/off values"},
    {"Or", "logical or with broadcasting"},
    {"PRelu", "x for x >= 0, slope * x below (slope broadcast)"},
    {"Pad", "pad with a constant, reflection or edge values"},
    {"Placeholder", "an input that each Run feeds"},
    {"Pow", "a to the power b with broadcasting"},
    {"QueueClose", "close a FIFO queue: waiting dequeues end"},
    {"QueueDequeue", "take the oldest element of a FIFO queue (blocking)"},
    {"QueueEnqueue", "append an element to a FIFO queue (blocking when full)"},
    {"QueueSize", "the number of elements in a FIFO queue"},
    {"RNN", "simple recurrent layer (forward, reverse, bidirectional)"},
    {"RandomNormal",
     "normal random numbers, counter-based: same for any thread count"},
    {"RandomUniform",
     "uniform random numbers, counter-based: same for any thread count"},
    {"Range", "start, start + delta, ... below limit"},
    {"Reciprocal", "1 / x, element-wise"},
    {"ReduceL1", "sum of absolute values over axes"},
    {"ReduceL2", "square root of the sum of squares over axes"},
    {"ReduceLogSum", "log of the sum over axes"},
    {"ReduceLogSumExp", "log of the sum of exponentials over axes"},
    {"ReduceMax", "maximum over axes"},
    {"ReduceMean", "mean over axes"},
    {"ReduceMin", "minimum over axes"},
    {"ReduceProd", "product over axes"},
    {"ReduceSum",
     "sum over axes (fixed order: same bits for any thread count)"},
    {"ReduceSumSquare", "sum of squares over axes"},
    {"Relu", "max(x, 0), element-wise"},
    {"Reshape", "the same elements in another shape (0 copies, -1 infers)"},
    {"Resize", "resize by scales or sizes: nearest, linear or cubic"},
    {"Round", "round half to even, element-wise"},
    {"ScatterElements", "write updates at indices along an axis"},
    {"ScatterND", "write updates at N-d index tuples"},
    {"Selu", "scaled exponential linear unit"},
    {"Shape", "the shape of its input as int64 (optionally a slice of it)"},
    {"Shrink", "soft/hard shrinkage with lambda and bias"},
    {"Sigmoid", "1 / (1 + e^-x), element-wise"},
    {"Sign", "-1, 0 or 1, element-wise"},
    {"Sin", "sine, element-wise"},
    {"Sinh", "hyperbolic sine, element-wise"},
    {"Size", "the number of elements of its input"},
    {"Sleep", "waits for `micros` without using a core (a blocking op)"},
    {"Slice", "a strided slice along axes"},
    {"Softmax", "softmax along an axis"},
    {"SoftmaxCrossEntropyLoss", "softmax cross-entropy loss with weights"},
    {"Softplus", "log(1 + e^x), element-wise"},
    {"Softsign", "x / (1 + |x|), element-wise"},
    {"SpaceToDepth", "move spatial blocks into depth"},
    {"Spin", "busy-loops for `micros` of CPU time (for experiments)"},
    {"Split", "cut into parts along an axis"},
    {"Sqrt", "square root, element-wise"},
    {"Squeeze", "drop axes of size 1"},
    {"Sub", "a - b with broadcasting"},
    {"Sum", "element-wise sum of any number of inputs, broadcast"},
    {"Tan", "tangent, element-wise"},
    {"Tanh", "hyperbolic tangent, element-wise"},
    {"ThresholdedRelu", "x above alpha, zero elsewhere"},
    {"Tile", "repeat along each axis"},
    {"TopK", "the k largest or smallest along an axis, with indices"},
    {"Transpose", "permute axes"},
    {"Trilu", "keep the upper or lower triangle of the last two axes"},
    {"Unsqueeze", "insert axes of size 1"},
    {"Where", "condition ? x : y with broadcasting"},
    {"Xor", "logical exclusive or with broadcasting"},
};

}  // namespace

std::string BuiltinOpSummary(std::string_view op) {
  for (const Summary& s : kSummaries) {
    if (s.op == op) return std::string(s.text);
  }
  return "";
}

std::vector<std::string_view> BuiltinOpsWithSummary() {
  std::vector<std::string_view> out;
  for (const Summary& s : kSummaries) out.push_back(s.op);
  return out;
}

}  // namespace weft::internal
