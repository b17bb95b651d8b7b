#include "kforge/prompt/prompt_renderer.h"

#include <fmt/format.h>

#include <exception>
#include <kainjow/mustache.hpp>

#include "kforge/core/files.h"
#include "kforge/target/backend.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using kainjow::mustache::data;
using kainjow::mustache::mustache;

Result<std::string> LoadFile(const fs::path& dir, const fs::path& relative, std::string_view what) {
  const fs::path path = dir / relative;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return NotFound(fmt::format(
        "{} {} not found (templates folder {}; KFORGE_HOME selects another KForge home)", what,
        path.string(), dir.string()));
  }
  return ReadFile(path);
}

// Outside fenced code blocks, removes trailing blanks and keeps at most one empty line in a row,
// so templates can separate optional sections by blank lines freely; code inside fences (the
// reference, candidates, diagnostics) is left exactly as given. The text ends in one newline.
std::string Tidy(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_code = false;
  int blank_run = 1;  // drops leading blank lines
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? text.size() - pos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string_view stripped = line;
    while (!stripped.empty() &&
           (stripped.back() == ' ' || stripped.back() == '\t' || stripped.back() == '\r')) {
      stripped.remove_suffix(1);
    }
    const bool fence = stripped.starts_with("```");
    if (in_code && !fence) {
      out += line;
      out += '\n';
      continue;
    }
    if (fence) in_code = !in_code;
    if (stripped.empty()) {
      if (blank_run++ == 0) out += '\n';
      continue;
    }
    blank_run = 0;
    out += stripped;
    out += '\n';
  }
  while (out.size() >= 2 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n') {
    out.pop_back();
  }
  if (out.empty() || out.back() != '\n') out += '\n';
  return out;
}

// A file's text as a template value inside a fence: without trailing blank lines, so that the
// closing fence follows the last line.
std::string Code(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' ||
                           text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return std::string(text);
}

// Mustache's standalone rule, applied before rendering: a line holding only section tags
// ({{#x}}, {{^x}}, {{/x}}) or comments ({{! ... }}) contributes no text, whether or not the
// section renders. (kainjow keeps the newline of a standalone tag line in a skipped section.)
// Such a line becomes its tags followed by kTagMark, which keeps kainjow from treating the tags
// as standalone once more; the marks are removed after rendering.
constexpr char kTagMark = '\x01';

std::string StripStandaloneTags(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  std::size_t pos = 0;
  while (pos < source.size()) {
    std::size_t nl = source.find('\n', pos);
    std::size_t stop = nl == std::string_view::npos ? source.size() : nl + 1;
    std::string_view line = source.substr(pos, stop - pos);
    pos = stop;
    std::string_view rest = line;
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    while (!rest.empty() && (rest.back() == '\n' || rest.back() == '\r' || rest.back() == ' ' ||
                             rest.back() == '\t')) {
      rest.remove_suffix(1);
    }
    bool only_tags = !rest.empty();
    std::string_view scan = rest;
    while (only_tags && !scan.empty()) {
      const std::size_t close = scan.find("}}");
      only_tags = scan.size() > 3 && scan.starts_with("{{") &&
                  std::string_view("#^/!").find(scan[2]) != std::string_view::npos &&
                  close != std::string_view::npos;
      if (only_tags) scan.remove_prefix(close + 2);
    }
    if (only_tags) {
      out += rest;
      out += kTagMark;
    } else {
      out += line;
    }
  }
  return out;
}

// Renders the template at `relative` with `values`; values are inserted verbatim.
Result<std::string> Render(const fs::path& dir, const fs::path& relative, const data& values) {
  auto source = LoadFile(dir, relative, "prompt template");
  if (!source) return std::unexpected(std::move(source).error());
  try {
    mustache tmpl(StripStandaloneTags(*source));
    if (!tmpl.is_valid()) {
      return ParseError(
          fmt::format("prompt template {}: {}", (dir / relative).string(), tmpl.error_message()));
    }
    tmpl.set_custom_escape([](const std::string& s) { return s; });
    std::string text = tmpl.render(values);
    std::erase(text, kTagMark);
    if (!tmpl.is_valid()) {
      return ParseError(
          fmt::format("prompt template {}: {}", (dir / relative).string(), tmpl.error_message()));
    }
    return Tidy(text);
  } catch (const std::exception& e) {
    return ParseError(fmt::format("prompt template {}: {}", (dir / relative).string(), e.what()));
  }
}

// "sm_90" for NVIDIA, "gfx942" for AMD; empty when the target does not pin an architecture.
std::string ArchName(const Target& target) {
  if (target.arch == 0) return {};
  if (target.vendor == Vendor::kNvidia) return fmt::format("sm_{}", target.arch);
  if (target.vendor == Vendor::kAmd) return fmt::format("gfx{:x}", target.arch);
  return fmt::format("{}", target.arch);
}

std::string Number(double value) { return fmt::format("{:g}", value); }

// Values every template can use: the target, its candidate format and the task.
data CommonValues(const Task& task, const Target& target) {
  const ModelTraits& traits = TraitsOf(target.model);
  const CandidateFormat& format = traits.format;
  data d{data::type::object};
  d.set("target", target.ToString());
  d.set("vendor", std::string(VendorName(target.vendor)));
  d.set("device", target.device.empty() ? std::string("any") : target.device);
  d.set("model", std::string(ProgrammingModelName(target.model)));
  d.set("model_title", traits.title);
  const std::string arch = ArchName(target);
  if (!arch.empty()) d.set("arch", arch);
  d.set("file_name", format.file_name);
  d.set("fence", format.fence_language);
  d.set("kind", std::string(CandidateKindName(format.kind)));
  d.set("is_native", format.kind == CandidateKind::kNative);
  d.set("is_module", format.kind == CandidateKind::kModule);
  d.set("is_opencl", format.kind == CandidateKind::kOpenCl);
  d.set("requirement", format.requirement);

  d.set("task_name", task.name);
  // A file's name, not its absolute path: the model has no use for this machine's folders.
  d.set("task_origin", task.origin.substr(task.origin.rfind('/') + 1));
  if (task.level > 0) d.set("task_level", fmt::format("{}", task.level));
  d.set("reference_source", Code(task.source));
  const Tolerance tol = ToleranceOf(task.policy);
  d.set("policy", std::string(PrecisionPolicyName(task.policy)));
  d.set("atol", Number(tol.atol));
  d.set("rtol", Number(tol.rtol));
  d.set("policy_strict", task.policy == PrecisionPolicy::kStrict);
  d.set("policy_tf32", task.policy == PrecisionPolicy::kTf32);
  d.set("policy_mixed", task.policy == PrecisionPolicy::kMixed);
  return d;
}

void AddDeviceFacts(const std::optional<DeviceFacts>& facts, data* d) {
  if (!facts) return;
  data lines{data::type::list};
  for (const DeviceFactLine& line : DescribeDeviceFacts(*facts)) {
    data item{data::type::object};
    item.set("label", line.label);
    item.set("value", line.value);
    lines.push_back(item);
  }
  if (!lines.is_empty_list()) {
    d->set("device_facts", lines);
    d->set("has_device_facts", true);
  }
}

}  // namespace

PromptRenderer::PromptRenderer(fs::path templates_dir) : templates_dir_(std::move(templates_dir)) {}

PromptRenderer::PromptRenderer() : PromptRenderer(KforgeHome() / "templates") {}

Result<RenderedPrompt> PromptRenderer::RenderGeneration(const GenerationPromptInputs& in) const {
  const ModelTraits& traits = TraitsOf(in.target.model);
  const CandidateFormat& format = traits.format;
  data d = CommonValues(in.task, in.target);

  // The model's template folder: its conventions and its one-shot example, whose task is the
  // folder's own reference.py or the one all examples share.
  const fs::path example_dir = fs::path("examples") / traits.templates;
  auto conventions = Render(templates_dir_, example_dir / "conventions.mustache", d);
  if (!conventions) return std::unexpected(std::move(conventions).error());
  d.set("conventions", *conventions);

  std::error_code ec;
  const fs::path own_reference = example_dir / "reference.py";
  auto example_reference = LoadFile(templates_dir_,
                                    fs::exists(templates_dir_ / own_reference, ec)
                                        ? own_reference
                                        : fs::path("examples") / "reference.py",
                                    "example");
  if (!example_reference) return std::unexpected(std::move(example_reference).error());
  auto example_candidate = LoadFile(templates_dir_, example_dir / format.file_name, "example");
  if (!example_candidate) return std::unexpected(std::move(example_candidate).error());
  d.set("example_reference", Code(*example_reference));
  d.set("example_candidate", Code(*example_candidate));

  AddDeviceFacts(in.device, &d);

  d.set("pass", std::string(GenerationPassName(in.pass)));
  d.set("functional", in.pass == GenerationPass::kFunctional);
  d.set("optimization", in.pass == GenerationPass::kOptimization);
  d.set("attempt", fmt::format("{}", in.attempt));
  d.set("retry", in.attempt > 1);

  if (in.previous) {
    const PreviousCandidate& p = *in.previous;
    data prev{data::type::object};
    prev.set("file_name", p.file_name.empty() ? format.file_name : p.file_name);
    if (!p.source.empty()) prev.set("source", Code(p.source));
    prev.set("status", p.status);
    prev.set("malformed", p.status == "malformed_answer");
    if (!p.diagnostics.empty()) prev.set("diagnostics", Code(p.diagnostics));
    if (!p.timing.empty()) prev.set("timing", p.timing);
    d.set("previous", prev);
  }

  if (!in.recommendations.empty()) {
    data list{data::type::list};
    for (std::size_t i = 0; i < in.recommendations.size(); ++i) {
      const Recommendation& r = in.recommendations[i];
      data item{data::type::object};
      item.set("number", fmt::format("{}", i + 1));
      item.set("bottleneck", r.bottleneck);
      if (!r.evidence.empty()) item.set("evidence", r.evidence);
      if (!r.expected_gain.empty()) item.set("expected_gain", r.expected_gain);
      data changes{data::type::list};
      for (const std::string& c : r.changes) {
        data change{data::type::object};
        change.set("text", c);
        changes.push_back(change);
      }
      item.set("changes", changes);
      list.push_back(item);
    }
    d.set("recommendations", list);
    d.set("has_recommendations", true);
  }

  if (in.translate_from) {
    const TranslationSource& t = *in.translate_from;
    const ModelTraits& source = TraitsOf(t.target.model);
    const CandidateFormat& source_format = source.format;
    data tr{data::type::object};
    tr.set("source_target", t.target.ToString());
    tr.set("source_model_title", source.title);
    tr.set("source_file_name", t.file_name.empty() ? source_format.file_name : t.file_name);
    tr.set("source_fence", source_format.fence_language);
    tr.set("source_code", Code(t.source));
    d.set("translate_from", tr);
  }

  RenderedPrompt prompt;
  auto system = Render(templates_dir_, "generation/system.mustache", d);
  if (!system) return std::unexpected(std::move(system).error());
  auto user = Render(templates_dir_, "generation/user.mustache", d);
  if (!user) return std::unexpected(std::move(user).error());
  prompt.system = std::move(*system);
  prompt.user = std::move(*user);
  return prompt;
}

Result<RenderedPrompt> PromptRenderer::RenderAnalysis(const AnalysisPromptInputs& in) const {
  data d = CommonValues(in.task, in.target);
  const CandidateFormat& format = CandidateFormatOf(in.target.model);
  d.set("candidate_file_name",
        in.candidate_file_name.empty() ? format.file_name : in.candidate_file_name);
  d.set("candidate_source", Code(in.candidate_source));
  if (!in.timing.empty()) d.set("timing", in.timing);
  if (!in.profile_summary.empty()) d.set("profile_summary", in.profile_summary);
  d.set("max_recommendations", fmt::format("{}", in.max_recommendations));
  AddDeviceFacts(in.device, &d);

  RenderedPrompt prompt;
  auto system = Render(templates_dir_, "analysis/system.mustache", d);
  if (!system) return std::unexpected(std::move(system).error());
  auto user = Render(templates_dir_, "analysis/user.mustache", d);
  if (!user) return std::unexpected(std::move(user).error());
  prompt.system = std::move(*system);
  prompt.user = std::move(*user);
  return prompt;
}

}  // namespace kforge
