//===- CpuFlags.h - the cpu backend's flags of volt-run and volt-serve -*- C++ -*-===//
//
// --cpu-numerics and --cpu-weights, defined once for both tools: their help,
// their values, and what they set in serving::SessionOptions.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/serving/Session.h"

#include <CLI/CLI.hpp>
#include <string>

namespace volt::tools {

struct CpuFlags {
  std::string numerics = "reference";
  std::string weights = "auto";

  void addTo(CLI::App &app) {
    app.add_option("--cpu-numerics", numerics,
                   "cpu backend: reference (the bits the goldens and GPU kernels are checked "
                   "against) or fast (BF16 activations and dot products; needs AVX512_BF16)")
        ->check(CLI::IsMember({"reference", "fast"}))
        ->capture_default_str();
    app.add_option("--cpu-weights", weights,
                   "cpu backend: where the weights are read from: huge-pages (a copy in "
                   "transparent huge pages, made at load), mapped (in place from the weight "
                   "packs) or auto (huge-pages where the kernel has them and the packs take at "
                   "most 3/4 of the available memory)")
        ->check(CLI::IsMember({"auto", "huge-pages", "mapped"}))
        ->capture_default_str();
  }

  void applyTo(serving::SessionOptions &options) const {
    options.cpuNumerics = numerics == "fast" ? cpu::Numerics::Fast : cpu::Numerics::Reference;
    options.cpuWeights = weights == "huge-pages" ? cpu::WeightMemory::HugePages
                         : weights == "mapped"   ? cpu::WeightMemory::Mapped
                                                 : cpu::WeightMemory::Auto;
  }
};

} // namespace volt::tools
