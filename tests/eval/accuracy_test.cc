#include "kforge/eval/accuracy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <vector>

namespace kforge {
namespace {

namespace fs = std::filesystem;

// A tensor in memory that a TensorView can point into.
struct Held {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> bytes;
  TensorView view() const { return {dtype, shape, bytes}; }
};

template <typename T>
Held Hold(const std::vector<T>& values, std::string dtype, std::vector<std::int64_t> shape = {}) {
  Held h{std::move(dtype), std::move(shape), std::vector<std::byte>(values.size() * sizeof(T))};
  if (h.shape.empty()) h.shape = {static_cast<std::int64_t>(values.size())};
  std::memcpy(h.bytes.data(), values.data(), h.bytes.size());
  return h;
}

// fp32 rounded to `bits` explicit mantissa bits, to nearest even (TF32: 10, bf16: 7).
float RoundMantissa(float x, int bits) {
  auto i = std::bit_cast<std::uint32_t>(x);
  const int drop = 23 - bits;
  const std::uint32_t bias = ((i >> drop) & 1u) + (1u << (drop - 1)) - 1u;
  i = ((i + bias) >> drop) << drop;
  return std::bit_cast<float>(i);
}

std::uint16_t ToBf16(float x) {  // round to nearest even
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(RoundMantissa(x, 7)) >> 16);
}

// A dot-product output: truth in float64, the fp32 reference with sequential fp32 accumulation
// (what a plain fp32 GEMM does), and candidates computed from the same inputs.
struct DotCase {
  std::vector<double> truth;
  std::vector<float> reference;
  std::vector<std::vector<float>> a, b;
};

DotCase MakeDots(int outputs, int k, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  DotCase d;
  for (int o = 0; o < outputs; ++o) {
    std::vector<float> a(k), b(k);
    for (int i = 0; i < k; ++i) {
      a[i] = normal(gen);
      b[i] = normal(gen);
    }
    double t = 0;
    float r = 0;
    for (int i = 0; i < k; ++i) {
      t += static_cast<double>(a[i]) * b[i];
      r += a[i] * b[i];
    }
    d.truth.push_back(t);
    d.reference.push_back(r);
    d.a.push_back(std::move(a));
    d.b.push_back(std::move(b));
  }
  return d;
}

// Each dot with its inputs rounded to `bits` mantissa bits and accumulated in fp32.
std::vector<float> RoundedDots(const DotCase& d, int bits) {
  std::vector<float> out;
  for (std::size_t o = 0; o < d.a.size(); ++o) {
    float acc = 0;
    for (std::size_t i = 0; i < d.a[o].size(); ++i) {
      acc += RoundMantissa(d.a[o][i], bits) * RoundMantissa(d.b[o][i], bits);
    }
    out.push_back(acc);
  }
  return out;
}

// 3xTF32: a = hi + lo, each TF32; hi*hi + hi*lo + lo*hi accumulated in fp32.
std::vector<float> SplitTf32Dots(const DotCase& d) {
  std::vector<float> out;
  for (std::size_t o = 0; o < d.a.size(); ++o) {
    float acc = 0;
    for (std::size_t i = 0; i < d.a[o].size(); ++i) {
      const float ah = RoundMantissa(d.a[o][i], 10), al = RoundMantissa(d.a[o][i] - ah, 10);
      const float bh = RoundMantissa(d.b[o][i], 10), bl = RoundMantissa(d.b[o][i] - bh, 10);
      acc += static_cast<float>(static_cast<double>(ah) * bh + static_cast<double>(ah) * bl +
                                static_cast<double>(al) * bh);
    }
    out.push_back(acc);
  }
  return out;
}

OutputJudgement Judge(const Held& cand, const Held& ref, const Held* truth,
                      PrecisionPolicy policy = PrecisionPolicy::kStrict) {
  const TensorView t = truth != nullptr ? truth->view() : TensorView{};
  auto j = JudgeOutput(cand.view(), ref.view(), truth != nullptr ? &t : nullptr, policy, "out");
  EXPECT_TRUE(j) << j.error().message;
  return j ? *j : OutputJudgement{};
}

TEST(AccuracyTest, Fp32AccurateCandidatesPassStrict) {
  const DotCase d = MakeDots(256, 1024, 1);
  const Held ref = Hold(d.reference, "float32");
  const Held truth = Hold(d.truth, "float64");
  std::vector<float> doubled;  // accumulated in double, rounded once: better than the reference
  for (double t : d.truth) doubled.push_back(static_cast<float>(t));
  auto j = Judge(Hold(doubled, "float32"), ref, &truth);
  EXPECT_TRUE(j.ok) << j.problem;
  EXPECT_EQ(j.rule, AccuracyRule::kTruth);
  EXPECT_LT(*j.error_ratio, 1.0);
  // Split precision (3xTF32) names no type but must pass: its error is the reference's order.
  j = Judge(Hold(SplitTf32Dots(d), "float32"), ref, &truth);
  EXPECT_TRUE(j.ok) << j.problem;
  EXPECT_TRUE(j.meets_strict);
}

TEST(AccuracyTest, Tf32Fp16AndBf16ComputeFailStrictButPassTheirPolicies) {
  const DotCase d = MakeDots(256, 1024, 2);
  const Held ref = Hold(d.reference, "float32");
  const Held truth = Hold(d.truth, "float64");
  const Held tf32 = Hold(RoundedDots(d, 10), "float32");
  auto j = Judge(tf32, ref, &truth);
  EXPECT_FALSE(j.ok);
  EXPECT_GT(*j.error_ratio, kAccuracyFactor);
  EXPECT_NE(j.problem.find("float64 truth"), std::string::npos) << j.problem;
  EXPECT_NE(j.problem.find("strict allows 64x"), std::string::npos) << j.problem;
  j = Judge(tf32, ref, &truth, PrecisionPolicy::kTf32);
  EXPECT_TRUE(j.ok) << j.problem;
  EXPECT_FALSE(j.meets_strict);
  const Held bf16 = Hold(RoundedDots(d, 7), "float32");
  EXPECT_FALSE(Judge(bf16, ref, &truth).ok);
  EXPECT_FALSE(Judge(bf16, ref, &truth, PrecisionPolicy::kTf32).ok);
  j = Judge(bf16, ref, &truth, PrecisionPolicy::kMixed);
  EXPECT_TRUE(j.ok) << j.problem;
  EXPECT_FALSE(j.meets_strict);
}

// A softmax whose exp has 6 % error: every output is below 1e-3, so a fixed atol of 1e-4 passed
// it (CompareTensors does); the floor scales with the output, so the contract does not.
TEST(AccuracyTest, SmallOutputsWithLargeRelativeErrorFail) {
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(0, 1);
  const int n = 4096;
  std::vector<double> e(n);
  double sum = 0;
  for (auto& x : e) sum += (x = std::exp(static_cast<double>(u(gen))));
  std::vector<double> truth;
  std::vector<float> ref, crude;
  for (int i = 0; i < n; ++i) {
    truth.push_back(e[i] / sum);
    ref.push_back(static_cast<float>(e[i] / sum));
    crude.push_back(static_cast<float>(e[i] / sum * (i % 2 ? 1.06 : 0.95)));
  }
  const Held t = Hold(truth, "float64");
  const auto j = Judge(Hold(crude, "float32"), Hold(ref, "float32"), &t);
  EXPECT_FALSE(j.ok);
  EXPECT_GT(j.fraction_bad, 0.9);
  // ... and under mixed too: 6 % is beyond 1e-2 of the output's largest value.
  EXPECT_FALSE(Judge(Hold(crude, "float32"), Hold(ref, "float32"), &t, PrecisionPolicy::kMixed).ok);
}

TEST(AccuracyTest, Bf16OutputsAreJudgedAtTheirPrecision) {
  std::mt19937 gen(4);
  std::normal_distribution<float> normal;
  const int n = 8192;
  std::vector<double> truth;
  std::vector<std::uint16_t> ref, honest, coarse;
  for (int i = 0; i < n; ++i) {
    const double x = normal(gen);
    truth.push_back(x);
    // The reference rounds twice (an intermediate bf16 op), an honest kernel once.
    ref.push_back(ToBf16(std::bit_cast<float>(static_cast<std::uint32_t>(ToBf16(
                             static_cast<float>(x * 1.0009))) << 16) / 1.0009f));
    honest.push_back(ToBf16(static_cast<float>(x)));
    coarse.push_back(ToBf16(RoundMantissa(static_cast<float>(x), 2)));  // coarser than fp8
  }
  const Held t = Hold(truth, "float64");
  const Held r = Hold(ref, "bfloat16");
  for (auto policy : {PrecisionPolicy::kStrict, PrecisionPolicy::kTf32, PrecisionPolicy::kMixed}) {
    auto j = Judge(Hold(honest, "bfloat16"), r, &t, policy);
    EXPECT_TRUE(j.ok) << j.problem;
    EXPECT_TRUE(j.meets_strict);
    j = Judge(Hold(coarse, "bfloat16"), r, &t, policy);
    EXPECT_FALSE(j.ok) << "policy " << PrecisionPolicyName(policy);
    EXPECT_NE(j.problem.find("bfloat16 output precision"), std::string::npos) << j.problem;
  }
}

TEST(AccuracyTest, NonFiniteValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Held truth = Hold(std::vector<double>{1, 2, INFINITY, 4}, "float64");
  const Held ref = Hold(std::vector<float>{1, 2, inf, 4}, "float32");
  EXPECT_TRUE(Judge(Hold(std::vector<float>{1, 2, inf, 4}, "float32"), ref, &truth).ok);
  auto j = Judge(Hold(std::vector<float>{1, nan, inf, 4}, "float32"), ref, &truth);
  EXPECT_FALSE(j.ok);
  EXPECT_EQ(j.first_bad_index, 1);
  EXPECT_FALSE(Judge(Hold(std::vector<float>{1, 2, -inf, 4}, "float32"), ref, &truth).ok);
  EXPECT_FALSE(Judge(Hold(std::vector<float>{1, 2, 3, 4}, "float32"), ref, &truth).ok);
  // A reference NaN is matched by nothing (NaN never equals).
  const Held nan_ref = Hold(std::vector<float>{1, nan}, "float32");
  const Held nan_truth = Hold(std::vector<double>{1, NAN}, "float64");
  EXPECT_FALSE(Judge(Hold(std::vector<float>{1, nan}, "float32"), nan_ref, &nan_truth).ok);
}

TEST(AccuracyTest, AllZeroTruthHasATinyFloorNotAnAtol) {
  const Held truth = Hold(std::vector<double>(16, 0.0), "float64");
  const Held ref = Hold(std::vector<float>(16, 0.0f), "float32");
  EXPECT_TRUE(Judge(Hold(std::vector<float>(16, 0.0f), "float32"), ref, &truth).ok);
  std::vector<float> small(16, 0.0f);
  small[3] = 1e-6f;  // within 1e-4 of zero, and wrong
  EXPECT_FALSE(Judge(Hold(small, "float32"), ref, &truth).ok);
}

TEST(AccuracyTest, IntegersAreExact) {
  const Held ref = Hold(std::vector<std::int64_t>{3, 1, (1LL << 60) + 1}, "int64");
  EXPECT_TRUE(Judge(Hold(std::vector<std::int64_t>{3, 1, (1LL << 60) + 1}, "int64"), ref, nullptr).ok);
  auto j = Judge(Hold(std::vector<std::int64_t>{3, 1, 1LL << 60}, "int64"), ref, nullptr);
  EXPECT_FALSE(j.ok);  // equal as doubles, not as integers
  EXPECT_EQ(j.rule, AccuracyRule::kExact);
  EXPECT_EQ(j.first_bad_index, 2);
}

TEST(AccuracyTest, WithoutTruthTheToleranceRuleApplies) {
  const Held ref = Hold(std::vector<float>{1, -2, 100}, "float32");
  auto j = Judge(Hold(std::vector<float>{1.00005f, -2.0001f, 100.009f}, "float32"), ref, nullptr);
  EXPECT_TRUE(j.ok) << j.problem;
  EXPECT_EQ(j.rule, AccuracyRule::kTolerance);
  EXPECT_FALSE(j.error_ratio.has_value());
  j = Judge(Hold(std::vector<float>{1, -2, 100.1f}, "float32"), ref, nullptr);
  EXPECT_FALSE(j.ok);
  EXPECT_NE(j.problem.find("no float64 truth"), std::string::npos) << j.problem;
  // bfloat16 outputs at torch.testing's bfloat16 tolerance: one ulp apart passes.
  const Held bref = Hold(std::vector<std::uint16_t>{ToBf16(1.0f), ToBf16(3.0f)}, "bfloat16");
  const Held bulp = Hold(std::vector<std::uint16_t>{static_cast<std::uint16_t>(ToBf16(1.0f) + 1),
                                                    ToBf16(3.0f)},
                         "bfloat16");
  EXPECT_TRUE(Judge(bulp, bref, nullptr).ok);
}

TEST(AccuracyTest, DtypeShapeAndSizeMismatchesFailAndBadJudgeInputsAreErrors) {
  const Held ref = Hold(std::vector<float>{1, 2}, "float32");
  EXPECT_NE(Judge(Hold(std::vector<double>{1, 2}, "float64"), ref, nullptr).problem.find("dtype"),
            std::string::npos);
  EXPECT_NE(Judge(Hold(std::vector<float>{1, 2}, "float32", {2, 1}), ref, nullptr)
                .problem.find("shape"),
            std::string::npos);
  Held short_cand = Hold(std::vector<float>{1}, "float32", {2});
  EXPECT_NE(Judge(short_cand, ref, nullptr).problem.find("wrote 4 bytes"), std::string::npos);
  const Held bad_truth = Hold(std::vector<float>{1, 2}, "float32");
  const TensorView bt = bad_truth.view();
  EXPECT_FALSE(JudgeOutput(ref.view(), ref.view(), &bt, PrecisionPolicy::kStrict));
  const Held unknown = Hold(std::vector<float>{1}, "complex64");
  EXPECT_FALSE(JudgeOutput(unknown.view(), unknown.view(), nullptr, PrecisionPolicy::kStrict));
}

TEST(AccuracyTest, JudgeOutputFilesMapsFiles) {
  const fs::path dir = fs::temp_directory_path() / ("kforge-accuracy-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const auto& values, const std::string& dtype) {
    std::ofstream out(dir / (name + ".bin"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(values.data()),
              static_cast<std::streamsize>(values.size() * sizeof(values[0])));
    TensorFile t;
    t.name = name;
    t.file = dir / (name + ".bin");
    t.dtype = dtype;
    t.shape = {static_cast<std::int64_t>(values.size())};
    return t;
  };
  const auto ref = write("output_0", std::vector<float>{1, 2, 3}, "float32");
  const auto truth = write("truth_0", std::vector<double>{1, 2, 3}, "float64");
  const auto good = write("good", std::vector<float>{1, 2, 3}, "float32");
  const auto bad = write("bad", std::vector<float>{1, 2, 3.001f}, "float32");
  auto results = JudgeOutputFiles({{&good, &ref, &truth}, {&bad, &ref, &truth}, {&bad, &ref, nullptr}},
                                  PrecisionPolicy::kStrict, 2);
  ASSERT_EQ(results.size(), 3u);
  ASSERT_TRUE(results[0] && results[1] && results[2]);
  EXPECT_TRUE(results[0]->ok);
  EXPECT_FALSE(results[1]->ok);
  EXPECT_EQ(results[1]->rule, AccuracyRule::kTruth);
  EXPECT_EQ(results[2]->rule, AccuracyRule::kTolerance);
  TensorFile missing = ref;
  missing.file = dir / "absent.bin";
  auto errs = JudgeOutputFiles({{&good, &missing, nullptr}}, PrecisionPolicy::kStrict);
  EXPECT_FALSE(errs[0]);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kforge
