#include "kforge/task/task.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include <fmt/ranges.h>

#include "kforge/core/files.h"
#include "kforge/core/nearest_name.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// "19_ReLU" -> "19_relu"; used when a suite gives no id.
std::string IdFromName(std::string_view name) {
  std::string id;
  for (char c : name) {
    id.push_back(std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c))
                                                              : '_');
  }
  return id;
}

Result<Task> TaskFromJsonlEntry(const fs::path& file, int problem_id) {
  std::ifstream in(file);
  if (!in) {
    return NotFound(fmt::format("cannot open dataset {}: check the path", file.string()));
  }
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json entry = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (entry.is_discarded() || !entry.is_object()) {
      return ParseError(fmt::format("{}:{}: not a JSON object", file.string(), line_no));
    }
    if (!entry.contains("problem_id") || !entry["problem_id"].is_number_integer() ||
        !entry.contains("code") || !entry["code"].is_string()) {
      return ParseError(fmt::format(
          "{}:{}: a KernelBench entry needs an integer 'problem_id' and a string 'code'",
          file.string(), line_no));
    }
    if (entry["problem_id"].get<int>() != problem_id) continue;
    Task task;
    task.problem_id = problem_id;
    task.level = entry.value("level", 0);
    task.name = entry.value("name", fmt::format("problem_{}", problem_id));
    task.id = IdFromName(task.name);
    task.source = entry["code"].get<std::string>();
    task.origin = fmt::format("{}#{}", file.filename().string(), problem_id);
    KFORGE_RETURN_IF_ERROR(ValidateTaskSource(task.source, task.origin));
    return task;
  }
  return NotFound(fmt::format("{} has no entry with problem_id {}", file.string(), problem_id));
}

Result<int> ParseProblemId(std::string_view text, std::string_view spec) {
  int id = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || ptr != text.data() + text.size() || id <= 0) {
    return InvalidArgument(fmt::format(
        "bad task '{}': after '#' comes a positive problem id, e.g. level2.jsonl#9", spec));
  }
  return id;
}

// What tells a suite entry apart from others with the same source: its explicit id, else its
// overrides and non-default policy ("batch_size=16,dim=1024"); "" when it has none of these.
std::string Variant(const Task& task, bool explicit_id) {
  if (explicit_id) return task.id;
  std::vector<std::string> parts;
  for (const auto& o : task.overrides) parts.push_back(fmt::format("{}={}", o.name, o.value_json));
  if (task.policy != PrecisionPolicy::kStrict) {
    parts.push_back(fmt::format("policy={}", PrecisionPolicyName(task.policy)));
  }
  std::string variant = fmt::format("{}", fmt::join(parts, ","));
  for (char& c : variant) c = c == '/' ? '_' : c;  // names become folder names (best/<name>)
  return variant;
}

// Gives every task of a suite a unique identity, and refuses a suite that lists one task twice.
// Identity: the entry's `id` when it has one, else its source plus overrides (and policy). Names
// and ids stay as they are where they are unique; a name shared by several tasks (one KernelBench
// problem at several sizes) becomes the entry's id when it has one ("add_rmsnorm_b128"), else the
// name with the overrides in brackets ("19_ReLU[batch_size=16,dim=1024]", and its derived id
// "19_relu_batch_size_16_dim_1024"). Names key the run store's tasks, their LLM call streams and
// best/<name>, so two tasks of one bench must never share one.
Status MakeTaskIdentitiesUnique(std::vector<Task>& tasks, const std::vector<bool>& explicit_id,
                                const std::string& where) {
  const std::size_t n = tasks.size();
  std::map<std::string, std::size_t> first_by_identity;
  std::vector<std::string> variants(n);
  for (std::size_t i = 0; i < n; ++i) {
    variants[i] = Variant(tasks[i], explicit_id[i]);
    const std::string identity =
        explicit_id[i] ? "id " + tasks[i].id : tasks[i].origin + "|" + variants[i];
    auto [it, inserted] = first_by_identity.emplace(identity, i);
    if (inserted) continue;
    if (explicit_id[i]) {
      return InvalidArgument(fmt::format(
          "{}: tasks {} and {} both have id '{}'; every task of a suite needs its own id", where,
          it->second + 1, i + 1, tasks[i].id));
    }
    return InvalidArgument(fmt::format(
        "{}: tasks {} and {} are the same task ({}{}); list it once, or tell them apart with "
        "different overrides or an `id` each",
        where, it->second + 1, i + 1, tasks[i].origin,
        variants[i].empty() ? "" : " with " + variants[i]));
  }
  std::map<std::string, int> name_count;
  for (const Task& t : tasks) ++name_count[t.name];
  for (std::size_t i = 0; i < n; ++i) {
    Task& t = tasks[i];
    if (name_count[t.name] < 2 || variants[i].empty()) continue;
    // The entry's own id names it best, unless that is another task's name.
    t.name = explicit_id[i] && name_count.count(t.id) == 0
                 ? t.id
                 : fmt::format("{}[{}]", t.name, variants[i]);
    if (!explicit_id[i]) {
      std::string suffix = IdFromName(variants[i]);
      while (!suffix.empty() && suffix.back() == '_') suffix.pop_back();
      t.id = fmt::format("{}_{}", t.id, suffix);
    }
  }
  std::map<std::string, std::size_t> by_name;
  std::map<std::string, std::size_t> by_id;
  auto claim = [&](std::map<std::string, std::size_t>& seen, const std::string& key,
                   std::size_t i, std::string_view what) -> Status {
    auto [it, inserted] = seen.emplace(key, i);
    if (inserted) return Ok();
    return InvalidArgument(fmt::format("{}: tasks {} and {} would both be {} '{}'; give them an "
                                       "`id` each",
                                       where, it->second + 1, i + 1, what, key));
  };
  for (std::size_t i = 0; i < n; ++i) {
    KFORGE_RETURN_IF_ERROR(claim(by_name, tasks[i].name, i, "named"));
    KFORGE_RETURN_IF_ERROR(claim(by_id, tasks[i].id, i, "id"));
  }
  return Ok();
}

Result<Override> OverrideFromToml(const std::string& name, const toml::node& node,
                                  std::string_view where) {
  if (node.is_table()) {
    return InvalidArgument(fmt::format(
        "{}: override '{}' must be a number, boolean, string or array, not a table", where, name));
  }
  std::ostringstream json;
  json << toml::json_formatter{node};
  return Override{name, nlohmann::json::parse(json.str()).dump()};  // compact form
}

// Every key of `table` must be one of `known`: a misspelled key (`overides`) would otherwise be
// ignored, and the task would run at its full size.
Status CheckKeys(const toml::table& table, const std::vector<std::string>& known,
                 std::string_view where) {
  for (const auto& [key, value] : table) {
    const std::string name(key.str());
    if (std::ranges::find(known, name) != known.end()) continue;
    const auto& at = key.source().begin;
    return InvalidArgument(fmt::format("{}{}: unknown key '{}'{}; the keys are {}", where,
                                       at.line > 0 ? fmt::format(" (line {})", at.line) : "",
                                       name, DidYouMean(name, known), fmt::join(known, ", ")));
  }
  return Ok();
}

}  // namespace

std::string_view PrecisionPolicyName(PrecisionPolicy policy) {
  switch (policy) {
    case PrecisionPolicy::kStrict: return "strict";
    case PrecisionPolicy::kTf32: return "tf32";
    case PrecisionPolicy::kMixed: return "mixed";
  }
  return "?";
}

Result<PrecisionPolicy> ParsePrecisionPolicy(std::string_view name) {
  if (name == "strict") return PrecisionPolicy::kStrict;
  if (name == "tf32") return PrecisionPolicy::kTf32;
  if (name == "mixed") return PrecisionPolicy::kMixed;
  return InvalidArgument(
      fmt::format("unknown precision policy '{}': use strict, tf32 or mixed", name));
}

Tolerance ToleranceOf(PrecisionPolicy policy) {
  switch (policy) {
    case PrecisionPolicy::kStrict: return {1e-4, 1e-4};
    case PrecisionPolicy::kTf32: return {1e-3, 1e-3};
    case PrecisionPolicy::kMixed: return {1e-2, 1e-2};
  }
  return {};
}

fs::path KernelBenchDir() {
  if (const char* dir = std::getenv("KFORGE_KERNELBENCH_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return KforgeHome().parent_path() / "shared" / "data" / "kernelbench";
}

Status ValidateTaskSource(std::string_view source, std::string_view origin) {
  static const std::regex kModel(R"(^class\s+Model\s*\()", std::regex::multiline);
  static const std::regex kInputs(R"(^def\s+get_inputs\s*\()", std::regex::multiline);
  static const std::regex kInit(R"(^def\s+get_init_inputs\s*\()", std::regex::multiline);
  std::vector<std::string> missing;
  std::string text(source);
  if (!std::regex_search(text, kModel)) missing.emplace_back("class Model(nn.Module)");
  if (!std::regex_search(text, kInputs)) missing.emplace_back("def get_inputs()");
  if (!std::regex_search(text, kInit)) missing.emplace_back("def get_init_inputs()");
  if (missing.empty()) return Ok();
  return InvalidArgument(fmt::format(
      "task {} is not a KernelBench problem: it lacks {} at the top level (a task defines the "
      "reference Model, get_inputs() and get_init_inputs())",
      origin, fmt::join(missing, ", ")));
}

std::vector<std::string> ModuleGlobals(std::string_view source) {
  static const std::regex kAssign(
      R"(^\s*((?:[A-Za-z_]\w*\s*,\s*)*[A-Za-z_]\w*)\s*,?\s*(?::[^=]*)?=(?!=))");
  static const std::regex kName(R"([A-Za-z_]\w*)");
  std::vector<std::string> names;
  std::size_t body_indent = std::string::npos;  // inside a def or class deeper than this; npos: none
  int depth = 0;                           // open brackets: a continuation line follows
  std::optional<std::string> triple;       // inside a triple-quoted string opened by this
  std::istringstream in{std::string(source)};
  std::string line;
  while (std::getline(in, line)) {
    const bool continuation = depth > 0 || triple.has_value();
    // Track strings and brackets over the line (comments end it).
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (triple) {
        if (line.compare(i, 3, *triple) == 0) {
          triple.reset();
          i += 2;
        }
        continue;
      }
      const char c = line[i];
      if (c == '#') break;
      if (c == '"' || c == '\'') {
        if (line.compare(i, 3, std::string(3, c)) == 0) {
          triple = std::string(3, c);
          i += 2;
          continue;
        }
        for (++i; i < line.size() && line[i] != c; ++i) {
          if (line[i] == '\\') ++i;
        }
        continue;
      }
      if (c == '(' || c == '[' || c == '{') ++depth;
      if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    }
    if (continuation) continue;
    const std::size_t indent = line.find_first_not_of(" \t");
    if (indent == std::string::npos || line[indent] == '#') continue;
    if (body_indent != std::string::npos && indent > body_indent) continue;
    body_indent = std::string::npos;
    const std::string_view text = std::string_view(line).substr(indent);
    if (text.starts_with("def ") || text.starts_with("async def ") || text.starts_with("class ") ||
        text.starts_with("@")) {
      if (!text.starts_with("@")) body_indent = indent;
      continue;
    }
    std::smatch m;
    if (!std::regex_search(line, m, kAssign)) continue;
    const std::string targets = m[1].str();
    for (auto it = std::sregex_iterator(targets.begin(), targets.end(), kName);
         it != std::sregex_iterator(); ++it) {
      if (std::ranges::find(names, it->str()) == names.end()) names.push_back(it->str());
    }
  }
  return names;
}

Status CheckOverrides(const Task& task) {
  const std::vector<std::string> globals = ModuleGlobals(task.source);
  for (const Override& o : task.overrides) {
    if (std::ranges::find(globals, o.name) != globals.end()) continue;
    return InvalidArgument(fmt::format(
        "task {} ({}) has no module-level global '{}' to override{}; its globals: {}", task.name,
        task.origin, o.name, DidYouMean(o.name, globals),
        globals.empty() ? std::string("none") : fmt::format("{}", fmt::join(globals, ", "))));
  }
  return Ok();
}

Status AddOverrides(Task& task, const std::vector<std::string>& name_equals_value) {
  for (const auto& o : name_equals_value) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument(
          fmt::format("--set '{}': write NAME=VALUE, e.g. --set batch_size=16", o));
    }
    std::string value = o.substr(eq + 1);
    if (nlohmann::json::parse(value, nullptr, false).is_discarded()) {
      value = nlohmann::json(value).dump();  // a bare word is a string
    }
    task.overrides.push_back({o.substr(0, eq), value});
  }
  return CheckOverrides(task);
}

Result<Task> LoadTask(std::string_view spec, const fs::path& base_dir) {
  if (spec.empty()) return InvalidArgument("empty task: give a .py file, FILE.jsonl#N or kernelbench:levelL#N");
  std::string_view path_part = spec;
  std::string_view id_part;
  if (auto hash = spec.rfind('#'); hash != std::string_view::npos) {
    path_part = spec.substr(0, hash);
    id_part = spec.substr(hash + 1);
  }
  if (path_part.starts_with("kernelbench:")) {
    std::string_view level = path_part.substr(std::string_view("kernelbench:").size());
    if (!level.starts_with("level") || id_part.empty()) {
      return InvalidArgument(fmt::format(
          "bad task '{}': write kernelbench:levelL#N, e.g. kernelbench:level1#19", spec));
    }
    auto id = ParseProblemId(id_part, spec);
    if (!id) return std::unexpected(id.error());
    fs::path file = KernelBenchDir() / fmt::format("{}.jsonl", level);
    if (!fs::exists(file)) {
      return NotFound(fmt::format(
          "task '{}': {} does not exist (set KFORGE_KERNELBENCH_DIR to the folder holding "
          "level1.jsonl ...)",
          spec, file.string()));
    }
    return TaskFromJsonlEntry(file, *id);
  }
  fs::path path = fs::path(path_part);
  if (path.is_relative() && !base_dir.empty()) path = base_dir / path;
  if (path.extension() == ".jsonl") {
    if (id_part.empty()) {
      return InvalidArgument(fmt::format(
          "task '{}' names a whole dataset; pick one entry with #N (its problem_id), or pass it "
          "as a suite",
          spec));
    }
    auto id = ParseProblemId(id_part, spec);
    if (!id) return std::unexpected(id.error());
    return TaskFromJsonlEntry(path, *id);
  }
  if (!id_part.empty()) {
    return InvalidArgument(fmt::format("bad task '{}': '#N' only follows a .jsonl file", spec));
  }
  if (path.extension() != ".py") {
    return InvalidArgument(fmt::format(
        "task '{}' is neither a .py problem file nor FILE.jsonl#N nor kernelbench:levelL#N", spec));
  }
  auto source = ReadFile(path);
  if (!source) return NotFound(fmt::format("task file {} cannot be read", path.string()));
  Task task;
  task.name = path.stem().string();
  task.id = IdFromName(task.name);
  task.origin = path.string();
  task.source = std::move(*source);
  KFORGE_RETURN_IF_ERROR(ValidateTaskSource(task.source, task.origin));
  return task;
}

Result<Suite> LoadSuite(const fs::path& path) {
  if (path.extension() == ".jsonl") {
    std::ifstream in(path);
    if (!in) return NotFound(fmt::format("cannot open dataset {}", path.string()));
    Suite suite;
    suite.name = path.stem().string();
    std::string line;
    while (std::getline(in, line)) {
      nlohmann::json entry = nlohmann::json::parse(line, nullptr, false);
      if (entry.is_discarded() || !entry.contains("problem_id")) continue;
      auto task = TaskFromJsonlEntry(path, entry["problem_id"].get<int>());
      if (!task) return std::unexpected(task.error());
      suite.tasks.push_back(std::move(*task));
    }
    KFORGE_RETURN_IF_ERROR(MakeTaskIdentitiesUnique(
        suite.tasks, std::vector<bool>(suite.tasks.size(), false), path.string()));
    return suite;
  }
  if (!fs::exists(path)) return NotFound(fmt::format("suite {} does not exist", path.string()));
  toml::table root;
  try {
    root = toml::parse_file(path.string());  // Debian's toml++ reports errors by exception
  } catch (const toml::parse_error& err) {
    return ParseError(fmt::format("{}:{}:{}: {}", path.string(), err.source().begin.line,
                                  err.source().begin.column, err.description()));
  }
  KFORGE_RETURN_IF_ERROR(CheckKeys(root, {"name", "description", "task"}, path.string()));
  Suite suite;
  suite.name = root["name"].value_or(path.stem().string());
  suite.description = root["description"].value_or(std::string());
  const toml::array* tasks = root["task"].as_array();
  if (tasks == nullptr || tasks->empty()) {
    return InvalidArgument(fmt::format("suite {} has no [[task]] entries", path.string()));
  }
  int index = 0;
  std::vector<bool> explicit_id;
  for (const toml::node& node : *tasks) {
    ++index;
    const toml::table* entry = node.as_table();
    std::string where = fmt::format("{} (task {})", path.string(), index);
    if (entry == nullptr) return InvalidArgument(fmt::format("{}: not a table", where));
    KFORGE_RETURN_IF_ERROR(CheckKeys(*entry, {"id", "source", "policy", "overrides"}, where));
    auto source = (*entry)["source"].value<std::string>();
    if (!source) {
      return InvalidArgument(fmt::format(
          "{}: missing 'source' (a .py file, FILE.jsonl#N or kernelbench:levelL#N)", where));
    }
    auto task = LoadTask(*source, path.parent_path());
    if (!task) {
      return std::unexpected(Error{task.error().code, where + ": " + task.error().message});
    }
    auto id = (*entry)["id"].value<std::string>();
    if (id) task->id = *id;
    explicit_id.push_back(id.has_value());
    if (auto policy = (*entry)["policy"].value<std::string>()) {
      auto p = ParsePrecisionPolicy(*policy);
      if (!p) return std::unexpected(Error{p.error().code, where + ": " + p.error().message});
      task->policy = *p;
    }
    if (const toml::table* overrides = (*entry)["overrides"].as_table()) {
      for (const auto& [key, value] : *overrides) {
        auto o = OverrideFromToml(std::string(key.str()), value, where);
        if (!o) return std::unexpected(o.error());
        task->overrides.push_back(std::move(*o));
      }
    }
    if (auto checked = CheckOverrides(*task); !checked) {
      return std::unexpected(Error{checked.error().code, where + ": " + checked.error().message});
    }
    suite.tasks.push_back(std::move(*task));
  }
  KFORGE_RETURN_IF_ERROR(MakeTaskIdentitiesUnique(suite.tasks, explicit_id, path.string()));
  return suite;
}

}  // namespace kforge
