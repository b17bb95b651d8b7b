// `kforge calibrate --target T`: measure the device's copy bandwidth and matrix rates and store
// them for the physics floor and speed-of-light fractions (eval/calibration.h).
#ifndef KFORGE_SRC_CLI_CALIBRATE_COMMAND_H_
#define KFORGE_SRC_CLI_CALIBRATE_COMMAND_H_

#include <CLI/CLI.hpp>

namespace kforge {

void AddCalibrateCommand(CLI::App& app);

}  // namespace kforge

#endif  // KFORGE_SRC_CLI_CALIBRATE_COMMAND_H_
