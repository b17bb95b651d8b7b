#include "kforge/eval/tensor_view.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace kforge {

std::int64_t TensorView::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

MappedTensor::MappedTensor(MappedTensor&& other) noexcept
    : entry_(std::move(other.entry_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedTensor& MappedTensor::operator=(MappedTensor&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    entry_ = std::move(other.entry_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedTensor::~MappedTensor() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

TensorView MappedTensor::view() const {
  return TensorView{entry_.dtype, entry_.shape,
                    std::span<const std::byte>(static_cast<const std::byte*>(data_), size_)};
}

Result<MappedTensor> MapTensorFile(const TensorFile& file) {
  const int fd = ::open(file.file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return IoError(fmt::format("cannot open {}: {}", file.file.string(), std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError(fmt::format("{} is not a readable regular file", file.file.string()));
  }
  MappedTensor mapped;
  mapped.entry_ = file;
  mapped.size_ = static_cast<std::size_t>(st.st_size);
  if (mapped.size_ > 0) {
    void* data = ::mmap(nullptr, mapped.size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (data == MAP_FAILED) {
      ::close(fd);
      return IoError(fmt::format("cannot map {}: {}", file.file.string(), std::strerror(errno)));
    }
    mapped.data_ = data;
  }
  ::close(fd);
  return mapped;
}

}  // namespace kforge
