// File modes of an evaluation's folders (src/eval/work_slot.h explains who may read what).
// Internal to src/eval.
#ifndef KFORGE_SRC_EVAL_FILE_MODES_H_
#define KFORGE_SRC_EVAL_FILE_MODES_H_

#include <filesystem>

namespace kforge::file_modes {

namespace fs = std::filesystem;

// 0755: folders and programs every user may read and enter.
inline constexpr fs::perms kReadable = fs::perms::owner_all | fs::perms::group_read |
                                       fs::perms::group_exec | fs::perms::others_read |
                                       fs::perms::others_exec;
// 0644: files every user may read.
inline constexpr fs::perms kReadableFile =
    fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read;
// 0711: folders others may pass through but not list.
inline constexpr fs::perms kTraversable =
    fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec;

}  // namespace kforge::file_modes

#endif  // KFORGE_SRC_EVAL_FILE_MODES_H_
