#include "kforge/report/verdict_summary.h"

#include <fmt/format.h>
#include <simdjson.h>

// simdjson's On-Demand API reads each verdict in one pass, skipping the fields a report does not
// need (trials, isolation, environment); at 100,000 verdicts this is most of a report's reading.
namespace kforge::report {
namespace {

namespace od = simdjson::ondemand;
using simdjson::SUCCESS;

std::optional<double> Number(od::value v) {
  double d = 0;
  if (v.get_double().get(d) != SUCCESS) return std::nullopt;  // null or not a number
  return d;
}

std::string String(od::value v) {
  std::string_view s;
  if (v.get_string().get(s) != SUCCESS) return {};
  return std::string(s);
}

bool Bool(od::value v) {
  bool b = false;
  return v.get_bool().get(b) == SUCCESS && b;
}

// Iterates the fields of object `v`, calling `on(key, value)`; false when `v` is not an object
// (null included) or the text is malformed.
template <typename F>
simdjson::error_code ForEachField(od::value v, F&& on) {
  od::object object;
  if (auto e = v.get_object().get(object); e != SUCCESS) return e;
  for (auto field : object) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key); e != SUCCESS) return e;
    od::value value;
    if (auto e = field.value().get(value); e != SUCCESS) return e;
    if (auto e = on(key, value); e != SUCCESS) return e;
  }
  return SUCCESS;
}

bool IsNull(od::value v) {
  bool null = false;
  return v.is_null().get(null) == SUCCESS && null;
}

std::optional<TimingSummary> Stats(od::value v) {
  if (IsNull(v)) return std::nullopt;
  TimingSummary t;
  bool has_median = false;
  auto e = ForEachField(v, [&](std::string_view key, od::value value) {
    if (key == "median_s") {
      if (auto m = Number(value)) {
        t.median_s = *m;
        has_median = true;
      }
    } else if (key == "rel_std") {
      t.rel_std = Number(value).value_or(0);
    } else if (key == "samples") {
      t.samples = static_cast<long>(Number(value).value_or(0));
    } else if (key == "clock") {
      t.clock = String(value);
    }
    return SUCCESS;
  });
  if (e != SUCCESS || !has_median) return std::nullopt;
  return t;
}

simdjson::error_code Timing(od::value v, VerdictSummary& out) {
  if (IsNull(v)) return SUCCESS;
  out.timed = true;
  return ForEachField(v, [&](std::string_view key, od::value value) {
    if (key == "candidate") {
      out.candidate_time = Stats(value);
    } else if (key == "eager_baseline") {
      out.eager_baseline = Stats(value);
    } else if (key == "compile_baseline") {
      out.compile_baseline = Stats(value);
    } else if (key == "compile_max_autotune_baseline") {
      out.compile_max_autotune_baseline = Stats(value);
    } else if (key == "speedup_vs_eager") {
      out.speedup_vs_eager = Number(value);
    } else if (key == "speedup_vs_compile") {
      out.speedup_vs_compile = Number(value);
    } else if (key == "speedup_vs_best_baseline") {
      out.speedup_vs_best_baseline = Number(value);
    } else if (key == "sol_fraction") {
      out.sol_fraction = Number(value);
    } else if (key == "held_for_review") {
      out.held_for_review = Bool(value);
    } else if (key == "review_reason") {
      out.review_reason = String(value);
    }
    return SUCCESS;
  });
}

}  // namespace

Result<VerdictSummary> ParseVerdictSummary(std::string_view verdict_json, std::string_view where) {
  thread_local od::parser parser;
  thread_local std::string buffer;
  buffer.assign(verdict_json);
  buffer.reserve(verdict_json.size() + simdjson::SIMDJSON_PADDING);
  VerdictSummary v;
  auto fail = [&](simdjson::error_code e) {
    return ParseError(fmt::format("{}: the stored verdict is not a JSON object ({})", where,
                                  simdjson::error_message(e)));
  };
  od::document doc;
  if (auto e = parser.iterate(buffer.data(), buffer.size(), buffer.capacity()).get(doc); e != SUCCESS) {
    return fail(e);
  }
  od::object root;
  if (auto e = doc.get_object().get(root); e != SUCCESS) return fail(e);
  for (auto field : root) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key); e != SUCCESS) return fail(e);
    od::value value;
    if (auto e = field.value().get(value); e != SUCCESS) return fail(e);
    simdjson::error_code e = SUCCESS;
    if (key == "status") {
      v.status = String(value);
    } else if (key == "message") {
      v.message = String(value);
    } else if (key == "diagnostics") {
      v.diagnostics = String(value);
    } else if (key == "precision") {
      e = ForEachField(value, [&](std::string_view k, od::value x) {
        if (k == "policy") v.policy = String(x);
        if (k == "rule") v.precision_rule = String(x);
        if (k == "worst_error_ratio") v.worst_error_ratio = Number(x);
        if (k == "achieved") v.achieved_precision = String(x);
        if (k == "atol") v.atol = Number(x);
        if (k == "rtol") v.rtol = Number(x);
        return SUCCESS;
      });
      if (e == simdjson::INCORRECT_TYPE) e = SUCCESS;  // a field of the wrong type is absent
    } else if (key == "degenerate") {
      e = ForEachField(value, [&](std::string_view k, od::value x) {
        if (k == "flagged") {
          v.degenerate = Bool(x);
        } else if (k == "all_zero" || k == "constant" || k == "constant_passes" || k == "nondeterministic") {
          if (Bool(x)) {
            if (!v.degenerate_flags.empty()) v.degenerate_flags += ", ";
            v.degenerate_flags += k;
          }
        }
        return SUCCESS;
      });
      if (e == simdjson::INCORRECT_TYPE) e = SUCCESS;
    } else if (key == "guardrail_flags") {
      od::array flags;
      if (value.get_array().get(flags) == SUCCESS) {
        std::size_t n = 0;
        if (flags.count_elements().get(n) == SUCCESS) v.guardrail_flags = static_cast<int>(n);
      }
    } else if (key == "timing") {
      e = Timing(value, v);
      if (e == simdjson::INCORRECT_TYPE) e = SUCCESS;
    }
    if (e != SUCCESS) return fail(e);
  }
  return v;
}

}  // namespace kforge::report
