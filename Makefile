# Thin wrapper over Meson: the targets are what README tells people to type.
#   make demo   build and run Docket on an embedded default (see README)
#   make test   the whole test suite under ASan + UBSan, ending "N passed, N failed"
#               (the web console's browser tests included: tests/system/console.bats)
# make, make demo and make test build the web console first (scripts/build-console.sh:
# npm ci && npm run build in console/; docs/console.md)
#   make bench  the benchmarks (numbers go to bench/RESULTS.md by hand, with date and machine)
#   make fuzz   every fuzzer for FUZZ_SECONDS each (default 60)
#   make install-slurm-compat   sbatch, srun, squeue, scancel, scontrol, sinfo, sacct as links to the
#               docket CLI in SLURM_COMPAT_DIR (default /usr/local/bin): only on request, so
#               they never shadow a real Slurm (docs/slurm.md)
BUILD      ?= build
TESTBUILD  ?= build-test
FUZZ_SECONDS ?= 60
SLURM_COMPAT_DIR ?= /usr/local/bin

.PHONY: all build demo demo-stop test unit system fuzz bench clean deps test-deps install-slurm-compat

all: build

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --test

build: deps
	@scripts/build-console.sh
	@if [ ! -f $(BUILD)/build.ninja ]; then meson setup $(BUILD) --buildtype=release -Dwerror=true -Dtests=false >/dev/null; fi
	@ninja -C $(BUILD) >/dev/null

demo: build
	@scripts/demo.sh

demo-stop:
	@scripts/demo.sh --stop

test: test-deps
	@scripts/run-tests.sh

fuzz: test-deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/run-fuzz.sh

bench: build
	@scripts/run-bench.sh

install-slurm-compat: build
	@for c in sbatch srun squeue scancel scontrol sinfo sacct; do \
		if [ -e $(SLURM_COMPAT_DIR)/$$c ] && [ ! -L $(SLURM_COMPAT_DIR)/$$c ]; then \
			echo "$(SLURM_COMPAT_DIR)/$$c exists and is not ours: left alone"; continue; fi; \
		ln -sf $(abspath $(BUILD))/src/cli/docket $(SLURM_COMPAT_DIR)/$$c && echo "$(SLURM_COMPAT_DIR)/$$c -> docket"; \
	done

clean:
	rm -rf $(BUILD) $(TESTBUILD) build-fuzz
