#include "kforge/llm/call_failure.h"

namespace kforge::llm {
namespace {

int Rank(CallFailureKind kind) {
  switch (kind) {
    case CallFailureKind::kPermanent: return 4;
    case CallFailureKind::kTransient: return 3;
    case CallFailureKind::kAwaitingAnswer: return 2;
    case CallFailureKind::kBudget: return 1;
    case CallFailureKind::kCancelled: return 0;
  }
  return 0;
}

}  // namespace

std::string_view CallFailureKindName(CallFailureKind kind) {
  switch (kind) {
    case CallFailureKind::kTransient: return "transient";
    case CallFailureKind::kAwaitingAnswer: return "awaiting_answer";
    case CallFailureKind::kCancelled: return "cancelled";
    case CallFailureKind::kBudget: return "budget";
    case CallFailureKind::kPermanent: return "permanent";
  }
  return "?";
}

CallFailureKind ClassifyCallFailure(const Error& error, const ProviderInfo& who) {
  switch (error.code) {
    case ErrorCode::kUnavailable:
      return who.provider == "inbox" ? CallFailureKind::kAwaitingAnswer
                                     : CallFailureKind::kTransient;
    case ErrorCode::kTimeout:
    case ErrorCode::kParse:
      return CallFailureKind::kTransient;
    case ErrorCode::kCancelled:
      return CallFailureKind::kCancelled;
    case ErrorCode::kResourceExhausted:
      return CallFailureKind::kBudget;
    default:
      return CallFailureKind::kPermanent;
  }
}

CallFailureKind MoreDecisive(CallFailureKind a, CallFailureKind b) {
  return Rank(a) >= Rank(b) ? a : b;
}

}  // namespace kforge::llm
