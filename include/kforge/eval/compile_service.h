// Compile service: runs vendor compilers for native candidates on a CPU pool, sandboxed, and
// caches the results (shared object, or the compile error) by content hash of everything that
// decides them.
//
// The compiler runs in the sandbox (core/sandbox) as an unprivileged user (nobody when KForge is
// root), with no network, with limits on wall time, memory, output file size, descriptors and
// /tmp, and sees of the host only its toolchain's view (src/eval/toolchain_view.h: the folders
// the compiler itself names) over an empty root, plus its build folder (writable: the source,
// the ABI header, the output). So `#include`, `.incbin` and the like of any other file fail, and
// a compile's outcome depends only on its source, the ABI header, the command and the toolchain.
// Its environment is an allow-list (PATH without private folders, a C locale, the toolkit
// variables below), so /proc/self/environ holds no secret either.
//
// Cache layout: <cache_dir>/<key>/{candidate.so, compile.log, status}; an entry is created in a
// temporary folder and renamed into place, so concurrent compiles of the same source (from this or
// another process) never see half an entry. Builds happen in a private folder under build_root
// that the compiler's user owns; only a regular file named candidate.so is taken from it.
//
// Every compile holds the host's timing gate shared (core/host_gate.h), so no compile runs while
// a timed phase holds it exclusively, in this process or another.
//
// Thread-safety: Compile() and Submit() may be called from any thread.
#ifndef KFORGE_EVAL_COMPILE_SERVICE_H_
#define KFORGE_EVAL_COMPILE_SERVICE_H_

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "kforge/core/error.h"
#include "kforge/core/sandbox.h"
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
  double gate_wait_seconds = 0;    // of which waiting for the host's timing gate
  std::string key;
  std::string isolation;           // Isolation::Describe() of the compile (empty on a hit)
};

struct CompileServiceOptions {
  std::filesystem::path cache_dir;          // empty: DefaultCompileCacheDir()
  // Where builds happen (a folder per compile, owned by the compiler's user); empty:
  // $TMPDIR/kforge-<uid>/builds.
  std::filesystem::path build_root;
  std::size_t threads = 0;                  // 0: one per hardware thread
  std::chrono::seconds timeout{300};        // per compile (wall clock; CPU time: twice this)
  std::uint64_t memory_limit_bytes = 8ull << 30;   // address space of each compiler process
  std::uint64_t output_limit_bytes = 2ull << 30;   // largest file a compiler may write
  std::uint64_t tmp_bytes = 2ull << 30;            // the compile's private /tmp
  // Null: DefaultSandbox(). The compile's isolation is stated in CompileOutcome::isolation.
  std::shared_ptr<const Sandbox> sandbox;
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
