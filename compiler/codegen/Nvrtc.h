//===- Nvrtc.h - NVRTC, loaded at run time ---------------------*- C++ -*-===//
//
// voltc compiles kernels with NVRTC, which it loads with dlopen so that the
// compiler builds and runs (for the cpu target) where no CUDA toolkit is
// installed. Several NVRTCs can sit side by side (11.8 is the last that
// targets sm_70; 12.x and 13.x target newer GPUs only as far back as their
// release allows), so the loader asks each candidate which architectures it
// supports and takes the first that has the one asked for.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/support/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace volt::codegen {

/// The environment variable that names the one NVRTC library to use.
inline constexpr const char *kNvrtcLibraryEnv = "VOLT_NVRTC_LIBRARY";

/// A program for NVRTC: the main file and the headers it includes by name.
struct NvrtcSource {
  /// What messages call the main file ("nvfp4_gemv.cu").
  std::string name;
  std::string text;
  /// (include name, text): `#include "common/volt.cuh"` finds the header
  /// registered as "common/volt.cuh".
  std::vector<std::pair<std::string, std::string>> headers;
};

/// What a compile is for.
enum class NvrtcOutput {
  /// Machine code for `sm_<arch>`, and the PTX it was made from (`.target
  /// sm_<arch>`, which a newer GPU's driver compiles too).
  Cubin,
  /// PTX for `compute_<arch>` only.
  Ptx,
};

/// The products of one compile.
struct NvrtcProducts {
  /// Empty for NvrtcOutput::Ptx.
  std::vector<uint8_t> cubin;
  std::string ptx;
};

/// One loaded NVRTC library.
class Nvrtc {
public:
  /// The libraries tried, in order, when no override is given.
  static std::vector<std::string> defaultCandidates();

  /// Loads the first library of `candidates` (default: the environment
  /// variable VOLT_NVRTC_LIBRARY when set, else defaultCandidates()) whose
  /// supported architectures include `arch` (70 for sm_70). The error lists
  /// every library tried and why it was not taken.
  static Result<std::unique_ptr<Nvrtc>> load(int arch, std::vector<std::string> candidates = {});

  ~Nvrtc();
  Nvrtc(const Nvrtc &) = delete;
  Nvrtc &operator=(const Nvrtc &) = delete;

  /// The library name or path it was loaded from.
  const std::string &library() const { return library_; }
  /// "11.8".
  std::string version() const;
  const std::vector<int> &supportedArchs() const { return archs_; }
  bool supports(int arch) const;

  /// Compiles `source` for `arch`. On failure the error holds NVRTC's log;
  /// on success `log` (when given) receives its warnings.
  Result<NvrtcProducts> compile(const NvrtcSource &source, int arch, NvrtcOutput output,
                                const std::vector<std::string> &options,
                                std::string *log = nullptr) const;

private:
  struct Symbols;
  Nvrtc() = default;
  void *handle_ = nullptr;
  std::unique_ptr<Symbols> symbols_;
  std::string library_;
  int major_ = 0, minor_ = 0;
  std::vector<int> archs_;
};

} // namespace volt::codegen
