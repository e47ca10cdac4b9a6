//===- BuildKernels.cpp ---------------------------------------------------===//
#include "compiler/codegen/BuildKernels.h"

#include "compiler/codegen/KernelCache.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

namespace volt::codegen {

Occupancy occupancy(const CompiledKernel &kernel, const TargetInfo &target) {
  Occupancy o;
  const uint32_t threads = std::max<uint32_t>(kernel.request.threads, 1);
  const uint32_t warps = (threads + 31) / 32;
  // Registers are allocated per warp in units of 256.
  const uint32_t regsPerWarp = (kernel.resources.registers * 32 + 255) / 256 * 256;
  uint32_t byThreads = target.maxThreadsPerSm / (warps * 32);
  uint32_t byRegisters = regsPerWarp ? target.registersPerSm / (regsPerWarp * warps) : byThreads;
  uint32_t shared = kernel.resources.staticSharedBytes + kernel.request.dynamicSharedBytes;
  uint32_t byShared = shared ? target.sharedMemoryPerSmBytes / shared : byThreads;
  o.blocksPerSm = std::min({byThreads, byRegisters, byShared});
  o.limitedBy = o.blocksPerSm == byRegisters && byRegisters < byThreads ? "registers"
                : o.blocksPerSm == byShared && byShared < byThreads     ? "shared memory"
                                                                        : "threads";
  o.fraction = static_cast<double>(o.blocksPerSm * warps * 32) / target.maxThreadsPerSm;
  return o;
}

Status checkResources(const CompiledKernel &kernel, const TargetInfo &target) {
  const CubinKernel &r = kernel.resources;
  const std::string name = kernel.request.key();
  if (r.localBytes > 0)
    return Error("kernel " + name + " uses " + std::to_string(r.localBytes) +
                 " bytes of local memory per thread on " + target.arch() +
                 " (registers spilled, or an array the compiler could not keep in "
                 "registers); it would run at a fraction of its speed");
  if (r.registers > target.maxRegistersPerThread)
    return Error("kernel " + name + " needs " + std::to_string(r.registers) +
                 " registers per thread; " + target.arch() + " has " +
                 std::to_string(target.maxRegistersPerThread));
  uint32_t shared = r.staticSharedBytes + kernel.request.dynamicSharedBytes;
  if (shared > target.sharedMemoryPerBlockOptinBytes)
    return Error("kernel " + name + " needs " + std::to_string(shared) +
                 " bytes of shared memory per block; the SKU allows " +
                 std::to_string(target.sharedMemoryPerBlockOptinBytes));
  if (r.staticSharedBytes > target.sharedMemoryPerBlockBytes)
    return Error("kernel " + name + " has " + std::to_string(r.staticSharedBytes) +
                 " bytes of static shared memory; above " +
                 std::to_string(target.sharedMemoryPerBlockBytes) +
                 " a kernel must use dynamic shared memory");
  if (kernel.request.threads == 0 || kernel.request.threads > 1024)
    return Error("kernel " + name + ": " + std::to_string(kernel.request.threads) +
                 " threads per block (1..1024 allowed)");
  if (r.maxThreadsPerBlock && r.maxThreadsPerBlock != kernel.request.threads)
    return Error("kernel " + name + " was built for blocks of " +
                 std::to_string(r.maxThreadsPerBlock) + " threads but is launched with " +
                 std::to_string(kernel.request.threads));
  if (occupancy(kernel, target).blocksPerSm == 0)
    return Error("kernel " + name + " cannot launch on " + target.arch() + ": " +
                 std::to_string(r.registers) + " registers x " +
                 std::to_string(kernel.request.threads) + " threads exceed the SM's " +
                 std::to_string(target.registersPerSm) + " registers");
  return Status::success();
}

Result<KernelSet> buildKernels(const std::vector<KernelRequest> &requests, const TargetInfo &target,
                               const CodegenOptions &options) {
  std::set<std::string> keys;
  for (const KernelRequest &r : requests)
    if (!keys.insert(r.key()).second)
      return Error("internal error: kernel " + r.key() + " requested twice");
  KernelSet set;
  set.kernels.resize(requests.size());
  if (requests.empty())
    return set;

  const int ptxArch = options.ptxArch ? options.ptxArch : target.smVersion;
  const bool offline = !options.offlineNvrtcVersion.empty();
  std::unique_ptr<Nvrtc> nvrtc;
  if (offline) {
    set.nvrtcVersion = options.offlineNvrtcVersion;
  } else {
    auto loaded = Nvrtc::load(target.smVersion, options.nvrtcLibraries);
    if (!loaded)
      return loaded.error();
    nvrtc = std::move(*loaded);
    if (options.emitPtx && !nvrtc->supports(ptxArch))
      return Error("NVRTC " + nvrtc->version() + " (" + nvrtc->library() +
                   ") cannot emit PTX for compute_" + std::to_string(ptxArch));
    set.nvrtcVersion = nvrtc->version();
  }
  KernelCache cache(options.cacheDir.empty() ? KernelCache::defaultDir() : options.cacheDir);
  const std::vector<std::string> flags = nvrtcOptions();
  const std::string targetKey =
      target.arch() + (options.emitPtx ? "+compute_" + std::to_string(ptxArch) : "");

  std::mutex mutex;
  std::optional<Error> failure;
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < requests.size(); i = next++) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (failure)
          return;
      }
      CompiledKernel &k = set.kernels[i];
      k.request = requests[i];
      auto fail = [&](Error e) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure)
          failure = std::move(e);
      };
      auto source = instantiate(k.request);
      if (!source) {
        fail(source.error());
        return;
      }
      std::string key = KernelCache::key(*source, flags, targetKey, set.nvrtcVersion);
      std::optional<CachedKernel> hit;
      if (options.useCache || offline)
        hit = cache.load(key);
      if (!hit && offline) {
        fail(Error("kernel " + k.request.key() + " is not in the kernel cache " +
                   cache.dir().string() + " (built by NVRTC " + set.nvrtcVersion +
                   "); build it where that NVRTC is installed and carry the cache"));
        return;
      }
      if (hit) {
        k.cubin = std::move(hit->cubin);
        k.ptx = std::move(hit->ptx);
        k.fromCache = true;
      } else {
        auto start = std::chrono::steady_clock::now();
        auto cubin = nvrtc->compile(*source, target.smVersion, NvrtcOutput::Cubin, flags);
        if (!cubin) {
          fail(Error("kernel " + k.request.key() + ": " + cubin.message()));
          return;
        }
        k.cubin = std::move(cubin->cubin);
        // The cubin's own PTX serves its architecture; another needs a compile.
        if (options.emitPtx && ptxArch == target.smVersion) {
          k.ptx = std::move(cubin->ptx);
        } else if (options.emitPtx) {
          auto ptx = nvrtc->compile(*source, ptxArch, NvrtcOutput::Ptx, flags);
          if (!ptx) {
            fail(Error("kernel " + k.request.key() + ": " + ptx.message()));
            return;
          }
          k.ptx = std::move(ptx->ptx);
        }
        double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (options.useCache)
          if (Status stored = cache.store(key, {k.cubin, k.ptx}); !stored && options.log)
            options.log("warning: " + stored.message());
        std::lock_guard<std::mutex> lock(mutex);
        set.nvrtcSeconds += seconds;
        if (options.log)
          options.log("compiled " + k.request.key() + " (" + std::to_string(seconds).substr(0, 4) +
                      " s)");
      }
      auto info = readCubin(k.cubin, "kernel " + k.request.key());
      if (!info) {
        fail(info.error());
        return;
      }
      if (info->smVersion != target.smVersion) {
        fail(Error("kernel " + k.request.key() + ": the cubin is for sm_" +
                   std::to_string(info->smVersion) + ", not " + target.arch()));
        return;
      }
      const CubinKernel *entry = info->find(k.request.kernel);
      if (!entry) {
        fail(Error("kernel " + k.request.key() + ": the cubin has no entry point '" +
                   k.request.kernel + "' (templates/" + k.request.kernel +
                   ".cu must define an extern \"C\" __global__ function of that name)"));
        return;
      }
      k.resources = *entry;
      if (Status ok = checkResources(k, target); !ok) {
        fail(ok.error());
        return;
      }
    }
  };
  int jobs = std::clamp(options.jobs, 1, 64);
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j)
    threads.emplace_back(work);
  work();
  for (std::thread &t : threads)
    t.join();
  if (failure)
    return *failure;
  for (const CompiledKernel &k : set.kernels)
    (k.fromCache ? set.cached : set.compiled)++;
  return set;
}

} // namespace volt::codegen
