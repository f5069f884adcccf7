#!/usr/bin/env bash
# GPU check of thunderc's CUDA models: parity and latency on a real GPU, against PyTorch on the same GPU.
#
#   bash scripts/gpu-check.sh prepare DIR      here (dev machine, after `bash scripts/build.sh`): compile every
#                                              sample (and real models, if any) for CUDA into DIR, with the
#                                              runner binary, the runtime, headers and sources to rebuild them
#   bash scripts/gpu-check.sh run DIR [OUT]    on the GPU machine: parity + latency per model, PyTorch
#                                              (TorchScript, eager, torch.compile) on the same inputs; writes
#                                              OUT/gpu_check.md, OUT/gpu_check.json, OUT/gpu_check.log
#
# DIR must travel to the GPU machine: put it inside the repository under an ignored path (out/ is ignored),
# e.g. `prepare out/gpu-check`, and name it in the device tool's `carry`. OUT defaults to $OUT when set
# (the device tool's result folder), else DIR/results.
#
# prepare: THUNDERC (default build/bin/thunderc), GPU_CHECK_EXECUTORS (default nvfuser,cudnn: the design card's
#   command), REAL_MODELS_DIR (default /tmp/real_models, then /tmp/thunderc-real-models: .pt files written by
#   scripts/make_real_models.py; optional), GPU_CHECK_MAX_MIB (default 60: DIR stays under it; models that
#   would not fit are left out and listed), GPU_CHECK_CONFIGS (the extra configurations each sample is also
#   compiled with, "label:flags" separated by ";"; default below: the CUDA defaults (cuDNN + cuBLASLt +
#   nvfuser), nvfuser alone, --precision tf32, bf16 and fp16, --cuda-graphs; "" for none), timed in a table of their own
#   (gpu_check_configs.md) against the card's command.
# run: GPU_CHECK_ITERS (default 100), GPU_CHECK_WARMUP (10), GPU_CHECK_RTOL (1e-4), GPU_CHECK_ATOL (1e-5),
#   GPU_CHECK_COMPILE_TIMEOUT (60 s per torch.compile warm-up), GPU_CHECK_BUDGET (180 s for the whole PyTorch
#   part; torch.compile is skipped, reported n/a, once it would overrun; stopped at budget + 120 s),
#   GPU_CHECK_TF32 (off: PyTorch's cuDNN convolutions in plain float32; default: PyTorch's own settings),
#   GPU_CHECK_REBUILD=1 (rebuild the runner from DIR/src even if the carried one runs), PYTHON (python3),
#   GPU_CHECK_TF32_RTOL / GPU_CHECK_TF32_ATOL (1e-3 / 1e-3: the tolerance of the tf32 configuration),
#   GPU_CHECK_BF16_TOL (2e-2) / GPU_CHECK_FP16_TOL (3e-3): rtol and atol of the bf16 / fp16 configurations.
# Exit status of run: 0 all models ran and matched, 1 no GPU / setup error, 2 a model failed or differed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=
work=

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
}

die() {
  echo "gpu-check.sh: error: $*" >&2
  exit 1
}

# The shape of a .npy file as "AxBxC" (stdlib only: the dev machine's python3 may lack numpy).
npy_shape() {
  python3 - "$1" <<'EOF'
import ast, struct, sys
with open(sys.argv[1], "rb") as f:
    if f.read(6) != b"\x93NUMPY":
        sys.exit(f"{sys.argv[1]}: not a .npy file")
    major = f.read(2)[0]
    n = struct.unpack("<H" if major == 1 else "<I", f.read(2 if major == 1 else 4))[0]
    header = ast.literal_eval(f.read(n).decode("latin1"))
print("x".join(str(d) for d in header["shape"]) or "1")
EOF
}

# The recorded inputs of a .pt archive (its extra file thunderc.json), as "name shape" lines; nothing if none.
pt_inputs() {
  python3 - "$1" <<'EOF'
import json, sys, zipfile
try:
    with zipfile.ZipFile(sys.argv[1]) as z:
        names = [n for n in z.namelist() if n.endswith("/extra/thunderc.json")]
        if names:
            for i in json.loads(z.read(names[0]))["inputs"]:
                print(i["name"], "x".join(str(d) for d in i["shape"]))
except Exception as e:
    print(f"cannot read {sys.argv[1]}: {e}", file=sys.stderr)
EOF
}

# A seeded random float32 .npy of shape "AxBxC" (standard normal values; stdlib only).
random_npy() {
  python3 - "$1" "$2" <<'EOF'
import random, struct, sys
shape = tuple(int(d) for d in sys.argv[2].split("x"))
n = 1
for d in shape:
    n *= d
rng = random.Random(1)
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join(f"{d}, " for d in shape).rstrip(" ")
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
    f.write(struct.pack(f"<{n}f", *(rng.gauss(0.0, 1.0) for _ in range(n))))
EOF
}

mib() { du -sm "$1" | cut -f1; }

# ---------------------------------------------------------------------------------------------------- prepare

prepare() {
  local dir=$1
  local thunderc=${THUNDERC:-$here/build/bin/thunderc}
  local executors=${GPU_CHECK_EXECUTORS:-nvfuser,cudnn}
  local max_mib=${GPU_CHECK_MAX_MIB:-60}
  [[ -x $thunderc ]] || die "$thunderc not built; run 'bash scripts/build.sh' first (or set THUNDERC)"
  local bindir libdir
  bindir=$(cd "$(dirname "$thunderc")" && pwd)
  libdir=$(cd "$bindir/../lib" 2>/dev/null && pwd) || die "no lib/ beside $bindir"
  local runner=$bindir/thunderc_gpu_check
  # The runner and the runtime that travel must match the sources copied beside them: bring them up to date.
  cmake --build "$(dirname "$bindir")" --target thunderc_gpu_check thunderc_runtime >/dev/null ||
    die "cannot build thunderc_gpu_check in $(dirname "$bindir") (configure it with the top-level CMakeLists.txt)"
  [[ -f $libdir/libthunderc_runtime.so ]] || die "$libdir/libthunderc_runtime.so not built"
  local dlpack
  dlpack=$(find_header dlpack/dlpack.h) || die "dlpack/dlpack.h not found (Debian: apt-get install libdlpack-dev)"
  local nlohmann
  nlohmann=$(find_header nlohmann/json.hpp) || die "nlohmann/json.hpp not found (Debian: apt-get install nlohmann-json3-dev)"

  # Refuse to wipe a folder that is not an earlier prepared DIR.
  if [[ -d $dir && -n $(ls -A "$dir") && ! -f $dir/models.tsv ]]; then
    die "$dir exists, is not empty and was not made by 'gpu-check.sh prepare'; choose another DIR"
  fi
  rm -rf "$dir"
  mkdir -p "$dir"/{bin,lib,include/dlpack,models,src/gpu_check,src/samples} || die "cannot create $dir"
  dir=$(cd "$dir" && pwd)
  cp "$runner" "$dir/bin/"
  cp "$libdir/libthunderc_runtime.so" "$dir/lib/"
  cp "$dlpack/dlpack/dlpack.h" "$dir/include/dlpack/"
  cp -r "$nlohmann/nlohmann" "$dir/include/"
  cp -r "$here/runtime" "$dir/src/runtime"
  rm -f "$dir/src/runtime/include/thunderc/aten.hpp"  # the LibTorch adapter: not needed there
  cp "$here"/tools/gpu_check/{CMakeLists.txt,gpu_check_runner.cpp,compare_pytorch.py} "$dir/src/gpu_check/"
  cp "$here/samples/make_samples.py" "$dir/src/samples/"
  cp "$here/scripts/gpu-check.sh" "$dir/src/"
  git -C "$here" rev-parse HEAD >"$dir/COMMIT" 2>/dev/null || echo unknown >"$dir/COMMIT"
  git -C "$here" status --short >>"$dir/COMMIT" 2>/dev/null

  local models=$dir/models.tsv notes=$dir/NOTES.txt
  printf 'name\tkind\tshapes\tso\tpt\tinput\texpected\texpected_from\tcompile_s\n' >"$models"
  : >"$notes"
  tmp=$(mktemp -d) || die "mktemp failed"
  trap 'rm -rf "$tmp"' EXIT

  echo "thunderc: $thunderc; executors: $executors"
  # Samples: shapes from the .npy input (the scripted ones record none); expected = LibTorch CPU output.
  local pt name input shapes inname start log
  for pt in "$here"/samples/*.pt; do
    name=$(basename "$pt" .pt)
    input=$here/samples/$name.input.npy
    [[ -f $input && -f $here/samples/$name.expected.npy ]] || { echo "skip $name: no input/expected .npy" | tee -a "$notes"; continue; }
    inname=$(pt_inputs "$pt" | head -n 1 | cut -d' ' -f1)
    shapes=${inname:-x}=$(npy_shape "$input")
    compile_one "$name" sample "$pt" "$shapes" "$input" "$here/samples/$name.expected.npy" "LibTorch CPU (samples/$name.expected.npy)" || continue
    compile_configs "$name" "$pt" "$shapes"
  done

  # Real models (optional), smallest first, while DIR stays under the size limit.
  local real=${REAL_MODELS_DIR:-}
  if [[ -z $real ]]; then
    for real in /tmp/real_models /tmp/thunderc-real-models; do compgen -G "$real/*.pt" >/dev/null && break; done
  fi
  if ! compgen -G "$real/*.pt" >/dev/null 2>&1; then
    echo "no real models (REAL_MODELS_DIR, /tmp/real_models, /tmp/thunderc-real-models hold no .pt;" \
         "make them with: /usr/bin/python3 scripts/make_real_models.py /tmp/real_models): samples only" | tee -a "$notes"
  else
    local size line
    while read -r size pt; do
      name=$(basename "$pt" .pt)
      # The .pt and the .so each hold the weights once: about twice the .pt, plus the inputs.
      if (($(mib "$dir") + 2 * size / 1048576 + 2 > max_mib)); then
        echo "left out $name: $((size / 1048576)) MiB of weights would take $dir over ${max_mib} MiB" | tee -a "$notes"
        continue
      fi
      line=$(pt_inputs "$pt" | head -n 1)
      if [[ -z $line ]]; then echo "skip $name: no thunderc.json (input shapes) in $pt" | tee -a "$notes"; continue; fi
      if (($(pt_inputs "$pt" | wc -l) != 1)); then echo "skip $name: more than one input" | tee -a "$notes"; continue; fi
      inname=${line%% *}
      shapes="$inname=${line#* }"
      input=$tmp/$name.input.npy
      random_npy "$input" "${line#* }"
      # Expected: LibTorch's CPU kernels, op by op (thunderc's torch executor runs every op through ATen).
      if ! log=$("$thunderc" "$pt" -o "$tmp/$name.cpu.so" --executors torch 2>&1 </dev/null) ||
         ! log=$("$thunderc" run "$tmp/$name.cpu.so" "$input" --output-dir "$tmp/$name.expected" 2>&1 </dev/null); then
        echo "skip $name: cannot make the CPU reference: $(head -n 3 <<<"$log" | tr '\n' ' ')" | tee -a "$notes"
        continue
      fi
      mv "$tmp/$name.expected/output0.npy" "$tmp/$name.expected.npy"
      compile_one "$name" real "$pt" "$shapes" "$input" "$tmp/$name.expected.npy" \
        "LibTorch CPU through thunderc's torch executor (ATen per op)" || continue
      if (($(mib "$dir") > max_mib)); then
        rm -f "$dir/models/$name".*
        sed -i "/^$name\t/d" "$models"
        echo "left out $name: $dir would exceed ${max_mib} MiB" | tee -a "$notes"
      fi
    done < <(for pt in "$real"/*.pt; do echo "$(stat -c %s "$pt") $pt"; done | sort -n)
  fi

  echo
  echo "prepared $dir: $(($(wc -l <"$models") - 1)) model(s), $(du -sh "$dir" | cut -f1)"
  (cd "$dir" && du -sh bin lib include models src | sed 's/^/  /')
  [[ -s $notes ]] && { echo "notes ($dir/NOTES.txt):"; sed 's/^/  /' "$notes"; }
  local rel=${dir#"$here"/}
  if [[ $rel == "$dir" ]]; then
    echo "note: $dir is outside the repository; the device tool carries only paths inside it"
  elif ! git -C "$here" check-ignore -q "$rel"; then
    echo "note: $rel is not ignored by git; it would travel anyway, but carry works only for ignored paths"
  fi
  echo "next, on the GPU machine (device tool: carry [\"$rel\"], timeout_s 480):"
  echo "  bash scripts/gpu-check.sh run $rel \"\$OUT\""
  (($(mib "$dir") <= max_mib)) || die "$dir is over ${max_mib} MiB"
}

# Directory holding HEADER (e.g. dlpack/dlpack.h) among the usual include directories.
find_header() {
  local d
  for d in ${CPATH:+${CPATH//:/ }} /usr/include /usr/local/include; do
    [[ -f $d/$1 ]] && { echo "$d"; return 0; }
  done
  return 1
}

# compile_one NAME KIND PT SHAPES INPUT EXPECTED EXPECTED_FROM: compile for CUDA into DIR/models, copy the
# files the run needs, append a line to models.tsv.
compile_one() {
  local name=$1 kind=$2 pt=$3 shapes=$4 input=$5 expected=$6 from=$7
  local out=$dir/models/$name.so start log seconds
  start=$(date +%s.%N)
  if ! log=$("$thunderc" "$pt" --executors "$executors" --shapes "$shapes" -o "$out" 2>&1 </dev/null); then
    echo "FAILED to compile $name ($kind) with --executors $executors: $(head -n 5 <<<"$log" | tr '\n' ' ')" | tee -a "$notes"
    rm -f "$dir/models/$name".*
    return 1
  fi
  seconds=$(python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$(date +%s.%N)")
  cp "$pt" "$dir/models/$name.pt"
  cp "$input" "$dir/models/$name.input.npy"
  cp "$expected" "$dir/models/$name.expected.npy"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$kind" "$shapes" "models/$name.so" "models/$name.pt" \
    "models/$name.input.npy" "models/$name.expected.npy" "$from" "$seconds" >>"$models"
  local executors_used
  executors_used=$(python3 -c 'import json, sys
print(",".join(sorted({e for v in json.load(open(sys.argv[1]))["variants"] for e in v.get("executors", {})})))' "${out%.so}.json" 2>/dev/null)
  printf 'compiled %-36s %-14s %5ss  %-5s %s\n' "$name" "$shapes" "$seconds" "$(du -h "$out" | cut -f1)" "$executors_used"
  if [[ ,$executors_used, == *,torch,* ]]; then
    echo "note: $name uses the torch executor (LibTorch at run time): it cannot run where LibTorch 1.13 is missing" | tee -a "$notes"
  fi
}

# compile_configs NAME PT SHAPES: the sample in each of GPU_CHECK_CONFIGS into DIR/configs/, one line per
# configuration in configs.tsv (name, label, flags, so, and the card's row's input and expected).
compile_configs() {
  local name=$1 pt=$2 shapes=$3 item label flags out log
  local configs=${GPU_CHECK_CONFIGS-"cuda:--device cuda;nvfuser:--executors nvfuser;tf32:--device cuda --precision tf32;bf16:--device cuda --precision bf16;fp16:--device cuda --precision fp16;graphs:--device cuda --cuda-graphs"}
  mkdir -p "$dir/configs"
  [[ -f $dir/configs.tsv ]] || printf 'name\tlabel\tflags\tso\tinput\texpected\n' >"$dir/configs.tsv"
  local items=()
  IFS=';' read -r -a items <<<"$configs"
  for item in "${items[@]}"; do
    [[ -n $item ]] || continue
    label=${item%%:*}
    flags=${item#*:}
    out=$dir/configs/$name.$label.so
    # shellcheck disable=SC2086
    if ! log=$("$thunderc" "$pt" $flags --shapes "$shapes" -o "$out" 2>&1 </dev/null); then
      echo "FAILED to compile $name ($label: $flags): $(head -n 3 <<<"$log" | tr '\n' ' ')" | tee -a "$notes"
      continue
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$label" "$flags" "configs/$name.$label.so" "models/$name.input.npy" \
      "models/$name.expected.npy" >>"$dir/configs.tsv"
    printf 'compiled %-36s %-8s %s\n' "$name" "$label" "$flags"
  done
}

# -------------------------------------------------------------------------------------------------------- run

# The runner to use: the carried one when it starts here, else one rebuilt from DIR/src (no LibTorch needed).
pick_runner() {
  local dir=$1 out
  if [[ ${GPU_CHECK_REBUILD:-0} != 1 ]] && out=$(LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$dir/bin/thunderc_gpu_check" --help 2>&1); then
    echo "runner: carried $dir/bin/thunderc_gpu_check" >&2
    echo "$dir/bin/thunderc_gpu_check"
    return 0
  fi
  [[ ${GPU_CHECK_REBUILD:-0} == 1 ]] || echo "runner: the carried binary does not start here ($(head -n 2 <<<"$out" | tr '\n' ' ')); rebuilding from $dir/src" >&2
  local build=${TMPDIR:-/tmp}/thunderc-gpu-check-build
  command -v cmake >/dev/null || { echo "runner: cmake not found, cannot rebuild" >&2; return 1; }
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  rm -rf "$build"
  if ! cmake -S "$dir/src/gpu_check" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
       -DDLPACK_INCLUDE_DIR="$dir/include" -DNLOHMANN_JSON_INCLUDE_DIR="$dir/include" >"$build.log" 2>&1 ||
     ! cmake --build "$build" -j"$(nproc)" >>"$build.log" 2>&1; then
    echo "runner: rebuild failed; last lines of $build.log:" >&2
    tail -n 20 "$build.log" >&2
    return 1
  fi
  echo "runner: rebuilt $build/bin/thunderc_gpu_check" >&2
  echo "$build/bin/thunderc_gpu_check"
}

run_check() {
  local dir=$1 out=$2
  [[ -f $dir/models.tsv ]] || die "$dir has no models.tsv: prepare it first (bash scripts/gpu-check.sh prepare $dir)"
  dir=$(cd "$dir" && pwd)
  mkdir -p "$out" || die "cannot create $out"
  out=$(cd "$out" && pwd)
  local iters=${GPU_CHECK_ITERS:-100} warmup=${GPU_CHECK_WARMUP:-10}
  local rtol=${GPU_CHECK_RTOL:-1e-4} atol=${GPU_CHECK_ATOL:-1e-5}
  work=$(mktemp -d) || die "mktemp failed"
  trap 'rm -rf "$work"' EXIT
  local began=$SECONDS

  echo "== machine"
  echo "prepared at commit: $(head -n 1 "$dir/COMMIT" 2>/dev/null)"
  local gpu_name=
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | sed 's/^/GPU: /'
    gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
  else
    echo "GPU: nvidia-smi not found"
  fi
  local runner
  runner=$(pick_runner "$dir") || die "no runnable thunderc_gpu_check (see above)"
  export LD_LIBRARY_PATH="$(dirname "$(dirname "$runner")")/lib:$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if ! "$runner" --probe; then
    rm -rf "$work"
    die "no usable GPU here (above: what nvidia-smi and the thunderc runtime found); run this on the GPU machine"
  fi

  echo
  echo "== thunderc (libthunderc_runtime on cuda:0; $iters iterations after $warmup warm-up; rtol $rtol, atol $atol)"
  local status=0 name kind shapes so pt input expected from secs rc
  while IFS=$'\t' read -r name kind shapes so pt input expected from secs; do
    [[ $name == name ]] && continue
    mkdir -p "$work/$name"
    timeout 180 "$runner" "$dir/$so" --input "$dir/$input" --expect "$dir/$expected" --rtol "$rtol" --atol "$atol" \
      --iters "$iters" --warmup "$warmup" --output-dir "$work/$name" --json >"$work/$name.json" 2>"$work/$name.err"
    rc=$?
    ((rc == 0)) || status=2
    python3 - "$work/$name.json" "$name" "$rc" "$work/$name.err" <<'EOF'
import json, sys
path, name, rc, err = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
try:
    j = json.loads(open(path).read().strip().splitlines()[-1])
except Exception:
    j = {"ok": False, "error": (open(err).read().strip() or f"exit status {rc}")[-2000:]}
    if rc == 124:
        j["error"] = "timed out after 180 s"
    open(path, "w").write(json.dumps(j))
if "median_ms" in j:
    print(f"{name:<36} {j.get('shapes', ''):<16} median {j['median_ms']:.4f} ms  p90 {j['p90_ms']:.4f} ms  "
          f"max abs diff {j.get('max_abs_diff')}  {'ok' if j.get('ok') else 'DIFFERS'}  ({j.get('image', '')})")
else:
    print(f"{name:<36} FAILED: {j.get('error')}")
EOF
  done <"$dir/models.tsv"
  echo "(elapsed: $((SECONDS - began)) s)"

  # The samples in their other configurations (configs.tsv), each against LibTorch and timed like the card's.
  if [[ -f $dir/configs.tsv ]]; then
    echo
    echo "== thunderc configurations (baseline: the card's command; rtol/atol: tf32 ${GPU_CHECK_TF32_RTOL:-1e-3}/${GPU_CHECK_TF32_ATOL:-1e-3}, bf16 ${GPU_CHECK_BF16_TOL:-2e-2}, fp16 ${GPU_CHECK_FP16_TOL:-3e-3})"
    local label flags crtol catol
    mkdir -p "$work/configs"
    while IFS=$'\t' read -r name label flags so input expected; do
      [[ $name == name ]] && continue
      crtol=$rtol catol=$atol
      [[ $label == tf32 ]] && crtol=${GPU_CHECK_TF32_RTOL:-1e-3} catol=${GPU_CHECK_TF32_ATOL:-1e-3}
      [[ $label == bf16 ]] && crtol=${GPU_CHECK_BF16_TOL:-2e-2} catol=${GPU_CHECK_BF16_TOL:-2e-2}
      [[ $label == fp16 ]] && crtol=${GPU_CHECK_FP16_TOL:-3e-3} catol=${GPU_CHECK_FP16_TOL:-3e-3}
      mkdir -p "$work/configs/$name.$label"
      timeout 180 "$runner" "$dir/$so" --input "$dir/$input" --expect "$dir/$expected" --rtol "$crtol" --atol "$catol" \
        --iters "$iters" --warmup "$warmup" --output-dir "$work/configs/$name.$label" --json \
        >"$work/configs/$name.$label.json" 2>"$work/configs/$name.$label.err"
      rc=$?
      ((rc == 0)) || status=2
      cp "$work/configs/$name.$label.err" "$out/config_$name.$label.err" 2>/dev/null
    done <"$dir/configs.tsv"
    python3 - "$dir/configs.tsv" "$work/configs" "$work" "$out/gpu_check_configs.md" <<'EOF'
import json, os, sys
tsv, cdir, work, md = sys.argv[1:5]
def load(path):
    try:
        return json.loads(open(path).read().strip().splitlines()[-1])
    except Exception as e:
        return {"ok": False, "error": f"no result ({e})"}
rows = [l.rstrip("\n").split("\t") for l in open(tsv)][1:]
lines = ["| sample | configuration | flags | median ms | vs card | max abs diff | result |",
         "|---|---|---|---|---|---|---|"]
for name, label, flags, *_ in rows:
    j = load(os.path.join(cdir, f"{name}.{label}.json"))
    base = load(os.path.join(work, f"{name}.json"))
    med, bmed = j.get("median_ms"), base.get("median_ms")
    ratio = f"{bmed / med:.2f}x" if med and bmed else "n/a"
    result = "ok" if j.get("ok") else ("DIFFERS" if "median_ms" in j else "FAILED: " + str(j.get("error", ""))[:120])
    shown = f"{med:.4f}" if isinstance(med, (int, float)) else "n/a"
    lines.append(f"| {name} | {label} | `{flags}` | {shown} | {ratio} | {j.get('max_abs_diff', 'n/a')} | {result} |")
text = "\n".join(lines) + "\n\nvs card: the card's command (--executors nvfuser,cudnn) median divided by this one's (> 1: faster).\n"
open(md, "w").write(text)
print(text)
EOF
  fi

  echo
  echo "== PyTorch on the same GPU, and the report"
  local compare=$here/tools/gpu_check/compare_pytorch.py
  [[ -f $compare ]] || compare=$dir/src/gpu_check/compare_pytorch.py
  local samples_py=$here/samples/make_samples.py
  [[ -f $samples_py ]] || samples_py=$dir/src/samples/make_samples.py
  local budget=${GPU_CHECK_BUDGET:-180} py=(env PYTHONUNBUFFERED=1 "${PYTHON:-python3}" "$compare" --dir "$dir"
    --results "$work" --make-samples "$samples_py" --device cuda --iters "$iters" --warmup "$warmup"
    --out-json "$out/gpu_check.json" --out-md "$out/gpu_check.md" ${gpu_name:+--gpu-name "$gpu_name"})
  # The budget is soft (torch.compile is skipped once it would overrun); the hard limit is 2 minutes more.
  timeout -k 10 $((budget + 120)) "${py[@]}" --compile-timeout "${GPU_CHECK_COMPILE_TIMEOUT:-60}" --budget "$budget" \
    --tf32 "${GPU_CHECK_TF32:-off}"
  rc=$?
  if ((rc == 124 || rc == 137)); then
    echo "the PyTorch part ran past $((budget + 120)) s and was stopped; the report has thunderc's columns only"
    "${py[@]}" --skip-pytorch "stopped after $((budget + 120)) s (GPU_CHECK_BUDGET=$budget)"
    rc=2
  fi
  ((rc == 0)) || status=2
  echo "(total: $((SECONDS - began)) s; report: $out/gpu_check.md, raw: $out/gpu_check.json)"
  rm -rf "$work"
  return $status
}

# ------------------------------------------------------------------------------------------------------- main

case ${1:-} in
  prepare)
    [[ $# -eq 2 ]] || { usage >&2; exit 1; }
    prepare "$2"
    ;;
  run)
    [[ $# -ge 2 && $# -le 3 ]] || { usage >&2; exit 1; }
    [[ -d $2 ]] || die "$2: no such directory (prepare it on the dev machine and carry it)"
    result=${3:-${OUT:-$2/results}}
    mkdir -p "$result" || die "cannot create $result"
    run_check "$2" "$result" 2>&1 | tee "$result/gpu_check.log"
    exit "${PIPESTATUS[0]}"
    ;;
  -h | --help | help)
    usage
    ;;
  *)
    usage
    [[ $# -eq 0 ]] || exit 1
    ;;
esac
