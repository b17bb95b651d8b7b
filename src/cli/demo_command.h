// `kforge demo`: replays a recorded conversation of examples/demo/ (a manifest: demo.toml, the
// optimization story; repair.toml, a compile error and its fix) through the real harness on the
// CPU (cpu/opencl on PoCL: real compilation, execution and timing) and tells its story: each
// candidate's pass and verdict, and how much faster the final kernel is than the first correct one.
#ifndef KFORGE_SRC_CLI_DEMO_COMMAND_H_
#define KFORGE_SRC_CLI_DEMO_COMMAND_H_

#include <CLI/CLI.hpp>

namespace kforge {

void AddDemoCommand(CLI::App& app);

}  // namespace kforge

#endif  // KFORGE_SRC_CLI_DEMO_COMMAND_H_
