// Sandbox: wraps a ProcessSpec so the child runs isolated, and says which isolation it really got.
//
// The bubblewrap sandbox gives: no network (own network namespace), a read-only view of the file
// system except the scratch directory (and private /tmp, /dev/shm as size-limited tmpfs mounts),
// hidden paths replaced by empty directories, its own PID namespace (killing it kills everything
// inside), and, when KForge runs as root, an unprivileged user (nobody) so that the per-user
// process limit holds and files owned by the orchestrator stay unreadable. The view is either
// the whole file system (runners: Python and the device runtime need much of it) or only the
// listed paths over an empty root (compilers: SandboxPolicy::show_host_root = false), so that a
// file outside it cannot be named at all. Resource limits (memory, CPU, processes, descriptors,
// file size) come from ProcessSpec::limits. Without bubblewrap only limits and the user switch
// apply, and Isolation says so: callers report it with every result.
//
// Thread-safety: Wrap() and isolation() are const and may be called from any thread.
#ifndef KFORGE_CORE_SANDBOX_H_
#define KFORGE_CORE_SANDBOX_H_

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kforge/core/subprocess.h"

namespace kforge {

// The user a sandboxed child runs as when KForge runs as root (nobody).
inline constexpr uid_t kUnprivilegedUid = 65534;

struct SandboxPolicy {
  std::filesystem::path scratch_dir;                 // the only writable directory
  // Shown read-only; needed for folders under /tmp, which is private inside the sandbox. With
  // show_host_root = false these are all of the host the child sees: each is shown at its own
  // path, with the symbolic links on the way to it recreated (/lib -> usr/lib, /usr/local/cuda ->
  // cuda-13.0), so programs find it where the host has it.
  std::vector<std::filesystem::path> visible_paths;
  // Replaced by empty directories; applied after visible_paths, so they may lie inside them.
  std::vector<std::filesystem::path> hidden_paths;
  // true: the whole host file system, read-only. false: an empty, read-only root holding only
  // visible_paths, the scratch folder, a minimal /dev (null, zero, random, ...) and /proc of the
  // child's own PID namespace.
  bool show_host_root = true;
  // Sizes of the private /tmp and /dev/shm (tmpfs mounts); 0: the kernel's default (half of the
  // RAM). Writes past the size fail with ENOSPC inside the child.
  std::uint64_t tmp_bytes = 0;
  std::uint64_t shm_bytes = 0;
  bool allow_network = false;
  bool drop_privileges = true;  // run as nobody when started as root
};

// What a sandboxed child actually gets; printed with every verdict.
struct Isolation {
  std::string mechanism;  // "bubblewrap" or "none"
  bool network_isolated = false;
  bool filesystem_read_only = false;
  bool pid_namespace = false;
  bool unprivileged_user = false;
  bool restricted_view = false;     // only SandboxPolicy::visible_paths of the host are shown
  std::uint64_t tmp_bytes = 0;      // size limit of the private /tmp (0: none)
  std::uint64_t shm_bytes = 0;      // size limit of the private /dev/shm (0: none)

  // One line, e.g. "bubblewrap: no network, read-only fs, own pid ns, user nobody".
  std::string Describe() const;
};

class Sandbox {
 public:
  virtual ~Sandbox() = default;
  // Returns `spec` changed to run under `policy`: argv wrapped, uid/gid set, TMPDIR pointed at the
  // scratch directory.
  virtual ProcessSpec Wrap(ProcessSpec spec, const SandboxPolicy& policy) const = 0;
  // The isolation Wrap() provides under `policy`.
  virtual Isolation isolation(const SandboxPolicy& policy) const = 0;

  // Makes `result` describe the wrapped child rather than the wrapper (e.g. a child killed by a
  // signal that the wrapper reports as an exit code). Default: nothing to undo.
  virtual void UnwrapResult(ProcessResult& /*result*/) const {}
};

// Bubblewrap when `bwrap` is installed and works here (probed once), else limits only.
// KFORGE_SANDBOX=none forces the latter (for debugging; reported as such).
std::shared_ptr<const Sandbox> DefaultSandbox();

}  // namespace kforge

#endif  // KFORGE_CORE_SANDBOX_H_
