//===- Nvml.cpp -----------------------------------------------------------===//
#include "runtime/doctor/Nvml.h"

#include <dlfcn.h>

namespace volt::doctor {

Result<std::shared_ptr<Nvml>> Nvml::load(std::vector<std::string> libraries) {
  if (libraries.empty())
    libraries = defaultLibraries();
  std::string tried;
  for (const std::string &name : libraries) {
    void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      tried += "\n  " + name + ": " + (why ? why : "cannot be opened");
      continue;
    }
    std::shared_ptr<Nvml> n(new Nvml());
    n->handle_ = handle;
    n->library_ = name;
#define VOLT_NVML_SYMBOL(member, exported, ret, params)                                            \
  n->member = reinterpret_cast<ret(*) params>(dlsym(handle, exported));                            \
  if (!n->member)                                                                                  \
    return Error(name + " has no entry point " exported " (a driver older than NVML 11?)");
#include "runtime/doctor/NvmlSymbols.def"
#undef VOLT_NVML_SYMBOL
    if (NvmlReturn r = n->init(); r != nvml::kSuccess)
      return Error(name + ": nvmlInit_v2 failed: " + n->describe(r) +
                   " (is the NVIDIA driver loaded? nvidia-smi says the same)");
    n->initialised_ = true;
    return n;
  }
  return Error("cannot load NVML, which the NVIDIA driver installs; tried:" + tried);
}

std::string Nvml::describe(NvmlReturn code) const {
  const char *text = errorString ? errorString(code) : nullptr;
  return (text ? std::string(text) : "NVML error") + " (" + std::to_string(code) + ")";
}

Nvml::~Nvml() {
  if (initialised_)
    shutdown();
  if (handle_)
    dlclose(handle_);
}

} // namespace volt::doctor
