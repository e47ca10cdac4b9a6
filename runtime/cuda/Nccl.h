//===- Nccl.h - NCCL, loaded at run time -----------------------*- C++ -*-===//
//
// Tensor-parallel plans run their all-reduces and all-gathers through NCCL,
// opened with dlopen like the driver: a single-GPU plan never needs it, and
// a multi-GPU plan on a machine without it fails with the library's name.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/CudaDriver.h"
#include "runtime/support/Status.h"

#include <memory>
#include <string>
#include <vector>

namespace volt::cuda {

using NcclResult = int;
using NcclComm = struct NcclCommOpaque *;

/// ncclDataType_t and ncclRedOp_t values (nccl.h).
inline constexpr int kNcclFloat16 = 6;
inline constexpr int kNcclFloat32 = 7;
inline constexpr int kNcclSum = 0;

class Nccl {
public:
  static std::vector<std::string> defaultLibraries() { return {"libnccl.so.2", "libnccl.so"}; }

  /// Opens the first library of `libraries` that loads and has every entry
  /// point; the error names what was tried.
  static Result<std::shared_ptr<Nccl>> load(std::vector<std::string> libraries = {});

  /// A table with no entry point filled in, for the caller to fill (a fake
  /// NCCL in tests).
  static std::shared_ptr<Nccl> custom(std::string library, int version);

  /// success(), or an error "<what>: <NCCL's message>".
  Status check(NcclResult code, const std::string &what) const;
  const std::string &library() const { return library_; }
  /// 21903 for NCCL 2.19.3.
  int version() const { return version_; }

#define VOLT_NCCL_SYMBOL(name, ret, params) ret(*name) params = nullptr;
#include "runtime/cuda/NcclSymbols.def"
#undef VOLT_NCCL_SYMBOL

private:
  Nccl() = default;
  std::string library_;
  int version_ = 0;
};

} // namespace volt::cuda
