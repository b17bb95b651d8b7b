#include "kforge/profile/capture_files.h"

#include "kforge/core/files.h"
#include "kforge/profile/parsers.h"

namespace kforge::profile {

namespace fs = std::filesystem;

std::string MainExportName(Tool tool) {
  switch (tool) {
    case Tool::kNcu: return "ncu.raw.csv";
    case Tool::kTorch: return "torch.json";
    case Tool::kOpenCl: return "opencl.json";
    case Tool::kNsys: return "nsys.cuda_gpu_kern_sum.csv";
    default: return {};
  }
}

Result<Profile> ParseCaptureFiles(Tool tool, const fs::path& dir) {
  auto read = [&](const char* name) { return ReadFile(dir / name); };
  switch (tool) {
    case Tool::kNcu: {
      auto raw = read("ncu.raw.csv");
      if (!raw) return std::unexpected(raw.error());
      auto p = ParseNcuRawCsv(*raw);
      if (!p) return p;
      if (auto details = read("ncu.details.csv")) {
        if (auto s = AddNcuDetailsCsv(*details, &*p); !s) p->notes.push_back(s.error().message);
      }
      return p;
    }
    case Tool::kTorch: {
      auto text = read("torch.json");
      if (!text) return std::unexpected(text.error());
      return ParseTorchChromeTrace(*text);
    }
    case Tool::kOpenCl: {
      auto text = read("opencl.json");
      if (!text) return std::unexpected(text.error());
      return ParseOpenClEvents(*text);
    }
    case Tool::kNsys: {
      auto text = read("nsys.cuda_gpu_kern_sum.csv");
      if (!text) return std::unexpected(text.error());
      return ParseNsysKernelSumCsv(*text);
    }
    default:
      return InvalidArgument("no capture files for tool " + ToolName(tool));
  }
}

}  // namespace kforge::profile
