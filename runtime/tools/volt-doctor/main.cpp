//===- volt-doctor - is this box fit to serve (this plan)? ----------------===//
//
// Parses flags and calls runtime/doctor; the checks live there.
//
//===----------------------------------------------------------------------===//
#include "runtime/doctor/Doctor.h"
#include "runtime/support/Strings.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

int main(int argc, char **argv) {
  CLI::App app{"volt-doctor: check this machine's GPUs (ECC, PCIe links, topology, P2P, "
               "persistence, throttling) and whether it can run a plan"};
  app.set_version_flag("--version", "volt-doctor 0.1.0");
  std::string plan;
  std::string gpus;
  std::string nvmlLibrary, ncclLibrary;
  bool json = false;
  app.add_option("plan", plan, "a compiled plan (.vplan) to check this machine against");
  app.add_option("--gpus", gpus,
                 "NVML indices of the GPUs the plan's ranks run on, in rank order (default: "
                 "the first ones; nvidia-smi's numbering), e.g. 2,3");
  app.add_flag("--json", json, "print the report as JSON");
  app.add_option("--nvml-library", nvmlLibrary,
                 "NVML library to open (default: libnvidia-ml.so.1, then libnvidia-ml.so)");
  app.add_option("--nccl-library", ncclLibrary,
                 "NCCL library a multi-GPU plan needs (default: libnccl.so.2, then libnccl.so)");
  CLI11_PARSE(app, argc, argv);

  auto nvml = volt::doctor::Nvml::load(nvmlLibrary.empty() ? std::vector<std::string>{}
                                                            : std::vector<std::string>{nvmlLibrary});
  if (!nvml) {
    std::fprintf(stderr, "volt-doctor: error: %s\n", nvml.message().c_str());
    return 2;
  }
  volt::doctor::DoctorOptions options;
  options.plan = plan;
  for (size_t at = 0; !gpus.empty() && at <= gpus.size();) {
    const size_t comma = std::min(gpus.find(',', at), gpus.size());
    const std::string item = gpus.substr(at, comma - at);
    char *end = nullptr;
    const unsigned long value = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value > 1024) {
      std::fprintf(stderr, "volt-doctor: error: --gpus: '%s' is not a GPU index (expected e.g. 0,1)\n",
                   item.c_str());
      return 2;
    }
    options.gpus.push_back(static_cast<unsigned>(value));
    at = comma + 1;
  }
  if (!ncclLibrary.empty())
    options.ncclLibraries = {ncclLibrary};
  auto report = volt::doctor::examine(**nvml, options);
  if (!report) {
    std::fprintf(stderr, "volt-doctor: error: %s\n", report.message().c_str());
    return 2;
  }
  if (json)
    std::cout << volt::doctor::reportJson(*report).dump(2) << "\n";
  else
    std::cout << volt::doctor::formatReport(*report);
  return report->exitCode();
}
