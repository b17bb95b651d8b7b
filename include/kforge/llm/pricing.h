// Prices of a model and the cost of a call.
#ifndef KFORGE_LLM_PRICING_H_
#define KFORGE_LLM_PRICING_H_

#include "kforge/llm/response.h"

namespace kforge::llm {

struct Pricing {
  double input_usd_per_mtok = 0.0;   // US dollars per million input (prompt) tokens
  double output_usd_per_mtok = 0.0;  // US dollars per million output (generated) tokens
};

// Dollars for `usage` at `pricing`.
double CostUsd(const Usage& usage, const Pricing& pricing);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_PRICING_H_
