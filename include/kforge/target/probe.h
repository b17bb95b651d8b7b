// Probes of this machine shared by backends: programs on PATH, the runner's Python and what it can
// import, GPUs, OpenCL platforms. Each probe runs once per process and is cached.
//
// Thread-safety: all functions are safe to call from any thread.
#ifndef KFORGE_TARGET_PROBE_H_
#define KFORGE_TARGET_PROBE_H_

#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/env.h"

namespace kforge {

// First line of `program --version`-style output, or empty if the program is absent (asked of
// `env`; not cached).
std::string ProgramVersion(const std::string& program, const std::vector<std::string>& args,
                           const Env& env = Env::Default());

// The Python interpreter the runner uses: $KFORGE_PYTHON if set, else the first of `python3` on
// PATH and /usr/bin/python3 that can import torch; empty if none can.
const std::string& RunnerPython();

// Version of `module` importable by RunnerPython() ("" if it cannot be imported). "torch.cuda"
// answers the device's name or "" for whether torch sees a CUDA device. The common modules are
// asked in one Python start; any other module in one start of its own (each answer cached).
std::string PythonModuleVersion(const std::string& module);

struct OpenClPlatform {
  std::string name;
  std::vector<std::string> devices;  // "CPU: name" / "GPU: name"
};
// Platforms of the installed OpenCL ICD loader (empty when there is none).
const std::vector<OpenClPlatform>& OpenClPlatforms();

// NVIDIA GPUs listed by nvidia-smi -L (empty when none or no driver).
const std::vector<std::string>& NvidiaGpus();

}  // namespace kforge

#endif  // KFORGE_TARGET_PROBE_H_
