#include "kforge/llm/pricing.h"

namespace kforge::llm {

double CostUsd(const Usage& usage, const Pricing& pricing) {
  return (static_cast<double>(usage.input_tokens) * pricing.input_usd_per_mtok +
          static_cast<double>(usage.output_tokens) * pricing.output_usd_per_mtok) /
         1e6;
}

}  // namespace kforge::llm
