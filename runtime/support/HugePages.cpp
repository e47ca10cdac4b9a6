//===- HugePages.cpp ------------------------------------------------------===//
#include "runtime/support/HugePages.h"

#include "runtime/support/Strings.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/mman.h>
#include <system_error>
#include <thread>
#include <vector>

namespace volt {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

std::string readWhole(const char *path) {
  std::ifstream in(path);
  if (!in)
    return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The number at the start of `text` (after blanks); false when none.
bool leadingNumber(std::string_view text, uint64_t &value, int base = 10) {
  size_t i = text.find_first_not_of(" \t");
  if (i == std::string_view::npos)
    return false;
  auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), value, base);
  return ec == std::errc();
}

} // namespace

TransparentHugePages parseTransparentHugePages(std::string_view text) {
  size_t open = text.find('[');
  size_t close = open == std::string_view::npos ? open : text.find(']', open);
  if (close == std::string_view::npos)
    return TransparentHugePages::Unknown;
  std::string_view word = text.substr(open + 1, close - open - 1);
  if (word == "always")
    return TransparentHugePages::Always;
  if (word == "madvise")
    return TransparentHugePages::Madvise;
  if (word == "never")
    return TransparentHugePages::Never;
  return TransparentHugePages::Unknown;
}

TransparentHugePages transparentHugePages() {
  return parseTransparentHugePages(readWhole(kTransparentHugePagesPath));
}

const char *toString(TransparentHugePages setting) {
  switch (setting) {
  case TransparentHugePages::Always:
    return "always";
  case TransparentHugePages::Madvise:
    return "madvise";
  case TransparentHugePages::Never:
    return "never";
  case TransparentHugePages::Unknown:
    break;
  }
  return "unknown";
}

uint64_t parseAvailableMemory(std::string_view meminfo) {
  constexpr std::string_view key = "MemAvailable:";
  for (size_t at = 0; at < meminfo.size();) {
    size_t eol = meminfo.find('\n', at);
    std::string_view line =
        meminfo.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at);
    at = eol == std::string_view::npos ? meminfo.size() : eol + 1;
    if (!line.starts_with(key))
      continue;
    uint64_t kib = 0;
    if (!leadingNumber(line.substr(key.size()), kib) || !line.ends_with(" kB") ||
        kib > (UINT64_MAX >> 10))
      return 0;
    return kib << 10;
  }
  return 0;
}

uint64_t availableMemoryBytes() { return parseAvailableMemory(readWhole("/proc/meminfo")); }

bool hugePageCopyPays(TransparentHugePages thp, uint64_t bytes, uint64_t available,
                      std::string &why) {
  if (thp != TransparentHugePages::Always && thp != TransparentHugePages::Madvise) {
    why = std::string("transparent huge pages are ") +
          (thp == TransparentHugePages::Never ? "off" : "not known here") + ": " +
          kTransparentHugePagesPath + " says " + toString(thp);
    return false;
  }
  if (available == 0 || bytes > available / 4 * 3) {
    why = "the packs (" + formatBytes(bytes) + ") would take more than 3/4 of the " +
          (available == 0 ? std::string("available memory, which /proc/meminfo does not say")
                          : "available memory (" + formatBytes(available) + ")");
    return false;
  }
  return true;
}

uint64_t parseAnonHugeBytes(std::string_view smaps, uintptr_t begin, uintptr_t end) {
  constexpr std::string_view key = "AnonHugePages:";
  uint64_t total = 0;
  uint64_t overlap = 0; // the current mapping's bytes within [begin, end)
  for (size_t at = 0; at < smaps.size();) {
    size_t eol = smaps.find('\n', at);
    std::string_view line =
        smaps.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at);
    at = eol == std::string_view::npos ? smaps.size() : eol + 1;
    // A mapping's header: "start-end perms offset dev inode [path]", in hex.
    size_t dash = line.find('-');
    uint64_t first = 0, last = 0;
    if (dash != std::string_view::npos && dash > 0 &&
        line.find_first_not_of("0123456789abcdef") == dash &&
        std::from_chars(line.data(), line.data() + dash, first, 16).ec == std::errc() &&
        leadingNumber(line.substr(dash + 1), last, 16)) {
      overlap = first < last && first < end && last > begin
                    ? std::min<uint64_t>(last, end) - std::max<uint64_t>(first, begin)
                    : 0;
      continue;
    }
    uint64_t kib = 0;
    // A mapping that reaches past the range (the kernel merges neighbours
    // of like flags) is counted up to its bytes within it.
    if (overlap > 0 && line.starts_with(key) && leadingNumber(line.substr(key.size()), kib) &&
        kib <= (UINT64_MAX >> 10))
      total += std::min<uint64_t>(kib << 10, overlap);
  }
  return total;
}

Result<std::unique_ptr<HugePageCopy>> HugePageCopy::of(std::span<const uint8_t> bytes,
                                                       const std::string &what) {
  // One huge page more than the bytes, so that the copy can start on a
  // huge page's boundary (the kernel backs only aligned 2 MiB spans).
  const size_t rounded = (bytes.size() + kHugePage - 1) / kHugePage * kHugePage;
  const size_t mappingBytes = rounded + kHugePage;
  void *p =
      ::mmap(nullptr, mappingBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return Error("cannot allocate " + std::to_string(mappingBytes) + " bytes for " + what + ": " +
                 std::strerror(errno));
  auto *mapping = static_cast<uint8_t *>(p);
  auto *data = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(mapping) + kHugePage - 1) /
                                           kHugePage * kHugePage);
  // Advice only: a kernel without transparent huge pages gives ordinary ones.
  (void)::madvise(data, rounded, MADV_HUGEPAGE);
  // The copy in huge-page-sized pieces taken in turn by up to 8 threads:
  // faulting the pages in (the kernel zeroes, and may compact memory for,
  // each) and reading the source both go faster side by side.
  const size_t pieces = rounded / kHugePage;
  const unsigned threads = static_cast<unsigned>(
      std::min<size_t>({pieces / 16, std::max(1u, std::thread::hardware_concurrency()), 8}));
  std::atomic<size_t> next{0};
  auto copyPieces = [&] {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < pieces;) {
      const size_t begin = i * kHugePage;
      std::memcpy(data + begin, bytes.data() + begin, std::min(kHugePage, bytes.size() - begin));
    }
  };
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back(copyPieces);
    } catch (const std::system_error &) {
      break; // no thread to be had: this one copies the rest
    }
  }
  copyPieces();
  for (std::thread &t : helpers)
    t.join();
  (void)::mprotect(mapping, mappingBytes, PROT_READ);
  return std::unique_ptr<HugePageCopy>(new HugePageCopy(mapping, mappingBytes, data, bytes.size()));
}

HugePageCopy::~HugePageCopy() { ::munmap(mapping_, mappingBytes_); }

uint64_t HugePageCopy::hugeBytes() const {
  // The last huge page may reach past the bytes: count those it holds.
  return std::min<uint64_t>(
      size_,
      parseAnonHugeBytes(readWhole("/proc/self/smaps"), reinterpret_cast<uintptr_t>(mapping_),
                         reinterpret_cast<uintptr_t>(mapping_) + mappingBytes_));
}

} // namespace volt
