#include "python_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <set>
#include <string>
#include <string_view>

#include "precision_rule.h"
#include "python_scopes.h"
#include "reference_ops.h"
#include "token_queries.h"

namespace kforge::guardrails {

void CheckPythonRules(const std::vector<Token>& t, const StaticRuleSet& rules, CandidateKind kind,
                      Findings& findings) {
  const GuardrailOptions& options = findings.options();
  const auto aliases = PythonAliases(t);
  const auto scopes = PythonScopes(t, aliases, rules);
  const bool module = kind == CandidateKind::kModule;
  auto canonical = [&](std::size_t i) { return Canonical(t[i].text, aliases); };
  auto is_module_name = [&](std::string_view name) {
    return aliases.count(std::string(FirstPart(name))) != 0;
  };

  // Pre-pass: load_inline extensions, nn submodules of the model, persistent containers.
  std::set<std::string> extensions;     // names bound to a compiled extension
  std::set<std::string> nn_submodules;  // "self.gemm" bound to nn.Linear(...)
  std::set<std::string> containers;     // dicts that live across calls: module level or self.*
  bool identity_cache_decorator = false;
  for (std::size_t i = 0; i + 2 < t.size(); ++i) {
    if (t[i].kind != TokKind::kName || !NextIs(t, i, "=")) continue;
    const std::string value = t[i + 2].kind == TokKind::kName ? canonical(i + 2) : t[i + 2].text;
    const std::string_view leaf = LastPart(value);
    if (t[i + 2].kind == TokKind::kName && IsCall(t, i + 2) &&
        (leaf == "load_inline" || (leaf == "load" && StartsWith(value, "torch.utils")))) {
      extensions.insert(t[i].text);
    } else if (t[i + 2].kind == TokKind::kName && extensions.count(value) != 0) {
      extensions.insert(t[i].text);
    } else if (StartsWith(t[i].text, "self.") && StartsWith(value, "torch.nn.") &&
               IsCall(t, i + 2) && !IsParameterHolder(leaf)) {
      nn_submodules.insert(t[i].text);
    }
    const bool persistent = !scopes[i].in_function || StartsWith(t[i].text, "self.");
    const bool empty_dict = t[i + 2].text == "{" && i + 3 < t.size() && t[i + 3].text == "}";
    if (persistent && (empty_dict || leaf == "dict" || leaf == "OrderedDict" ||
                       leaf == "defaultdict" || StartsWith(value, "weakref."))) {
      containers.insert(t[i].text);
    }
  }
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind != TokKind::kName) continue;
    const std::string c = canonical(i);
    if (c == "functools.lru_cache" || c == "functools.cache") identity_cache_decorator = true;
  }
  // Identity keys (data_ptr, id, _version): a cache keyed on them is rejected when the file
  // keeps results across calls, flagged otherwise.
  const bool persistent_state = !containers.empty() || identity_cache_decorator;

  for (std::size_t i = 0; i < t.size(); ++i) {
    const Token& tok = t[i];
    const int line = tok.line;
    if (tok.kind == TokKind::kPunct) {
      if (module && !options.allow_reference_ops && (tok.text == "@" || tok.text == "@=") &&
          !tok.line_start && !scopes[i].in_init && !scopes[i].in_kernel) {
        findings.Reject("reference-op-call", line,
                        fmt::format("{} (matrix product operator)", tok.text),
                        "(the @ operator runs torch.matmul on tensors)");
      }
      continue;
    }
    if (tok.kind != TokKind::kName) continue;
    const std::string c = canonical(i);
    const std::string_view leaf = LastPart(c);
    const bool call = IsCall(t, i);
    const std::string shown = call ? c + "(" : c;
    // Module-based rules need the module imported: a local variable may share its name.
    const bool imported = is_module_name(tok.text);

    // reference-op-call (not in __init__, where parameters are made, nor in Triton/CuTe kernels)
    if (module && !options.allow_reference_ops && imported && c == "torch.compile") {
      findings.Reject("reference-op-call", line, shown,
                      "(torch.compile generates the kernels itself)");
    }
    if (module && !options.allow_reference_ops && !scopes[i].in_init && !scopes[i].in_kernel &&
        call) {
      bool reference = false;
      if (StartsWith(c, "torch.")) {
        const std::string_view rest = std::string_view(c).substr(6);
        if (rest.find('.') == std::string_view::npos) {
          reference = TorchAllowedLeaves().count(rest) == 0;
        } else {
          for (auto ns : kTorchComputeNamespaces) reference |= StartsWith(c, ns);
          // nn modules made and called in forward (nn.ReLU()(x)); parameters are not compute.
          reference |= StartsWith(c, "torch.nn.") && rest.find('.', 3) == std::string_view::npos &&
                       !IsParameterHolder(leaf) && !StartsWith(c, "torch.nn.init");
        }
      } else if (nn_submodules.count(c) != 0 ||
                 (leaf == "forward" && nn_submodules.count(std::string(Receiver(c))) != 0)) {
        reference = true;
      } else if (ComputeMethods().count(leaf) != 0 && (c[0] == '.' || !Receiver(c).empty())) {
        const std::string receiver(Receiver(c));
        const bool on_module = c[0] != '.' && is_module_name(c);
        const bool on_extension =
            extensions.count(receiver) != 0 || extensions.count(std::string(FirstPart(c))) != 0;
        reference = !on_module && !on_extension && receiver != "self";
      }
      if (reference) findings.Reject("reference-op-call", line, shown);
    }

    // stream-creation
    if ((call &&
         (c == "torch.cuda.Stream" || c == "torch.cuda.streams.Stream" || c == "torch.Stream" ||
          c == "torch.cuda.ExternalStream" || c == "torch.cuda.stream" ||
          c == "torch.cuda.set_stream" || c == "cupy.cuda.Stream" || leaf == "CommandQueue")) ||
        c == "torch.cuda.StreamContext") {
      findings.Reject("stream-creation", line, shown);
    }

    // thread-creation
    static const std::set<std::string_view> kThreadCalls = {
        "threading.Thread",  "threading.Timer", "_thread.start_new_thread",
        "_thread.start_new", "os.fork",         "os.forkpty",
        "os.posix_spawn",    "os.posix_spawnp", "os.register_at_fork",
        "pty.fork"};
    if (imported && ((call && kThreadCalls.count(c) != 0) || InModule(c, "multiprocessing") ||
                     InModule(c, "torch.multiprocessing") || InModule(c, "concurrent.futures") ||
                     (call && StartsWith(c, "os.spawn")))) {
      findings.Reject("thread-creation", line, shown);
    }

    // graph-capture
    if (StartsWith(c, "torch.cuda.graph") || c == "torch.cuda.CUDAGraph" ||
        c == "torch.cuda.make_graphed_callables" || leaf == "capture_begin" ||
        leaf == "capture_end" || StartsWith(c, "cupy.cuda.graph")) {
      findings.Reject("graph-capture", line, shown);
    }

    // timer-patch (and framework monkey-patching); precision flags are assignments too.
    // An attribute of an imported module (or of the OpenCL objects handed to launch()).
    const bool module_attr = is_module_name(tok.text) ||
                             (kind == CandidateKind::kOpenCl &&
                              (StartsWith(tok.text, "cl.") || StartsWith(tok.text, "queue.") ||
                               StartsWith(tok.text, "program.")));
    if (i + 1 < t.size() && IsAssignOp(t[i + 1]) && tok.text.find('.') != std::string::npos &&
        module_attr) {
      const bool precision = leaf.find("allow_tf32") != std::string_view::npos ||
                             leaf.find("reduced_precision") != std::string_view::npos ||
                             leaf.find("fp32_precision") != std::string_view::npos;
      if (precision) {
        const bool disabling = i + 2 < t.size() && t[i + 2].text == "False";
        if (!disabling) {
          Downcast(
              findings,
              leaf.find("tf32") != std::string_view::npos ? Precision::kTf32 : Precision::kHalf,
              line, c + " = ...");
        }
      } else if (StartsWith(c, "torch.backends.")) {
        findings.Flag("timer-patch", line, c + " = ...");
      } else {
        findings.Reject("timer-patch", line, c + " = ...");
      }
    }
    if (call && (c == "setattr" || c == "delattr") && i + 2 < t.size() &&
        t[i + 2].kind == TokKind::kName && is_module_name(t[i + 2].text)) {
      findings.Reject("timer-patch", line, fmt::format("{}({}, ...)", c, canonical(i + 2)));
    }
    if ((imported && (InModule(c, "unittest.mock") || c == "importlib.reload" ||
                      c == "sys.settrace" || c == "sys.setprofile")) ||
        tok.text == "__builtins__") {
      findings.Reject("timer-patch", line, shown);
    }
    // __import__("inspect") and friends: a sensitive module imported by a computed name.
    if (call && (c == "__import__" || c == "importlib.import_module") && i + 2 < t.size() &&
        t[i + 2].kind == TokKind::kString) {
      static const std::set<std::string_view> kSensitive = {
          "sys",      "inspect",  "gc",  "subprocess", "threading",     "multiprocessing",
          "ctypes",   "builtins", "pip", "_thread",    "kforge_runner", "__main__",
          "traceback"};
      if (kSensitive.count(FirstPart(t[i + 2].text)) != 0) {
        findings.Reject("harness-introspection", line, fmt::format("{}(\"{}\")", c, t[i + 2].text));
      }
    }

    // harness-introspection
    static const std::set<std::string_view> kIntrospection = {
        "sys._getframe",        "sys._current_frames",    "gc.get_objects",
        "gc.get_referrers",     "gc.get_referents",       "traceback.extract_stack",
        "traceback.walk_stack", "traceback.format_stack", "traceback.print_stack",
        "threading.enumerate"};
    static const std::set<std::string_view> kFrameAttributes = {
        "f_back",   "f_globals", "f_locals",    "f_builtins",     "tb_frame",
        "gi_frame", "cr_frame",  "__globals__", "__subclasses__", "__closure__"};
    if ((imported &&
         (InModule(c, "sys.modules") || kIntrospection.count(c) != 0 || InModule(c, "inspect") ||
          InModule(c, "__main__") || InModule(c, "kforge_runner"))) ||
        kFrameAttributes.count(leaf) != 0) {
      findings.Reject("harness-introspection", line, shown);
    } else if (imported && InModule(c, "ctypes")) {
      findings.Flag("harness-introspection", line, shown,
                    "(ctypes reads and writes raw process memory)");
    }

    // inherited-descriptor: a descriptor number >= 3 given as a literal.
    static const std::set<std::string_view> kFdCalls = {"os.write",
                                                        "os.fdopen",
                                                        "os.read",
                                                        "os.dup",
                                                        "os.dup2",
                                                        "os.fstat",
                                                        "os.lseek",
                                                        "os.ftruncate",
                                                        "os.fsync",
                                                        "open",
                                                        "io.open",
                                                        "socket.fromfd",
                                                        "socket.socket",
                                                        "os.set_inheritable",
                                                        "os.get_inheritable",
                                                        "os.set_blocking",
                                                        "os.close",
                                                        "os.closerange",
                                                        "os.sendfile",
                                                        "os.pwrite",
                                                        "os.writev",
                                                        "io.FileIO"};
    if (call && kFdCalls.count(c) != 0 && i + 2 < t.size()) {
      std::size_t arg = i + 2;
      if (c == "socket.socket") {
        // socket.socket(fileno=3)
        arg = t.size();
        for (std::size_t k = i + 2; k < Matching(t, i + 1); ++k) {
          if (t[k].text == "fileno" && NextIs(t, k, "=")) arg = k + 2;
        }
      }
      if (arg < t.size()) {
        auto fd = IntValue(t[arg]);
        if (fd && *fd >= 3 && *fd < 1024) {
          findings.Reject("inherited-descriptor", line, fmt::format("{}({}, ...)", c, *fd));
        }
      }
    }

    // output-cache
    const bool identity_key = (call && c == "id") || (call && leaf == "data_ptr") ||
                              leaf == "_version" || leaf == "_cdata" ||
                              (call && leaf == "untyped_storage");
    if (module && identity_key && scopes[i].in_function && !scopes[i].in_init) {
      if (persistent_state) {
        findings.Reject("output-cache", line, shown,
                        "(a tensor's identity used while the module keeps state across calls)");
      } else {
        findings.Flag("output-cache", line, shown,
                      "(a tensor's identity is read in the forward path)");
      }
    }
    if (module && containers.count(c) != 0 && NextIs(t, i, "[") && scopes[i].in_function) {
      const std::size_t close = Matching(t, i + 1);
      for (std::size_t k = i + 2; k < close; ++k) {
        if (t[k].kind == TokKind::kName &&
            (LastPart(t[k].text) == "shape" || LastPart(t[k].text) == "size")) {
          findings.Flag("output-cache", line, c + "[...shape...]",
                        "(a dictionary kept across calls is indexed by a tensor's shape)");
        }
      }
    }
    if (module && identity_cache_decorator &&
        (c == "functools.lru_cache" || c == "functools.cache")) {
      findings.Flag("output-cache", line, shown, "(functools caches key tensors by identity)");
    }

    // exception-fallback
    if (tok.text == "try" && tok.line_start && scopes[i].in_function) {
      // Each handler of this try must re-raise at once; anything else is a fallback.
      for (std::size_t k = i + 1; k < t.size(); ++k) {
        if (!t[k].line_start) continue;
        if (t[k].indent < tok.indent) break;
        if (t[k].indent > tok.indent) continue;
        if (t[k].text != "except" && t[k].text != "else" && t[k].text != "finally") break;
        if (t[k].text != "except") continue;
        std::size_t body = k + 1;
        while (body < t.size() &&
               !(t[body].kind == TokKind::kPunct && t[body].text == ":" && t[body].depth == 0)) {
          ++body;
        }
        ++body;
        if (body >= t.size() || t[body].text != "raise") {
          findings.Reject("exception-fallback", t[k].line,
                          fmt::format("try: ... except (line {})", t[k].line));
        }
      }
    }
    if (call && c == "contextlib.suppress") findings.Reject("exception-fallback", line, shown);

    // precision-downcast
    static const std::set<std::string_view> kHalfNames = {"torch.float16",
                                                          "torch.half",
                                                          "torch.bfloat16",
                                                          "triton.language.float16",
                                                          "triton.language.bfloat16",
                                                          "numpy.float16",
                                                          "numpy.half",
                                                          "torch.complex32",
                                                          "cutlass.Float16",
                                                          "cutlass.BFloat16"};
    if (kHalfNames.count(c) != 0) Downcast(findings, Precision::kHalf, line, shown);
    if (call && tok.text[0] == '.' && (leaf == "half" || leaf == "bfloat16")) {
      Downcast(findings, Precision::kHalf, line, shown);
    } else if (call && !Receiver(c).empty() && !is_module_name(c) &&
               (leaf == "half" || leaf == "bfloat16")) {
      Downcast(findings, Precision::kHalf, line, shown);
    }
    if (leaf.find("float8") != std::string_view::npos || StartsWith(leaf, "Float8")) {
      Downcast(findings, Precision::kFp8, line, shown);
    }
    if (call && (c == "torch.autocast" || StartsWith(c, "torch.cuda.amp") ||
                 StartsWith(c, "torch.amp") || StartsWith(c, "torch.cpu.amp"))) {
      Downcast(findings, Precision::kHalf, line, shown);
    }
    if (call && c == "torch.set_float32_matmul_precision" && i + 2 < t.size() &&
        t[i + 2].kind == TokKind::kString && t[i + 2].text != "highest") {
      Downcast(findings, t[i + 2].text == "medium" ? Precision::kHalf : Precision::kTf32, line,
               fmt::format("{}(\"{}\")", c, t[i + 2].text));
    }
    if ((tok.text == "allow_tf32" || tok.text == "input_precision") && NextIs(t, i, "=") &&
        i + 2 < t.size()) {
      const Token& v = t[i + 2];
      if ((tok.text == "allow_tf32" && v.text == "True") ||
          (tok.text == "input_precision" && v.kind == TokKind::kString &&
           StartsWith(v.text, "tf32"))) {
        Downcast(findings, Precision::kTf32, line, fmt::format("{}={}", tok.text, v.text));
      }
    }
    if (call && std::find(rules.implicit_tf32_calls.begin(), rules.implicit_tf32_calls.end(), c) !=
                    rules.implicit_tf32_calls.end()) {
      // tl.dot on fp32 operands computes in TF32 unless told otherwise.
      const std::size_t close = Matching(t, i + 1);
      bool explicit_precision = false;
      for (std::size_t k = i + 2; k < close; ++k) {
        explicit_precision |= t[k].text == "input_precision" || t[k].text == "allow_tf32";
      }
      if (!explicit_precision) {
        Downcast(findings, Precision::kTf32, line, tok.text + "(...) without input_precision");
      }
    }

    // runtime-install
    static const std::set<std::string_view> kProcessCalls = {"os.system", "os.popen", "pip.main",
                                                             "pty.spawn", "os.startfile"};
    if (imported && (InModule(c, "subprocess") || (call && kProcessCalls.count(c) != 0) ||
                     (call && StartsWith(c, "os.exec")) || InModule(c, "pip") ||
                     InModule(c, "ensurepip") || InModule(c, "distutils.spawn"))) {
      findings.Reject("runtime-install", line, shown);
    }
  }
}

}  // namespace kforge::guardrails
