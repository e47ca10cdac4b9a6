# lit configuration for volt: CLI diagnostics, passes (volt-opt) and
# generated PTX, each checked with FileCheck.
import os

import lit.formats

config.name = "volt"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test", ".mlir", ".yaml"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.volt_binary_dir, "tests", "lit")

config.environment["PATH"] = os.pathsep.join(
    [config.volt_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
# Messages must not depend on the user's locale or terminal.
config.environment["LC_ALL"] = "C"
config.environment["NO_COLOR"] = "1"
# One kernel cache for the suite, in the build tree: lit passes no HOME,
# so without it every GPU compile would build its kernels from scratch,
# the same kernels again in test after test. Entries are keyed by the
# kernel's source, options, target and NVRTC version (a changed template
# is compiled anew) and written atomically, so tests running at once may
# share it; the first test to need a kernel still compiles it.
config.environment["VOLT_KERNEL_CACHE"] = os.path.join(config.test_exec_root, "kernel-cache")

config.substitutions.append(("%volt_src", config.volt_source_dir))
config.substitutions.append(("%volt_bin", config.volt_binary_dir))
config.substitutions.append(("%specs", os.path.join(config.volt_source_dir, "specs")))
# flatc over plan.fbs: it includes ops.fbs, which the build generates.
config.substitutions.append(("%flatc", "flatc -I " + os.path.join(config.volt_binary_dir, "runtime", "schema")))
# volt-doctor's stand-in NVML (tests/support/fake-nvml).
config.substitutions.append(("%fake_nvml", os.path.join(config.volt_binary_dir, "lib", "libvolt-fake-nvml.so")))
