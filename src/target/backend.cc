#include "kforge/target/backend.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "registry.h"

namespace kforge {

std::string_view CandidateKindName(CandidateKind kind) {
  switch (kind) {
    case CandidateKind::kNative: return "native";
    case CandidateKind::kOpenCl: return "opencl";
    case CandidateKind::kModule: return "module";
  }
  return "?";
}

std::string_view StreamHandleName(StreamHandle handle) {
  switch (handle) {
    case StreamHandle::kNone:
      return "none";
    case StreamHandle::kCudaStream:
      return "cuda-stream";
    case StreamHandle::kHipStream:
      return "hip-stream";
    case StreamHandle::kSyclQueue:
      return "sycl-queue";
  }
  return "none";
}

Result<CandidateKind> Backend::KindOf(const std::filesystem::path& candidate) const {
  const std::string ext = candidate.extension().string();
  const auto& exts = format().extensions;
  if (std::find(exts.begin(), exts.end(), ext) != exts.end()) return format().kind;
  if (ext == ".py" && traits().kernelbench_compat) {
    return CandidateKind::kModule;  // KernelBench-style ModelNew (compatibility mode)
  }
  return InvalidArgument(fmt::format(
      "candidate '{}' has ending '{}', but {} candidates end in {}", candidate.string(), ext,
      target().ToString(), fmt::join(exts, " or ")));
}

Result<CompileCommand> Backend::NativeCompile(const std::filesystem::path&,
                                              const std::filesystem::path&,
                                              const std::filesystem::path&) const {
  return InvalidArgument(fmt::format("{} candidates are not compiled by kforge: the runner loads them",
                                     target().ToString()));
}

std::unique_ptr<Backend> NewBackend(const Target& target, const Env& env) {
  return RegistryEntry(target.model).make(target, env);
}

Status CheckRunsHere(const Backend& backend) {
  const Availability a = backend.Probe();
  if (a.usable()) return Ok();
  std::vector<std::string> missing = a.missing;
  if (missing.empty()) missing.emplace_back(a.toolchain ? "no device" : "no toolchain");
  return Unavailable(fmt::format(
      "target {} cannot run here: {} (`kforge targets` shows what each target needs)",
      backend.target().ToString(), fmt::join(missing, "; ")));
}

const ModelTraits& TraitsOf(ProgrammingModel model) {
  static const std::map<ProgrammingModel, ModelTraits> kTraits = [] {
    std::map<ProgrammingModel, ModelTraits> traits;
    for (const RegisteredModel& m : RegisteredModels()) {
      const Target target{.vendor = m.vendors.front(), .device = "", .model = m.model, .arch = 0};
      traits.emplace(m.model, m.make(target, Env::Default())->traits());
    }
    return traits;
  }();
  return kTraits.at(model);
}

const CandidateFormat& CandidateFormatOf(ProgrammingModel model) { return TraitsOf(model).format; }

}  // namespace kforge
