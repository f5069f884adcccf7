#!/usr/bin/env bash
# Build (dependencies included), then run thunderc's main job on a sample model.
#
#   bash scripts/demo.sh [MODEL.pt [COMPILE OPTIONS...]]   (default: samples/mlp.pt)
#
# COMPILE OPTIONS go to the compile step, e.g.
#   bash scripts/demo.sh samples/mlp_scripted.pt --shapes x=1x64
#
# THUNDERC=/path/to/thunderc overrides the binary (default: build/bin/thunderc).
#
# Each step runs only when the built thunderc offers it (checked in --help), so
# this script keeps working while the compiler grows new subcommands.
set -euo pipefail
model=${1:+$(realpath -m -- "$1")}   # resolve a user-given path before leaving their cwd
cd "$(dirname "${BASH_SOURCE[0]}")/.."

model=${model:-samples/mlp.pt}
compile_opts=("${@:2}")
name=$(basename "$model" .pt)
thunderc=${THUNDERC:-build/bin/thunderc}
[[ -f "$model" ]] || { echo "demo.sh: error: no such model: $model" >&2; exit 1; }

bash scripts/build.sh

[[ -x "$thunderc" ]] || { echo "demo.sh: error: $thunderc was not built" >&2; exit 1; }

help=$("$thunderc" --help 2>&1 || true)
# The "Subcommands:" section of the help text (all of it if there is no such section).
subcommands=$(awk 'tolower($0) ~ /^subcommands:/ {s = 1; next} s && /^[^[:space:]]/ {s = 0} s' <<<"$help")
[[ -n "$subcommands" ]] || subcommands=$help
# True when `thunderc --help` lists SUBCOMMAND among its subcommands.
has_subcommand() { grep -Eq "^[[:space:]]+$1([[:space:]]|$)" <<<"$subcommands"; }

step() { echo; echo "+ $*"; "$@"; }

# 1. Show what the frontend sees in the model.
step "$thunderc" examine "$model"

# 2. Compile to a self-contained shared library + manifest, then run it.
if has_subcommand run; then
  mkdir -p out
  step "$thunderc" "$model" -o "out/$name.so" "${compile_opts[@]}"
  step "$thunderc" run "out/$name.so"
else
  echo
  echo "demo.sh: this thunderc has no 'run' subcommand yet; skipping compile + run."
fi
