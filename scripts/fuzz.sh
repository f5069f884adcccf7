#!/usr/bin/env bash
# Build the libFuzzer targets (fuzz/, clang + ASan + UBSan) and run each for SECONDS (default 60).
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]     # targets: npy manifest shape_spec elf run (default: all)
#   bash scripts/fuzz.sh 0 [TARGET...]             # only build (e.g. to replay fuzz/findings/*)
#
# Builds fuzz/ as its own CMake project (no LibTorch) into build-fuzz/ ($THUNDERC_FUZZ_BUILD_DIR overrides).
# Each target starts from its seeds (fuzz/corpus/<target>/, read-only) plus what earlier runs found
# (<build>/corpus/<target>/, where new inputs go), and prints its executions and findings. A finding (a
# crash, a sanitizer report, a harness check, a leak, a timeout) is saved as <build>/findings/<target>/crash-*
# (or leak-*, timeout-*, oom-*); reproduce it with `<build>/fuzz_<target> FILE`. Exits non-zero when any
# target has a finding. docs/security.md describes the targets and the figures of the last long run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds=60
if [[ $# -gt 0 && "$1" =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
all=(npy manifest shape_spec elf run pt2)
targets=("$@")
((${#targets[@]})) || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target '$t' (one of: ${all[*]})" >&2; exit 2; }
done

bash scripts/install-deps.sh --fuzz
build=${THUNDERC_FUZZ_BUILD_DIR:-build-fuzz}
cc=$(command -v clang-14 || command -v clang)
cxx=$(command -v clang++-14 || command -v clang++)
generator=()
[[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
cmake -S fuzz -B "$build" "${generator[@]}" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}"

((seconds > 0)) || { echo "fuzz.sh: SECONDS=0, built only: ${targets[*]/#/$build/fuzz_}"; exit 0; }

export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:allocator_may_return_null=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

status=0
summary=()
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  findings=$build/findings/$t
  log=$build/logs/fuzz_$t.log
  mkdir -p "$corpus" "$findings" "$(dirname "$log")"
  marker=$build/logs/.start_$t
  touch "$marker"
  echo "fuzz.sh: fuzz_$t for ${seconds}s (log: $log)"
  rc=0
  # -timeout: one input may take at most 10 s; -rss_limit_mb: the harnesses allocate at most a few MB per
  # input, so more is a finding; -max_len: the seeds are small and so are the inputs that matter.
  "$build/fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -max_len=4096 -artifact_prefix="$findings/" "$corpus" "fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n1 | awk '{print $2}')
  found=$(find "$findings" -type f -newer "$marker" | wc -l)
  if ((rc != 0)); then
    status=1
    echo "fuzz.sh: fuzz_$t: FINDING (exit $rc):"
    grep -E 'ERROR: |SUMMARY: |runtime error: |fuzz_[a-z_]+: |Test unit written' "$log" | head -n 8 | sed 's/^/    /'
  fi
  summary+=("$(printf '%-16s %12s execs  %8s exec/s  cov %6s  findings %s' "fuzz_$t" "${execs:-?}" "${rate:-?}" \
    "${cov:-?}" "$found")")
done
echo "fuzz.sh: summary (${seconds}s per target)"
printf '  %s\n' "${summary[@]}"
exit $status
