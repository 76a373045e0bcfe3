// The models a server holds, by name and version, and where they come
// from: model files named on the command line, or a repository in Triton's
// layout (DIR/<name>/<version>/model.onnx or model.json, with an optional
// DIR/<name>/config.json). Loading and unloading happen while requests run;
// a request holds its model (a shared_ptr) until it is answered, so one in
// flight on a model being unloaded still completes.
#ifndef WEFT_SRC_SERVE_MODEL_REGISTRY_H_
#define WEFT_SRC_SERVE_MODEL_REGISTRY_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "serve/metrics.h"
#include "serve/served_model.h"
#include "weft/serve.h"
#include "weft/status.h"

namespace weft::serve {

// A model name or version directory that cannot leave the repository: 1 to
// 128 of [A-Za-z0-9_.-], not "." or "..", no leading '.'.
bool IsSafeModelName(const std::string& name);

// A repository model's config.json (Triton's config.pbtxt as JSON):
// max_batch_size, dynamic_batching{...}, parameters{SessionOptions fields},
// applied over the defaults given. Unknown keys are errors naming them.
Status ApplyModelConfig(const std::string& json_text, const std::string& source,
                        BatchingOptions* batching, SessionOptions* session);

// Checks the batching options, naming the field at fault.
Status ValidateBatchingOptions(const BatchingOptions& options);

struct RepositoryEntry {
  std::string name;
  std::optional<int64_t> version;  // The highest version found, if any.
  std::string state;               // "READY", "UNAVAILABLE".
  std::string reason;              // Why not ready, when not.
};

class ModelRegistry {
 public:
  ModelRegistry(const ServerOptions& options, Metrics* metrics);
  ~ModelRegistry();  // Stops every model (no drain).

  // Loads every model the options name: the files, then the repository.
  Status LoadAll();

  // The model serving `name` (version: the one given, or the highest);
  // NotFound naming what is unknown.
  StatusOr<std::shared_ptr<ServedModel>> Find(
      const std::string& name, const std::string& version = "") const;
  std::vector<std::shared_ptr<ServedModel>> All() const;

  // The repository extension. Load reads DIR/<name> again (a new version
  // replaces the served one once it is ready); Unload stops serving `name`
  // at once and lets its requests in flight finish in the background.
  Status Load(const std::string& name);
  Status Unload(const std::string& name);
  std::vector<RepositoryEntry> Index() const;
  bool has_repository() const { return !options_.model_repository.empty(); }

  // Drains and stops every model, each within `drain`.
  void StopAll(std::chrono::milliseconds drain);

 private:
  StatusOr<std::shared_ptr<ServedModel>> LoadFromRepository(
      const std::string& name) const;
  void Put(std::shared_ptr<ServedModel> model);
  // Stops `model` on a thread of its own (unload, replacement).
  void Retire(std::shared_ptr<ServedModel> model);

  const ServerOptions& options_;
  Metrics* const metrics_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<ServedModel>> models_;
  std::map<std::string, std::string> failed_;  // Name -> why, repository.
  std::vector<std::thread> retiring_;
};

}  // namespace weft::serve

#endif  // WEFT_SRC_SERVE_MODEL_REGISTRY_H_
