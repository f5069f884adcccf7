#!/usr/bin/env bash
# Build (dependencies included), then run the test suite.
#
#   bash scripts/test.sh [extra ctest args, e.g. -R runtime -V]
#   bash scripts/test.sh --sanitize address,undefined [ctest args]   # build-asan/, the whole suite
#   bash scripts/test.sh --sanitize thread [ctest args]              # build-tsan/, the concurrency tests
#   bash scripts/test.sh --no-libtorch [ctest args]                  # build-nolt/, without LibTorch
#   bash scripts/test.sh --no-libtorch --sanitize address,undefined  # build-asan-nolt/: both (CI's stage 2)
#
# --no-libtorch configures build-nolt/ ($THUNDERC_NOLT_BUILD_DIR overrides it) with
# -DTHUNDERC_WITH_LIBTORCH=OFF (no TorchScript frontend, no torch executor, no bench --compare: .pt2 only) and
# runs the tests such a build has (tests/CMakeLists.txt says which). LibTorch may be installed; it is not used.
#
# --sanitize builds with -fsanitize=LIST (cmake -DTHUNDERC_SANITIZE=LIST, GCC's libasan/libubsan/libtsan)
# into its own folder ($THUNDERC_SANITIZE_BUILD_DIR overrides it) and runs ctest with the sanitizer
# options below; any sanitizer report fails the test that triggered it. See docs/security.md.
# --sanitize thread builds only the executables of the tests it runs (the runtime's multi-threaded and
# multi-stream tests); extra ctest args replace its default -R/-E selection when they contain -R, -L or -E.
# $THUNDERC_SANITIZE_TARGETS (space-separated) limits the build to those targets, for a subset (-R ...).
# Building by hand with -DTHUNDERC_SANITIZE=address,... needs ASAN_OPTIONS=detect_leaks=0 at build time
# too: doctest_discover_tests runs each test executable (LibTorch's leaks at exit would fail the build).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

sanitize=""
nolt=0
while (($#)); do
  case "$1" in
    --no-libtorch) nolt=1; shift ;;
    --sanitize)
      [[ $# -ge 2 ]] || { echo "test.sh: --sanitize needs a value (address,undefined | thread)" >&2; exit 2; }
      sanitize=$2
      shift 2
      ;;
    --sanitize=*) sanitize=${1#--sanitize=}; shift ;;
    *) break ;;
  esac
done

if ((nolt)) && [[ -z "$sanitize" ]]; then
  bash scripts/install-deps.sh
  build_dir=${THUNDERC_NOLT_BUILD_DIR:-build-nolt}
  generator=()
  if [[ ! -f "$build_dir/CMakeCache.txt" ]] && command -v ninja >/dev/null 2>&1; then
    generator=(-G Ninja)
  fi
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DTHUNDERC_WITH_LIBTORCH=OFF
  cmake --build "$build_dir" -j"$(nproc)"
  exec ctest --test-dir "$build_dir" --output-on-failure -j2 "$@"
fi

if [[ -z "$sanitize" ]]; then
  bash scripts/build.sh
  exec ctest --test-dir build --output-on-failure -j2 "$@"
fi

bash scripts/install-deps.sh --sanitize
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
# -O1 -g1 (line tables: file:line in reports). Measured on cli/commands/inspect.cpp (LibTorch headers), CPU
# seconds: normal build (-O3) 12, ASan+UBSan at -O2 -g 77, at -O1 -g1 35, ASan alone 15, TSan 7 (-O1 -g1).
san_flags="-O1 -g1 -DNDEBUG"
common_cmake=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$san_flags"
              "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$san_flags" "-DTHUNDERC_SANITIZE=$sanitize")
((nolt)) && common_cmake+=(-DTHUNDERC_WITH_LIBTORCH=OFF)

# Sanitizer options (read by the instrumented test executables and by the thunderc subprocesses they start).
# - halt_on_error / abort_on_error: a report fails the test (UBSan would otherwise print and continue).
# - detect_leaks=0: LibTorch (not instrumented) leaks at exit by design (static registries, the JIT's
#   caches); leak reports from it would drown everything else. LeakSanitizer on the runtime alone is run
#   by the fuzz targets (scripts/fuzz.sh), which do not load LibTorch.
# - detect_stack_use_after_return=0: the cuda-emu kernels run on ucontext fibers (swapcontext), which
#   ASan's fake stacks do not follow.
# - check_initialization_order=1: static-initialization-order bugs between our translation units.
# - verify_asan_link_order=0: every instrumented executable here has libasan first anyway; the check only
#   gets in the way when a tool preloads a library (LD_PRELOAD) into a test.
# - allocator_may_return_null=1: an allocation too large to satisfy fails as it does without ASan (malloc
#   returns NULL, the nothrow new the runtime uses too), so the tests of "out of memory" messages still run.
case "$sanitize" in
  *thread*)
    build_dir=${THUNDERC_SANITIZE_BUILD_DIR:-build-tsan}
    ((nolt)) && build_dir=${THUNDERC_SANITIZE_BUILD_DIR:-build-tsan-nolt}
    export TSAN_OPTIONS="halt_on_error=1:abort_on_error=1:second_deadlock_stack=1:history_size=4${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
    # The runtime's concurrency tests: 8 threads on one model (CPU), 8 threads with their own CUDA streams
    # on the fake driver, the per-stream workspace pool. Not under TSan: cuda-emu (its fibers switch stacks with
    # swapcontext, which TSan does not model without __tsan_switch_to_fiber) and e2e (the generated
    # kernels' OpenMP runtime, libgomp, is not instrumented, so its barriers are invisible to TSan and every
    # parallel region would be reported as a race).
    targets=(thunderc_runtime_tests thunderc_runtime_cuda_tests)
    select=(-R '^runtime(_cuda)?/.*([Tt]hread|[Cc]oncurren|[Ss]tream)')
    ;;
  *)
    build_dir=${THUNDERC_SANITIZE_BUILD_DIR:-build-asan}
    ((nolt)) && build_dir=${THUNDERC_SANITIZE_BUILD_DIR:-build-asan-nolt}
    export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=0:detect_stack_use_after_return=0:check_initialization_order=1:verify_asan_link_order=0:allocator_may_return_null=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
    targets=()
    select=()
    ;;
esac
for arg in "$@"; do
  case "$arg" in -R|-L|-E) select=() ;; esac
done
# THUNDERC_SANITIZE_TARGETS="a b ...": build only these targets (e.g. the executables of a -R subset).
if [[ -n "${THUNDERC_SANITIZE_TARGETS:-}" ]]; then
  read -r -a targets <<<"$THUNDERC_SANITIZE_TARGETS"
fi

[[ -f "$build_dir/CMakeCache.txt" ]] && generator=()
cmake -S . -B "$build_dir" "${generator[@]}" "${common_cmake[@]}"
if ((${#targets[@]})); then
  cmake --build "$build_dir" -j"$(nproc)" --target "${targets[@]}"
else
  cmake --build "$build_dir" -j"$(nproc)"
fi
exec ctest --test-dir "$build_dir" --output-on-failure -j2 "${select[@]}" "$@"
