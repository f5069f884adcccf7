#!/usr/bin/env bash
# ctest install/consumer: what a user of an installed thunderc does (docs/install.md).
#   1. `cmake --install` this build into a fresh prefix, then move the prefix (it must be relocatable);
#   2. the installed thunderc says it uses the installed kernel headers;
#   3. tests/install/consumer, configured against the prefix (find_package), compiles MODEL at build time with
#      thunderc_add_model and runs it against EXPECTED (the consumer checks the tolerance);
#   4. a rebuild compiles nothing; touching the model or changing an option re-runs thunderc;
#   5. the installed Python package runs the model (rtol 1e-4, atol 1e-5), finding the prefix's runtime itself;
#   6. pkg-config's flags build and link a C program against the runtime.
# usage: install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR MODEL INPUT.npy EXPECTED.npy SHAPE_SPEC...
set -euo pipefail
build_dir=$1 source_dir=$2 work=$3 model=$4 input=$5 expected=$6
shift 6
shapes=$(IFS=";"; echo "$*")  # one CMake list: SHAPES gets one --shapes per entry

fail() { echo "install_test: FAILED: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"

echo "== install into a staging prefix, then move it"
cmake --install "$build_dir" --prefix "$work/staging" > "$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
mv "$work/staging" "$work/prefix"
prefix=$work/prefix
libdir=$(cd "$prefix" && dirname "$(find . -name 'libthunderc_runtime.so' | head -1)")
for f in bin/thunderc include/thunderc/runtime.h include/thunderc/abi.h include/thunderc/npy.hpp \
         share/thunderc/include/thunderc/buffer.h share/thunderc/include/thunderc/cpp_math.h \
         "$libdir/cmake/thunderc/thunderc-config.cmake" "$libdir/cmake/thunderc/thunderc_add_model.cmake" \
         "$libdir/pkgconfig/thunderc-runtime.pc"; do
  [[ -e "$prefix/$f" ]] || fail "$f is not installed"
done

echo "== the installed thunderc finds its headers in the prefix"
version=$("$prefix/bin/thunderc" --version)
echo "$version"
grep -qF "kernel headers: $prefix/share/thunderc/include (installed under $prefix)" <<<"$version" \
  || fail "the installed thunderc does not use the installed headers"

echo "== the consumer project: find_package + thunderc_add_model + thunderc::runtime"
ext=${model##*.}
cp "$model" "$work/model.$ext"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
configure() {
  cmake -S "$source_dir/tests/install/consumer" -B "$work/consumer" "${generator[@]}" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCONSUMER_MODEL="$work/model.$ext" "-DCONSUMER_SHAPES=$shapes" "$@" \
    > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configuring the consumer: $*"; }
}
build() {  # build; prints whether thunderc ran
  cmake --build "$work/consumer" > "$work/build.log" 2>&1 || { cat "$work/build.log" >&2; fail "building the consumer"; }
  if grep -q "thunderc: compiling" "$work/build.log"; then echo compiled; else echo unchanged; fi
}
configure "-DCONSUMER_OPTIONS=--standalone"
[[ $(build) == compiled ]] || fail "the first build did not compile the model"
[[ -f "$work/consumer/consumer_model.so" && -f "$work/consumer/consumer_model.json" ]] || fail "no consumer_model.so/.json"
"$work/consumer/consumer" "$input" "$expected" || fail "the consumer's output does not match"

[[ $(build) == unchanged ]] || fail "a rebuild with nothing changed compiled the model again"
sleep 1 && touch "$work/model.$ext"
[[ $(build) == compiled ]] || fail "touching the model did not recompile it"
configure "-DCONSUMER_OPTIONS=--standalone;--cpu-target;x86-64-v2"
[[ $(build) == compiled ]] || fail "changing OPTIONS did not recompile the model"
grep -q '"x86-64-v2"' "$work/consumer/consumer_model.json" || fail "the new option is not in the manifest"
"$work/consumer/consumer" "$input" "$expected" || fail "the consumer's output does not match after the option change"
[[ $(build) == unchanged ]] || fail "a rebuild after the option change compiled the model again"

echo "== the Python package, from the prefix: finds the prefix's runtime by itself"
PYTHONPATH="$prefix/lib/python3/dist-packages" PYTHONDONTWRITEBYTECODE=1 env -u THUNDERC_RUNTIME_LIBRARY /usr/bin/python3 -c '
import sys, numpy, thunderc
m = thunderc.load(sys.argv[1])
y = m(numpy.load(sys.argv[2]))
numpy.testing.assert_allclose(y, numpy.load(sys.argv[3]), rtol=1e-4, atol=1e-5)
print("python: max abs diff", float(abs(y - numpy.load(sys.argv[3])).max()))
' "$work/consumer/consumer_model.so" "$input" "$expected" || fail "the installed Python package"

echo "== pkg-config"
cat > "$work/version.c" <<'C'
#include <stdio.h>
#include <thunderc/runtime.h>
int main(void) { printf("runtime %s, API %u\n", thunderc_runtime_version(), thunderc_runtime_api_version()); return 0; }
C
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
# shellcheck disable=SC2046
cc "$work/version.c" -o "$work/version" $(pkg-config --cflags --libs thunderc-runtime) \
  || fail "compiling against pkg-config's flags"
LD_LIBRARY_PATH="$prefix/$libdir" "$work/version" | grep -q "^runtime " || fail "the pkg-config program did not run"
echo "install_test: passed"
