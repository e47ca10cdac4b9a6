//===- KernelSource.cpp ---------------------------------------------------===//
#include "compiler/codegen/KernelSource.h"

#include "compiler/codegen/Templates.h"
#include "runtime/support/Strings.h"

#include <algorithm>
#include <cctype>

namespace volt::codegen {
namespace {

bool isIdentifier(const std::string &name) {
  if (name.empty() || !(std::islower(static_cast<unsigned char>(name[0]))))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string upper(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

} // namespace

KernelRequest &KernelRequest::set(const std::string &name, int64_t value) {
  auto it = std::lower_bound(constants.begin(), constants.end(), name,
                             [](const auto &c, const std::string &n) { return c.first < n; });
  if (it != constants.end() && it->first == name)
    it->second = value;
  else
    constants.insert(it, {name, value});
  return *this;
}

int64_t KernelRequest::get(const std::string &name) const {
  for (const auto &[n, v] : constants)
    if (n == name)
      return v;
  return 0;
}

std::string KernelRequest::key() const {
  std::vector<std::string> parts;
  for (const auto &[name, value] : constants)
    parts.push_back(name + "=" + std::to_string(value));
  parts.push_back("threads=" + std::to_string(threads));
  if (dynamicSharedBytes)
    parts.push_back("dynamic_shared=" + std::to_string(dynamicSharedBytes));
  return kernel + "(" + joinList(parts, ", ") + ")";
}

Result<NvrtcSource> instantiate(const KernelRequest &request) {
  std::string file = request.kernel + ".cu";
  if (!findTemplateFile(file)) {
    std::vector<std::string> known;
    for (const TemplateFile &f : templateFiles())
      if (f.path.find('/') == std::string_view::npos && f.path.ends_with(".cu"))
        known.emplace_back(f.path.substr(0, f.path.size() - 3));
    auto near = closestMatch(request.kernel, known);
    return Error("no kernel template '" + request.kernel + "' (templates/" + file + ")" +
                 (near ? "; did you mean '" + *near + "'?" : ""));
  }
  NvrtcSource source;
  source.name = request.kernel + ".instance.cu";
  source.text = "// " + request.key() +
                "\n// Instantiated by voltc (compiler/codegen) from templates/" + file +
                ". Do not edit.\n";
  for (const auto &[name, value] : request.constants) {
    if (!isIdentifier(name))
      return Error("kernel '" + request.kernel + "': constant name '" + name +
                   "' is not a lower_snake identifier");
    source.text += "#define VOLT_" + upper(name) + " " + std::to_string(value) + "\n";
  }
  source.text += "#define VOLT_THREADS " + std::to_string(request.threads) + "\n";
  source.text += "#include \"" + file + "\"\n";
  for (const TemplateFile &f : templateFiles())
    source.headers.emplace_back(std::string(f.path), std::string(f.text));
  return source;
}

std::vector<std::string> nvrtcOptions() {
  // No FMA contraction: the cpu backend rounds every product and sum on its
  // own, and kernels whose products are exact give its bits this way.
  return {"--std=c++17", "--fmad=false"};
}

} // namespace volt::codegen
