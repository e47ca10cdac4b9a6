//===- voltc - the volt compiler's command line --------------------------===//
//
// Parses flags and calls the driver library; the logic lives there.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Check.h"
#include "compiler/driver/Compile.h"
#include "compiler/driver/Inspect.h"
#include "runtime/support/Strings.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include <unistd.h>

namespace {

/// The deep scan's progress on stderr: a bar redrawn in place on a
/// terminal, a line every 10 % otherwise (logs, CI).
std::function<void(const volt::model::ValueScanProgress &)> deepProgress(bool terminal) {
  return [terminal, lastTenth = -1](const volt::model::ValueScanProgress &p) mutable {
    const double fraction =
        p.bytesTotal ? static_cast<double>(p.bytesDone) / static_cast<double>(p.bytesTotal) : 1.0;
    const double rate = p.seconds > 0 ? static_cast<double>(p.bytesDone) / p.seconds : 0.0;
    const std::string amounts = volt::formatBytes(p.bytesDone) + " / " +
                                volt::formatBytes(p.bytesTotal) + ", " +
                                volt::formatBytes(static_cast<uint64_t>(rate)) + "/s";
    const bool end = p.bytesDone >= p.bytesTotal;
    if (terminal) {
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(fraction * kWidth);
      std::fprintf(stderr, "\rvoltc: deep check [%s%s] %3d %% %s", std::string(filled, '#').c_str(),
                   std::string(kWidth - filled, '.').c_str(), static_cast<int>(fraction * 100),
                   amounts.c_str());
      if (end)
        std::fputc('\n', stderr);
      return;
    }
    const int tenth = static_cast<int>(fraction * 10);
    if (tenth == lastTenth && !end)
      return;
    lastTenth = tenth;
    std::fprintf(stderr, "voltc: deep check %3d %% (%s)\n", static_cast<int>(fraction * 100),
                 amounts.c_str());
  };
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"voltc: compile a deployment spec into a volt plan"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "voltc 0.1.0");

  CLI::App *check = app.add_subcommand(
      "check", "validate a spec, its SKU and its model (config files alone suffice) and print "
               "a summary");
  std::string specFile;
  bool verifyData = false, deep = false, json = false, listTensors = false;
  check->add_option("spec", specFile, "deployment spec (YAML)")->required();
  check->add_flag("--verify-data", verifyData,
                  "also read every NVFP4 block and global scale (NaN, negative)");
  check->add_flag("--deep", deep,
                  "also read every floating-point value of the checkpoint (BF16/F16/F32 and FP8 "
                  "weights, every scale) for NaN, infinity and negative scales, with progress "
                  "on stderr");
  check->add_flag("--json", json, "print the summary as JSON");
  check->add_flag("--list-tensors", listTensors, "list every weight with its shape and format");

  CLI::App *compile = app.add_subcommand(
      "compile", "compile a spec into a plan, or stop after a phase and print it (--emit)");
  std::string compileSpec, emit = "plan", output;
  compile->add_option("spec", compileSpec, "deployment spec (YAML)")->required();
  compile->add_option("--emit", emit,
                      "stop after this phase and print it: " +
                          volt::joinList(volt::pipeline::phaseNames()))
      ->capture_default_str();
  compile->add_option("-o,--output", output,
                      "plan file to write (default: the spec's name with .vplan); the weight "
                      "packs go beside it");

  CLI::App *inspectCmd = app.add_subcommand(
      "inspect", "print a compiled plan's memory plan per rank, its largest buffers and the "
                 "launches of a decode step");
  std::string inspectPlan;
  bool inspectJson = false;
  std::string inspectHtml;
  inspectCmd->add_option("plan", inspectPlan, "plan file (.vplan)")->required();
  inspectCmd->add_flag("--json", inspectJson, "print the report as JSON");
  inspectCmd->add_option("--html", inspectHtml,
                         "also write the memory plan as a self-contained HTML page (per GPU: the "
                         "memory bar, the parts, the arena's buffers over the op timeline)");

  CLI11_PARSE(app, argc, argv);

  if (inspectCmd->parsed()) {
    auto report = volt::driver::inspect(inspectPlan);
    if (!report) {
      std::fprintf(stderr, "voltc: error: %s\n", report.message().c_str());
      return 1;
    }
    if (!inspectHtml.empty()) {
      const std::string tmp = inspectHtml + ".partial";
      {
        std::ofstream page(tmp, std::ios::binary | std::ios::trunc);
        page << volt::driver::formatInspectHtml(*report);
        if (!page.good()) {
          std::fprintf(stderr, "voltc: error: --html: cannot write %s: %s\n", inspectHtml.c_str(),
                       std::strerror(errno));
          std::remove(tmp.c_str());
          return 1;
        }
      }
      if (std::rename(tmp.c_str(), inspectHtml.c_str()) != 0) {
        std::fprintf(stderr, "voltc: error: --html: cannot write %s: %s\n", inspectHtml.c_str(),
                     std::strerror(errno));
        std::remove(tmp.c_str());
        return 1;
      }
      std::fprintf(stderr, "voltc: wrote %s\n", inspectHtml.c_str());
    }
    if (inspectJson)
      std::cout << report->json.dump(2) << "\n";
    else
      std::cout << volt::driver::formatInspectReport(*report);
    return 0;
  }

  if (compile->parsed()) {
    auto phase = volt::pipeline::parsePhase(emit);
    if (!phase) {
      std::fprintf(stderr, "voltc: error: --emit: unknown phase '%s' (valid: %s)\n", emit.c_str(),
                   volt::joinList(volt::pipeline::phaseNames()).c_str());
      return 1;
    }
    volt::driver::CompileOptions options;
    options.emit = *phase;
    options.output = output;
    options.log = [](const std::string &line) { std::fprintf(stderr, "voltc: %s\n", line.c_str()); };
    auto result = volt::driver::compile(compileSpec, options);
    if (!result) {
      std::fprintf(stderr, "voltc: error: %s\n", result.message().c_str());
      return 1;
    }
    std::cout << *result;
    return 0;
  }

  if (check->parsed()) {
    volt::driver::CheckOptions options;
    options.verifyData = verifyData;
    options.deep = deep;
    if (deep)
      options.progress = deepProgress(isatty(fileno(stderr)) != 0);
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
