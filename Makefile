# Thin wrapper around CMake/CTest. The two set-up commands: `make demo`, `make test`.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build test test-san test-sim soak demo bench-core install clean deps

all: build

deps:
	scripts/deps.sh build

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# The sanitizer lane (CI runs it after `make test`): ASan + UBSan build in
# build-san, the suite without the valgrind/apache/model/timing tests.
SAN_BUILD ?= build-san
test-san: | deps
	JOBS=$(JOBS) scripts/test-san.sh $(SAN_BUILD)

# The simulated-RTM lane: every hardware path on any CPU (scripts/test-sim.sh).
test-sim: | deps
	JOBS=$(JOBS) scripts/test-sim.sh build-sim

# Every stress test for SECONDS each (default 300), fresh seeds, printed for a
# replay (scripts/soak.sh; SOAK_SANITIZE=1 for the sanitizer build).
SECONDS ?= 300
soak: | deps
	JOBS=$(JOBS) scripts/soak.sh $(SECONDS) $(CTEST_FLAGS)

# The Apache experiment at a small scale (cache/bench/apache/run.sh --quick, a few
# minutes): its packages first (apache2-dev before the build, for the module).
demo:
	scripts/deps.sh demo
	cache/bench/apache/run.sh --install-deps --deps-only
	$(MAKE) build
	@# a build configured before apache2-dev was there has no module: configure again
	@if [ ! -f $(BUILD)/cache/apache/mod_cache_tx.so ] && command -v apxs >/dev/null; then \
	  cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null && cmake --build $(BUILD) -j $(JOBS); fi
	cache/bench/apache/run.sh --quick --build $(BUILD)

# The core benchmark (the earlier demo): bench/run-core.sh.
bench-core: build
	scripts/deps.sh demo
	bench/run-core.sh $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD) $(SAN_BUILD) build-sim build-soak build-soak-san
