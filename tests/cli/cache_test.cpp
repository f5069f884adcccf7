// The compile cache (--cache-dir, $THUNDERC_CACHE_DIR, `thunderc cache`), through the thunderc binary on .pt2
// samples (so it runs in builds with and without LibTorch): a hit writes the bytes a compile writes and says
// so; everything the key covers misses; a damaged entry is replaced; concurrent writers of one key leave one
// whole entry; --clear removes only thunderc's entries. Label: cli.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "pt2_binary_util.h"

using namespace pt2_binary;

namespace {

fs::path tmp_dir(const std::string& name) { return pt2_binary::tmp_dir("cache", name); }

// The cache's entries (64-hex-digit folders).
std::vector<fs::path> entries(const fs::path& cache) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(cache))
    if (e.is_directory() && e.path().filename().string().size() == 64) out.push_back(e.path());
  return out;
}

bool hit(const ProcessResult& r) { return contains(r.out, "compile cache hit"); }
bool miss(const ProcessResult& r) { return contains(r.out, "compile cache miss: stored as entry"); }

}  // namespace

TEST_CASE("a hit writes the bytes a compile writes, and says so") {
  const fs::path dir = tmp_dir("hit");
  const std::string cache = (dir / "cache").string();
  ProcessResult plain = thunderc({sample("mlp.pt2"), "-o", (dir / "plain.so").string()});
  REQUIRE_MESSAGE(plain.code == 0, plain.out);
  CHECK_FALSE(contains(plain.out, "compile cache"));

  ProcessResult first = thunderc({sample("mlp.pt2"), "-o", (dir / "first.so").string(), "--cache-dir", cache});
  REQUIRE_MESSAGE(first.code == 0, first.out);
  CHECK_MESSAGE(miss(first), first.out);
  REQUIRE(entries(cache).size() == 1);

  // Another output name, --verbose and --time-passes: same outputs, so the same key.
  ProcessResult second = thunderc({sample("mlp.pt2"), "-o", (dir / "second.so").string(), "--cache-dir", cache,
                                   "--verbose", "--time-passes"});
  REQUIRE_MESSAGE(second.code == 0, second.out);
  CHECK_MESSAGE(hit(second), second.out);
  CHECK(contains(second.out, "thunderc: compiled " + sample("mlp.pt2") + " -> " + (dir / "second.so").string()));
  for (const char* ext : {".so", ".json"}) {
    const std::string bytes = read_file(dir / (std::string("plain") + ext));
    CHECK(!bytes.empty());
    CHECK(read_file(dir / (std::string("first") + ext)) == bytes);
    CHECK(read_file(dir / (std::string("second") + ext)) == bytes);
  }
  CHECK(entries(cache).size() == 1);

  // The hit's library runs: the .pt2's expected output.
  ProcessResult run = thunderc({"run", (dir / "second.so").string(), sample("mlp.input.npy"), "--expect",
                                sample("mlp.expected.npy")});
  CHECK_MESSAGE(run.code == 0, run.out);
}

TEST_CASE("what the key covers misses: options, the model's bytes, its path, and THUNDERC_CACHE_DIR or an empty --cache-dir") {
  const fs::path dir = tmp_dir("key");
  const std::string cache = (dir / "cache").string();
  const std::string model = (dir / "model.pt2").string();
  fs::copy_file(sample("mlp.pt2"), model);
  auto compile = [&](std::vector<std::string> extra, const std::string& env = "") {
    std::vector<std::string> args = {model, "-o", (dir / "out.so").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return thunderc(args, env);
  };
  ProcessResult r = compile({"--cache-dir", cache});
  REQUIRE_MESSAGE(miss(r), r.out);
  r = compile({"--cache-dir", cache, "--cpu-target", "x86-64-v2"});
  CHECK_MESSAGE(miss(r), r.out);
  r = compile({"--cache-dir", cache, "--executors", "cpp,blas"});
  CHECK_MESSAGE(miss(r), r.out);
  r = compile({"--cache-dir", cache, "--executors", "cpp,blas"});
  CHECK_MESSAGE(hit(r), r.out);
  CHECK(entries(cache).size() == 3);

  // The same path, other bytes: the key covers the content, not the name.
  const std::string mlp_manifest = read_file(dir / "out.json");
  fs::copy_file(sample("dynamic_batch.pt2"), model, fs::copy_options::overwrite_existing);
  r = compile({"--cache-dir", cache});
  CHECK_MESSAGE(miss(r), r.out);
  CHECK(read_file(dir / "out.json") != mlp_manifest);
  // The same bytes under another path: the manifest records the path as given, so that misses too.
  fs::copy_file(model, dir / "renamed.pt2");
  r = thunderc({(dir / "renamed.pt2").string(), "-o", (dir / "renamed.so").string(), "--cache-dir", cache});
  CHECK_MESSAGE(miss(r), r.out);
  CHECK(contains(read_file(dir / "renamed.json"), "renamed.pt2"));

  // $THUNDERC_CACHE_DIR is the default; --cache-dir "" turns it off.
  r = compile({}, "THUNDERC_CACHE_DIR=" + thunderc_test::shell_quote(cache));
  CHECK_MESSAGE(hit(r), r.out);
  r = compile({"--cache-dir", ""}, "THUNDERC_CACHE_DIR=" + thunderc_test::shell_quote(cache));
  CHECK(r.code == 0);
  CHECK_FALSE_MESSAGE(contains(r.out, "compile cache"), r.out);

  // --keep-sources needs a compile: the cache is not used, and it says so.
  r = compile({"--cache-dir", cache, "--keep-sources", (dir / "src").string()});
  CHECK(r.code == 0);
  CHECK_MESSAGE(contains(r.out, "the compile cache is not used with --keep-sources"), r.out);
  CHECK(fs::exists(dir / "src" / "model.cpp"));
}

TEST_CASE("a damaged entry is replaced, never copied out") {
  const fs::path dir = tmp_dir("damaged");
  const std::string cache = (dir / "cache").string();
  ProcessResult r = thunderc({sample("mlp.pt2"), "-o", (dir / "a.so").string(), "--cache-dir", cache});
  REQUIRE_MESSAGE(miss(r), r.out);
  REQUIRE(entries(cache).size() == 1);
  const fs::path entry = entries(cache)[0];
  {
    std::ofstream damage(entry / "model.so", std::ios::binary | std::ios::app);
    damage << "garbage";
  }
  r = thunderc({sample("mlp.pt2"), "-o", (dir / "b.so").string(), "--cache-dir", cache});
  REQUIRE(r.code == 0);
  CHECK_MESSAGE(miss(r), r.out);
  CHECK(read_file(dir / "b.so") == read_file(dir / "a.so"));
  CHECK(read_file(entry / "model.so") == read_file(dir / "a.so"));  // stored afresh
  r = thunderc({sample("mlp.pt2"), "-o", (dir / "c.so").string(), "--cache-dir", cache});
  CHECK_MESSAGE(hit(r), r.out);
}

TEST_CASE("concurrent writers of one key: all succeed, one whole entry, nothing left over") {
  const fs::path dir = tmp_dir("concurrent");
  const std::string cache = (dir / "cache").string();
  std::string cmd;
  for (int i = 0; i < 4; ++i)
    cmd += thunderc_test::command_line(THUNDERC_BIN, {sample("mlp.pt2"), "-o", (dir / ("out" + std::to_string(i) + ".so")).string(),
                                                      "--cache-dir", cache}) +
           " > " + thunderc_test::shell_quote((dir / ("log" + std::to_string(i))).string()) + " 2>&1 & ";
  cmd += "wait";
  // `wait` with no operand returns 0; each job's status is checked through its log and outputs.
  ProcessResult r = thunderc_test::run_shell(cmd);
  REQUIRE(r.code == 0);
  const std::string so = read_file(dir / "out0.so");
  REQUIRE(!so.empty());
  for (int i = 0; i < 4; ++i) {
    const std::string log = read_file(dir / ("log" + std::to_string(i)));
    CHECK_MESSAGE(contains(log, "thunderc: compiled"), log);
    CHECK(read_file(dir / ("out" + std::to_string(i) + ".so")) == so);
  }
  CHECK(entries(cache).size() == 1);
  for (const auto& e : fs::directory_iterator(cache)) CHECK_MESSAGE(e.path().filename().string().rfind(".tmp-", 0) != 0, e.path());
  ProcessResult again = thunderc({sample("mlp.pt2"), "-o", (dir / "again.so").string(), "--cache-dir", cache});
  CHECK_MESSAGE(hit(again), again.out);
}

TEST_CASE("thunderc cache: counts, --clear removes only thunderc's entries, clear errors") {
  const fs::path dir = tmp_dir("command");
  const std::string cache = (dir / "cache").string();
  ProcessResult r = thunderc({"cache", "--cache-dir", cache});
  CHECK(r.code == 0);
  CHECK_MESSAGE(contains(r.out, "does not exist (0 entries)"), r.out);
  CHECK_FALSE(fs::exists(cache));  // reporting never creates it

  REQUIRE(thunderc({sample("mlp.pt2"), "-o", (dir / "a.so").string(), "--cache-dir", cache}).code == 0);
  REQUIRE(thunderc({sample("mlp.pt2"), "-o", (dir / "a.so").string(), "--cache-dir", cache, "--executors", "cpp,blas"}).code == 0);
  { std::ofstream(fs::path(cache) / "README") << "not thunderc's\n"; }
  fs::create_directories(fs::path(cache) / "mine");
  r = thunderc({"cache", "--cache-dir", cache});
  CHECK(r.code == 0);
  CHECK_MESSAGE(contains(r.out, "compile cache " + cache + ": 2 entries, "), r.out);
  r = thunderc({"cache", "--clear"}, "THUNDERC_CACHE_DIR=" + thunderc_test::shell_quote(cache));
  CHECK(r.code == 0);
  CHECK_MESSAGE(contains(r.out, "removed 2 entries"), r.out);
  CHECK(entries(cache).empty());
  CHECK(fs::exists(fs::path(cache) / "README"));
  CHECK(fs::exists(fs::path(cache) / "mine"));

  r = thunderc({"cache"}, "env -u THUNDERC_CACHE_DIR");
  CHECK(r.code == 1);
  CHECK_MESSAGE(contains(r.out, "no compile cache: give --cache-dir DIR or set THUNDERC_CACHE_DIR"), r.out);
  // A file where the folder should be: a clear error before any work, no output written.
  r = thunderc({sample("mlp.pt2"), "-o", (dir / "b.so").string(), "--cache-dir", (fs::path(cache) / "README").string()});
  CHECK(r.code == 1);
  CHECK_MESSAGE(contains(r.out, "README: exists and is not a directory"), r.out);
  CHECK_FALSE(fs::exists(dir / "b.so"));
}
