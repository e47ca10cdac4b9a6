//===- voltc - the volt compiler's command line --------------------------===//
//
// Parses flags and calls the driver library; the logic lives there.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Check.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

int main(int argc, char **argv) {
  CLI::App app{"voltc: compile a deployment spec into a volt plan"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "voltc 0.1.0");

  CLI::App *check = app.add_subcommand(
      "check", "validate a spec, its SKU and its model (config files alone suffice) and print "
               "a summary");
  std::string specFile;
  bool verifyData = false, json = false, listTensors = false;
  check->add_option("spec", specFile, "deployment spec (YAML)")->required();
  check->add_flag("--verify-data", verifyData,
                  "also read every NVFP4 block and global scale (NaN, negative)");
  check->add_flag("--json", json, "print the summary as JSON");
  check->add_flag("--list-tensors", listTensors, "list every weight with its shape and format");

  CLI11_PARSE(app, argc, argv);

  if (check->parsed()) {
    volt::driver::CheckOptions options;
    options.verifyData = verifyData;
    auto report = volt::driver::check(specFile, options);
    if (!report) {
      std::fprintf(stderr, "voltc: error: %s\n", report.message().c_str());
      return 1;
    }
    if (json)
      std::cout << volt::driver::checkReportJson(*report).dump(2) << "\n";
    else
      std::cout << volt::driver::formatCheckReport(*report, listTensors);
    return 0;
  }
  return 1;
}
