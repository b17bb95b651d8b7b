#include "kforge/target/backend.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kforge {

std::string_view CandidateKindName(CandidateKind kind) {
  switch (kind) {
    case CandidateKind::kNative: return "native";
    case CandidateKind::kOpenCl: return "opencl";
    case CandidateKind::kModule: return "module";
  }
  return "?";
}

Result<CandidateKind> Backend::KindOf(const std::filesystem::path& candidate) const {
  const std::string ext = candidate.extension().string();
  const auto exts = CandidateExtensions();
  const bool own = std::find(exts.begin(), exts.end(), ext) != exts.end();
  const ProgrammingModel model = target().model;
  if (model == ProgrammingModel::kOpenCl && ext == ".py") return CandidateKind::kOpenCl;
  if (model == ProgrammingModel::kTriton || model == ProgrammingModel::kCute ||
      model == ProgrammingModel::kMetal) {
    if (ext == ".py") return CandidateKind::kModule;
  } else if (own) {
    return CandidateKind::kNative;
  } else if (ext == ".py") {
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

std::unique_ptr<Backend> NewBackend(const Target& target) {
  switch (target.model) {
    case ProgrammingModel::kCuda: return NewCudaBackend(target);
    case ProgrammingModel::kTriton: return NewTritonBackend(target);
    case ProgrammingModel::kCute: return NewCuteBackend(target);
    case ProgrammingModel::kHip: return NewHipBackend(target);
    case ProgrammingModel::kSycl: return NewSyclBackend(target);
    case ProgrammingModel::kMetal: return NewMetalBackend(target);
    case ProgrammingModel::kOpenCl: return NewOpenClBackend(target);
    case ProgrammingModel::kCpp: return NewCppBackend(target);
  }
  return nullptr;
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

}  // namespace kforge
