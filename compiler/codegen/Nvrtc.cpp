//===- Nvrtc.cpp ----------------------------------------------------------===//
#include "compiler/codegen/Nvrtc.h"

#include "runtime/support/Strings.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>

namespace volt::codegen {
namespace {
using NvrtcProgram = struct NvrtcProgramOpaque *;
} // namespace

/// The entry points, one function pointer per line of NvrtcSymbols.def.
struct Nvrtc::Symbols {
#define VOLT_NVRTC_SYMBOL(name, ret, params) ret(*name) params = nullptr;
#include "compiler/codegen/NvrtcSymbols.def"
#undef VOLT_NVRTC_SYMBOL
};

namespace {

std::string archList(const std::vector<int> &archs) {
  std::vector<std::string> names;
  for (int a : archs)
    names.push_back("sm_" + std::to_string(a));
  return names.empty() ? "none" : joinList(names, " ");
}

} // namespace

std::vector<std::string> Nvrtc::defaultCandidates() {
  return {"libnvrtc.so.11.2", "libnvrtc.so.12", "libnvrtc.so"};
}

Result<std::unique_ptr<Nvrtc>> Nvrtc::load(int arch, std::vector<std::string> candidates) {
  std::string origin = "tried";
  if (candidates.empty()) {
    if (const char *env = std::getenv(kNvrtcLibraryEnv); env && *env) {
      candidates = {env};
      origin = std::string("tried (from ") + kNvrtcLibraryEnv + ")";
    } else {
      candidates = defaultCandidates();
    }
  }
  std::vector<std::string> tried;
  for (const std::string &name : candidates) {
    void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      tried.push_back(name + ": not found" + (why ? std::string(" (") + why + ")" : ""));
      continue;
    }
    std::unique_ptr<Nvrtc> nvrtc(new Nvrtc());
    nvrtc->handle_ = handle;
    nvrtc->library_ = name;
    nvrtc->symbols_ = std::make_unique<Symbols>();
    std::string missing;
#define VOLT_NVRTC_SYMBOL(fn, ret, params)                                                         \
  nvrtc->symbols_->fn = reinterpret_cast<ret(*) params>(dlsym(handle, #fn));                       \
  if (!nvrtc->symbols_->fn && missing.empty())                                                     \
    missing = #fn;
#include "compiler/codegen/NvrtcSymbols.def"
#undef VOLT_NVRTC_SYMBOL
    if (!missing.empty()) {
      tried.push_back(name + ": has no " + missing + " (NVRTC older than 11.2?)");
      continue;
    }
    const Symbols &s = *nvrtc->symbols_;
    int count = 0;
    if (s.nvrtcVersion(&nvrtc->major_, &nvrtc->minor_) != 0 ||
        s.nvrtcGetNumSupportedArchs(&count) != 0 || count < 0 || count > 1024) {
      tried.push_back(name + ": does not answer its version queries");
      continue;
    }
    nvrtc->archs_.resize(static_cast<size_t>(count));
    if (count > 0 && s.nvrtcGetSupportedArchs(nvrtc->archs_.data()) != 0) {
      tried.push_back(name + ": does not list its architectures");
      continue;
    }
    if (!nvrtc->supports(arch)) {
      tried.push_back(name + " (NVRTC " + nvrtc->version() + "): supports " +
                      archList(nvrtc->archs_));
      continue;
    }
    return nvrtc;
  }
  std::string help = arch == 70 ? "; NVRTC 11.8 is the last to target sm_70 (Debian: apt install "
                                  "libnvrtc11.2 from the non-free component, as "
                                  "scripts/install-deps.sh does)"
                                : "";
  return Error("no NVRTC library that compiles for sm_" + std::to_string(arch) + " was found; " +
               origin + ": " + joinList(tried, "; ") + help + "; " + kNvrtcLibraryEnv +
               " names another library");
}

Nvrtc::~Nvrtc() {
  // The library stays loaded: NVRTC keeps process-wide state that does not
  // survive dlclose in every version, and a compiler loads it once.
}

std::string Nvrtc::version() const { return std::to_string(major_) + "." + std::to_string(minor_); }

bool Nvrtc::supports(int arch) const {
  return std::find(archs_.begin(), archs_.end(), arch) != archs_.end();
}

Result<NvrtcProducts> Nvrtc::compile(const NvrtcSource &source, int arch, NvrtcOutput output,
                                     const std::vector<std::string> &options,
                                     std::string *log) const {
  const Symbols &s = *symbols_;
  auto fail = [&](int code, const std::string &what) {
    const char *text = s.nvrtcGetErrorString(code);
    return Error(source.name + ": " + what + " failed: " + (text ? text : "unknown NVRTC error"));
  };
  std::vector<const char *> headerTexts, headerNames;
  for (const auto &[name, text] : source.headers) {
    headerNames.push_back(name.c_str());
    headerTexts.push_back(text.c_str());
  }
  NvrtcProgram program = nullptr;
  if (int rc = s.nvrtcCreateProgram(&program, source.text.c_str(), source.name.c_str(),
                                    static_cast<int>(headerTexts.size()), headerTexts.data(),
                                    headerNames.data()))
    return fail(rc, "nvrtcCreateProgram");
  struct Destroy {
    const Symbols &s;
    NvrtcProgram &p;
    ~Destroy() { s.nvrtcDestroyProgram(&p); }
  } destroy{s, program};

  std::vector<std::string> all = options;
  all.push_back(
      (output == NvrtcOutput::Cubin ? "--gpu-architecture=sm_" : "--gpu-architecture=compute_") +
      std::to_string(arch));
  std::vector<const char *> argv;
  for (const std::string &o : all)
    argv.push_back(o.c_str());
  int compiled = s.nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
  std::string text;
  size_t logSize = 0;
  if (s.nvrtcGetProgramLogSize(program, &logSize) == 0 && logSize > 1) {
    text.resize(logSize);
    if (s.nvrtcGetProgramLog(program, text.data()) == 0)
      text.resize(logSize - 1);
    else
      text.clear();
  }
  if (compiled != 0)
    return Error(source.name + ": NVRTC " + version() + " could not compile it for " +
                 (output == NvrtcOutput::Cubin ? "sm_" : "compute_") + std::to_string(arch) +
                 ":\n" + (text.empty() ? std::string(s.nvrtcGetErrorString(compiled)) : text));
  if (log)
    *log = text;

  NvrtcProducts products;
  size_t size = 0;
  if (output == NvrtcOutput::Cubin) {
    if (int rc = s.nvrtcGetCUBINSize(program, &size))
      return fail(rc, "nvrtcGetCUBINSize");
    products.cubin.resize(size);
    if (int rc = s.nvrtcGetCUBIN(program, reinterpret_cast<char *>(products.cubin.data())))
      return fail(rc, "nvrtcGetCUBIN");
  }
  // A compile for a real architecture keeps the PTX it generated, so one
  // compile gives both.
  if (int rc = s.nvrtcGetPTXSize(program, &size))
    return fail(rc, "nvrtcGetPTXSize");
  products.ptx.resize(size);
  if (int rc = s.nvrtcGetPTX(program, products.ptx.data()))
    return fail(rc, "nvrtcGetPTX");
  while (!products.ptx.empty() && products.ptx.back() == 0)
    products.ptx.pop_back();
  return products;
}

} // namespace volt::codegen
