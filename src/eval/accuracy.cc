#include "kforge/eval/accuracy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>

#include "element_decode.h"

namespace kforge {
namespace {

enum class Kind { kF32, kF64, kF16, kBf16, kI32, kI64, kI16, kI8, kU8, kBool, kUnknown };

Kind KindOf(std::string_view dtype) {
  if (dtype == "float32") return Kind::kF32;
  if (dtype == "float64") return Kind::kF64;
  if (dtype == "float16") return Kind::kF16;
  if (dtype == "bfloat16") return Kind::kBf16;
  if (dtype == "int32") return Kind::kI32;
  if (dtype == "int64") return Kind::kI64;
  if (dtype == "int16") return Kind::kI16;
  if (dtype == "int8") return Kind::kI8;
  if (dtype == "uint8") return Kind::kU8;
  if (dtype == "bool") return Kind::kBool;
  return Kind::kUnknown;
}

bool IsLowPrecision(Kind k) { return k == Kind::kF16 || k == Kind::kBf16; }

// The spacing of the dtype's numbers at 1.
double EpsOf(Kind k) {
  switch (k) {
    case Kind::kF64: return 0x1p-52;
    case Kind::kF16: return 0x1p-10;
    case Kind::kBf16: return 0x1p-7;
    default: return 0x1p-23;
  }
}

// The smallest normal number of the dtype: the scale of an output whose truth is all zero.
double TinyOf(Kind k) {
  switch (k) {
    case Kind::kF64: return std::numeric_limits<double>::min();
    case Kind::kF16: return 0x1p-14;
    default: return std::numeric_limits<float>::min();  // float32, bfloat16
  }
}

// torch.testing.assert_close's default tolerances for low-precision dtypes: the tolerance rule
// for outputs without a truth.
Tolerance LowPrecisionTolerance(Kind k) {
  return k == Kind::kBf16 ? Tolerance{1e-5, 1.6e-2} : Tolerance{1e-5, 1e-3};
}

double RelativeAllowance(PrecisionPolicy policy) {
  switch (policy) {
    case PrecisionPolicy::kTf32: return kTf32RelativeAllowance;
    case PrecisionPolicy::kMixed: return kMixedRelativeAllowance;
    case PrecisionPolicy::kStrict: return 0;
  }
  return 0;
}

std::string Shape(std::span<const std::int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string Value(double v) { return std::isnan(v) ? "nan" : fmt::format("{:.7g}", v); }

// Decoders of one stored type into double.
struct F32 {
  static double At(const void* p, std::int64_t i) { return LoadRaw<float>(p, i); }
};
struct F64 {
  static double At(const void* p, std::int64_t i) { return LoadRaw<double>(p, i); }
};
struct F16 {
  static double At(const void* p, std::int64_t i) {
    return HalfToFloat(LoadRaw<std::uint16_t>(p, i));
  }
};
struct Bf16 {
  static double At(const void* p, std::int64_t i) {
    return Bfloat16ToFloat(LoadRaw<std::uint16_t>(p, i));
  }
};

// The truth rule over n elements of floating type `D` (see accuracy.h).
template <typename D>
void JudgeByTruth(const void* cand, const void* ref, const void* truth, std::int64_t n, Kind kind,
                  PrecisionPolicy policy, std::string_view name, std::string_view ref_dtype,
                  OutputJudgement& j) {
  double scale = 0, ref_err = 0, max_err = 0, max_rel = 0;
  std::int64_t exact_bad = 0;
  // Pass 1: the output's scale, the reference's own error and the candidate's largest error.
  for (std::int64_t i = 0; i < n; ++i) {
    const double c = D::At(cand, i);
    const double r = D::At(ref, i);
    double t = LoadRaw<double>(truth, i);
    if (!std::isfinite(r)) {  // the reference itself is not finite here: equal it or fail
      if (!(c == r)) ++exact_bad;
      continue;
    }
    if (!std::isfinite(t)) t = r;  // no usable truth for this element
    scale = std::max(scale, std::fabs(t));
    ref_err = std::max(ref_err, std::fabs(r - t));
    const double e = std::isnan(c) ? INFINITY : std::fabs(c - t);
    max_err = std::max(max_err, e);
    if (t != 0) max_rel = std::max(max_rel, e / std::fabs(t));
  }
  const bool low = IsLowPrecision(kind);
  const double factor = low ? kLowPrecisionFactor : kAccuracyFactor;
  const double floor_eps = low ? kLowPrecisionFloorEps : kAccuracyFloorEps;
  const double s = std::max(scale, TinyOf(kind));
  const double floor = floor_eps * EpsOf(kind) * s;
  const double unit = std::max(ref_err, floor);
  const double strict_allowed = factor * unit;
  const double relative = low ? 0.0 : RelativeAllowance(policy) * s;
  const double allowed = std::max(strict_allowed, relative);
  j.rule = AccuracyRule::kTruth;
  j.max_abs_error = max_err;
  j.max_rel_error = max_rel;
  j.reference_error = ref_err;
  j.scale = scale;
  j.allowed_error = allowed;
  j.error_ratio = max_err / unit;
  j.meets_strict = exact_bad == 0 && max_err <= strict_allowed;
  j.ok = exact_bad == 0 && max_err <= allowed;
  if (j.ok) return;
  // Pass 2 (failures only): how many elements are beyond the allowance, and the first.
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double c = D::At(cand, i);
    const double r = D::At(ref, i);
    double t = LoadRaw<double>(truth, i);
    bool good;
    if (!std::isfinite(r)) {
      good = c == r;
      t = r;
    } else {
      if (!std::isfinite(t)) t = r;
      good = !std::isnan(c) && std::fabs(c - t) <= allowed;
    }
    if (!good) {
      if (bad == 0) {
        j.first_bad_index = i;
        j.first_bad_expected = t;
        j.first_bad_actual = c;
      }
      ++bad;
    }
  }
  j.fraction_bad = n > 0 ? static_cast<double>(bad) / static_cast<double>(n) : 0.0;
  std::string allowance = fmt::format("{:g}x", factor);
  if (relative > strict_allowed) {
    allowance = fmt::format("{:g} of the output's largest magnitude", RelativeAllowance(policy));
  }
  j.problem = fmt::format(
      "{}: {} of {} elements out of tolerance: error {:.3g} against the float64 truth, {:.3g}x "
      "the {} reference's own error ({:.2g}, floor {:.2g}); {} allows {} ({:.3g}){}; first at "
      "flat index {}: truth {}, got {}",
      name, bad, n, max_err, *j.error_ratio, ref_dtype, ref_err, floor,
      low ? fmt::format("{} output precision", ref_dtype) : std::string(PrecisionPolicyName(policy)),
      allowance, allowed,
      exact_bad > 0 ? "; where the reference is not finite it must be matched" : "",
      j.first_bad_index, Value(j.first_bad_expected), Value(j.first_bad_actual));
}

// The tolerance rule over n elements of floating type `D`.
template <typename D>
void JudgeByTolerance(const void* cand, const void* ref, std::int64_t n, Kind kind,
                      PrecisionPolicy policy, std::string_view name, OutputJudgement& j) {
  Tolerance tol = ToleranceOf(policy);
  const Tolerance strict = ToleranceOf(PrecisionPolicy::kStrict);
  Tolerance strict_tol = strict;
  if (IsLowPrecision(kind)) {
    const Tolerance dtype_tol = LowPrecisionTolerance(kind);
    // Judged at the dtype's precision under every policy: strict means that too.
    strict_tol = dtype_tol;
    tol = policy == PrecisionPolicy::kMixed
              ? Tolerance{std::max(tol.atol, dtype_tol.atol), std::max(tol.rtol, dtype_tol.rtol)}
              : dtype_tol;
  }
  std::int64_t bad = 0;
  bool strict_ok = true;
  double max_abs = 0, max_rel = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double b = D::At(ref, i);
    const double a = D::At(cand, i);
    bool good;
    double abs_err;
    if (std::isnan(a) || std::isnan(b)) {
      good = false;
      abs_err = INFINITY;
    } else if (std::isinf(a) || std::isinf(b)) {
      good = a == b;
      abs_err = good ? 0 : INFINITY;
    } else {
      abs_err = std::fabs(a - b);
      good = abs_err <= tol.atol + tol.rtol * std::fabs(b);
    }
    strict_ok = strict_ok && good && abs_err <= strict_tol.atol + strict_tol.rtol * std::fabs(b);
    max_abs = std::max(max_abs, abs_err);
    if (std::fabs(b) > 0) max_rel = std::max(max_rel, abs_err / std::fabs(b));
    if (!good) {
      if (bad == 0) {
        j.first_bad_index = i;
        j.first_bad_expected = b;
        j.first_bad_actual = a;
      }
      ++bad;
    }
  }
  j.rule = AccuracyRule::kTolerance;
  j.max_abs_error = max_abs;
  j.max_rel_error = max_rel;
  j.fraction_bad = n > 0 ? static_cast<double>(bad) / static_cast<double>(n) : 0.0;
  j.ok = bad == 0;
  j.meets_strict = strict_ok;
  if (!j.ok) {
    j.problem = fmt::format(
        "{}: {} of {} elements out of tolerance (atol {:g}, rtol {:g}; no float64 truth); max abs "
        "error {:.3g}; first at flat index {}: expected {}, got {}",
        name, bad, n, tol.atol, tol.rtol, max_abs, j.first_bad_index, Value(j.first_bad_expected),
        Value(j.first_bad_actual));
  }
}

// Integer and bool outputs: equal element by element.
template <typename T>
void JudgeExactly(const void* cand, const void* ref, std::int64_t n, std::string_view name,
                  OutputJudgement& j) {
  std::int64_t bad = 0;
  double max_abs = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const T a = LoadRaw<T>(cand, i);
    const T b = LoadRaw<T>(ref, i);
    if (a == b) continue;
    max_abs = std::max(max_abs, std::fabs(static_cast<double>(a) - static_cast<double>(b)));
    if (bad == 0) {
      j.first_bad_index = i;
      j.first_bad_expected = static_cast<double>(b);
      j.first_bad_actual = static_cast<double>(a);
    }
    ++bad;
  }
  j.rule = AccuracyRule::kExact;
  j.max_abs_error = max_abs;
  j.fraction_bad = n > 0 ? static_cast<double>(bad) / static_cast<double>(n) : 0.0;
  j.ok = bad == 0;
  j.meets_strict = j.ok;
  if (!j.ok) {
    j.problem = fmt::format("{}: {} of {} elements differ from the reference; first at flat index "
                            "{}: expected {}, got {}",
                            name, bad, n, j.first_bad_index, j.first_bad_expected,
                            j.first_bad_actual);
  }
}

template <typename D>
void JudgeFloat(const TensorView& c, const TensorView& r, const TensorView* truth, std::int64_t n,
                Kind kind, PrecisionPolicy policy, std::string_view name, OutputJudgement& j) {
  if (truth != nullptr) {
    JudgeByTruth<D>(c.bytes.data(), r.bytes.data(), truth->bytes.data(), n, kind, policy, name,
                    r.dtype, j);
  } else {
    JudgeByTolerance<D>(c.bytes.data(), r.bytes.data(), n, kind, policy, name, j);
  }
}

}  // namespace

std::string_view AccuracyRuleName(AccuracyRule rule) {
  switch (rule) {
    case AccuracyRule::kTruth: return "truth";
    case AccuracyRule::kTolerance: return "tolerance";
    case AccuracyRule::kExact: return "exact";
  }
  return "tolerance";
}

Result<OutputJudgement> JudgeOutput(const TensorView& candidate, const TensorView& reference,
                                    const TensorView* truth, PrecisionPolicy policy,
                                    std::string_view name) {
  const Kind kind = KindOf(reference.dtype);
  const int size = DtypeSize(std::string(reference.dtype));
  if (kind == Kind::kUnknown || size == 0) {
    return InvalidArgument(fmt::format("{}: unknown dtype '{}'", name, reference.dtype));
  }
  OutputJudgement j;
  if (candidate.dtype != reference.dtype) {
    j.problem = fmt::format("{}: dtype {} but the reference is {}", name, candidate.dtype,
                            reference.dtype);
    return j;
  }
  if (!std::ranges::equal(candidate.shape, reference.shape)) {
    j.problem = fmt::format("{}: shape {} but the reference is {}", name, Shape(candidate.shape),
                            Shape(reference.shape));
    return j;
  }
  const std::int64_t n = reference.numel();
  const auto expected_bytes = static_cast<std::size_t>(n) * static_cast<std::size_t>(size);
  if (reference.bytes.size() != expected_bytes) {
    return Internal(fmt::format("{}: the reference holds {} bytes, expected {}", name,
                                reference.bytes.size(), expected_bytes));
  }
  const bool floating = kind == Kind::kF32 || kind == Kind::kF64 || IsLowPrecision(kind);
  if (truth != nullptr && floating) {
    if (truth->dtype != "float64" ||
        !std::ranges::equal(truth->shape, reference.shape) ||
        truth->bytes.size() != static_cast<std::size_t>(n) * sizeof(double)) {
      return Internal(fmt::format("{}: the truth is {} {} ({} bytes), expected float64 {}", name,
                                  truth->dtype, Shape(truth->shape), truth->bytes.size(),
                                  Shape(reference.shape)));
    }
  }
  if (candidate.bytes.size() != expected_bytes) {
    j.problem = fmt::format("{}: the candidate wrote {} bytes, expected {}", name,
                            candidate.bytes.size(), expected_bytes);
    return j;
  }
  const TensorView* t = floating ? truth : nullptr;
  const void* c = candidate.bytes.data();
  const void* r = reference.bytes.data();
  switch (kind) {
    case Kind::kF32: JudgeFloat<F32>(candidate, reference, t, n, kind, policy, name, j); break;
    case Kind::kF64: JudgeFloat<F64>(candidate, reference, t, n, kind, policy, name, j); break;
    case Kind::kF16: JudgeFloat<F16>(candidate, reference, t, n, kind, policy, name, j); break;
    case Kind::kBf16: JudgeFloat<Bf16>(candidate, reference, t, n, kind, policy, name, j); break;
    case Kind::kI32: JudgeExactly<std::int32_t>(c, r, n, name, j); break;
    case Kind::kI64: JudgeExactly<std::int64_t>(c, r, n, name, j); break;
    case Kind::kI16: JudgeExactly<std::int16_t>(c, r, n, name, j); break;
    case Kind::kI8: JudgeExactly<std::int8_t>(c, r, n, name, j); break;
    case Kind::kU8:
    case Kind::kBool: JudgeExactly<std::uint8_t>(c, r, n, name, j); break;
    case Kind::kUnknown: break;
  }
  return j;
}

std::vector<Result<OutputJudgement>> JudgeOutputFiles(const std::vector<OutputFiles>& outputs,
                                                      PrecisionPolicy policy,
                                                      unsigned max_threads) {
  std::vector<std::optional<Result<OutputJudgement>>> slots(outputs.size());
  std::atomic<std::size_t> next{0};
  auto judge_one = [policy](const OutputFiles& o) -> Result<OutputJudgement> {
    auto ref = MapTensorFile(*o.reference);
    if (!ref) return std::unexpected(ref.error());
    auto cand = MapTensorFile(*o.candidate);
    if (!cand) return std::unexpected(cand.error());
    std::optional<MappedTensor> truth;
    if (o.truth != nullptr) {
      auto mapped = MapTensorFile(*o.truth);
      if (!mapped) return std::unexpected(mapped.error());
      truth = std::move(*mapped);
    }
    const TensorView truth_view = truth ? truth->view() : TensorView{};
    return JudgeOutput(cand->view(), ref->view(), truth ? &truth_view : nullptr, policy,
                       o.reference->name);
  };
  auto work = [&] {
    for (std::size_t i = next++; i < outputs.size(); i = next++) slots[i] = judge_one(outputs[i]);
  };
  if (max_threads == 0) max_threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  const auto threads = static_cast<unsigned>(std::min<std::size_t>(max_threads, outputs.size()));
  {
    std::vector<std::jthread> workers;
    for (unsigned t = 1; t < threads; ++t) workers.emplace_back(work);
    work();
  }  // joins the workers
  std::vector<Result<OutputJudgement>> results;
  results.reserve(outputs.size());
  for (auto& slot : slots) results.push_back(std::move(*slot));
  return results;
}

}  // namespace kforge
