// Compile service: runs vendor compilers for native candidates on a CPU pool and caches the
// results (shared object, or the compile error) by content hash of everything that decides them:
// the source, the exact command line, the compiler binary and the kernel ABI header.
//
// Cache layout: <cache_dir>/<key>/{candidate.so, compile.log, status}; an entry is created in a
// temporary folder and renamed into place, so concurrent compiles of the same source (from this or
// another process) never see half an entry.
//
// Thread-safety: Compile() and Submit() may be called from any thread.
#ifndef KFORGE_EVAL_COMPILE_SERVICE_H_
#define KFORGE_EVAL_COMPILE_SERVICE_H_

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/core/thread_pool.h"
#include "kforge/target/backend.h"

namespace kforge {

struct CompileOutcome {
  bool ok = false;
  std::filesystem::path artifact;  // the shared object, when ok
  std::string diagnostics;         // trimmed for an LLM (TrimDiagnostics)
  std::string full_log;            // the compiler's whole output
  std::vector<std::string> command;
  bool cache_hit = false;
  bool timed_out = false;
  double seconds = 0;              // time spent here (near zero on a hit)
  std::string key;
};

struct CompileServiceOptions {
  std::filesystem::path cache_dir;          // empty: DefaultCompileCacheDir()
  std::size_t threads = 0;                  // 0: one per hardware thread
  std::chrono::seconds timeout{300};        // per compile
};

// $KFORGE_CACHE_DIR/compile, else $XDG_CACHE_HOME/kforge/compile, else ~/.cache/kforge/compile.
std::filesystem::path DefaultCompileCacheDir();

class CompileService {
 public:
  explicit CompileService(CompileServiceOptions options = {});

  // Compiles `source` for `backend` on the calling thread (or answers from the cache). Errors
  // only for an absent toolchain or a broken cache; a compile error is an outcome with ok=false.
  Result<CompileOutcome> Compile(const Backend& backend, const std::filesystem::path& source);

  // The same on the pool. `backend` must outlive the future.
  std::future<Result<CompileOutcome>> Submit(const Backend& backend, std::filesystem::path source);

 private:
  CompileServiceOptions options_;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace kforge

#endif  // KFORGE_EVAL_COMPILE_SERVICE_H_
