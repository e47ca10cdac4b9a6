//===- CudaDriver.cpp -----------------------------------------------------===//
#include "runtime/cuda/CudaDriver.h"

#include "runtime/support/Strings.h"

#include <cstdint>
#include <dlfcn.h>

namespace volt::cuda {

Result<std::shared_ptr<CudaDriver>> CudaDriver::load(std::vector<std::string> libraries) {
  if (libraries.empty())
    libraries = defaultLibraries();
  std::vector<std::string> tried;
  for (const std::string &name : libraries) {
    void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      tried.push_back(name + " (" + (why ? why : "not found") + ")");
      continue;
    }
    std::shared_ptr<CudaDriver> d(new CudaDriver());
    d->library_ = name;
#define VOLT_CUDA_SYMBOL(member, exported, ret, params)                                            \
  d->member = reinterpret_cast<ret(*) params>(dlsym(handle, #exported));                           \
  if (!d->member)                                                                                  \
    return Error(name + " has no entry point " #exported                                           \
                        "; the NVIDIA driver is older than volt needs (CUDA 11.4 or newer)");
#include "runtime/cuda/CudaSymbols.def"
#undef VOLT_CUDA_SYMBOL
    if (CUresult rc = d->cuInit(0))
      return Error("the CUDA driver (" + name + ") does not initialise: " + d->describe(rc) +
                   " (is a GPU visible to this process, and does the driver match its kernel "
                   "module?)");
    d->cuDriverGetVersion(&d->version_);
    return d;
  }
  return Error("the CUDA driver library is not installed (tried " + joinList(tried, ", ") +
               "); the cuda backend needs an NVIDIA driver, the cpu backend does not");
}

std::shared_ptr<CudaDriver> CudaDriver::custom(std::string library, int version) {
  std::shared_ptr<CudaDriver> d(new CudaDriver());
  d->library_ = std::move(library);
  d->version_ = version;
  return d;
}

std::string CudaDriver::describe(CUresult code) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName)
    cuGetErrorName(code, &name);
  if (cuGetErrorString)
    cuGetErrorString(code, &text);
  return std::string(name ? name : "CUDA error " + std::to_string(code)) +
         (text ? std::string(": ") + text : std::string());
}

Result<CUmodule> CudaDriver::loadPtx(const std::string &ptx, const std::string &what) const {
  std::string log(8192, '\0');
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes};
  void *values[] = {log.data(), reinterpret_cast<void *>(static_cast<uintptr_t>(log.size()))};
  CUmodule module = nullptr;
  // ptx.c_str(): the JIT reads up to the terminating NUL.
  CUresult rc = cuModuleLoadDataEx(&module, ptx.c_str(), 2, options, values);
  if (rc == 0)
    return module;
  log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
  while (!log.empty() && (log.back() == '\n' || log.back() == ' '))
    log.pop_back();
  return Error(what + ": " + describe(rc) +
               (log.empty() ? std::string() : " (the driver's PTX compiler says: " + log + ")"));
}

Status CudaDriver::check(CUresult code, const std::string &what) const {
  if (code == 0)
    return Status::success();
  return Error(what + ": " + describe(code));
}

} // namespace volt::cuda
