#include "toolchain_view.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>

#include "kforge/core/files.h"
#include "kforge/core/hash.h"
#include "kforge/core/subprocess.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

bool IsUnder(const fs::path& path, const fs::path& root) {
  if (root.empty()) return false;
  auto [r, p] = std::mismatch(root.begin(), root.end(), path.begin(), path.end());
  return r == root.end() || (std::next(r) == root.end() && r->empty());
}

fs::path Normal(const fs::path& p) {
  fs::path n = p.lexically_normal();
  std::string s = n.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// Splits a line as a shell would for the quoting compilers print: double and single quotes,
// backslash escapes inside double quotes.
std::vector<std::string> SplitWords(std::string_view line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < line.size()) {
        word.push_back(line[++i]);
      } else {
        word.push_back(c);
      }
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::string EnvValue(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& e : env) {
    if (e.size() > name.size() && e.starts_with(name) && e[name.size()] == '=') {
      return e.substr(name.size() + 1);
    }
  }
  return {};
}

std::vector<std::string> SplitColons(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    std::size_t colon = list.find(':');
    std::string_view item = list.substr(0, colon);
    if (!item.empty()) out.emplace_back(item);
    list = colon == std::string_view::npos ? std::string_view() : list.substr(colon + 1);
  }
  return out;
}

std::string FindInPath(const std::string& name, const std::string& path_list) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  for (const auto& dir : SplitColons(path_list)) {
    std::string candidate = dir + "/" + name;
    struct stat st{};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return {};
}

// The folder above the one holding the program's real file: /usr for /usr/bin/g++, the
// toolkit's root for .../cuda-13.0/bin/nvcc.
fs::path InstallPrefix(const fs::path& program) {
  std::error_code ec;
  fs::path real = fs::canonical(program, ec);
  if (ec) real = program;
  return real.parent_path().parent_path();
}

struct Probe {
  std::vector<std::string> env;
  fs::path probe_dir;

  // Stdout and stderr of a command that is only asked questions (never compiles anything).
  std::string Ask(std::vector<std::string> argv) const {
    ProcessSpec spec;
    spec.argv = std::move(argv);
    spec.env = env;
    spec.cwd = probe_dir;
    spec.timeout = std::chrono::seconds(60);
    spec.max_output_bytes = 4 << 20;
    auto r = RunProcess(spec);
    if (!r) return {};
    return r->stdout_text + "\n" + r->stderr_text;
  }
};

class ViewBuilder {
 public:
  ViewBuilder(const Probe& probe, std::string path_list)
      : probe_(probe), path_list_(std::move(path_list)) {}

  void AllowPrefix(const fs::path& prefix) { prefixes_.push_back(Normal(prefix)); }

  // Adds `path` when it exists and is not private; returns whether it was added.
  bool Add(const fs::path& raw) {
    if (!raw.is_absolute()) return false;
    const fs::path p = Normal(raw);
    std::error_code ec;
    if (!fs::exists(p, ec)) return false;
    if (Private(p)) return false;
    paths_.insert(p);
    return true;
  }

  // Adds a program the toolchain starts, and once: its libraries, its interpreter, and, for a
  // gcc/clang driver, what the driver itself finds.
  void AddProgram(const std::string& name) {
    std::string found = FindInPath(name, path_list_);
    if (found.empty()) return;
    const fs::path program = Normal(found);
    if (!programs_.insert(program).second) return;
    AllowPrefix(InstallPrefix(program));
    Add(program);
    std::error_code ec;
    const fs::path real = fs::canonical(program, ec);
    const std::string head = Head(ec ? program : real);
    if (head.starts_with("\x7f" "ELF")) {
      AddLibraries(program);
    } else if (head.starts_with("#!")) {
      AddInterpreter(program, head);
    }
    const std::string base = program.filename().string();
    if (IsDriverName(base)) AddDriverDirs(program);
  }

  // Every absolute path a dry run names, and every program it starts.
  void AddDryRun(const std::string& output, bool nvcc_style) {
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);) {
      bool command = false;
      if (nvcc_style) {
        if (!line.starts_with("#$ ")) continue;
        line = line.substr(3);
        command = true;
      } else if (line.starts_with(" ")) {
        command = true;
      } else if (line.find('=') == std::string::npos || line.starts_with("Configured with") ||
                 line.find(' ') < line.find('=')) {
        continue;  // banners: "Target: ...", "Configured with: ... --prefix=/usr", versions
      }
      auto words = SplitWords(line);
      if (words.empty()) continue;
      const std::string& first = words.front();
      const std::size_t eq = first.find('=');
      if (eq != std::string::npos && !first.starts_with("-")) {
        // NAME=VALUE: folders, or a folder list (PATH is only used to find programs).
        const std::string name = first.substr(0, eq);
        const std::string value = Expand(line.substr(line.find('=') + 1));
        assigned_[name] = value;
        if (name == "PATH") {
          path_list_ = value + ":" + path_list_;
          continue;
        }
        if (name == "COLLECT_GCC_OPTIONS") continue;
        if (name == "COLLECT_GCC" || name == "COLLECT_LTO_WRAPPER") {
          AddProgram(value);
          continue;
        }
        for (const auto& word : SplitWords(value)) {
          for (const auto& item : SplitColons(word)) AddPathWord(item);
        }
        continue;
      }
      if (!command) continue;
      AddProgram(Expand(first));
      for (std::size_t i = 1; i < words.size(); ++i) AddPathWord(Expand(words[i]));
    }
  }

  std::vector<fs::path> Paths() const { return {paths_.begin(), paths_.end()}; }

 private:
  // gcc, x86_64-linux-gnu-g++-12, clang++-15, icpx: drivers that answer -print-search-dirs.
  static bool IsDriverName(const std::string& base) {
    static const std::regex kDriver(R"(^(.*-)?(gcc|g\+\+|c\+\+|cc|clang|clang\+\+|icpx|icx)(-[0-9.]+)?$)");
    return std::regex_match(base, kDriver);
  }

  // $NAME and ${NAME} replaced by what the dry run assigned them.
  std::string Expand(const std::string& word) const {
    if (word.find('$') == std::string::npos) return word;
    std::string out;
    for (std::size_t i = 0; i < word.size(); ++i) {
      if (word[i] != '$') {
        out.push_back(word[i]);
        continue;
      }
      const bool braces = i + 1 < word.size() && word[i + 1] == '{';
      std::size_t begin = i + (braces ? 2 : 1);
      std::size_t end = begin;
      while (end < word.size() && (std::isalnum(static_cast<unsigned char>(word[end])) ||
                                   word[end] == '_')) {
        ++end;
      }
      auto it = assigned_.find(word.substr(begin, end - begin));
      if (it != assigned_.end()) out += it->second;
      i = braces && end < word.size() ? end : end - 1;
    }
    return out;
  }

  static std::string Head(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::string head(256, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    return head;
  }

  bool Private(const fs::path& p) const {
    for (const auto& prefix : prefixes_) {
      if (prefix.has_relative_path() && IsUnder(p, prefix)) return false;
    }
    return IsPrivateHostPath(p, {});
  }

  // A word of a command line that may name a path: "/x", "-I/x", "-isystem/x", "--foo=/x",
  // "kind=elf,file=/x" (the part after the last '=').
  void AddPathWord(std::string word) {
    if (word.empty()) return;
    if (auto eq = word.rfind('='); eq != std::string::npos) word = word.substr(eq + 1);
    if (word.starts_with("-")) {
      std::size_t slash = word.find('/');
      if (slash == std::string::npos) return;
      word = word.substr(slash);
    }
    if (!word.starts_with("/")) return;
    const fs::path p = Normal(word);
    if (IsUnder(p, probe_.probe_dir)) return;
    Add(p);
  }

  void AddLibraries(const fs::path& program) {
    const std::string out = probe_.Ask({"ldd", program.string()});
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
      for (const auto& w : SplitWords(line)) {
        if (w.starts_with("/")) Add(w);
      }
    }
  }

  void AddInterpreter(const fs::path& script, const std::string& head) {
    // A script finds its helpers beside it (hipcc runs hipcc.pl) and runs commands through the
    // shell.
    Add(script.parent_path());
    AddProgram("/bin/sh");
    auto words = SplitWords(head.substr(2, head.find('\n') - 2));
    if (words.empty()) return;
    std::string interpreter = words[0];
    if (fs::path(interpreter).filename() == "env" && words.size() > 1) interpreter = words[1];
    AddProgram(interpreter);
    const std::string base = fs::path(interpreter).filename().string();
    if (base.starts_with("perl")) {
      const std::string found = FindInPath(interpreter, path_list_);
      if (found.empty()) return;
      std::istringstream inc(probe_.Ask({found, "-e", "print join(\"\\n\", @INC), \"\\n\""}));
      for (std::string dir; std::getline(inc, dir);) Add(dir);
    }
  }

  void AddDriverDirs(const fs::path& driver) {
    // Install, program and library folders.
    std::istringstream dirs(probe_.Ask({driver.string(), "-print-search-dirs"}));
    for (std::string line; std::getline(dirs, line);) {
      const auto colon = line.find(": ");
      if (colon == std::string::npos) continue;
      std::string value = line.substr(colon + 2);
      if (value.starts_with("=")) value.erase(0, 1);
      for (const auto& item : SplitColons(value)) Add(item);
    }
    // Include folders (built into the compiler proper, so no dry run names them).
    const std::string includes =
        probe_.Ask({driver.string(), "-E", "-v", "-x", "c++", "/dev/null", "-o", "/dev/null"});
    std::istringstream inc(includes);
    bool inside = false;
    for (std::string line; std::getline(inc, line);) {
      if (line.find("search starts here") != std::string::npos) {
        inside = true;
      } else if (line.starts_with("End of search list")) {
        inside = false;
      } else if (inside && line.starts_with(" ")) {
        Add(line.substr(1));
      }
    }
    // The assembler and linker, which gcc finds through PATH (collect2 starts ld itself).
    for (const char* tool : {"as", "ld"}) {
      std::string name = probe_.Ask({driver.string(), fmt::format("-print-prog-name={}", tool)});
      name.erase(std::remove(name.begin(), name.end(), '\n'), name.end());
      if (!name.empty()) AddProgram(name);
    }
  }

  const Probe& probe_;
  std::string path_list_;
  std::vector<fs::path> prefixes_;
  std::set<fs::path> paths_;
  std::set<fs::path> programs_;
  std::map<std::string, std::string> assigned_;  // NAME=VALUE lines of the dry run so far
};

std::string Identity(const std::string& program) {
  struct stat st{};
  if (::stat(program.c_str(), &st) != 0) return program;
  return fmt::format("{}:{}:{}", program, st.st_size, st.st_mtim.tv_sec);
}

}  // namespace

bool IsPrivateHostPath(const fs::path& raw, const fs::path& install_prefix) {
  const fs::path path = Normal(raw);
  if (!install_prefix.empty() && fs::path(install_prefix).has_relative_path() &&
      IsUnder(path, Normal(install_prefix))) {
    return false;
  }
  if (path == "/" || path.empty()) return true;
  if (path == "/etc/ld.so.cache") return false;
  static const char* kPrivate[] = {"/etc", "/root", "/home", "/var", "/run",  "/srv", "/mnt",
                                   "/media", "/boot", "/tmp", "/dev", "/proc", "/sys", "/lost+found"};
  for (const char* p : kPrivate) {
    if (IsUnder(path, p)) return true;
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/' && home[1] != '\0') {
    const fs::path h = Normal(home);
    if (IsUnder(path, h) || IsUnder(h, path)) return true;
  }
  return false;
}

Result<ToolchainView> DiscoverToolchainView(const std::vector<std::string>& argv,
                                            const fs::path& source, const fs::path& output,
                                            const std::vector<std::string>& env,
                                            const fs::path& probe_root,
                                            const fs::path& cache_dir) {
  if (argv.empty() || !fs::path(argv[0]).is_absolute()) {
    return InvalidArgument("DiscoverToolchainView: argv[0] must be an absolute path");
  }
  // The cache key: the version of the discovery below (raise it when the discovery changes, so
  // that no view found by older rules is reused), the command with its source and output
  // replaced, the compiler's identity.
  constexpr std::string_view kDiscoveryVersion = "2";
  std::string key = std::string(kDiscoveryVersion) + '\x1d' + Identity(argv[0]);
  for (const auto& a : argv) {
    key += '\x1f';
    key += a == source.string() ? "{source}" : a == output.string() ? "{output}" : a;
  }
  key += '\x1e' + EnvValue(env, "PATH");
  static std::mutex mu;
  static std::map<std::string, ToolchainView> cache;
  {
    std::lock_guard lock(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  // The file cache: the key on the first line, one path per line after it.
  const fs::path cache_file =
      cache_dir.empty() ? fs::path() : cache_dir / ("view-" + ContentHash(key) + ".txt");
  if (!cache_file.empty()) {
    if (auto text = ReadFile(cache_file); text && text->starts_with(ContentHash(key) + "\n")) {
      ToolchainView stored;
      bool complete = true;
      std::istringstream lines(text->substr(text->find('\n') + 1));
      for (std::string line; std::getline(lines, line);) {
        std::error_code ec;
        if (line.empty()) continue;
        if (!fs::exists(line, ec)) {
          complete = false;  // the toolchain changed: ask again
          break;
        }
        stored.paths.emplace_back(line);
      }
      if (complete && !stored.paths.empty()) {
        std::lock_guard lock(mu);
        cache.emplace(key, stored);
        return stored;
      }
    }
  }

  const auto start = std::chrono::steady_clock::now();
  KFORGE_RETURN_IF_ERROR(MakeDirs(probe_root));
  std::string tmpl = (probe_root / "view-probe-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return IoError(fmt::format("cannot create a probe folder under {}", probe_root.string()));
  }
  const fs::path probe_dir = tmpl;
  const fs::path probe_source = probe_dir / ("probe" + source.extension().string());
  KFORGE_RETURN_IF_ERROR(WriteFile(probe_source, ""));
  const fs::path probe_output = probe_dir / "probe.so";

  Probe probe{env, probe_dir};
  ViewBuilder view(probe, EnvValue(env, "PATH"));
  view.AllowPrefix(InstallPrefix(argv[0]));
  view.AddProgram(argv[0]);

  // The dry run of the command itself.
  std::vector<std::string> dry;
  for (const auto& a : argv) {
    dry.push_back(a == source.string()   ? probe_source.string()
                  : a == output.string() ? probe_output.string()
                                         : a);
  }
  const std::string base = fs::path(argv[0]).filename().string();
  const bool nvcc = base.find("nvcc") != std::string::npos;
  const bool acpp = base == "acpp" || base == "syclcc";
  dry.insert(dry.begin() + 1, nvcc ? "--dryrun" : acpp ? "--acpp-dryrun" : "-###");
  view.AddDryRun(probe.Ask(dry), nvcc);
  // nvcc starts each step through system(): the shell is part of its toolchain.
  if (nvcc) view.AddProgram("/bin/sh");
  // hipcc (a Perl script) asks its clang for a version before any step, so no dry run names
  // it: the tools hipcc.pl runs from $HIP_CLANG_PATH (hipconfig --hipclangpath) are its own.
  if (base.starts_with("hipcc")) {
    const std::string hipconfig = FindInPath("hipconfig", EnvValue(env, "PATH"));
    std::string clang_dir = hipconfig.empty() ? "" : probe.Ask({hipconfig, "--hipclangpath"});
    clang_dir.erase(clang_dir.find_last_not_of(" \n\r\t") + 1);
    const std::string found = FindInPath(argv[0], EnvValue(env, "PATH"));
    const fs::path script = fs::path(found.empty() ? argv[0] : found).parent_path() / "hipcc.pl";
    if (auto text = ReadFile(script); text && clang_dir.starts_with("/")) {
      static const std::regex kTool(R"(\$HIP_CLANG_PATH/([A-Za-z0-9+_.-]+))");
      for (std::sregex_iterator m(text->begin(), text->end(), kTool), end; m != end; ++m) {
        view.AddProgram((fs::path(clang_dir) / (*m)[1].str()).string());
      }
    }
  }

  // Argument paths of the command other than its source and output (include folders).
  for (std::size_t i = 1; i < argv.size(); ++i) {
    if (argv[i] == source.string() || argv[i] == output.string()) continue;
    if (argv[i].starts_with("/")) view.Add(argv[i]);
  }
  view.Add("/etc/ld.so.cache");
  if (const char* extra = std::getenv("KFORGE_COMPILE_VIEW"); extra != nullptr) {
    for (const auto& p : SplitColons(extra)) view.Add(p);
  }
  std::error_code ec;
  fs::remove_all(probe_dir, ec);

  ToolchainView result{view.Paths()};
  spdlog::debug("toolchain view of {}: {} paths in {:.2f} s", argv[0], result.paths.size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (!cache_file.empty()) {
    std::string text = ContentHash(key) + "\n";
    for (const auto& p : result.paths) text += p.string() + "\n";
    if (MakeDirs(cache_dir)) (void)WriteFile(cache_file, text);
  }
  std::lock_guard lock(mu);
  cache.emplace(key, result);
  return result;
}

}  // namespace kforge
