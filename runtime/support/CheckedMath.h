//===- CheckedMath.h - overflow-checked size arithmetic --------*- C++ -*-===//
//
// Sizes read from outside files (safetensors shapes, plan fields) are
// multiplied and added with these, so that a hostile header reports an
// overflow instead of wrapping around to a small, "valid" size.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace volt {

inline std::optional<uint64_t> checkedMul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

inline std::optional<uint64_t> checkedAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// Product of `dims`, or nullopt on overflow. The empty product is 1.
inline std::optional<uint64_t> checkedProduct(std::span<const int64_t> dims) {
  uint64_t r = 1;
  for (int64_t d : dims) {
    if (d < 0)
      return std::nullopt;
    auto m = checkedMul(r, static_cast<uint64_t>(d));
    if (!m)
      return std::nullopt;
    r = *m;
  }
  return r;
}

} // namespace volt
