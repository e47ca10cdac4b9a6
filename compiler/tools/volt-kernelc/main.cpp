//===- volt-kernelc - instantiate and compile one kernel template ---------===//
//
// Prints the PTX, the cubin's resources or the instantiated source of one
// kernel, as voltc would build it: for lit tests of the generated code and
// for looking at a kernel by hand. Parses flags and calls compiler/codegen.
//
//   volt-kernelc nvfp4_gemv k=2048 n=4096 warps=8 ... --threads 256 --emit ptx
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/BuildKernels.h"
#include "compiler/codegen/Nvrtc.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

int main(int argc, char **argv) {
  using namespace volt::codegen;
  CLI::App app{"volt-kernelc: instantiate a kernel template (templates/<kernel>.cu) with "
               "constants and compile it with NVRTC"};
  std::string kernel, emit = "ptx", arch = "sm_70";
  std::vector<std::string> constants;
  uint32_t threads = 0, dynamicShared = 0;
  bool noCache = false, checkNvrtc = false;
  app.add_option("kernel", kernel, "template name (nvfp4_gemv, rms_norm, ...)");
  app.add_option("constants", constants, "name=value constants (k=2048 n=4096 ...)");
  app.add_option("--threads", threads, "threads per block (VOLT_THREADS)");
  app.add_option("--dynamic-shared", dynamicShared, "dynamic shared memory bytes of the launch");
  app.add_option("--arch", arch, "target architecture")->capture_default_str();
  app.add_option("--emit", emit, "what to print: ptx, resources, source")
      ->check(CLI::IsMember({"ptx", "resources", "source"}))
      ->capture_default_str();
  app.add_flag("--no-cache", noCache, "compile even when the kernel cache has it");
  app.add_flag("--check-nvrtc", checkNvrtc,
               "only say whether an NVRTC for --arch is installed (exit status 0 or 1)");
  CLI11_PARSE(app, argc, argv);

  auto fail = [](const std::string &message) {
    std::fprintf(stderr, "volt-kernelc: error: %s\n", message.c_str());
    return 1;
  };
  int smVersion = 0;
  if (arch.rfind("sm_", 0) != 0 || (smVersion = std::atoi(arch.c_str() + 3)) <= 0)
    return fail("--arch: expected sm_<version> (sm_70), found '" + arch + "'");
  if (checkNvrtc) {
    auto nvrtc = Nvrtc::load(smVersion);
    if (!nvrtc)
      return fail(nvrtc.message());
    std::printf("NVRTC %s (%s) compiles for %s\n", (*nvrtc)->version().c_str(),
                (*nvrtc)->library().c_str(), arch.c_str());
    return 0;
  }
  if (kernel.empty())
    return fail("no kernel template named (try nvfp4_gemv)");
  if (threads == 0)
    return fail("--threads: the block size is required (templates are built for one)");

  KernelRequest request{kernel, {}, threads, dynamicShared};
  for (const std::string &c : constants) {
    size_t eq = c.find('=');
    char *end = nullptr;
    long long value = eq == std::string::npos ? 0 : std::strtoll(c.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || eq == 0 || !end || *end != '\0' || end == c.c_str() + eq + 1)
      return fail("constant '" + c + "': expected name=integer");
    request.set(c.substr(0, eq), value);
  }
  if (emit == "source") {
    auto source = instantiate(request);
    if (!source)
      return fail(source.message());
    std::cout << source->text;
    return 0;
  }
  TargetInfo target;
  target.smVersion = smVersion;
  CodegenOptions options;
  options.useCache = !noCache;
  auto built = buildKernels({request}, target, options);
  if (!built)
    return fail(built.message());
  const CompiledKernel &k = built->kernels.front();
  if (emit == "ptx") {
    std::cout << k.ptx;
    return 0;
  }
  Occupancy o = occupancy(k, target);
  std::printf("kernel %s\n", k.request.key().c_str());
  std::printf("registers %u\nstatic shared bytes %u\ndynamic shared bytes %u\nlocal bytes %u\n",
              k.resources.registers, k.resources.staticSharedBytes, k.request.dynamicSharedBytes,
              k.resources.localBytes);
  std::printf("occupancy %u blocks per SM, %.1f%% of the warps (limited by %s)\n", o.blocksPerSm,
              o.fraction * 100, o.limitedBy.c_str());
  std::printf("NVRTC %s, %s\n", built->nvrtcVersion.c_str(), k.fromCache ? "cached" : "compiled");
  return 0;
}
