// Error values and Result<T>: expected failures are values, not exceptions.
//
// A user mistake, a compile error, an HTTP 429 or a missing tool is returned as an Error with a code
// and a message written for the person who has to act on it (name the input, say how to fix it).
// Bugs are assertions. Exceptions from libraries are caught at the boundary that called them and
// turned into Errors there.
#ifndef KFORGE_CORE_ERROR_H_
#define KFORGE_CORE_ERROR_H_

#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace kforge {

enum class ErrorCode {
  kInvalidArgument,    // the caller's input is wrong (bad target string, malformed task file)
  kNotFound,           // a named thing does not exist (file, model id, dataset entry)
  kIo,                 // reading or writing a file, a pipe or a socket failed
  kParse,              // a document (JSON, TOML, an LLM answer) could not be parsed
  kUnavailable,        // a tool, device or service is absent or unreachable right now
  kTimeout,            // a deadline passed
  kCancelled,          // the operation was cancelled by the caller
  kResourceExhausted,  // a budget or limit was reached (tokens, money, rate, memory)
  kPermissionDenied,   // credentials or file permissions refused the operation
  kInternal,           // a broken invariant that is not the caller's fault
};

// Stable lowercase name of `code`, e.g. "invalid_argument".
std::string_view ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;

  // "invalid_argument: <message>"
  std::string ToString() const;
};

template <typename T>
using Result = std::expected<T, Error>;

// Result of an operation that yields no value.
using Status = std::expected<void, Error>;

inline std::unexpected<Error> MakeError(ErrorCode code, std::string message) {
  return std::unexpected<Error>(Error{code, std::move(message)});
}
inline std::unexpected<Error> InvalidArgument(std::string message) {
  return MakeError(ErrorCode::kInvalidArgument, std::move(message));
}
inline std::unexpected<Error> NotFound(std::string message) {
  return MakeError(ErrorCode::kNotFound, std::move(message));
}
inline std::unexpected<Error> IoError(std::string message) {
  return MakeError(ErrorCode::kIo, std::move(message));
}
inline std::unexpected<Error> ParseError(std::string message) {
  return MakeError(ErrorCode::kParse, std::move(message));
}
inline std::unexpected<Error> Unavailable(std::string message) {
  return MakeError(ErrorCode::kUnavailable, std::move(message));
}
inline std::unexpected<Error> TimeoutError(std::string message) {
  return MakeError(ErrorCode::kTimeout, std::move(message));
}
inline std::unexpected<Error> Internal(std::string message) {
  return MakeError(ErrorCode::kInternal, std::move(message));
}

// Success value for Status.
inline Status Ok() { return {}; }

}  // namespace kforge

// Propagates an error from an expression returning Result<T>/Status; evaluates to nothing.
#define KFORGE_RETURN_IF_ERROR(expr)                       \
  do {                                                     \
    auto kforge_status_ = (expr);                          \
    if (!kforge_status_) {                                 \
      return std::unexpected(std::move(kforge_status_).error()); \
    }                                                      \
  } while (false)

#endif  // KFORGE_CORE_ERROR_H_
