// The preprocessing recipes of `weft predict`: graphs of image ops from a
// file's path to one item of the model's batch.
#include <cmath>

#include "weft/graph_io.h"
#include "weft/predict.h"

namespace weft {
namespace {

// A graph from a file's path ("path") to its image decoded as RGB, uint8
// [height, width, 3], in node `decoded`.
Graph DecodeFromPath(const std::string& decoded) {
  Graph g;
  g.Placeholder("path", DataType::kString,
                PartialShape(std::vector<int64_t>{}));
  (void)g.AddNode({"bytes", "ReadFile", {"path"}, {}, ""});
  (void)g.AddNode(
      {decoded, "DecodeImage", {"bytes"}, {{"channels", int64_t{3}}}, ""});
  return g;
}

// ToTensor and Normalize with ImageNet's mean and std, from node `from` to
// "item"; channels first unless nhwc.
void AddImagenetNormalize(Graph& g, const std::string& from, bool nhwc) {
  (void)g.AddNode({nhwc ? "item" : "normalized",
                   "Normalize",
                   {from},
                   {{"mean", std::vector<double>{0.485, 0.456, 0.406}},
                    {"std", std::vector<double>{0.229, 0.224, 0.225}},
                    {"scale", 1.0 / 255.0}},
                   ""});
  if (!nhwc) {
    (void)g.AddNode({"item",
                     "Transpose",
                     {"normalized"},
                     {{"perm", std::vector<int64_t>{2, 0, 1}}},
                     ""});
  }
}

// torchvision's ImageNet evaluation transform: Resize(256) (antialiased),
// CenterCrop(224), ToTensor, Normalize(mean, std).
Graph ImagenetGraph(bool nhwc) {
  Graph g = DecodeFromPath("image");
  (void)g.AddNode({"resized",
                   "ResizeBilinear",
                   {"image"},
                   {{"size", std::vector<int64_t>{256}}, {"antialias", true}},
                   ""});
  (void)g.AddNode({"cropped",
                   "CenterCrop",
                   {"resized"},
                   {{"size", std::vector<int64_t>{224, 224}}},
                   ""});
  AddImagenetNormalize(g, "cropped", nhwc);
  return g;
}

// torchvision's ImageNet training transform: RandomResizedCrop(224),
// RandomHorizontalFlip, ToTensor, Normalize; seeded by the input's index.
Graph ImagenetTrainGraph() {
  Graph g = DecodeFromPath("image");
  g.Placeholder("key", DataType::kInt64, PartialShape(std::vector<int64_t>{}));
  (void)g.AddNode(
      {"cropped",
       "RandomResizedCrop",
       {"image", "key"},
       {{"size", std::vector<int64_t>{224, 224}}, {"seed", int64_t{1}}},
       ""});
  (void)g.AddNode({"flipped",
                   "RandomFlipLeftRight",
                   {"cropped", "key"},
                   {{"seed", int64_t{2}}},
                   ""});
  AddImagenetNormalize(g, "flipped", /*nhwc=*/false);
  return g;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> PreprocessRecipes() {
  return {
      {"imagenet",
       "decode (RGB), resize the shorter side to 256 (antialiased), centre "
       "crop 224, scale to [0, 1], normalise by ImageNet's mean and std, "
       "channels first: float32 [3, 224, 224] (torchvision's evaluation "
       "transform)"},
      {"imagenet-nhwc", "as imagenet, channels last: float32 [224, 224, 3]"},
      {"imagenet-train",
       "decode (RGB), random resized crop to 224 (area 8-100 %, aspect 3/4 "
       "to 4/3), random horizontal flip, normalise, channels first, seeded "
       "by the input's index (torchvision's training transform)"},
      {"decode", "decode (RGB) only: uint8 [height, width, 3]"},
  };
}

StatusOr<PreprocessGraph> LoadPreprocess(const std::string& spec) {
  PreprocessGraph out{Graph(), "path", "", "item"};
  if (spec == "imagenet" || spec == "imagenet-nhwc" || spec == "decode" ||
      spec == "imagenet-train") {
    out.graph = spec == "decode"           ? DecodeFromPath("item")
                : spec == "imagenet-train" ? ImagenetTrainGraph()
                                           : ImagenetGraph(spec != "imagenet");
    if (spec == "imagenet-train") out.key_input = "key";
    return out;
  }
  if (spec.find('/') == std::string::npos &&
      spec.find('.') == std::string::npos) {
    std::string names;
    for (const auto& [name, what] : PreprocessRecipes()) {
      names += (names.empty() ? "" : ", ") + name;
    }
    return InvalidArgumentError("--preprocess " + spec + ": not a recipe (" +
                                names + ") or a graph file");
  }
  StatusOr<GraphFile> file = LoadGraph(spec);
  if (!file.ok()) {
    return Status(file.status().code(),
                  "--preprocess: " + file.status().message());
  }
  std::vector<std::string> paths, keys;
  for (const NodeDef& node : file->graph.nodes()) {
    if (node.op != "Placeholder") continue;
    const auto* dtype = node.attrs.count("dtype") != 0
                            ? node.attrs.at("dtype").get_if<DataType>()
                            : nullptr;
    (dtype != nullptr && *dtype == DataType::kInt64 ? keys : paths)
        .push_back(node.name);
  }
  if (paths.size() != 1 || keys.size() > 1 || file->outputs.size() != 1) {
    return InvalidArgumentError(
        "--preprocess " + spec +
        ": the graph must have one string Placeholder (the input's path), "
        "at most one int64 Placeholder (its index) and one output (the "
        "item), not " +
        std::to_string(paths.size() + keys.size()) + " Placeholders and " +
        std::to_string(file->outputs.size()) + " outputs");
  }
  out.path_input = paths[0];
  out.key_input = keys.empty() ? "" : keys[0];
  out.output = file->outputs[0];
  out.graph = std::move(file->graph);
  return out;
}

}  // namespace weft
