//===- HostKernels.h - kernel instances compiled for the host, by key -*- C++ -*-===//
//
// A GPU plan names each kernel by its request key (Kernel.source:
// "paged_attention(block_size=16, ..., threads=128)"). The generated
// translation unit (GenerateInstances.cpp writes it at build time) holds a
// host instance of every kernel the test's plans name, each compiled for
// the SIMT emulator in a namespace of its own (so that each has its own
// `__shared__` statics and `__device__` globals, such as split-K
// attention's arrival counters), and this table of them.
//
// A host launcher takes the launch as the driver got it: grid, block,
// dynamic shared bytes and the packed parameter buffer
// (CU_LAUNCH_PARAM_BUFFER_POINTER), whose layout is the CUDA ABI's (each
// parameter at its natural alignment, in order). It unpacks the buffer by
// the entry point's own parameter types and runs the instance on every
// block and thread.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tests/unit/codegen/simt/Simt.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace volt::cudasim {

/// One launch as the driver received it.
struct HostLaunch {
  dim3 grid, block;
  size_t sharedBytes = 0;
  const uint8_t *params = nullptr;
  size_t paramBytes = 0;
};

/// Runs one launch of an instance; returns an error message (empty: ran).
using HostLauncher = std::string (*)(const HostLaunch &);

struct HostKernel {
  /// The request key, as Kernel.source records it.
  const char *key;
  /// The entry point (Kernel.name).
  const char *name;
  HostLauncher launch;
};

/// Every instance of the generated translation unit.
const std::vector<HostKernel> &hostKernels();
/// Why the table is empty (no NVRTC where it was generated), or empty.
std::string hostKernelsUnavailable();

namespace detail {

/// Offsets of each parameter in a CUDA parameter buffer, then its size.
template <typename... P> constexpr std::array<size_t, sizeof...(P) + 1> paramOffsets() {
  constexpr size_t sizes[] = {sizeof(P)..., 0};
  constexpr size_t aligns[] = {alignof(P)..., 1};
  std::array<size_t, sizeof...(P) + 1> at{};
  size_t offset = 0;
  for (size_t i = 0; i < sizeof...(P); ++i) {
    offset = (offset + aligns[i] - 1) / aligns[i] * aligns[i];
    at[i] = offset;
    offset += sizes[i];
  }
  at[sizeof...(P)] = offset;
  return at;
}

template <typename T> T read(const uint8_t *at) {
  static_assert(std::is_trivially_copyable_v<T>, "kernel parameters are plain data");
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

template <typename... P, size_t... I>
std::string launchWith(void (*entry)(P...), const HostLaunch &l, std::index_sequence<I...>) {
  constexpr auto at = paramOffsets<P...>();
  if (l.paramBytes != at[sizeof...(P)])
    return "a parameter buffer of " + std::to_string(l.paramBytes) +
           " bytes; the entry point's parameters take " + std::to_string(at[sizeof...(P)]);
  const std::tuple<P...> args{read<P>(l.params + at[I])...};
  volt::sim::launch(l.grid, l.block, l.sharedBytes, [&] { std::apply(entry, args); });
  return {};
}

} // namespace detail

/// The host launcher of entry point `Entry`.
template <auto Entry> std::string hostLaunch(const HostLaunch &l) {
  return [&]<typename... P>(void (*entry)(P...)) {
    return detail::launchWith(entry, l, std::index_sequence_for<P...>{});
  }(Entry);
}

} // namespace volt::cudasim
