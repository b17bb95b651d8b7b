// Small file helpers that return errors as values and name the path in every message.
#ifndef KFORGE_CORE_FILES_H_
#define KFORGE_CORE_FILES_H_

#include <filesystem>
#include <string>
#include <string_view>

#include "kforge/core/error.h"

namespace kforge {

Result<std::string> ReadFile(const std::filesystem::path& path);

// Writes atomically: a temporary file beside `path`, then rename, so readers never see half a file.
// Concurrent writes of one path (threads, processes) each succeed; the last rename wins.
Status WriteFile(const std::filesystem::path& path, std::string_view contents);

// Creates `path` and its parents if needed.
Status MakeDirs(const std::filesystem::path& path);

// Where KForge finds its own data (runner/, templates/, examples/): $KFORGE_HOME if set, else the
// source tree it was built from, else the directory above the running executable's bin/.
std::filesystem::path KforgeHome();

// KForge's cache folder, shared by its processes on this host (compile results, baselines,
// calibrations, the host-wide LLM rate-limit state): $KFORGE_CACHE_DIR if set, else
// $XDG_CACHE_HOME/kforge, else ~/.cache/kforge. Not created here.
std::filesystem::path KforgeCacheDir();

}  // namespace kforge

#endif  // KFORGE_CORE_FILES_H_
