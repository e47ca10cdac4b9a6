//===- ValueScan.cpp ------------------------------------------------------===//
#include "compiler/model/ValueScan.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

namespace volt::model {
namespace {

/// Bits of one floating-point format: where its exponent and mantissa are,
/// and whether an all-ones exponent means infinity/NaN (IEEE) or only the
/// all-ones pattern is NaN (E4M3FN, E8M0).
struct Format {
  uint64_t signBit;
  uint64_t exponentMask;
  uint64_t mantissaMask;
  bool ieee; ///< all-ones exponent: mantissa 0 is infinity, else NaN
};

Format formatOf(DType dtype) {
  switch (dtype) {
  case DType::BF16: return {0x8000, 0x7f80, 0x007f, true};
  case DType::F16: return {0x8000, 0x7c00, 0x03ff, true};
  case DType::F32: return {0x80000000u, 0x7f800000u, 0x007fffffu, true};
  case DType::F64: return {0x8000000000000000ull, 0x7ff0000000000000ull, 0x000fffffffffffffull, true};
  case DType::F8E5M2: return {0x80, 0x7c, 0x03, true};
  // E4M3FN: S.1111.111 is NaN; there is no infinity.
  case DType::F8E4M3: return {0x80, 0x78, 0x07, false};
  // E8M0 (an exponent alone, no sign): 0xff is NaN.
  case DType::F8E8M0: return {0, 0xff, 0, false};
  default: return {0, 0, 0, false};
  }
}

template <typename T>
bool scanAs(std::span<const uint8_t> bytes, const Format &f, bool scale, uint64_t indexBase,
            ValueFinding &finding) {
  const size_t n = bytes.size() / sizeof(T);
  const T signBit = static_cast<T>(f.signBit), expMask = static_cast<T>(f.exponentMask),
          mantMask = static_cast<T>(f.mantissaMask), magMask = static_cast<T>(expMask | mantMask);
  // Non-IEEE formats (E4M3FN, E8M0): only the all-ones magnitude is NaN.
  const T nanPattern = f.ieee ? expMask : magMask;
  // A fast pass the compiler vectorises; the counting pass runs only for
  // data that has something to report.
  T any = 0;
  const uint8_t *p = bytes.data();
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    const T bad = static_cast<T>((v & nanPattern) == nanPattern);
    const T negative = static_cast<T>(scale && (v & signBit) && (v & magMask));
    any |= static_cast<T>(bad | negative);
  }
  if (!any)
    return true;
  bool first = finding.nans + finding.infinities + finding.negatives == 0;
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    bool found = false;
    if ((v & nanPattern) == nanPattern) {
      if (!f.ieee || (v & mantMask))
        ++finding.nans;
      else
        ++finding.infinities;
      found = true;
    } else if (scale && (v & signBit) && (v & magMask)) {
      ++finding.negatives;
      found = true;
    }
    if (found && first) {
      finding.firstIndex = indexBase + i;
      first = false;
    }
  }
  return false;
}

/// A piece of one tensor's data, the unit the threads share.
struct Chunk {
  size_t tensor;
  uint64_t begin; ///< byte offset within the tensor's data
  uint64_t end;
};

constexpr uint64_t kChunkBytes = 8ull << 20;

} // namespace

bool isScannedDType(DType dtype) { return formatOf(dtype).exponentMask != 0; }

bool isScaleTensor(const std::string &name) {
  auto ends = [&](std::string_view s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return ends("_scale") || ends("_scale_2") || ends("_scale_inv") || ends(".scales");
}

bool scanValues(std::span<const uint8_t> data, DType dtype, bool scale, ValueFinding &finding) {
  return scanValuesFrom(data, dtype, scale, 0, finding);
}

bool scanValuesFrom(std::span<const uint8_t> data, DType dtype, bool scale, uint64_t indexBase,
                    ValueFinding &finding) {
  const Format f = formatOf(dtype);
  switch (dtypeSize(dtype)) {
  case 1: return scanAs<uint8_t>(data, f, scale, indexBase, finding);
  case 2: return scanAs<uint16_t>(data, f, scale, indexBase, finding);
  case 4: return scanAs<uint32_t>(data, f, scale, indexBase, finding);
  case 8: return scanAs<uint64_t>(data, f, scale, indexBase, finding);
  default: return true;
  }
}

ValueScanReport scanCheckpoint(const Checkpoint &checkpoint, const ValueScanOptions &options) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Tensor> &tensors = checkpoint.tensors();
  ValueScanReport report;
  std::vector<Chunk> chunks;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const uint64_t bytes = tensors[t].entry->numBytes();
    if (!isScannedDType(tensors[t].dtype())) {
      report.bytesSkipped += bytes;
      continue;
    }
    ++report.tensorsScanned;
    report.bytesScanned += bytes;
    const uint64_t step = std::max<uint64_t>(kChunkBytes / dtypeSize(tensors[t].dtype()), 1) *
                          dtypeSize(tensors[t].dtype());
    for (uint64_t b = 0; b < bytes; b += step)
      chunks.push_back({t, b, std::min(bytes, b + step)});
  }

  std::vector<ValueFinding> perTensor(tensors.size());
  std::mutex findingsMutex;
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> done{0};
  // The files stay in Random mode (no readahead around a fault, which would
  // read the packed data between scale tensors); each chunk is asked for
  // ahead of its scan instead, so the disk is kept busy with only the bytes
  // the scan reads.
  constexpr size_t kAhead = 4;
  auto prefetch = [&](size_t c) {
    if (c < chunks.size())
      tensors[chunks[c].tensor].file->prefetch(*tensors[chunks[c].tensor].entry, chunks[c].begin,
                                              chunks[c].end);
  };
  for (size_t c = 0; c < kAhead; ++c)
    prefetch(c);
  auto work = [&] {
    for (size_t c; (c = next.fetch_add(1)) < chunks.size();) {
      prefetch(c + kAhead);
      const Chunk &chunk = chunks[c];
      const Tensor &t = tensors[chunk.tensor];
      const uint64_t elem = dtypeSize(t.dtype());
      ValueFinding local;
      if (!scanValuesFrom(t.data().subspan(chunk.begin, chunk.end - chunk.begin), t.dtype(),
                          isScaleTensor(t.name()), chunk.begin / elem, local)) {
        std::lock_guard<std::mutex> lock(findingsMutex);
        ValueFinding &f = perTensor[chunk.tensor];
        const bool first = f.nans + f.infinities + f.negatives == 0;
        if (first || local.firstIndex < f.firstIndex)
          f.firstIndex = local.firstIndex;
        f.nans += local.nans;
        f.infinities += local.infinities;
        f.negatives += local.negatives;
      }
      done.fetch_add(chunk.end - chunk.begin);
    }
  };
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<std::thread> workers;
  for (int i = 0; i < std::max(1, options.threads); ++i)
    workers.emplace_back(work);
  if (options.progress) {
    uint64_t reported = 0;
    const uint64_t stepBytes = std::max<uint64_t>(report.bytesScanned / 100, 1);
    while (done.load() < report.bytesScanned) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const uint64_t now = done.load();
      if (now >= reported + stepBytes && now < report.bytesScanned) {
        reported = now;
        options.progress({now, report.bytesScanned, elapsed()});
      }
    }
  }
  for (std::thread &w : workers)
    w.join();
  report.seconds = elapsed();
  if (options.progress)
    options.progress({report.bytesScanned, report.bytesScanned, report.seconds});
  for (size_t t = 0; t < tensors.size(); ++t) {
    ValueFinding &f = perTensor[t];
    if (f.nans + f.infinities + f.negatives == 0)
      continue;
    f.tensor = tensors[t].name();
    f.file = std::filesystem::path(tensors[t].file->path()).filename().string();
    report.findings.push_back(std::move(f));
  }
  return report;
}

} // namespace volt::model
