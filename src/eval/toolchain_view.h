// Toolchain view: the host paths a compile command needs, found by asking the compiler itself,
// so that the compile sandbox shows those (read-only) and nothing else of the host. Internal to
// src/eval (the compile service is its one user).
//
// What is asked, for a command whose argv[0] is an absolute path:
//   - a dry run of the command (`-###` for gcc/clang drivers and hipcc, `--dryrun` for nvcc,
//     `--acpp-dryrun` for acpp) on an empty source: every program it would start and every
//     absolute path it names (include and library folders, bitcode, the toolkit's root);
//   - for each program that is a gcc/clang driver: `-print-search-dirs` (its install and library
//     folders), `-E -v` on an empty input (its include folders) and `-print-prog-name` of the
//     assembler and linker it starts through PATH;
//   - for each program: the shared libraries the dynamic loader resolves for it (ldd), and a
//     script's interpreter (with perl's @INC);
//   - /etc/ld.so.cache, and the paths of $KFORGE_COMPILE_VIEW (colon separated), an escape hatch
//     for toolchains this misses.
// Nothing under a private place is ever shown, whatever the compiler names: the root itself,
// /etc (but the loader's cache), /root, /home, /var, /run, /srv, /mnt, /media, /boot, /tmp,
// /dev, /proc, /sys and the KForge user's $HOME, except inside the compiler's own installation
// (a toolkit under $HOME stays usable).
//
// Thread-safety: DiscoverToolchainView may be called from any thread.
#ifndef KFORGE_SRC_EVAL_TOOLCHAIN_VIEW_H_
#define KFORGE_SRC_EVAL_TOOLCHAIN_VIEW_H_

#include <filesystem>
#include <string>
#include <vector>

#include "kforge/core/error.h"

namespace kforge {

struct ToolchainView {
  // Absolute, lexically normal, unique; folders and files, as the host names them (symbolic
  // links are resolved by the sandbox, which recreates them).
  std::vector<std::filesystem::path> paths;
};

// The view for `argv` (argv[0] absolute), whose source and output are `source` and `output`.
// `env` is the environment the compile runs with (NAME=VALUE; PATH decides which assembler and
// linker a driver finds). Runs the compiler a few times without compiling, in a fresh folder
// under `probe_root` (0.5-3 s for g++, nvcc, hipcc). Answers are cached by the command's shape
// (argv with the source and output replaced, the compiler binary's identity, PATH): for the
// process, and in `cache_dir` when it is not empty (one file per shape, used again while every
// path in it still exists), so that each `kforge eval` does not ask again.
Result<ToolchainView> DiscoverToolchainView(const std::vector<std::string>& argv,
                                            const std::filesystem::path& source,
                                            const std::filesystem::path& output,
                                            const std::vector<std::string>& env,
                                            const std::filesystem::path& probe_root,
                                            const std::filesystem::path& cache_dir = {});

// True when the view rules never show `path` (the private places listed above), given the
// compiler's installation folder `install_prefix` (may be empty).
bool IsPrivateHostPath(const std::filesystem::path& path,
                       const std::filesystem::path& install_prefix);

}  // namespace kforge

#endif  // KFORGE_SRC_EVAL_TOOLCHAIN_VIEW_H_
