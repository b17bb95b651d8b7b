#include "kforge/e2e/torch_op_export.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "kforge/core/files.h"
#include "kforge/target/backend.h"
#include "kforge/target/target.h"

namespace kforge::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool IsIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// The backend's compile command for a kernel, with {source}, {output} and {include} where the
// build step puts its paths, and the compiler named by its file name (found on PATH there).
Result<json> CompileCommandTemplate(const Backend& backend) {
  auto command = backend.NativeCompile("{source}", "{output}", "{include}");
  if (!command) return std::unexpected(command.error());
  json argv = json::array();
  for (std::size_t i = 0; i < command->argv.size(); ++i) {
    argv.push_back(i == 0 ? fs::path(command->argv[0]).filename().string() : command->argv[i]);
  }
  return argv;
}

constexpr const char* kSetupPy =
    R"PY("""Build step of this package: compiles each KForge kernel into a shared object beside its
source, with the command KForge compiled it with when it checked it (sites.json: "compile")."""

import json
import os
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

PACKAGE = "{package}"


class BuildKernels(build_py):
    def run(self):
        super().run()
        here = os.path.join(self.build_lib, PACKAGE)
        with open(os.path.join(here, "sites.json")) as f:
            doc = json.load(f)
        kernels = os.path.join(here, "kernels")
        for site in doc["sites"]:
            values = {{"source": os.path.join(kernels, site["kernel_source"]),
                      "output": os.path.join(kernels, site["name"] + ".so"),
                      "include": kernels}}
            argv = [arg.format(**values) for arg in doc["compile"]]
            print("building kernel", site["name"], ":", " ".join(argv))
            subprocess.run(argv, check=True)


setup(cmdclass={{"build_py": BuildKernels}})
)PY";

constexpr const char* kInitPy =
    R"PY("""KForge kernels for {model_file} (configuration {config}), exported from the
`kforge e2e` run {run_id} for {target}. Works without KForge: torch and a built kernel are all
it needs.

    import {package}
    model = ...                         # on its device, in its dtype
    handle = {package}.patch(model)     # the sites' modules now call the kernels
    handle.kernels["<site>"].calls      # calls that reached a kernel
    handle.unrouted                     # calls left to the original forward (signature differs)
    handle.undo()

Sites (sites.json): {site_names}.
"""

import json
import os

from . import torch_op

_HERE = os.path.dirname(os.path.abspath(__file__))
_patches = 0


def sites():
    """The kernel sites: module instances, call signature, state order (torch_op's contract)."""
    with open(os.path.join(_HERE, "sites.json")) as f:
        return json.load(f)["sites"]


def patch(model):
    """Routes the model's modules of every site through its kernel; returns a torch_op.Patch."""
    global _patches
    _patches += 1  # each patch registers its operators in a namespace of its own
    kernels = {{s["name"]: os.path.join(_HERE, "kernels", s["name"] + ".so") for s in sites()}}
    return torch_op.patch(model, sites(), kernels, f"{package}_{{_patches}}")
)PY";

// `text`'s lines indented by four spaces (a Markdown code block).
std::string Indented(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    out += "    " + text.substr(start, end == std::string::npos ? std::string::npos : end - start) + "\n";
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string InstallCommands(const std::filesystem::path& package_dir) {
  return fmt::format(
      "python3 -m venv --system-site-packages venv   # sees the installed torch; Debian's system "
      "Python refuses pip installs (PEP 668)\n"
      "venv/bin/pip install --no-build-isolation --no-index {}\n",
      package_dir.string());
}

Result<std::string> ExportTorchOp(const ExportRequest& request) {
  const fs::path sites_file = request.run_dir / "e2e" / "sites.json";
  if (!fs::exists(sites_file)) {
    return InvalidArgument(fmt::format(
        "{} is not a `kforge e2e` run directory (no e2e/sites.json in it); pass the run "
        "directory that `kforge e2e` printed",
        request.run_dir.string()));
  }
  auto text = ReadFile(sites_file);
  if (!text) return std::unexpected(text.error());
  json doc = json::parse(*text, nullptr, false);
  if (!doc.is_object() || doc.value("e2e_sites_version", 0) != 1 || !doc.contains("sites")) {
    return ParseError(
        fmt::format("{}: not an e2e sites document of version 1", sites_file.string()));
  }
  if (doc["sites"].empty()) {
    return InvalidArgument(fmt::format(
        "the run {} put no kernel into the model (see e2e/result.json): nothing to export",
        request.run_dir.string()));
  }
  const std::string run_id = doc.value("run_id", "");
  std::string package = request.package;
  if (package.empty()) {
    package = "kforge_ops_" + run_id.substr(run_id.size() >= 4 ? run_id.size() - 4 : 0);
  }
  if (!IsIdentifier(package)) {
    return InvalidArgument(fmt::format(
        "--package {}: a Python package name is letters, digits and underscores", package));
  }
  std::error_code ec;
  if (fs::exists(request.out_dir) && !fs::is_empty(request.out_dir, ec)) {
    return InvalidArgument(fmt::format("{} exists and is not empty; pass --out with a new folder",
                                       request.out_dir.string()));
  }
  auto target = Target::Parse(doc.value("target", ""));
  if (!target) return std::unexpected(target.error());
  auto backend = NewBackend(*target);
  auto compile = CompileCommandTemplate(*backend);
  if (!compile) return std::unexpected(compile.error());

  const fs::path pkg_dir = request.out_dir / package;
  const fs::path kernels = pkg_dir / "kernels";
  if (auto made = MakeDirs(kernels); !made) return std::unexpected(made.error());
  json sites = json::array();
  std::string names;
  for (json site : doc["sites"]) {
    const fs::path source = site.value("kernel_source", "");
    const std::string name = site.value("name", "");
    const std::string file = name + source.extension().string();
    fs::copy_file(source, kernels / file, fs::copy_options::overwrite_existing, ec);
    if (ec) return IoError(fmt::format("cannot copy {}: {}", source.string(), ec.message()));
    site["kernel_source"] = file;
    site.erase("kernel_file");
    site.erase("task_file");
    sites.push_back(site);
    names += (names.empty() ? "" : ", ") + name;
  }
  const fs::path abi = KforgeHome() / "runner/kforge_runner/abi/kforge_kernel.h";
  fs::copy_file(abi, kernels / "kforge_kernel.h", fs::copy_options::overwrite_existing, ec);
  if (ec) return IoError(fmt::format("cannot copy {}: {}", abi.string(), ec.message()));
  const fs::path torch_op = KforgeHome() / "runner/kforge_runner/e2e/torch_op.py";
  fs::copy_file(torch_op, pkg_dir / "torch_op.py", fs::copy_options::overwrite_existing, ec);
  if (ec) return IoError(fmt::format("cannot copy {}: {}", torch_op.string(), ec.message()));

  const std::string model_file = fs::path(doc.value("model_file", "")).filename().string();
  const json package_doc = {{"run_id", run_id},
                            {"target", doc.value("target", "")},
                            {"model_file", model_file},
                            {"config", doc.value("config", "")},
                            {"implementation", doc.value("implementation", "")},
                            {"compile", *compile},
                            {"sites", sites}};
  const std::string dist = "kforge-ops-" + run_id;
  const std::string pyproject = fmt::format(
      "[build-system]\nrequires = [\"setuptools>=61\", \"wheel\"]\n"
      "build-backend = \"setuptools.build_meta\"\n\n"
      "[project]\nname = \"{}\"\nversion = \"0.1.0\"\n"
      "description = \"KForge kernels for {} ({}), exported from run {}\"\n"
      "requires-python = \">=3.8\"\n"
      "# torch is not declared: the package uses the torch already installed, and pip must never\n"
      "# replace it with another build.\ndependencies = []\n\n"
      "[tool.setuptools]\npackages = [\"{}\"]\n\n"
      "[tool.setuptools.package-data]\n{} = [\"sites.json\", \"kernels/*\"]\n",
      dist, model_file, doc.value("config", ""), run_id, package, package);
  const std::string readme = fmt::format(
      "# {}\n\nKForge kernels for `{}` (configuration `{}`, {}), exported from the `kforge e2e` "
      "run `{}` for `{}` by `kforge export --as torch-op`. Sites: {}.\n\n"
      "Install (torch must already be installed; the build step compiles the kernels with "
      "`{}`):\n\n"
      "{}\nUse:\n\n    import {}\n"
      "    handle = {}.patch(model)   # after model.to(device, dtype)\n\n"
      "Each site's modules then call a custom operator (torch.library) that runs the kernel, with "
      "a fake implementation so that torch.compile traces around it. The patched model's "
      "equivalence with the original was measured by `kforge e2e` (e2e/result.json of the run).\n",
      dist, model_file, doc.value("config", ""), doc.value("implementation", ""), run_id,
      doc.value("target", ""), names, (*compile)[0].get<std::string>(),
      Indented(InstallCommands(".")), package, package);
  const auto init =
      fmt::format(fmt::runtime(kInitPy), fmt::arg("model_file", model_file),
                  fmt::arg("config", doc.value("config", "")), fmt::arg("run_id", run_id),
                  fmt::arg("target", doc.value("target", "")), fmt::arg("package", package),
                  fmt::arg("site_names", names));
  const auto setup = fmt::format(fmt::runtime(kSetupPy), fmt::arg("package", package));
  for (const auto& [path, contents] :
       {std::pair{request.out_dir / "pyproject.toml", pyproject},
        std::pair{request.out_dir / "README.md", readme},
        std::pair{request.out_dir / "setup.py", setup}, std::pair{pkg_dir / "__init__.py", init},
        std::pair{pkg_dir / "sites.json", package_doc.dump(2)}}) {
    if (auto written = WriteFile(path, contents); !written) return std::unexpected(written.error());
  }
  return package;
}

}  // namespace kforge::e2e
