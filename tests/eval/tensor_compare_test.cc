#include "kforge/eval/tensor_compare.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace kforge {
namespace {

namespace fs = std::filesystem;

class TensorCompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kforge-compare-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  template <typename T>
  TensorFile Write(const std::string& name, const std::vector<T>& values, const std::string& dtype,
                   std::vector<std::int64_t> shape = {}) {
    fs::path file = dir_ / (name + ".bin");
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(values.data()),
              static_cast<std::streamsize>(values.size() * sizeof(T)));
    if (shape.empty()) shape = {static_cast<std::int64_t>(values.size())};
    TensorFile t;
    t.name = name;
    t.file = file;
    t.dtype = dtype;
    t.shape = shape;
    return t;
  }
  fs::path dir_;
};

TEST_F(TensorCompareTest, WithinToleranceIsOk) {
  auto ref = Write<float>("ref", {1.0f, -2.0f, 100.0f}, "float32");
  auto cand = Write<float>("cand", {1.00005f, -2.0001f, 100.009f}, "float32");
  auto cmp = CompareTensors(ref, cand, {1e-4, 1e-4});
  ASSERT_TRUE(cmp);
  EXPECT_TRUE(cmp->ok) << cmp->problem;
}

TEST_F(TensorCompareTest, OutOfToleranceNamesTheFirstBadElement) {
  auto ref = Write<float>("ref", {1, 2, 3, 4}, "float32");
  auto cand = Write<float>("cand", {1, 2, 3.1f, 4}, "float32");
  auto cmp = CompareTensors(ref, cand, {1e-4, 1e-4});
  ASSERT_TRUE(cmp);
  EXPECT_FALSE(cmp->ok);
  EXPECT_EQ(cmp->first_bad_index, 2);
  EXPECT_DOUBLE_EQ(cmp->fraction_bad, 0.25);
  EXPECT_NEAR(cmp->max_abs_error, 0.1, 1e-6);
  EXPECT_NE(cmp->problem.find("1 of 4"), std::string::npos) << cmp->problem;
}

TEST_F(TensorCompareTest, NanNeverEqualsAndPoisonIsCaught) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto ref = Write<float>("ref", {1, nan}, "float32");
  auto cand = Write<float>("cand", {nan, nan}, "float32");
  auto cmp = CompareTensors(ref, cand, {1e-2, 1e-2});
  ASSERT_TRUE(cmp);
  EXPECT_FALSE(cmp->ok);
  EXPECT_DOUBLE_EQ(cmp->fraction_bad, 1.0);
}

TEST_F(TensorCompareTest, InfinitiesMatchOnlyThemselves) {
  const float inf = std::numeric_limits<float>::infinity();
  auto ref = Write<float>("ref", {inf, -inf}, "float32");
  EXPECT_TRUE(CompareTensors(ref, Write<float>("same", {inf, -inf}, "float32"), {})->ok);
  EXPECT_FALSE(CompareTensors(ref, Write<float>("flip", {inf, inf}, "float32"), {})->ok);
  EXPECT_FALSE(CompareTensors(ref, Write<float>("big", {3e38f, -inf}, "float32"), {1, 1})->ok);
}

TEST_F(TensorCompareTest, DtypeAndShapeMustMatch) {
  auto ref = Write<float>("ref", {1, 2}, "float32");
  auto as_double = Write<double>("dbl", {1, 2}, "float64");
  auto cmp = CompareTensors(ref, as_double, {});
  ASSERT_TRUE(cmp);
  EXPECT_FALSE(cmp->ok);
  EXPECT_NE(cmp->problem.find("dtype float64"), std::string::npos);
  auto reshaped = Write<float>("rs", {1, 2}, "float32", {2, 1});
  EXPECT_NE(CompareTensors(ref, reshaped, {})->problem.find("shape"), std::string::npos);
  auto short_file = Write<float>("short", {1}, "float32", {2});
  EXPECT_NE(CompareTensors(ref, short_file, {})->problem.find("bytes"), std::string::npos);
}

TEST_F(TensorCompareTest, HalfAndBfloat16AreDecoded) {
  // 1.0 and -2.5 in IEEE half: 0x3C00, 0xC100; in bfloat16: 0x3F80, 0xC020.
  auto ref = Write<std::uint16_t>("h", {0x3C00, 0xC100}, "float16");
  auto f32 = Write<std::uint16_t>("h2", {0x3C00, 0xC100}, "float16");
  EXPECT_TRUE(CompareTensors(ref, f32, {})->ok);
  auto off = Write<std::uint16_t>("h3", {0x3C01, 0xC100}, "float16");
  auto cmp = CompareTensors(ref, off, {1e-4, 1e-4});
  EXPECT_FALSE(cmp->ok);
  EXPECT_NEAR(cmp->first_bad_expected, 1.0, 0);
  auto bf = Write<std::uint16_t>("b", {0x3F80, 0xC020}, "bfloat16");
  auto bf_cmp = CompareTensors(bf, Write<std::uint16_t>("b2", {0x3F80, 0xC040}, "bfloat16"), {});
  EXPECT_FALSE(bf_cmp->ok);
  EXPECT_DOUBLE_EQ(bf_cmp->first_bad_expected, -2.5);
  EXPECT_DOUBLE_EQ(bf_cmp->first_bad_actual, -3.0);
}

TEST_F(TensorCompareTest, IntegersCompareExactlyAtZeroTolerance) {
  auto ref = Write<std::int64_t>("i", {3, 7}, "int64");
  EXPECT_TRUE(CompareTensors(ref, Write<std::int64_t>("j", {3, 7}, "int64"), {0, 0})->ok);
  EXPECT_FALSE(CompareTensors(ref, Write<std::int64_t>("k", {3, 8}, "int64"), {0, 0})->ok);
}

TEST_F(TensorCompareTest, EveryStoredTypeAndEmptyTensors) {
  EXPECT_TRUE(CompareTensors(Write<std::int8_t>("a", {-3, 4}, "int8"),
                             Write<std::int8_t>("b", {-3, 4}, "int8"), {0, 0})->ok);
  EXPECT_FALSE(CompareTensors(Write<std::uint8_t>("c", {1, 0}, "bool"),
                              Write<std::uint8_t>("d", {1, 1}, "bool"), {0, 0})->ok);
  EXPECT_TRUE(CompareTensors(Write<std::int16_t>("e", {-300}, "int16"),
                             Write<std::int16_t>("f", {-300}, "int16"), {0, 0})->ok);
  EXPECT_TRUE(CompareTensors(Write<std::int32_t>("g", {1 << 30}, "int32"),
                             Write<std::int32_t>("h", {1 << 30}, "int32"), {0, 0})->ok);
  auto empty = Write<float>("empty", {}, "float32", {0, 4});
  auto cmp = CompareTensors(empty, Write<float>("empty2", {}, "float32", {0, 4}), {});
  ASSERT_TRUE(cmp.has_value());
  EXPECT_TRUE(cmp->ok);
  EXPECT_EQ(cmp->fraction_bad, 0.0);
  TensorFile missing;
  missing.name = "output_0";
  missing.file = dir_ / "missing.bin";
  missing.dtype = "float32";
  missing.shape = {1};
  EXPECT_FALSE(CompareTensors(missing, missing, {}).has_value());
}

TEST_F(TensorCompareTest, PairsAreComparedInTheirOrderOnSeveralThreads) {
  std::vector<TensorFile> refs;
  std::vector<TensorFile> cands;
  for (int i = 0; i < 9; ++i) {
    std::vector<float> values(1000, static_cast<float>(i));
    // (fmt::format, not "r" + std::to_string: GCC 12's -Wrestrict misfires on that at -O3)
    refs.push_back(Write<float>(fmt::format("r{}", i), values, "float32"));
    if (i % 3 == 1) values[999 - i] += 1.0f;  // pairs 1, 4 and 7 are wrong at element 999 - i
    cands.push_back(Write<float>(fmt::format("c{}", i), values, "float32"));
  }
  std::vector<TensorPair> pairs;
  for (int i = 0; i < 9; ++i) pairs.push_back({&refs[i], &cands[i]});
  TensorFile missing;
  missing.name = "output_0";
  missing.file = dir_ / "missing.bin";
  missing.dtype = "float32";
  missing.shape = {1000};
  pairs.push_back({&refs[0], &missing});
  for (unsigned threads : {1u, 4u, 0u}) {
    auto results = CompareTensorPairs(pairs, {1e-4, 1e-4}, threads);
    ASSERT_EQ(results.size(), pairs.size());
    for (int i = 0; i < 9; ++i) {
      ASSERT_TRUE(results[i].has_value());
      EXPECT_EQ(results[i]->ok, i % 3 != 1) << i;
      if (i % 3 == 1) {
        EXPECT_EQ(results[i]->first_bad_index, 999 - i);
      }
    }
    EXPECT_FALSE(results[9].has_value());
  }
  EXPECT_TRUE(CompareTensorPairs({}, {}).empty());
}

}  // namespace
}  // namespace kforge
