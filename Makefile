# The two commands of the quickstart. Each installs what is missing
# (scripts/install-deps.sh), configures, builds and runs.
#
#   make demo   build, write a tiny NVFP4 MoE model, check and compile it with
#               voltc, and generate text from the plan with volt-run
#   make test   build and run the whole test suite (ctest)
#
# BUILD_DIR and JOBS may be overridden: make test JOBS=8

BUILD_DIR ?= build
JOBS ?= $(shell nproc)
# ccache keys on paths relative to the checkout, so clones in other folders
# (CI) reuse what earlier builds compiled.
export CCACHE_BASEDIR ?= $(CURDIR)

.PHONY: all demo test deps configure build format clean

all: build

deps:
	@./scripts/install-deps.sh

$(BUILD_DIR)/build.ninja: | deps
	cmake --preset default -B $(BUILD_DIR)

configure: $(BUILD_DIR)/build.ninja

build: deps configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	@./scripts/demo.sh $(BUILD_DIR)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

format:
	git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
