// weft info: what this machine offers and how weft's "auto" was derived.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <CLI/Version.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_args.h"
#include "cli_json.h"
#include "cli_util.h"
#include "commands.h"
#include "weft/machine.h"

namespace weft::cli {
namespace {

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

std::vector<std::string> SimdFeatures() {
  std::vector<std::string> found;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) found.push_back("sse4.2");
  if (__builtin_cpu_supports("avx")) found.push_back("avx");
  if (__builtin_cpu_supports("avx2")) found.push_back("avx2");
  if (__builtin_cpu_supports("fma")) found.push_back("fma");
  if (__builtin_cpu_supports("avx512f")) found.push_back("avx512f");
  if (__builtin_cpu_supports("avx512bw")) found.push_back("avx512bw");
  if (__builtin_cpu_supports("avx512vl")) found.push_back("avx512vl");
  if (__builtin_cpu_supports("avx512vnni")) found.push_back("avx512vnni");
#endif
  return found;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : " ") + item;
  return out.empty() ? "none" : out;
}

// shape: an array of sizes, a symbolic dimension as its name, one of
// unknown size as null; null for an unknown rank.
nlohmann::json ValueInfoJson(const OnnxValueInfo& v) {
  nlohmann::json shape = nullptr;
  if (v.rank_known) {
    shape = nlohmann::json::array();
    for (const OnnxDim& d : v.dims) {
      if (d.fixed()) {
        shape.push_back(d.size);
      } else if (!d.symbol.empty()) {
        shape.push_back(d.symbol);
      } else {
        shape.push_back(nullptr);
      }
    }
  }
  return {{"name", v.name}, {"type", v.type_name}, {"shape", shape}};
}

std::string OpsetList(const OnnxModelSummary& m) {
  std::string out;
  for (const auto& [domain, version] : m.opsets) {
    out += (out.empty() ? "" : ", ") +
           (domain.empty() ? std::string("ai.onnx") : domain) + " " +
           std::to_string(version);
  }
  return out;
}

// weft info MODEL.onnx: what the model holds and which of its ops weft
// lacks, before anyone runs it.
// Bytes of weights packed for the product micro-kernel when a session is
// created for the model (one intra-op thread: the packing does not depend
// on it), or the error that kept the session from being created.
StatusOr<int64_t> PackedWeightBytes(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(Model model, LoadModel(path));
  SessionOptions options;
  options.inter_op_parallelism_threads = 1;
  options.intra_op_parallelism_threads = 1;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                        Session::Create(std::move(model.file.graph), options));
  return session->prepared_bytes();
}

// weft info GRAPH.json: a weft JSON graph's placeholders, outputs and ops.
int GraphInfo(const std::string& path, bool json) {
  auto loaded = LoadModel(path);
  if (!loaded.ok()) return Fail(kExitBadInput, loaded.status().ToString());
  const GraphFile& file = loaded->file;
  std::map<std::string, int64_t> ops;
  std::vector<const NodeDef*> placeholders;
  for (const NodeDef& node : file.graph.nodes()) {
    ++ops[node.op];
    if (node.op == "Placeholder") placeholders.push_back(&node);
  }
  const auto attr_text = [](const NodeDef& node, const char* name) {
    auto it = node.attrs.find(name);
    return it == node.attrs.end() ? std::string("?") : it->second.DebugString();
  };
  if (json) {
    nlohmann::json out = {{"model", path},
                          {"format", ModelFormatName(ModelFormat::kWeftJson)},
                          {"nodes", file.graph.nodes().size()},
                          {"inputs", nlohmann::json::array()},
                          {"outputs", file.outputs},
                          {"ops", nlohmann::json::array()}};
    for (const NodeDef* node : placeholders) {
      out["inputs"].push_back({{"name", node->name},
                               {"dtype", attr_text(*node, "dtype")},
                               {"shape", attr_text(*node, "shape")}});
    }
    for (const auto& [op, count] : ops) {
      out["ops"].push_back({{"op", op}, {"count", count}});
    }
    PrintJson(out);
    return kExitOk;
  }
  std::printf("graph:       %s (%s, %zu nodes)\n", path.c_str(),
              ModelFormatName(ModelFormat::kWeftJson),
              file.graph.nodes().size());
  std::printf("inputs:\n");
  for (const NodeDef* node : placeholders) {
    std::printf("  %-24s %-16s %s\n", node->name.c_str(),
                attr_text(*node, "dtype").c_str(),
                attr_text(*node, "shape").c_str());
  }
  std::printf("outputs:\n");
  for (const std::string& output : file.outputs) {
    std::printf("  %s\n", output.c_str());
  }
  std::printf("ops (%zu kinds):\n", ops.size());
  for (const auto& [op, count] : ops) {
    std::printf("  %6lld  %s\n", static_cast<long long>(count), op.c_str());
  }
  return kExitOk;
}

int ModelInfo(const std::string& path, bool json) {
  // The format comes from the content (weft/model.h), not the name.
  const StatusOr<ModelFormat> format = DetectModelFileFormat(path);
  if (!format.ok()) return Fail(kExitBadInput, format.status().ToString());
  if (*format == ModelFormat::kWeftJson) return GraphInfo(path, json);
  auto model = InspectOnnxModel(path);
  if (!model.ok() && HasExtension(path, ".json")) {
    return GraphInfo(path, json);  // Its JSON error, as the name promised.
  }
  if (!model.ok()) return Fail(kExitBadInput, model.status().ToString());
  // A model with ops weft lacks still gets its summary; only the packed
  // bytes are then unknown (null in JSON).
  const StatusOr<int64_t> packed = PackedWeightBytes(path);
  int64_t unsupported = 0;
  for (const OnnxOpUse& op : model->ops) unsupported += op.supported ? 0 : 1;
  if (json) {
    nlohmann::json out = {
        {"model", path},
        {"producer", model->producer_name + " " + model->producer_version},
        {"ir_version", model->ir_version},
        {"opsets", nlohmann::json::object()},
        {"inputs", nlohmann::json::array()},
        {"outputs", nlohmann::json::array()},
        {"parameters", model->parameter_count},
        {"parameter_bytes", model->parameter_bytes},
        {"packed_weight_bytes",
         packed.ok() ? nlohmann::json(*packed) : nlohmann::json(nullptr)},
        {"ops", nlohmann::json::array()},
        {"unsupported_ops", unsupported}};
    for (const auto& [domain, version] : model->opsets) {
      out["opsets"][domain.empty() ? "ai.onnx" : domain] = version;
    }
    for (const auto& v : model->inputs)
      out["inputs"].push_back(ValueInfoJson(v));
    for (const auto& v : model->outputs) {
      out["outputs"].push_back(ValueInfoJson(v));
    }
    for (const OnnxOpUse& op : model->ops) {
      out["ops"].push_back({{"domain", op.domain},
                            {"op", op.op_type},
                            {"count", op.count},
                            {"supported", op.supported}});
    }
    PrintJson(out);
    return kExitOk;
  }
  std::printf("model:       %s\n", path.c_str());
  std::printf("producer:    %s %s\n", model->producer_name.c_str(),
              model->producer_version.c_str());
  std::printf("IR version:  %lld\n", static_cast<long long>(model->ir_version));
  std::printf("opsets:      %s\n", OpsetList(*model).c_str());
  std::printf("parameters:  %lld (%.1f MB)\n",
              static_cast<long long>(model->parameter_count),
              static_cast<double>(model->parameter_bytes) / 1e6);
  if (packed.ok()) {
    // The int8 kernels pack at the first Run that reads their weights
    // (docs/kernels.md), so a quantized model shows little here.
    std::printf(
        "packed:      %.1f MB of weights packed for the product "
        "kernel at session creation (int8 weights: at the first Run)\n",
        static_cast<double>(*packed) / 1e6);
  } else {
    std::printf("packed:      unknown (no session: %s)\n",
                packed.status().message().c_str());
  }
  std::printf("inputs:\n");
  for (const auto& v : model->inputs) {
    std::printf("  %-24s %-16s %s\n", v.name.c_str(), v.type_name.c_str(),
                v.ShapeString().c_str());
  }
  std::printf("outputs:\n");
  for (const auto& v : model->outputs) {
    std::printf("  %-24s %-16s %s\n", v.name.c_str(), v.type_name.c_str(),
                v.ShapeString().c_str());
  }
  std::printf("ops (%zu kinds, %lld unsupported):\n", model->ops.size(),
              static_cast<long long>(unsupported));
  for (const OnnxOpUse& op : model->ops) {
    const std::string name =
        op.domain.empty() ? op.op_type : op.domain + "." + op.op_type;
    std::printf("  %6lld  %s%s\n", static_cast<long long>(op.count),
                name.c_str(), op.supported ? "" : "  [unsupported]");
  }
  return kExitOk;
}

}  // namespace

namespace {

// Intel's TensorFlow CPU tuning guide, for this machine: intra-op and
// OMP_NUM_THREADS = NUM_PARALLEL_EXEC_UNITS (the physical cores),
// inter-op = the sockets, KMP_BLOCKTIME 1, KMP_AFFINITY compact over cores.
struct Recipe {
  int intra = 1, inter = 1;
  std::string blocktime = "1";
  std::string affinity = "granularity=fine,compact,1,0";
};

Recipe GuideRecipe(const CpuBudget& budget) {
  return {std::max(1, budget.physical_cores), std::max(1, budget.sockets)};
}

// Why weft's auto differs from the recipe, one line per difference.
std::vector<std::string> RecipeDifferences(const CpuBudget& budget,
                                           const Recipe& recipe, int inter,
                                           int intra, int spin_us,
                                           const std::vector<int>& pins) {
  std::vector<std::string> out;
  if (intra != recipe.intra) {
    out.push_back("intra-op " + std::to_string(intra) + " against " +
                  std::to_string(recipe.intra) +
                  (budget.cgroup_quota_cpus > 0
                       ? ": weft counts the cgroup CPU quota, the guide only "
                         "the cores"
                       : ": set by a setter, option or variable"));
  }
  if (inter != recipe.inter) {
    out.push_back(
        "inter-op " + std::to_string(inter) + " against " +
        std::to_string(recipe.inter) +
        ": the guide sizes inter-op by sockets to avoid oversubscribing; in "
        "weft inter-op and intra-op threads share one core budget, so "
        "inter-op threads cost nothing when idle and let independent "
        "branches overlap");
  }
  out.push_back(
      "spin: weft spins " + std::to_string(spin_us) +
      " us before parking (the guide's KMP_BLOCKTIME=1 is 1000 us; weft "
      "reads it as that if set)");
  out.push_back(pins.empty()
                    ? "pinning: weft does not pin unless asked (the guide's "
                      "KMP_AFFINITY would pin to CPUs " +
                          FormatCpuList(CoresFirstPinOrder(budget)) + ")"
                    : "pinning: CPUs " + FormatCpuList(pins));
  return out;
}

// The SIMD the kernels were built for and what was chosen for this CPU,
// one line each.
void PrintKernelChoices() {
  std::printf("SIMD:                %s\n", Join(SimdFeatures()).c_str());
  std::printf("product tile kernel: %s\n",
              ActiveGemmKernelDescription().c_str());
  std::printf("dynamic products:    %s\n",
              DynamicProductKernelDescription().c_str());
  std::printf("packed products:     %s\n",
              PackedProductKernelDescription().c_str());
  std::printf("int8 product kernel: %s\n",
              ActiveInt8KernelDescription().c_str());
  std::printf("int8 products:       %s\n",
              Int8ProductKernelDescription().c_str());
  std::printf("row functions:       %s\n", MathRowsDescription().c_str());
  std::printf("bf16 units:          %s\n", Bf16UnitsDescription().c_str());
  std::printf("bf16 products:       %s\n",
              Bf16ProductKernelDescription().c_str());
}

// The same choices as `--json` keys.
void AddKernelChoices(nlohmann::json& out) {
  out["simd"] = SimdFeatures();
  out["gemm_kernel"] = ActiveGemmKernelDescription();
  out["dynamic_kernel"] = DynamicProductKernelDescription();
  out["packed_kernel"] = PackedProductKernelDescription();
  out["int8_kernel"] = ActiveInt8KernelDescription();
  out["int8_products"] = Int8ProductKernelDescription();
  out["math_rows"] = MathRowsDescription();
  out["bf16_units"] = Bf16UnitsDescription();
  out["bf16_kernel"] = Bf16ProductKernelDescription();
}

}  // namespace

int InfoCommand(const std::string& model, bool json) {
  if (!model.empty()) return ModelInfo(model, json);
  const CpuBudget& budget = AutoCpuBudget();
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  // Reading the counts also warns, once, about variables weft does not
  // understand.
  const int inter = threading::GetInterOpParallelismThreads();
  const int intra = threading::GetIntraOpParallelismThreads();
  const int spin_us = threading::GetIntraOpSpinUs();
  const std::vector<int> pins = threading::GetIntraOpPinCpus();
  const std::vector<ThreadingVariableReading> variables =
      ReadThreadingVariables();
  const int cores_per_socket =
      std::max(1, budget.physical_cores / std::max(1, budget.sockets));
  const Recipe recipe = GuideRecipe(budget);
  const std::vector<std::string> differences =
      RecipeDifferences(budget, recipe, inter, intra, spin_us, pins);
  const std::string compiler = CompilerName();
  const std::string json_version =
      std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
      std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
      std::to_string(NLOHMANN_JSON_VERSION_PATCH);
  if (json) {
    nlohmann::json environment = nlohmann::json::array();
    for (const ThreadingVariableReading& r : variables) {
      environment.push_back({{"name", r.name},
                             {"value", r.value},
                             {"effect", r.effect},
                             {"understood", r.understood}});
    }
    nlohmann::json derivation = nlohmann::json::array();
    std::istringstream lines(budget.derivation);
    for (std::string line; std::getline(lines, line);) {
      derivation.push_back(line);
    }
    nlohmann::json recipe_json = {{"OMP_NUM_THREADS", recipe.intra},
                                  {"KMP_BLOCKTIME", recipe.blocktime},
                                  {"KMP_AFFINITY", recipe.affinity},
                                  {"differences", differences}};
    AddThreadCounts(recipe_json, recipe.inter, recipe.intra);
    nlohmann::json out = {{"cpu_model", CpuModel()},
                          {"logical_cpus_online", online},
                          {"allowed_cpus", budget.allowed_cpus},
                          {"physical_cores_allowed", budget.physical_cores},
                          {"sockets", budget.sockets},
                          {"cores_per_socket", cores_per_socket},
                          {"numa_nodes", budget.numa_nodes},
                          {"cgroup_quota_cpus", budget.cgroup_quota_cpus},
                          {"auto_threads", budget.threads},
                          {"derivation", derivation},
                          {"environment", environment},
                          {"spin_us", spin_us},
                          {"pin_cpus", pins},
                          {"tuning_guide_recipe", recipe_json},
                          {"versions",
                           {{"weft", WEFT_VERSION},
                            {"compiler", compiler},
                            {"nlohmann_json", json_version},
                            {"CLI11", CLI11_VERSION}}}};
    AddThreadCounts(out, inter, intra);
    AddKernelChoices(out);
    PrintJson(out);
    return kExitOk;
  }
  std::printf("CPU model:           %s\n", CpuModel().c_str());
  std::printf("logical CPUs online: %ld\n", online);
  std::printf("affinity mask:       %s (%zu CPUs)\n",
              FormatCpuList(budget.allowed_cpus).c_str(),
              budget.allowed_cpus.size());
  std::printf(
      "physical cores:      %d among the allowed CPUs (%d socket%s, "
      "%d cores per socket, %d NUMA node%s)\n",
      budget.physical_cores, budget.sockets, budget.sockets == 1 ? "" : "s",
      cores_per_socket, budget.numa_nodes, budget.numa_nodes == 1 ? "" : "s");
  if (budget.cgroup_quota_cpus > 0) {
    std::printf("cgroup CPU quota:    %.2f CPUs\n", budget.cgroup_quota_cpus);
  } else {
    std::printf("cgroup CPU quota:    none\n");
  }
  std::printf("auto thread count:   %d, derived as:\n", budget.threads);
  std::istringstream lines(budget.derivation);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) std::printf("  %s\n", line.c_str());
  }
  std::printf(
      "effective counts:    inter-op %d, intra-op %d; spin %d us; "
      "pinning %s\n",
      inter, intra, spin_us,
      pins.empty() ? "none" : FormatCpuList(pins).c_str());
  if (variables.empty()) {
    std::printf(
        "threading variables: none set (weft reads WEFT_*, TF_*, "
        "OMP_* and KMP_* ones: docs/configuration.md)\n");
  } else {
    std::printf("threading variables:\n");
    for (const ThreadingVariableReading& r : variables) {
      std::printf("  %s=%s: %s\n", r.name.c_str(), r.value.c_str(),
                  r.effect.c_str());
    }
  }
  std::printf(
      "tuning-guide recipe: intra_op_parallelism_threads = "
      "OMP_NUM_THREADS = %d (NUM_PARALLEL_EXEC_UNITS: the physical "
      "cores), inter_op_parallelism_threads = %d (sockets), "
      "KMP_BLOCKTIME=%s, KMP_AFFINITY=%s\n",
      recipe.intra, recipe.inter, recipe.blocktime.c_str(),
      recipe.affinity.c_str());
  std::printf("weft's auto against it:\n");
  for (const std::string& d : differences) std::printf("  %s\n", d.c_str());
  PrintKernelChoices();
  std::printf("versions:            weft %s; %s; nlohmann_json %s; CLI11 %s\n",
              WEFT_VERSION, compiler.c_str(), json_version.c_str(),
              CLI11_VERSION);
  return kExitOk;
}

namespace {

// `weft info`, `weft info --options` and `weft info --passes`: one
// subcommand, three reports.
class InfoCommandLine final : public Command {
 public:
  CLI::App* Declare(CLI::App& app) override {
    CLI::App* command = app.add_subcommand(
        "info",
        "CPU budget, auto thread counts and versions; or what MODEL.onnx "
        "holds");
    command->add_option("MODEL", model_,
                        "an ONNX model: inputs, outputs, parameters, ops "
                        "(with --passes: any graph file)");
    command->add_flag("--json", json_, "print one JSON object");
    command->add_flag(
        "--options", options_,
        "the session options: kind, range, default, what each does");
    command->add_flag("--markdown", markdown_,
                      "with --options: the table docs/configuration.md "
                      "carries");
    command->add_flag("--passes", passes_,
                      "the graph passes; with GRAPH, what each changes in it");
    command
        ->add_option("--disable-pass", disabled_,
                     "with --passes: leave this pass out (repeatable)")
        ->allow_extra_args(false);
    return command;
  }
  bool json() const override { return json_; }
  int Run() override {
    if (options_) return OptionsCommand(json_, markdown_);
    if (passes_) return PassesCommand(model_, disabled_, json_);
    return InfoCommand(model_, json_);
  }

 private:
  std::string model_;
  bool json_ = false;
  bool options_ = false;
  bool markdown_ = false;
  bool passes_ = false;
  std::vector<std::string> disabled_;
};

}  // namespace

std::unique_ptr<Command> MakeInfoCommandLine() {
  return std::make_unique<InfoCommandLine>();
}

}  // namespace weft::cli
