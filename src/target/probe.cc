#include "kforge/target/probe.h"

#include <dlfcn.h>
#include <fmt/format.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "kforge/core/subprocess.h"

namespace kforge {
namespace {

std::string FirstLine(const std::string& text) {
  std::size_t start = text.find_first_not_of(" \n\r\t");
  if (start == std::string::npos) return {};
  std::size_t end = text.find('\n', start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

bool CanImportTorch(const std::string& python) {
  ProcessSpec spec;
  // find_spec answers without importing torch (which takes a second or more).
  spec.argv = {python, "-c",
               "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"};
  spec.timeout = std::chrono::seconds(60);
  auto r = RunProcess(spec);
  return r && r->state == ProcessState::kDone;
}

// One Python start answers every module question: "name version" per line.
const std::map<std::string, std::string>& PythonModules() {
  static std::once_flag once;
  static std::map<std::string, std::string> modules;
  std::call_once(once, [] {
    if (RunnerPython().empty()) return;
    const char* script = R"PY(
import importlib
for name in ["torch", "numpy", "triton", "pyopencl", "cutlass"]:
    try:
        m = importlib.import_module(name)
        print(name, getattr(m, "__version__", "installed"))
    except Exception:
        pass
try:
    import torch
    if torch.cuda.is_available():
        print("torch.cuda", torch.cuda.get_device_name(0).replace(" ", "_"))
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        print("torch.mps.available", "yes")
    if hasattr(torch, "mps") and hasattr(torch.mps, "compile_shader"):
        print("torch.mps", torch.__version__)
except Exception:
    pass
)PY";
    ProcessSpec spec;
    spec.argv = {RunnerPython(), "-c", script};
    spec.timeout = std::chrono::seconds(120);
    auto r = RunProcess(spec);
    if (!r) return;
    std::istringstream lines(r->stdout_text);
    std::string name, version;
    while (lines >> name >> version) modules[name] = version;
  });
  return modules;
}

}  // namespace

std::string ProgramVersion(const std::string& program, const std::vector<std::string>& args,
                           const Env& env) {
  std::string path = env.FindProgram(program);
  if (path.empty()) return {};
  ProcessSpec spec;
  spec.argv = {path};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = std::chrono::seconds(30);
  auto r = env.Run(spec);
  if (!r) return {};
  std::string line = FirstLine(r->stdout_text);
  return line.empty() ? FirstLine(r->stderr_text) : line;
}

const std::string& RunnerPython() {
  static std::once_flag once;
  static std::string python;
  std::call_once(once, [] {
    if (const char* forced = std::getenv("KFORGE_PYTHON"); forced != nullptr && *forced != '\0') {
      python = forced;
      return;
    }
    for (const char* candidate : {"python3", "/usr/bin/python3"}) {
      std::string path = FindProgram(candidate);
      if (!path.empty() && CanImportTorch(path)) {
        python = path;
        return;
      }
    }
  });
  return python;
}

// A module the one-start list does not ask for: imported in a Python start of its own.
std::string ImportedModuleVersion(const std::string& module) {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  std::lock_guard lock(mu);
  if (auto it = cache.find(module); it != cache.end()) return it->second;
  std::string version;
  const bool plain_name = !module.empty() && std::all_of(module.begin(), module.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.';
  });
  if (plain_name && !RunnerPython().empty()) {
    ProcessSpec spec;
    spec.argv = {RunnerPython(), "-c",
                 fmt::format("import importlib; m = importlib.import_module('{}'); "
                             "print(getattr(m, '__version__', 'installed'))",
                             module)};
    spec.timeout = std::chrono::seconds(120);
    if (auto r = RunProcess(spec); r && r->state == ProcessState::kDone && r->exit_code == 0) {
      version = FirstLine(r->stdout_text);
    }
  }
  cache[module] = version;
  return version;
}

std::string PythonModuleVersion(const std::string& module) {
  static const std::set<std::string> kAskedTogether = {
      "torch",    "numpy", "triton", "pyopencl", "cutlass", "torch.cuda", "torch.mps.available",
      "torch.mps"};
  if (!kAskedTogether.contains(module)) return ImportedModuleVersion(module);
  const auto& modules = PythonModules();
  auto it = modules.find(module);
  return it == modules.end() ? std::string() : it->second;
}

const std::vector<OpenClPlatform>& OpenClPlatforms() {
  static std::once_flag once;
  static std::vector<OpenClPlatform> platforms;
  std::call_once(once, [] {
    // dlopen keeps the ICD loader an optional run-time dependency of kforge.
    void* lib = ::dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return;
    using GetPlatformIds = cl_int (*)(cl_uint, cl_platform_id*, cl_uint*);
    using GetPlatformInfo = cl_int (*)(cl_platform_id, cl_platform_info, size_t, void*, size_t*);
    using GetDeviceIds = cl_int (*)(cl_platform_id, cl_device_type, cl_uint, cl_device_id*,
                                    cl_uint*);
    using GetDeviceInfo = cl_int (*)(cl_device_id, cl_device_info, size_t, void*, size_t*);
    auto get_platform_ids = reinterpret_cast<GetPlatformIds>(::dlsym(lib, "clGetPlatformIDs"));
    auto get_platform_info = reinterpret_cast<GetPlatformInfo>(::dlsym(lib, "clGetPlatformInfo"));
    auto get_device_ids = reinterpret_cast<GetDeviceIds>(::dlsym(lib, "clGetDeviceIDs"));
    auto get_device_info = reinterpret_cast<GetDeviceInfo>(::dlsym(lib, "clGetDeviceInfo"));
    if (!get_platform_ids || !get_platform_info || !get_device_ids || !get_device_info) return;
    std::array<cl_platform_id, 16> ids{};
    cl_uint count = 0;
    if (get_platform_ids(ids.size(), ids.data(), &count) != CL_SUCCESS) return;
    for (cl_uint i = 0; i < count && i < ids.size(); ++i) {
      std::array<char, 256> name{};
      get_platform_info(ids[i], CL_PLATFORM_NAME, name.size() - 1, name.data(), nullptr);
      OpenClPlatform platform{.name = name.data(), .devices = {}};
      std::array<cl_device_id, 16> devices{};
      cl_uint device_count = 0;
      if (get_device_ids(ids[i], CL_DEVICE_TYPE_ALL, devices.size(), devices.data(),
                         &device_count) == CL_SUCCESS) {
        for (cl_uint d = 0; d < device_count && d < devices.size(); ++d) {
          std::array<char, 256> device_name{};
          cl_device_type type = 0;
          get_device_info(devices[d], CL_DEVICE_NAME, device_name.size() - 1, device_name.data(),
                          nullptr);
          get_device_info(devices[d], CL_DEVICE_TYPE, sizeof(type), &type, nullptr);
          platform.devices.push_back(fmt::format(
              "{}: {}", (type & CL_DEVICE_TYPE_GPU) ? "GPU" : (type & CL_DEVICE_TYPE_CPU) ? "CPU"
                                                                                         : "other",
              device_name.data()));
        }
      }
      platforms.push_back(std::move(platform));
    }
  });
  return platforms;
}

const std::vector<std::string>& NvidiaGpus() {
  static std::once_flag once;
  static std::vector<std::string> gpus;
  std::call_once(once, [] {
    std::string smi = FindProgram("nvidia-smi");
    if (smi.empty()) return;
    ProcessSpec spec;
    spec.argv = {smi, "-L"};
    spec.timeout = std::chrono::seconds(30);
    auto r = RunProcess(spec);
    if (!r || r->state != ProcessState::kDone) return;
    std::istringstream lines(r->stdout_text);
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with("GPU ")) gpus.push_back(line);
    }
  });
  return gpus;
}

}  // namespace kforge
