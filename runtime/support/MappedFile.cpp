//===- MappedFile.cpp -----------------------------------------------------===//
#include "runtime/support/MappedFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace volt {

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Error(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error(path + ": not a regular file");
  }
  size_t size = static_cast<size_t>(st.st_size);
  const uint8_t *data = nullptr;
  if (size > 0) {
    void *p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return Error(path + ": cannot map: " + std::strerror(err));
    }
    data = static_cast<const uint8_t *>(p);
  }
  ::close(fd);
  return std::unique_ptr<MappedFile>(new MappedFile(path, data, size));
}

void MappedFile::advise(Access access) const {
  if (data_ == nullptr)
    return;
  const int advice = access == Access::Random       ? MADV_RANDOM
                     : access == Access::Sequential ? MADV_SEQUENTIAL
                                                    : MADV_NORMAL;
  // Advice only: a kernel that refuses it reads as before.
  (void)::madvise(const_cast<uint8_t *>(data_), size_, advice);
}

void MappedFile::prefetch(size_t offset, size_t length) const {
  if (data_ == nullptr || offset >= size_)
    return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t begin = offset / page * page;
  const size_t end = std::min(size_, offset + length);
  (void)::madvise(const_cast<uint8_t *>(data_) + begin, end - begin, MADV_WILLNEED);
}

void MappedFile::dropPages() const {
  if (data_ != nullptr)
    (void)::madvise(const_cast<uint8_t *>(data_), size_, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr)
    ::munmap(const_cast<uint8_t *>(data_), size_);
}

} // namespace volt
