//===- Nccl.cpp -----------------------------------------------------------===//
#include "runtime/cuda/Nccl.h"

#include "runtime/support/Strings.h"

#include <dlfcn.h>

namespace volt::cuda {

Result<std::shared_ptr<Nccl>> Nccl::load(std::vector<std::string> libraries) {
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
    std::shared_ptr<Nccl> n(new Nccl());
    n->library_ = name;
#define VOLT_NCCL_SYMBOL(fn, ret, params)                                                          \
  n->fn = reinterpret_cast<ret(*) params>(dlsym(handle, #fn));                                     \
  if (!n->fn)                                                                                      \
    return Error(name + " has no entry point " #fn "; volt needs NCCL 2.x");
#include "runtime/cuda/NcclSymbols.def"
#undef VOLT_NCCL_SYMBOL
    n->ncclGetVersion(&n->version_);
    return n;
  }
  return Error("NCCL is not installed (tried " + joinList(tried, ", ") +
               "); a plan with tensor_parallel_size > 1 needs it to run on GPUs");
}

std::shared_ptr<Nccl> Nccl::custom(std::string library, int version) {
  std::shared_ptr<Nccl> n(new Nccl());
  n->library_ = std::move(library);
  n->version_ = version;
  return n;
}

Status Nccl::check(NcclResult code, const std::string &what) const {
  if (code == 0)
    return Status::success();
  const char *text = ncclGetErrorString ? ncclGetErrorString(code) : nullptr;
  return Error(what + ": " + (text ? text : "NCCL error " + std::to_string(code)));
}

} // namespace volt::cuda
