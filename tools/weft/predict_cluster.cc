// weft predict --scheduler ADDRESS / --local-workers N: the same files job
// on a Dask cluster. Dask's client is Python, so the job runs in weft's
// Python package (weft/_dask_job.py), started here with the inputs this
// command expanded, so that both forms predict the same list.
#include "predict_cluster.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli_util.h"

namespace weft::cli {
namespace {

namespace fs = std::filesystem;

// The directory holding the `weft` package: installed, it lies under the
// prefix this executable runs from (bin/weft); from the build tree, in
// <build>/python.
std::string PythonPackageDir() {
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  std::vector<fs::path> candidates;
  if (!error) {
    candidates.push_back(exe.parent_path().parent_path() /
                         WEFT_PYTHON_SITE_RELATIVE);
  }
  candidates.emplace_back(WEFT_PYTHON_BUILD_DIR);
  for (const fs::path& dir : candidates) {
    if (fs::exists(dir / "weft" / "_dask_job.py", error)) return dir.string();
  }
  return "";
}

// Whether `python` imports Dask's distributed: asked before the job, so a
// missing package is said at once.
bool HasDistributed(const std::string& pythonpath) {
  const std::string command = "PYTHONPATH='" + pythonpath + "' " +
                              WEFT_CLUSTER_PYTHON +
                              " -c 'import distributed, weft' 2>/dev/null";
  return std::system(command.c_str()) == 0;
}

}  // namespace

int PredictOnCluster(const PredictArgs& args,
                     const std::vector<std::string>& inputs) {
  if (!args.scheduler.empty() && args.local_workers > 0) {
    return Fail(kExitBadInput,
                "--scheduler and --local-workers: give one (an existing "
                "cluster, or one started here)");
  }
  if (args.inter || args.intra) {
    return Fail(kExitBadInput,
                "--inter/--intra: on a cluster each worker's threads come "
                "from its cores (weft.dask.worker_info); leave them out");
  }
  const std::string package = PythonPackageDir();
  if (package.empty()) {
    return Fail(kExitRunFailed,
                "--scheduler/--local-workers run the job from weft's Python "
                "package, which is not installed: cmake --install build");
  }
  if (!HasDistributed(package)) {
    return Fail(kExitRunFailed,
                "--scheduler/--local-workers need Dask's distributed, which "
                "" WEFT_CLUSTER_PYTHON
                " cannot import: apt-get install python3-distributed");
  }
  // The inputs, NUL-separated (a path may hold any other byte).
  char list[] = "/tmp/weft-predict-inputs-XXXXXX";
  const int fd = mkstemp(list);
  if (fd < 0) return Fail(kExitRunFailed, "cannot write the input list");
  {
    std::ofstream out(list, std::ios::binary);
    for (const std::string& path : inputs) out << path << '\0';
  }
  close(fd);
  std::vector<std::string> argv = {
      WEFT_CLUSTER_PYTHON, "-m",           "weft._dask_job",
      args.model,          "--input-list", list,
      "--output",          args.output,    "--preprocess",
      args.preprocess,     "--batch",      std::to_string(args.batch)};
  if (!args.scheduler.empty()) {
    argv.insert(argv.end(), {"--scheduler", args.scheduler});
  } else {
    argv.insert(
        argv.end(),
        {"--local-workers", std::to_string(args.local_workers),
         "--threads-per-worker", std::to_string(args.threads_per_worker)});
  }
  if (args.partition_size > 0) {
    argv.insert(argv.end(),
                {"--partition-size", std::to_string(args.partition_size)});
  }
  for (const auto& [flag, value] :
       {std::pair{"--tls-ca-file", args.tls_ca_file},
        {"--tls-cert", args.tls_cert},
        {"--tls-key", args.tls_key}}) {
    if (!value.empty()) argv.insert(argv.end(), {flag, value});
  }
  if (args.skip_bad_inputs) argv.push_back("--skip-bad-inputs");
  if (args.no_prefetch) argv.push_back("--no-prefetch");
  if (args.quiet) argv.push_back("--quiet");
  // Ctrl-C reaches the job (same process group), which keeps what it has
  // done; this process only waits for it.
  const ChildExit end = RunChildProcess(std::move(argv), package,
                                        /*child_takes_interrupts=*/true);
  unlink(list);
  if (!end.exited) {
    return Fail(kExitRunFailed, "the cluster job (" WEFT_CLUSTER_PYTHON
                                " -m weft._dask_job) did not finish");
  }
  return end.code;
}

}  // namespace weft::cli
