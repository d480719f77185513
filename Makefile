# fm5's entry points; the build itself is CMake (CMakePresets.json).
#   make        install what is missing, build win32 and win64, ship the DLLs (fm5_NN.dll, BorlndMM.dll)
#               and the Pascal unit into win32/ and win64/
#   make test   build and test every preset in VARIANTS; closes with "N passed, N failed"
#   make fuzz   a timed run of the host build's libFuzzer harness (FUZZ_SECONDS, default 60)
#   make clean  remove the build trees and the shipped files
# A variant is the name of a configure, build and test preset.
VARIANTS ?= win32 win64 win32-c win64-c win32-checked win64-checked win32-scalar-checker win64-scalar-checker \
            host-asan host-tsan host-fuzz

FUZZ_SECONDS ?= 60

SHIP_32 := win32/fm5_32.dll win32/fm5_32.lib win32/libfm5_32.dll.a win32/fm5.h win32/BorlndMM.dll win32/fm5mm.pas
SHIP_64 := win64/fm5_64.dll win64/fm5_64.lib win64/libfm5_64.dll.a win64/fm5.h win64/BorlndMM.dll win64/fm5mm.pas

.PHONY: all setup build test bench fuzz clean

# copy_if_different keeps the shipped files' times when nothing changed.
all: build
	@cmake -E copy_if_different build/win32/bin/fm5_32.dll build/win32/lib/fm5_32.lib \
		build/win32/lib/libfm5_32.dll.a include/fm5.h build/win32/bin/BorlndMM.dll \
		pascal/fm5mm.pas win32/
	@cmake -E copy_if_different build/win64/bin/fm5_64.dll build/win64/lib/fm5_64.lib \
		build/win64/lib/libfm5_64.dll.a include/fm5.h build/win64/bin/BorlndMM.dll \
		pascal/fm5mm.pas win64/
	@echo "shipped: $(SHIP_32) $(SHIP_64)"

setup:
	@scripts/setup.sh

build: setup
	@scripts/build.sh win32 win64

test: setup
	@scripts/run-tests.sh $(VARIANTS)

# Benchmarks under Wine (scripts/bench.sh installs and builds first); options go to bench/run.py:
#   make bench BENCH_ARGS="--arch win64 --workloads 'st_*' --compare heap,fm5"
bench:
	@scripts/bench.sh $(BENCH_ARGS)

# A timed run of the libFuzzer harness on the host build (tests/fuzz, docs/host-build.md):
#   make fuzz FUZZ_SECONDS=600
fuzz: setup
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh

# A wineserver still running would keep its prefix busy: stop it before deleting the tree.
clean:
	@for tree in build/*/; do \
		if [ -d "$$tree/wineprefix" ]; then scripts/wine-prefix.sh "$$tree" cleanup >/dev/null; fi; \
	done
	rm -rf build $(SHIP_32) $(SHIP_64)
