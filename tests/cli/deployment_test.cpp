// Deployment tools through the thunderc binary, on .pt2 samples (builds with and without LibTorch):
// --split-lines splits a variant into several sources whose library matches PyTorch and is byte-identical
// whatever -j; --emit-build writes a build.ninja that ninja turns into the same bytes thunderc writes;
// $THUNDERC_CXX_LAUNCHER prefixes the compile steps only; examine --dot renders with Graphviz; --diagnostics
// json prints one object per line; pack makes a reproducible bundle a C program builds and runs against.
// Label: cli.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "pt2_binary_util.h"

using namespace pt2_binary;

namespace {

fs::path tmp_dir(const std::string& name) { return pt2_binary::tmp_dir("deployment", name); }

std::size_t count_parts(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("model_part", 0) == 0 && e.path().extension() == ".cpp") ++n;
  }
  return n;
}

void check_parity(const fs::path& so) {
  ProcessResult run = thunderc({"run", so.string(), sample("gpt_block.input.npy"), "--expect", sample("gpt_block.expected.npy")});
  CHECK_MESSAGE(run.code == 0, run.out);
  CHECK_MESSAGE(contains(run.out, "matches"), run.out);
}

}  // namespace

TEST_CASE("--split-lines: several sources, the same result as PyTorch, the same bytes whatever -j") {
  const fs::path dir = tmp_dir("split");
  // cpp and blas: one variant (no bounded one), and a library header that only some parts need.
  ProcessResult one = thunderc({sample("gpt_block.pt2"), "-o", (dir / "one.so").string(), "--split-lines", "40",
                                "-j", "1", "--keep-sources", (dir / "src1").string(), "--executors", "cpp,blas"});
  REQUIRE_MESSAGE(one.code == 0, one.out);
  const std::size_t parts = count_parts(dir / "src1");
  CHECK_MESSAGE(parts >= 3, "parts: " << parts);
  CHECK_MESSAGE(contains(one.out, std::to_string(parts + 1) + " C++ sources (--split-lines 40), compiled 1 at a time"), one.out);
  // Each part is a function of its own, called in order by the exported entry.
  const std::string model_cpp = read_file(dir / "src1" / "model.cpp");
  CHECK(contains(model_cpp, "Split into " + std::to_string(parts) + " parts"));
  CHECK(contains(model_cpp, "if (const int32_t rc = thunderc_variant_0_part0(call)) return rc;"));
  CHECK(contains(read_file(dir / "src1" / "model_part1.cpp"), "int32_t thunderc_variant_0_part1(const thunderc_call* call) {"));
  // A part includes only the headers of the executors it calls: model.cpp includes blas's, some part not.
  CHECK(contains(model_cpp, "#include \"thunderc/blas_kernels.h\""));
  std::size_t without_blas = 0;
  for (std::size_t k = 0; k < parts; ++k) {
    const std::string part = read_file(dir / "src1" / ("model_part" + std::to_string(k) + ".cpp"));
    if (!contains(part, "thunderc_blas::")) {
      ++without_blas;
      CHECK_FALSE(contains(part, "thunderc/blas_kernels.h"));
    }
  }
  CHECK(without_blas > 0);
  check_parity(dir / "one.so");

  ProcessResult three = thunderc({sample("gpt_block.pt2"), "-o", (dir / "three.so").string(), "--split-lines", "40", "-j", "3",
                                  "--executors", "cpp,blas"});
  REQUIRE_MESSAGE(three.code == 0, three.out);
  CHECK(read_file(dir / "three.so") == read_file(dir / "one.so"));
  CHECK(read_file(dir / "three.json") == read_file(dir / "one.json"));

  // The default keeps a small model in one source.
  ProcessResult whole = thunderc({sample("gpt_block.pt2"), "-o", (dir / "whole.so").string(), "--keep-sources", (dir / "src2").string()});
  REQUIRE_MESSAGE(whole.code == 0, whole.out);
  CHECK(count_parts(dir / "src2") == 0);
  CHECK_MESSAGE(contains(whole.out, "1 C++ source;"), whole.out);
  check_parity(dir / "whole.so");
}

TEST_CASE("--emit-build: ninja builds the bytes thunderc writes") {
  const fs::path dir = tmp_dir("emit");
  ProcessResult direct = thunderc({sample("gpt_block.pt2"), "-o", (dir / "direct.so").string(), "--split-lines", "40"});
  REQUIRE_MESSAGE(direct.code == 0, direct.out);
  ProcessResult emit = thunderc({sample("gpt_block.pt2"), "--emit-build", (dir / "b").string(), "--split-lines", "40"});
  REQUIRE_MESSAGE(emit.code == 0, emit.out);
  CHECK_MESSAGE(contains(emit.out, "build.ninja"), emit.out);
  CHECK_MESSAGE(contains(emit.out, "ninja -C " + (dir / "b").string()), emit.out);
  CHECK_FALSE(fs::exists(dir / "b" / "model.so"));  // nothing compiled yet
  CHECK(count_parts(dir / "b") >= 3);

  ProcessResult ninja = thunderc_test::run_shell("ninja -C " + thunderc_test::shell_quote((dir / "b").string()));
  REQUIRE_MESSAGE(ninja.code == 0, ninja.out);
  CHECK(read_file(dir / "b" / "model.so") == read_file(dir / "direct.so"));
  CHECK(read_file(dir / "b" / "model.json") == read_file(dir / "direct.json"));
  check_parity(dir / "b" / "model.so");
  // Up to date: a second ninja does nothing.
  ProcessResult again = thunderc_test::run_shell("ninja -C " + thunderc_test::shell_quote((dir / "b").string()));
  CHECK(again.code == 0);
  CHECK_MESSAGE(contains(again.out, "no work to do"), again.out);

  // Emitting again into the same folder replaces the set; a folder with other files is refused; -o is refused.
  CHECK(thunderc({sample("gpt_block.pt2"), "--emit-build", (dir / "b").string()}).code == 0);
  CHECK(count_parts(dir / "b") == 0);
  fs::create_directories(dir / "other");
  { std::ofstream(dir / "other" / "notes.txt") << "mine\n"; }
  ProcessResult busy = thunderc({sample("gpt_block.pt2"), "--emit-build", (dir / "other").string()});
  CHECK(busy.code == 1);
  CHECK_MESSAGE(contains(busy.out, "--emit-build " + (dir / "other").string() + " is not empty (notes.txt)"), busy.out);
  ProcessResult with_o = thunderc({sample("gpt_block.pt2"), "--emit-build", (dir / "c").string(), "-o", (dir / "c.so").string()});
  CHECK(with_o.code == 1);
  CHECK_MESSAGE(contains(with_o.out, "-o does not apply"), with_o.out);
  ProcessResult bad_j = thunderc({sample("gpt_block.pt2"), "-o", (dir / "d.so").string(), "-j", "-2"});
  CHECK(bad_j.code == 1);
  CHECK_MESSAGE(contains(bad_j.out, "-j/--jobs must be 1 or more"), bad_j.out);
}

TEST_CASE("--cpu-target with two levels and split sources: every part per level, ninja builds the same bytes") {
  const fs::path dir = tmp_dir("levels");
  ProcessResult direct = thunderc({sample("gpt_block.pt2"), "-o", (dir / "direct.so").string(), "--split-lines", "40",
                                   "--cpu-target", "x86-64-v2,x86-64-v3", "--executors", "cpp,blas", "--keep-sources",
                                   (dir / "src").string()});
  REQUIRE_MESSAGE(direct.code == 0, direct.out);
  const std::size_t parts = count_parts(dir / "src");
  REQUIRE(parts >= 3);
  // The v3 copy of each part went into the combined object whose only global symbols are the renamed entries.
  for (std::size_t k = 0; k < parts; ++k)
    CHECK(fs::exists(dir / "src" / ("model_part" + std::to_string(k) + ".x86-64-v3.o")));
  CHECK(read_file(dir / "src" / "cpu_x86-64-v3.syms") == "thunderc_variant_0 thunderc_variant_0__x86_64_v3\n");
  CHECK(read_file(dir / "src" / "cpu_x86-64-v3.keep") == "thunderc_variant_0__x86_64_v3\n");
  check_parity(dir / "direct.so");

  ProcessResult emit = thunderc({sample("gpt_block.pt2"), "--emit-build", (dir / "b").string(), "--split-lines", "40",
                                 "--cpu-target", "x86-64-v2,x86-64-v3", "--executors", "cpp,blas"});
  REQUIRE_MESSAGE(emit.code == 0, emit.out);
  CHECK(contains(read_file(dir / "b" / "build.ninja"), "desc = OBJCOPY cpu_x86-64-v3.o"));
  ProcessResult ninja = thunderc_test::run_shell("ninja -C " + thunderc_test::shell_quote((dir / "b").string()));
  REQUIRE_MESSAGE(ninja.code == 0, ninja.out);
  CHECK(read_file(dir / "b" / "model.so") == read_file(dir / "direct.so"));
}

TEST_CASE("THUNDERC_CXX_LAUNCHER prefixes the C++ compiles, in thunderc's build and in build.ninja") {
  const fs::path dir = tmp_dir("launcher");
  const fs::path launcher = dir / "launcher.sh";
  const fs::path calls = dir / "calls.txt";
  {
    std::ofstream(launcher) << "#!/bin/sh\necho \"$*\" >> " << thunderc_test::shell_quote(calls.string()) << "\nexec \"$@\"\n";
  }
  fs::permissions(launcher, fs::perms::owner_all);
  const std::string env = "THUNDERC_CXX_LAUNCHER=" + thunderc_test::shell_quote(launcher.string());
  ProcessResult r = thunderc({sample("gpt_block.pt2"), "-o", (dir / "m.so").string(), "--split-lines", "40"}, env);
  REQUIRE_MESSAGE(r.code == 0, r.out);
  const std::string log = read_file(calls);
  std::size_t compiles = 0;
  for (std::size_t p = log.find(" -c "); p != std::string::npos; p = log.find(" -c ", p + 1)) ++compiles;
  CHECK(compiles >= 4);                       // model.cpp and its parts
  CHECK_FALSE(contains(log, "model_data.S"));  // not the assembler file
  CHECK_FALSE(contains(log, "-shared"));       // not the link
  check_parity(dir / "m.so");

  r = thunderc({sample("gpt_block.pt2"), "--emit-build", (dir / "b").string()}, env);
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK(contains(read_file(dir / "b" / "build.ninja"), launcher.string() + " c++"));
}

TEST_CASE("examine --dot: regions as clusters, executors' colours, shapes on edges, rendered by Graphviz") {
  const fs::path dir = tmp_dir("dot");
  const fs::path dot = dir / "gpt_block.dot";
  ProcessResult r = thunderc({"examine", sample("gpt_block.pt2"), "--dot", dot.string(), "--bounded-variants", "off"});
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK_MESSAGE(contains(r.out, "Wrote the final trace as Graphviz DOT to " + dot.string()), r.out);
  const std::string text = read_file(dot);
  CHECK(text.rfind("digraph thunderc {", 0) == 0);
  CHECK(contains(text, "subgraph cluster_op0 {"));                          // the first fusion region
  CHECK(contains(text, "label=\"cpp.fusion cpp_fusion0\""));
  CHECK(contains(text, "fillcolor=\"#a6cee3\", label=\"cpp.layer_norm"));   // cpp's colour
  CHECK(contains(text, "fillcolor=\"#fdbf6f\", label=\"onednn.linear\\n+2 weights\""));  // onednn, with its weights
  CHECK(contains(text, "[label=\"f32[2, 8, 32]\"]"));                        // an edge's shape
  CHECK(contains(text, "label=\"output 0\""));
  // Graphviz accepts it.
  ProcessResult svg = thunderc_test::run_shell("dot -Tsvg " + thunderc_test::shell_quote(dot.string()) + " -o " +
                                               thunderc_test::shell_quote((dir / "g.svg").string()));
  CHECK_MESSAGE(svg.code == 0, svg.out);
  CHECK(contains(read_file(dir / "g.svg"), "<svg"));

  // "-": the picture alone on stdout.
  ProcessResult piped = thunderc({"examine", sample("gpt_block.pt2"), "--dot", "-", "--bounded-variants", "off"});
  CHECK(piped.code == 0);
  CHECK(piped.out == text);
  // Two specializations: one cluster each.
  ProcessResult two = thunderc({"examine", sample("dynamic_batch.pt2"), "--shapes", "x=1x12", "--shapes", "x=4x12",
                                "--dot", "-"});
  REQUIRE_MESSAGE(two.code == 0, two.out);
  CHECK(contains(two.out, "subgraph cluster_s0_ {"));
  CHECK(contains(two.out, "subgraph cluster_s1_ {"));
  CHECK(contains(two.out, "label=\"x=4x12\""));
}

TEST_CASE("--diagnostics json: errors, sharp edges and usage errors as one JSON object per line on stderr") {
  const fs::path dir = tmp_dir("diagnostics");
  const fs::path err = dir / "stderr.txt";
  auto run = [&](const std::vector<std::string>& args, const std::string& env = "") {
    // Inside the group, stderr goes to the file; run_shell's 2>&1, applied to the group, then merges nothing.
    ProcessResult r = thunderc_test::run_shell("{ " + env + (env.empty() ? "" : " ") +
                                               thunderc_test::command_line(THUNDERC_BIN, args) + " 2> " +
                                               thunderc_test::shell_quote(err.string()) + "; }");
    r.out = read_file(err);  // stderr alone: the diagnostics
    return r;
  };
  // A user error: exactly one line, the object thunderc's text would print.
  ProcessResult missing = run({"--diagnostics", "json", (dir / "missing.pt2").string(), "-o", (dir / "m.so").string()});
  CHECK(missing.code == 1);
  CHECK_MESSAGE(missing.out.rfind("{\"severity\":\"error\",\"code\":\"user-error\",\"message\":\"", 0) == 0, missing.out);
  CHECK(contains(missing.out, "missing.pt2"));
  CHECK(std::count(missing.out.begin(), missing.out.end(), '\n') == 1);
  ProcessResult text = run({(dir / "missing.pt2").string(), "-o", (dir / "m.so").string()});
  CHECK(text.out.rfind("thunderc: error: ", 0) == 0);

  // A sharp edge (a dynamic dimension specialized by --shapes), as a warning; the compile succeeds. The
  // environment variable sets the format too.
  ProcessResult edge = run({sample("dynamic_batch.pt2"), "-o", (dir / "d.so").string(), "--shapes", "x=2x12",
                            "--sharp-edges", "warn"},
                           "THUNDERC_DIAGNOSTICS=json");
  CHECK_MESSAGE(edge.code == 0, edge.out);
  CHECK_MESSAGE(edge.out.rfind("{\"severity\":\"warning\",\"code\":\"sharp-edge/specialized-dynamic-dim\",\"message\":\"sharp edge in ", 0) == 0,
                edge.out);
  // As errors: each edge is an error object, then the error that stops the compile.
  ProcessResult edge_error = run({"--diagnostics", "json", sample("dynamic_batch.pt2"), "-o", (dir / "e.so").string(),
                                  "--shapes", "x=2x12", "--sharp-edges", "error"});
  CHECK(edge_error.code == 1);
  CHECK_MESSAGE(edge_error.out.rfind("{\"severity\":\"error\",\"code\":\"sharp-edge/specialized-dynamic-dim\"", 0) == 0, edge_error.out);
  CHECK(contains(edge_error.out, "\n{\"severity\":\"error\",\"code\":\"user-error\""));

  // A usage error, and an unknown format.
  ProcessResult usage = run({"--diagnostics", "json", "--no-such-flag"});
  CHECK(usage.code == 1);
  CHECK_MESSAGE(usage.out.rfind("{\"severity\":\"error\",\"code\":\"usage\"", 0) == 0, usage.out);
  ProcessResult bad = run({"--diagnostics", "xml"});
  CHECK(bad.code == 1);
  CHECK_MESSAGE(contains(bad.out, "--diagnostics"), bad.out);
}

TEST_CASE("pack: a reproducible bundle with the model, the runtime and headers, that builds and runs") {
  const fs::path dir = tmp_dir("pack");
  REQUIRE(thunderc({sample("mlp.pt2"), "-o", (dir / "mlp.so").string(), "--standalone"}).code == 0);
  ProcessResult r = thunderc({"pack", (dir / "mlp.so").string(), "-o", (dir / "mlp.tar.gz").string()});
  REQUIRE_MESSAGE(r.code == 0, r.out);
  CHECK_MESSAGE(contains(r.out, "the target needs: "), r.out);
  CHECK_MESSAGE(contains(r.out, "libgomp.so.1"), r.out);  // the cpp executor's OpenMP
  // Reproducible: packing again gives the same bytes.
  REQUIRE(thunderc({"pack", (dir / "mlp.so").string(), "-o", (dir / "again.tar.gz").string()}).code == 0);
  CHECK(read_file(dir / "again.tar.gz") == read_file(dir / "mlp.tar.gz"));

  fs::create_directories(dir / "x");
  ProcessResult tar = thunderc_test::run_shell("tar -xzf " + thunderc_test::shell_quote((dir / "mlp.tar.gz").string()) +
                                               " -C " + thunderc_test::shell_quote((dir / "x").string()));
  REQUIRE_MESSAGE(tar.code == 0, tar.out);
  const fs::path b = dir / "x" / "mlp";
  for (const char* f : {"mlp.so", "mlp.json", "lib/libthunderc_runtime.so", "include/thunderc/runtime.h",
                        "include/thunderc/runtime.hpp", "README.txt", "SHA256SUMS"})
    CHECK_MESSAGE(fs::exists(b / f), f);
  CHECK(read_file(b / "mlp.so") == read_file(dir / "mlp.so"));
  CHECK(contains(read_file(b / "README.txt"), "libgomp.so.1"));
  ProcessResult sums = thunderc_test::run_shell("cd " + thunderc_test::shell_quote(b.string()) + " && sha256sum -c --quiet SHA256SUMS");
  CHECK_MESSAGE(sums.code == 0, sums.out);

  // A C program built against the bundle alone (its headers and runtime) opens the model and runs it.
  {
    std::ofstream(dir / "app.c") << R"(#include <stdio.h>
#include <thunderc/runtime.h>
int main(int argc, char** argv) {
  thunderc_model* m = NULL;
  thunderc_status s = thunderc_model_open(argv[1], NULL, &m);
  if (s) { printf("open failed: %s\n", thunderc_status_message(s)); return 1; }
  float x[4 * 16] = {0}, y[4 * 8];
  int64_t xs[2] = {4, 16}, ys[2] = {4, 8};
  DLTensor in = {x, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, xs, NULL, 0};
  DLTensor out = {y, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, ys, NULL, 0};
  s = thunderc_model_run(m, &in, 1, &out, 1);
  if (s) { printf("run failed: %s\n", thunderc_status_message(s)); return 1; }
  printf("ran: %zu input(s), y[0] = %g\n", thunderc_model_num_inputs(m), (double)y[0]);
  thunderc_model_close(m);
  return 0;
}
)";
  }
  ProcessResult cc = thunderc_test::run_shell(
      "cc " + thunderc_test::shell_quote((dir / "app.c").string()) + " -o " + thunderc_test::shell_quote((dir / "app").string()) +
      " -I " + thunderc_test::shell_quote((b / "include").string()) + " -L " + thunderc_test::shell_quote((b / "lib").string()) +
      " -lthunderc_runtime" +
      // In a sanitizer build the bundled runtime is instrumented: so is the program, which loads the sanitizer first.
      (std::string(THUNDERC_TEST_SANITIZE).empty() ? "" : " -fsanitize=" + std::string(THUNDERC_TEST_SANITIZE)));
  REQUIRE_MESSAGE(cc.code == 0, cc.out);
  ProcessResult app = thunderc_test::run_shell("LD_LIBRARY_PATH=" + thunderc_test::shell_quote((b / "lib").string()) + " " +
                                               thunderc_test::shell_quote((dir / "app").string()) + " " +
                                               thunderc_test::shell_quote((b / "mlp.so").string()));
  CHECK_MESSAGE(app.code == 0, app.out);
  CHECK_MESSAGE(contains(app.out, "ran: 1 input(s)"), app.out);
  // The model itself still matches PyTorch from the bundle.
  ProcessResult run = thunderc({"run", (b / "mlp.so").string(), sample("mlp.input.npy"), "--expect", sample("mlp.expected.npy")});
  CHECK_MESSAGE(run.code == 0, run.out);

  // Not a model: a clear error, nothing written.
  { std::ofstream(dir / "junk.so") << "not an ELF file"; }
  ProcessResult junk = thunderc({"pack", (dir / "junk.so").string(), "-o", (dir / "junk.tar.gz").string()});
  CHECK(junk.code == 1);
  CHECK_MESSAGE(contains(junk.out, "thunderc: error: "), junk.out);
  CHECK_FALSE(fs::exists(dir / "junk.tar.gz"));
}
