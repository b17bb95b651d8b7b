#include "calibrate_command.h"
#include "exit_codes.h"

#include <fmt/format.h>

#include <memory>
#include <string>

#include "kforge/eval/calibration.h"
#include "kforge/target/backend.h"
#include "kforge/target/target.h"

namespace kforge {
namespace {

struct CalibrateArgs {
  std::string target;
  bool show = false;
};

int RunCalibrate(const CalibrateArgs& args) {
  auto target = Target::Parse(args.target);
  if (!target) {
    fmt::print(stderr, "kforge calibrate: {}\n", target.error().message);
    return 2;
  }
  auto backend = NewBackend(*target);
  if (auto usable = CheckRunsHere(*backend); !usable) {
    fmt::print(stderr, "kforge calibrate: {}\n", usable.error().message);
    return 3;
  }
  fmt::print("measuring copy bandwidth and matrix rates on {} (about a minute)...\n",
             backend->RunnerDevice());
  std::fflush(stdout);
  auto calibration = MeasureCalibration(*backend, args.target, EvalOptions{});
  if (!calibration) {
    fmt::print(stderr, "kforge calibrate: {}\n", calibration.error().message);
    return 3;
  }
  fmt::print("{}", calibration->ToText());
  if (auto saved = SaveCalibration(*calibration); !saved) {
    fmt::print(stderr, "kforge calibrate: {}\n", saved.error().message);
    return 3;
  }
  fmt::print("stored in {}\n", CalibrationPath(calibration->device_name).string());
  return 0;
}

}  // namespace

void AddCalibrateCommand(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand(
      "calibrate",
      "Measure the device of a target (copy bandwidth, matrix rates per dtype) and store it: "
      "`kforge eval --time` then reports each timing's speed-of-light fraction and rejects "
      "times below the physics floor.");
  cmd->footer(ExitCodesFooter("calibrate"));
  cmd->add_option("-t,--target", args->target, "Target vendor[-device]/model, e.g. nvidia/cuda")
      ->required();
  cmd->callback([args] {
    int code = RunCalibrate(*args);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace kforge
