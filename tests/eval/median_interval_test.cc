// The stop rule of parent-driven timing (eval/median_interval.h), on sample sequences.
#include "kforge/eval/median_interval.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

namespace kforge {
namespace {

// Samples drawn one at a time until the rule stops them: how many it took (0: never, up to cap).
int SamplesUntilKnown(std::function<double()> draw, int cap) {
  std::vector<double> s;
  for (int i = 0; i < cap; ++i) {
    s.push_back(draw());
    if (MedianKnown(s)) return static_cast<int>(s.size());
  }
  return 0;
}

TEST(MedianIntervalTest, OrderStatisticsOfSmallSamples) {
  EXPECT_FALSE(MedianConfidenceInterval(std::vector<double>{1, 2, 3, 4, 5}));
  const std::vector<double> ten = {10, 1, 9, 2, 8, 3, 7, 4, 6, 5};
  auto m = MedianConfidenceInterval(ten);
  ASSERT_TRUE(m);
  // n = 10: P(Bin(10, 1/2) <= 1) = 11/1024 <= 2.5 %, P(<= 2) = 5.5 %: [x(2), x(9)].
  EXPECT_EQ(m->low, 2);
  EXPECT_EQ(m->high, 9);
  EXPECT_EQ(m->median, 5.5);
}

TEST(MedianIntervalTest, CoversTheTrueMedianAtLeastAsOftenAsItSays) {
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> skewed(1.0);
  const double true_median = std::log(2.0);
  for (int n : {10, 25, 100, 400, 2000}) {
    int covered = 0;
    const int runs = 2000;
    for (int r = 0; r < runs; ++r) {
      std::vector<double> s(static_cast<std::size_t>(n));
      for (auto& x : s) x = skewed(rng);
      auto m = MedianConfidenceInterval(s);
      ASSERT_TRUE(m);
      covered += m->low <= true_median && true_median <= m->high;
    }
    EXPECT_GE(covered, runs * 0.94) << "n = " << n;  // 95 % less sampling error
  }
}

TEST(MedianIntervalTest, SteadySamplesStopAtTheMinimum) {
  EXPECT_EQ(SamplesUntilKnown([] { return 1e-5; }, 1000), 10);
  EXPECT_FALSE(MedianKnown(std::vector<double>(9, 1e-5))) << "never before 10 samples";
}

// Microsecond kernels: single samples spread 3-5 % (their noise never falls under 0.5 %), yet
// the median is known to 1 % after a few hundred samples: the old noise rule ran to its cap.
TEST(MedianIntervalTest, NoisySamplesStopOnceTheMedianIsKnown) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> noisy(std::log(3.4e-6), 0.04);
  const int n = SamplesUntilKnown([&] { return noisy(rng); }, 100000);
  EXPECT_GT(n, 10);
  EXPECT_LT(n, 2000) << "a 4 % spread must settle well before the cap";
}

TEST(MedianIntervalTest, RareOutliersDoNotDelayIt) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  const int n = SamplesUntilKnown([&] { return u(rng) < 0.05 ? 1e-3 : 1e-5 * (1 + 0.001 * u(rng)); },
                                  100000);
  EXPECT_GT(n, 0);
  EXPECT_LT(n, 40);
}

// A clock that drifts (a throttling device) never gives a precise median: sampling runs to the
// cap, and the verdict reports the noise.
TEST(MedianIntervalTest, DriftingSamplesNeverSettle) {
  int i = 0;
  EXPECT_EQ(SamplesUntilKnown([&] { return 1.0 + 1e-2 * i++; }, 5000), 0);
}

}  // namespace
}  // namespace kforge
