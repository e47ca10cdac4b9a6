//===- KernelCache.cpp ----------------------------------------------------===//
//
// Entry file `<key>.vkernel`: magic "VKC1", u64 cubin size, u64 PTX size,
// u64 XXH3-64 of what follows, then the cubin bytes and the PTX text.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/KernelCache.h"

#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include <unistd.h>

namespace volt::codegen {
namespace {

constexpr char kMagic[4] = {'V', 'K', 'C', '1'};
constexpr size_t kHeaderBytes = 4 + 3 * 8;

void update(XXH3_state_t *state, const std::string &text) {
  uint64_t size = text.size();
  XXH3_128bits_update(state, &size, sizeof(size));
  XXH3_128bits_update(state, text.data(), text.size());
}

} // namespace

std::filesystem::path KernelCache::defaultDir() {
  if (const char *env = std::getenv(kKernelCacheEnv); env && *env)
    return env;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "volt" / "kernels";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "volt" / "kernels";
  return {};
}

std::string KernelCache::key(const NvrtcSource &source, const std::vector<std::string> &options,
                             const std::string &target, const std::string &nvrtcVersion) {
  XXH3_state_t *state = XXH3_createState();
  XXH3_128bits_reset(state);
  update(state, "volt kernel cache 1");
  update(state, nvrtcVersion);
  update(state, target);
  for (const std::string &o : options)
    update(state, o);
  update(state, source.text);
  for (const auto &[name, text] : source.headers) {
    update(state, name);
    update(state, text);
  }
  XXH128_hash_t h = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return hex;
}

std::optional<CachedKernel> KernelCache::load(const std::string &key) const {
  if (dir_.empty())
    return std::nullopt;
  std::ifstream in(dir_ / (key + ".vkernel"), std::ios::binary);
  if (!in)
    return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, 4) != 0)
    return std::nullopt;
  uint64_t cubinSize = 0, ptxSize = 0, sum = 0;
  std::memcpy(&cubinSize, bytes.data() + 4, 8);
  std::memcpy(&ptxSize, bytes.data() + 12, 8);
  std::memcpy(&sum, bytes.data() + 20, 8);
  uint64_t body = bytes.size() - kHeaderBytes;
  if (cubinSize > body || ptxSize != body - cubinSize ||
      XXH3_64bits(bytes.data() + kHeaderBytes, body) != sum)
    return std::nullopt;
  CachedKernel k;
  const char *p = bytes.data() + kHeaderBytes;
  k.cubin.assign(p, p + cubinSize);
  k.ptx.assign(p + cubinSize, ptxSize);
  return k;
}

Status KernelCache::store(const std::string &key, const CachedKernel &kernel) const {
  if (dir_.empty())
    return Error("no kernel cache folder (set " + std::string(kKernelCacheEnv) + ")");
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec)
    return Error(dir_.string() + ": cannot create the kernel cache folder: " + ec.message());
  std::string body(kernel.cubin.begin(), kernel.cubin.end());
  body += kernel.ptx;
  uint64_t cubinSize = kernel.cubin.size(), ptxSize = kernel.ptx.size();
  uint64_t sum = XXH3_64bits(body.data(), body.size());
  std::filesystem::path file = dir_ / (key + ".vkernel");
  std::filesystem::path tmp = file;
  tmp += "." + std::to_string(::getpid()) + "." + std::to_string(std::random_device{}()) + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(kMagic, 4);
    out.write(reinterpret_cast<const char *>(&cubinSize), 8);
    out.write(reinterpret_cast<const char *>(&ptxSize), 8);
    out.write(reinterpret_cast<const char *>(&sum), 8);
    out.write(body.data(), static_cast<std::streamsize>(body.size()));
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return Error(tmp.string() + ": cannot write a kernel cache entry");
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return Error(file.string() + ": cannot store a kernel cache entry: " + ec.message());
  }
  return Status::success();
}

} // namespace volt::codegen
