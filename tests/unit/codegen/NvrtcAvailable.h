//===- NvrtcAvailable.h - skipping visibly where no NVRTC targets sm_70 -*- C++ -*-===//
#pragma once

#include "compiler/codegen/Nvrtc.h"

#include <gtest/gtest.h>

#include <memory>

namespace volt::codegen::testing {

/// The NVRTC for sm_70, or null after recording why (the caller then
/// GTEST_SKIPs with that message, so a machine without it says so).
inline std::unique_ptr<Nvrtc> nvrtcFor(int arch, std::string &why) {
  auto n = Nvrtc::load(arch);
  if (!n) {
    why = n.message();
    return nullptr;
  }
  return std::move(*n);
}

} // namespace volt::codegen::testing

/// Declares `nvrtc` or skips the test with the loader's message.
#define VOLT_REQUIRE_NVRTC(nvrtc, arch)                                                            \
  std::string nvrtcMissing_;                                                                       \
  auto nvrtc = ::volt::codegen::testing::nvrtcFor(arch, nvrtcMissing_);                            \
  if (!nvrtc)                                                                                      \
  GTEST_SKIP() << "no NVRTC for sm_" << (arch) << " on this machine (scripts/install-deps.sh "     \
               << "installs NVRTC 11.8): " << nvrtcMissing_
