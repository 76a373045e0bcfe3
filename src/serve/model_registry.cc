#include "serve/model_registry.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <utility>

#include "weft/config_file.h"
#include "weft/json_depth.h"

namespace weft::serve {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

StatusOr<int64_t> IntegerField(const Json& object, const char* key, int64_t lo,
                               int64_t hi, const std::string& source) {
  const Json& value = object.at(key);
  if (!value.is_number_integer() && !value.is_number_unsigned()) {
    return InvalidArgumentError(source + ": \"" + key +
                                "\" must be an integer, got " + value.dump());
  }
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() > static_cast<uint64_t>(hi)) {
    return InvalidArgumentError(source + ": \"" + key + "\" " + value.dump() +
                                " is above " + std::to_string(hi));
  }
  const int64_t x = value.get<int64_t>();
  if (x < lo || x > hi) {
    return InvalidArgumentError(
        source + ": \"" + key + "\" " + std::to_string(x) + " is outside [" +
        std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return x;
}

Status UnknownKey(const std::string& source, const std::string& where,
                  const std::string& key, const char* known) {
  return InvalidArgumentError(source + ": unknown key \"" + key + "\" in " +
                              where + " (known: " + known + ")");
}

Status ApplyQueuePolicy(const Json& policy, const std::string& source,
                        BatchingOptions* batching) {
  if (!policy.is_object()) {
    return InvalidArgumentError(source +
                                ": \"default_queue_policy\" must be an object");
  }
  for (const auto& [key, value] : policy.items()) {
    if (key == "default_timeout_microseconds") {
      WEFT_ASSIGN_OR_RETURN(
          batching->default_timeout_us,
          IntegerField(policy, key.c_str(), 0,
                       std::numeric_limits<int64_t>::max() / 1000, source));
    } else if (key == "max_queue_size") {
      WEFT_ASSIGN_OR_RETURN(
          int64_t size, IntegerField(policy, key.c_str(), 1, 1 << 20, source));
      batching->max_queue_size = static_cast<int>(size);
    } else {
      return UnknownKey(source, "default_queue_policy", key,
                        "default_timeout_microseconds, max_queue_size");
    }
  }
  return Status::OK();
}

// NOLINTNEXTLINE(readability-function-size)
Status ApplyDynamicBatching(const Json& block, const std::string& source,
                            BatchingOptions* batching) {
  if (!block.is_object()) {
    return InvalidArgumentError(source +
                                ": \"dynamic_batching\" must be an object");
  }
  for (const auto& [key, value] : block.items()) {
    if (key == "preferred_batch_size") {
      if (!value.is_array()) {
        return InvalidArgumentError(
            source + ": \"preferred_batch_size\" must be an array of sizes");
      }
      batching->preferred_batch_size.clear();
      for (const Json& size : value) {
        if (!size.is_number_integer() || size.get<int64_t>() < 1 ||
            size.get<int64_t>() > (1 << 20)) {
          return InvalidArgumentError(source + ": preferred_batch_size " +
                                      size.dump() +
                                      " is not a positive integer");
        }
        batching->preferred_batch_size.push_back(size.get<int>());
      }
    } else if (key == "max_queue_delay_microseconds") {
      WEFT_ASSIGN_OR_RETURN(
          batching->max_queue_delay_us,
          IntegerField(block, key.c_str(), 0, 60'000'000, source));
    } else if (key == "max_queue_size") {
      WEFT_ASSIGN_OR_RETURN(
          int64_t size, IntegerField(block, key.c_str(), 1, 1 << 20, source));
      batching->max_queue_size = static_cast<int>(size);
    } else if (key == "preserve_ordering") {
      if (!value.is_boolean()) {
        return InvalidArgumentError(source +
                                    ": \"preserve_ordering\" must be true or "
                                    "false");
      }
      batching->preserve_ordering = value.get<bool>();
    } else if (key == "priority_levels") {
      WEFT_ASSIGN_OR_RETURN(int64_t levels,
                            IntegerField(block, key.c_str(), 0, 64, source));
      batching->priority_levels = static_cast<int>(levels);
    } else if (key == "default_priority_level") {
      WEFT_ASSIGN_OR_RETURN(int64_t level,
                            IntegerField(block, key.c_str(), 0, 64, source));
      batching->default_priority_level = static_cast<int>(level);
    } else if (key == "default_queue_policy") {
      WEFT_RETURN_IF_ERROR(ApplyQueuePolicy(value, source, batching));
    } else {
      return UnknownKey(source, "dynamic_batching", key,
                        "preferred_batch_size, max_queue_delay_microseconds, "
                        "max_queue_size, preserve_ordering, priority_levels, "
                        "default_priority_level, default_queue_policy");
    }
  }
  return Status::OK();
}

StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path.string() + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The highest numeric version directory of `model_dir` holding a model
// file, and that file.
std::optional<std::pair<int64_t, fs::path>> HighestVersion(
    const fs::path& model_dir) {
  std::optional<std::pair<int64_t, fs::path>> best;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(model_dir, ec)) {
    const std::string version = entry.path().filename().string();
    if (!entry.is_directory() || version.empty() || version.size() > 18 ||
        !std::all_of(version.begin(), version.end(),
                     [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    const int64_t number = std::stoll(version);
    for (const char* file : {"model.onnx", "model.json"}) {
      const fs::path candidate = entry.path() / file;
      if (fs::is_regular_file(candidate, ec) &&
          (!best || number > best->first)) {
        best = std::make_pair(number, candidate);
      }
    }
  }
  return best;
}

std::string StemOf(const std::string& path) {
  return fs::path(path).stem().string();
}

}  // namespace

bool IsSafeModelName(const std::string& name) {
  if (name.empty() || name.size() > 128 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
  });
}

Status ValidateBatchingOptions(const BatchingOptions& options) {
  if (options.max_batch_size < 0) {
    return InvalidArgumentError("max_batch_size must be >= 0");
  }
  if (options.max_queue_size < 1) {
    return InvalidArgumentError("max_queue_size must be >= 1");
  }
  if (options.max_queue_delay_us < 0) {
    return InvalidArgumentError("max_queue_delay_microseconds must be >= 0");
  }
  if (options.default_timeout_us < 0) {
    return InvalidArgumentError("default_timeout_microseconds must be >= 0");
  }
  for (int size : options.preferred_batch_size) {
    if (size < 1 ||
        (options.max_batch_size > 0 && size > options.max_batch_size)) {
      return InvalidArgumentError("preferred_batch_size " +
                                  std::to_string(size) +
                                  " must be from 1 to max_batch_size (" +
                                  std::to_string(options.max_batch_size) + ")");
    }
  }
  if (options.default_priority_level > std::max(1, options.priority_levels)) {
    return InvalidArgumentError("default_priority_level " +
                                std::to_string(options.default_priority_level) +
                                " is past priority_levels");
  }
  return Status::OK();
}

Status ApplyModelConfig(const std::string& json_text, const std::string& source,
                        BatchingOptions* batching, SessionOptions* session) {
  // Triton's configuration nests four levels at most; dump() (which hands
  // "parameters" on as text) recurses once per level.
  constexpr int kMaxDepth = 32;
  if (const std::optional<size_t> at =
          FindJsonNestingPast(json_text, kMaxDepth)) {
    return InvalidArgumentError(
        source + ": objects and arrays nest deeper than " +
        std::to_string(kMaxDepth) + " levels (at byte " + std::to_string(*at) +
        ")");
  }
  Json config;
  try {
    config = Json::parse(json_text);
  } catch (const Json::exception& error) {
    return InvalidArgumentError(source + ": not valid JSON: " + error.what());
  }
  if (!config.is_object()) {
    return InvalidArgumentError(source + ": must be a JSON object");
  }
  for (const auto& [key, value] : config.items()) {
    if (key == "name" || key == "backend" || key == "platform") {
      continue;  // Triton's own; the directory names the model.
    }
    if (key == "max_batch_size") {
      WEFT_ASSIGN_OR_RETURN(
          int64_t size, IntegerField(config, key.c_str(), 0, 1 << 20, source));
      batching->max_batch_size = static_cast<int>(size);
    } else if (key == "dynamic_batching") {
      WEFT_RETURN_IF_ERROR(ApplyDynamicBatching(value, source, batching));
    } else if (key == "parameters") {
      RunConfig run_config;
      run_config.session = *session;
      WEFT_RETURN_IF_ERROR(ApplyConfigText(
          value.dump(), source + " \"parameters\"", &run_config));
      *session = run_config.session;
    } else {
      return UnknownKey(source, "the model configuration", key,
                        "max_batch_size, dynamic_batching, parameters");
    }
  }
  if (Status s = ValidateBatchingOptions(*batching); !s.ok()) {
    return s.WithContext(source);
  }
  return Status::OK();
}

ModelRegistry::ModelRegistry(const ServerOptions& options, Metrics* metrics)
    : options_(options), metrics_(metrics) {}

ModelRegistry::~ModelRegistry() { StopAll(std::chrono::milliseconds(0)); }

Status ModelRegistry::LoadAll() {
  for (const ModelSpec& spec : options_.models) {
    const std::string name = spec.name.empty() ? StemOf(spec.path) : spec.name;
    if (!IsSafeModelName(name)) {
      return InvalidArgumentError(
          "model name '" + name +
          "' must be 1 to 128 of A-Z a-z 0-9 _ . - (not starting with '.'); "
          "give another with --name");
    }
    {
      std::lock_guard lock(mutex_);
      if (models_.count(name) != 0) {
        return InvalidArgumentError("two models are named '" + name +
                                    "'; give one another with --name");
      }
    }
    const BatchingOptions batching = spec.batching.value_or(options_.batching);
    WEFT_RETURN_IF_ERROR(ValidateBatchingOptions(batching).WithContext(name));
    WEFT_ASSIGN_OR_RETURN(
        std::unique_ptr<ServedModel> model,
        ServedModel::Load(name, spec.version, spec.path,
                          spec.session.value_or(options_.session), batching,
                          metrics_, options_.log));
    Put(std::move(model));
  }
  if (!has_repository()) return Status::OK();
  std::error_code ec;
  if (!fs::is_directory(options_.model_repository, ec)) {
    return NotFoundError("--model-repository " + options_.model_repository +
                         ": not a directory");
  }
  std::vector<std::string> names;
  for (const auto& entry :
       fs::directory_iterator(options_.model_repository, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && IsSafeModelName(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<ServedModel> model,
                          LoadFromRepository(name));
    Put(std::move(model));
  }
  return Status::OK();
}

StatusOr<std::shared_ptr<ServedModel>> ModelRegistry::LoadFromRepository(
    const std::string& name) const {
  if (!IsSafeModelName(name)) {
    return InvalidArgumentError("'" + name + "' is not a model name");
  }
  const fs::path dir = fs::path(options_.model_repository) / name;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return NotFoundError("the repository has no model '" + name + "'");
  }
  const auto version = HighestVersion(dir);
  if (!version) {
    return NotFoundError(dir.string() +
                         ": no <version>/model.onnx or <version>/model.json");
  }
  BatchingOptions batching = options_.batching;
  SessionOptions session = options_.session;
  if (fs::exists(dir / "config.json", ec)) {
    WEFT_ASSIGN_OR_RETURN(std::string text, ReadFile(dir / "config.json"));
    WEFT_RETURN_IF_ERROR(ApplyModelConfig(text, (dir / "config.json").string(),
                                          &batching, &session));
  }
  WEFT_ASSIGN_OR_RETURN(
      std::unique_ptr<ServedModel> model,
      ServedModel::Load(name, version->first, version->second.string(), session,
                        batching, metrics_, options_.log));
  return std::shared_ptr<ServedModel>(std::move(model));
}

void ModelRegistry::Put(std::shared_ptr<ServedModel> model) {
  std::shared_ptr<ServedModel> replaced;
  {
    std::lock_guard lock(mutex_);
    failed_.erase(model->name());
    auto& slot = models_[model->name()];
    replaced = std::move(slot);
    slot = std::move(model);
  }
  if (replaced) Retire(std::move(replaced));
}

void ModelRegistry::Retire(std::shared_ptr<ServedModel> model) {
  const std::chrono::milliseconds drain(30'000);
  std::lock_guard lock(mutex_);
  retiring_.emplace_back(
      [model = std::move(model), drain] { model->Stop(drain); });
}

StatusOr<std::shared_ptr<ServedModel>> ModelRegistry::Find(
    const std::string& name, const std::string& version) const {
  std::lock_guard lock(mutex_);
  auto it = models_.find(name);
  if (it == models_.end()) {
    return NotFoundError("unknown model '" + name + "'");
  }
  if (!version.empty() && version != std::to_string(it->second->version())) {
    return NotFoundError("model '" + name + "' has no version '" + version +
                         "' loaded (it serves version " +
                         std::to_string(it->second->version()) + ")");
  }
  return it->second;
}

std::vector<std::shared_ptr<ServedModel>> ModelRegistry::All() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<ServedModel>> all;
  for (const auto& [name, model] : models_) all.push_back(model);
  return all;
}

Status ModelRegistry::Load(const std::string& name) {
  if (!has_repository()) {
    return FailedPreconditionError(
        "the server has no --model-repository to load models from");
  }
  StatusOr<std::shared_ptr<ServedModel>> model = LoadFromRepository(name);
  if (!model.ok()) {
    std::lock_guard lock(mutex_);
    if (IsSafeModelName(name)) failed_[name] = model.status().message();
    return model.status();
  }
  Put(std::move(*model));
  return Status::OK();
}

Status ModelRegistry::Unload(const std::string& name) {
  std::shared_ptr<ServedModel> model;
  {
    std::lock_guard lock(mutex_);
    auto it = models_.find(name);
    if (it == models_.end()) {
      return NotFoundError("unknown model '" + name + "'");
    }
    model = std::move(it->second);
    models_.erase(it);
  }
  Retire(std::move(model));
  return Status::OK();
}

std::vector<RepositoryEntry> ModelRegistry::Index() const {
  std::vector<RepositoryEntry> entries;
  std::lock_guard lock(mutex_);
  std::map<std::string, RepositoryEntry> by_name;
  if (has_repository()) {
    std::error_code ec;
    for (const auto& entry :
         fs::directory_iterator(options_.model_repository, ec)) {
      const std::string name = entry.path().filename().string();
      if (!entry.is_directory() || !IsSafeModelName(name)) continue;
      RepositoryEntry& e = by_name[name];
      e.name = name;
      e.state = "UNAVAILABLE";
      if (auto version = HighestVersion(entry.path())) {
        e.version = version->first;
      }
      auto failed = failed_.find(name);
      e.reason = failed != failed_.end() ? failed->second : "unloaded";
    }
  }
  for (const auto& [name, model] : models_) {
    RepositoryEntry& e = by_name[name];
    e = {name, model->version(), "READY", ""};
  }
  for (auto& [name, entry] : by_name) entries.push_back(std::move(entry));
  return entries;
}

void ModelRegistry::StopAll(std::chrono::milliseconds drain) {
  std::vector<std::shared_ptr<ServedModel>> models;
  std::vector<std::thread> retiring;
  {
    std::lock_guard lock(mutex_);
    for (auto& [name, model] : models_) models.push_back(model);
    retiring.swap(retiring_);
  }
  // Every model drains at the same time, each within `drain`.
  std::vector<std::thread> stopping;
  for (auto& model : models) {
    stopping.emplace_back([model, drain] { model->Stop(drain); });
  }
  for (std::thread& t : stopping) t.join();
  for (std::thread& t : retiring) t.join();
}

}  // namespace weft::serve
