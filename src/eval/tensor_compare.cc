#include "kforge/eval/tensor_compare.h"

#include "element_decode.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <optional>
#include <thread>


namespace kforge {
namespace {

// A file mapped read-only for the length of a comparison (no copy into memory of our own).
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (data_ != nullptr && data_ != MAP_FAILED) ::munmap(data_, size_);
  }

  Status Open(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return IoError(fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return IoError(fmt::format("{} is not a readable regular file", path.string()));
    }
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ > 0) {
      data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (data_ == MAP_FAILED) {
        ::close(fd);
        return IoError(fmt::format("cannot map {}: {}", path.string(), std::strerror(errno)));
      }
    }
    ::close(fd);
    return {};
  }

  const char* data() const { return size_ > 0 ? static_cast<const char*>(data_) : ""; }
  std::size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// The per-element rule over `n` elements of one stored type; `to_double` decodes an element.
template <typename T, typename ToDouble>
std::int64_t CompareElements(const char* ref, const char* cand, std::int64_t n,
                             const Tolerance& tolerance, ToDouble to_double,
                             TensorComparison& cmp) {
  std::int64_t bad = 0;
  double max_abs = cmp.max_abs_error;
  double max_rel = cmp.max_rel_error;
  for (std::int64_t i = 0; i < n; ++i) {
    const double b = to_double(LoadRaw<T>(ref, i));
    const double a = to_double(LoadRaw<T>(cand, i));
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
      good = abs_err <= tolerance.atol + tolerance.rtol * std::fabs(b);
    }
    max_abs = std::max(max_abs, abs_err);
    if (std::fabs(b) > 0) max_rel = std::max(max_rel, abs_err / std::fabs(b));
    if (!good) {
      if (bad == 0) {
        cmp.first_bad_index = i;
        cmp.first_bad_expected = b;
        cmp.first_bad_actual = a;
      }
      ++bad;
    }
  }
  cmp.max_abs_error = max_abs;
  cmp.max_rel_error = max_rel;
  return bad;
}

// Dispatches on the dtype once; returns the count of elements out of tolerance, or -1 for an
// unknown dtype.
std::int64_t CompareBuffers(const std::string& dtype, const char* ref, const char* cand,
                            std::int64_t n, const Tolerance& tol, TensorComparison& cmp) {
  auto same = [](auto v) { return static_cast<double>(v); };
  if (dtype == "float32") return CompareElements<float>(ref, cand, n, tol, same, cmp);
  if (dtype == "float64") return CompareElements<double>(ref, cand, n, tol, same, cmp);
  if (dtype == "float16") {
    return CompareElements<std::uint16_t>(
        ref, cand, n, tol, [](std::uint16_t h) { return static_cast<double>(HalfToFloat(h)); },
        cmp);
  }
  if (dtype == "bfloat16") {
    return CompareElements<std::uint16_t>(
        ref, cand, n, tol,
        [](std::uint16_t h) { return static_cast<double>(Bfloat16ToFloat(h)); },
        cmp);
  }
  if (dtype == "int32") return CompareElements<std::int32_t>(ref, cand, n, tol, same, cmp);
  if (dtype == "int64") return CompareElements<std::int64_t>(ref, cand, n, tol, same, cmp);
  if (dtype == "int16") return CompareElements<std::int16_t>(ref, cand, n, tol, same, cmp);
  if (dtype == "int8") return CompareElements<std::int8_t>(ref, cand, n, tol, same, cmp);
  if (dtype == "uint8" || dtype == "bool") {
    return CompareElements<std::uint8_t>(ref, cand, n, tol, same, cmp);
  }
  return -1;
}

}  // namespace

std::int64_t TensorFile::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

int DtypeSize(const std::string& dtype) {
  if (dtype == "float64" || dtype == "int64") return 8;
  if (dtype == "float32" || dtype == "int32") return 4;
  if (dtype == "float16" || dtype == "bfloat16" || dtype == "int16") return 2;
  if (dtype == "int8" || dtype == "uint8" || dtype == "bool") return 1;
  return 0;
}

namespace {

// The rule over a mapped reference and the candidate's bytes (a mapped file or memory).
Result<TensorComparison> CompareWith(const TensorFile& reference, const std::string& cand_dtype,
                                     const std::vector<std::int64_t>& cand_shape,
                                     const char* cand_data, std::size_t cand_size,
                                     const Tolerance& tolerance) {
  TensorComparison cmp;
  if (cand_dtype != reference.dtype) {
    cmp.problem = fmt::format("{}: dtype {} but the reference is {}", reference.name, cand_dtype,
                              reference.dtype);
    return cmp;
  }
  if (cand_shape != reference.shape) {
    cmp.problem = fmt::format("{}: shape [{}] but the reference is [{}]", reference.name,
                              fmt::join(cand_shape, ", "), fmt::join(reference.shape, ", "));
    return cmp;
  }
  const int size = DtypeSize(reference.dtype);
  if (size == 0) return InvalidArgument(fmt::format("unknown dtype '{}'", reference.dtype));
  MappedFile ref_file;
  if (auto s = ref_file.Open(reference.file); !s) return std::unexpected(s.error());
  const std::int64_t n = reference.numel();
  const auto expected_bytes = static_cast<std::size_t>(n * size);
  if (ref_file.size() != expected_bytes) {
    return Internal(fmt::format("reference file {} has {} bytes, expected {}",
                                reference.file.string(), ref_file.size(), expected_bytes));
  }
  if (cand_size != expected_bytes) {
    cmp.problem = fmt::format("{}: the candidate wrote {} bytes, expected {}", reference.name,
                              cand_size, expected_bytes);
    return cmp;
  }
  const std::int64_t bad =
      CompareBuffers(reference.dtype, ref_file.data(), cand_data, n, tolerance, cmp);
  cmp.fraction_bad = n > 0 ? static_cast<double>(bad) / static_cast<double>(n) : 0.0;
  cmp.ok = bad == 0;
  if (!cmp.ok) {
    cmp.problem = fmt::format(
        "{}: {} of {} elements out of tolerance (atol {:g}, rtol {:g}); max abs error {:.3g}; "
        "first at flat index {}: expected {:.6g}, got {:.6g}",
        reference.name, bad, n, tolerance.atol, tolerance.rtol, cmp.max_abs_error,
        cmp.first_bad_index, cmp.first_bad_expected, cmp.first_bad_actual);
  }
  return cmp;
}

}  // namespace

Result<TensorComparison> CompareTensors(const TensorFile& reference, const TensorFile& candidate,
                                        const Tolerance& tolerance) {
  if (candidate.dtype != reference.dtype || candidate.shape != reference.shape) {
    return CompareWith(reference, candidate.dtype, candidate.shape, nullptr, 0, tolerance);
  }
  MappedFile cand_file;
  if (auto s = cand_file.Open(candidate.file); !s) return std::unexpected(s.error());
  return CompareWith(reference, candidate.dtype, candidate.shape, cand_file.data(),
                     cand_file.size(), tolerance);
}

Result<TensorComparison> CompareTensorToMemory(const TensorFile& reference,
                                               const std::string& dtype,
                                               const std::vector<std::int64_t>& shape,
                                               std::span<const std::byte> candidate,
                                               const Tolerance& tolerance) {
  return CompareWith(reference, dtype, shape, reinterpret_cast<const char*>(candidate.data()),
                     candidate.size(), tolerance);
}

std::vector<Result<TensorComparison>> CompareTensorPairs(const std::vector<TensorPair>& pairs,
                                                         const Tolerance& tolerance,
                                                         unsigned max_threads) {
  std::vector<std::optional<Result<TensorComparison>>> slots(pairs.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < pairs.size(); i = next++) {
      slots[i] = CompareTensors(*pairs[i].reference, *pairs[i].candidate, tolerance);
    }
  };
  if (max_threads == 0) max_threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  const auto threads = static_cast<unsigned>(std::min<std::size_t>(max_threads, pairs.size()));
  {
    std::vector<std::jthread> workers;
    for (unsigned t = 1; t < threads; ++t) workers.emplace_back(work);
    work();
  }  // joins the workers
  std::vector<Result<TensorComparison>> results;
  results.reserve(pairs.size());
  for (auto& slot : slots) results.push_back(std::move(*slot));
  return results;
}

}  // namespace kforge
