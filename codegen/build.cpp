#include "codegen/build.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/blas/blas_backend.h"
#include "codegen/cpp/cpp_backend.h"
#include "codegen/nvfuser/nvfuser_backend.h"
#include "core/ir/error.h"

extern char** environ;

namespace thunderc {

namespace fs = std::filesystem;

Toolchain Toolchain::from_build() {
  Toolchain t;
  const char* cxx = std::getenv("THUNDERC_CXX");
  if (!cxx || !*cxx) cxx = std::getenv("CXX");
  t.cxx = cxx && *cxx ? cxx : "c++";
  t.include_dirs = {THUNDERC_RUNTIME_INCLUDE_DIR, THUNDERC_CODEGEN_INCLUDE_DIR, THUNDERC_DLPACK_INCLUDE_DIR};
  t.aten_shim.include_dir = THUNDERC_ATEN_SHIM_INCLUDE_DIR;
  t.aten_shim.library = THUNDERC_ATEN_SHIM_LIBRARY;
  t.aten_shim.library_dir = fs::path(THUNDERC_ATEN_SHIM_LIBRARY).parent_path().string();
  return t;
}

BackendSet make_backends(const Toolchain& toolchain) {
  BackendSet set;
  set["torch"] = std::make_unique<TorchBackend>(toolchain.aten_shim);
  set["cpp"] = std::make_unique<CppBackend>();
  set["blas"] = std::make_unique<BlasBackend>();
  set["nvfuser"] = std::make_unique<NvfuserBackend>();
  return set;
}

namespace {

void write_file(const fs::path& path, const void* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) user_error(path.string(), ": cannot write (", std::strerror(errno), ")");
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) user_error(path.string(), ": write failed (", std::strerror(errno), ")");
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs argv in `dir` with stdout+stderr captured into dir/compile.log (no shell: arguments are not parsed).
int run_in(const fs::path& dir, const std::vector<std::string>& argv, std::string& log) {
  fs::path log_path = dir / "compile.log";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  // Children inherit the cwd, so switch around the spawn (thunderc is single-threaded here).
  fs::path previous = fs::current_path();
  fs::current_path(dir);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  fs::current_path(previous);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) user_error("cannot run the C++ compiler '", argv[0], "': ", std::strerror(rc),
                          " (set THUNDERC_CXX or CXX to a working compiler)");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  log = read_text(log_path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

void build_shared_object(const GeneratedModule& module, const Toolchain& toolchain, const std::string& out_so,
                         const std::string& out_json, const std::optional<std::string>& keep_sources_dir) {
  fs::path dir;
  if (keep_sources_dir) {
    dir = fs::absolute(*keep_sources_dir);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) user_error(*keep_sources_dir, ": cannot create the directory (", ec.message(), ")");
  } else {
    std::string tmpl = (fs::temp_directory_path() / "thunderc-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) user_error("cannot create a temporary directory: ", std::strerror(errno));
    dir = tmpl;
  }
  struct Cleanup {
    fs::path dir;
    bool keep;
    ~Cleanup() {
      std::error_code ec;
      if (!keep) fs::remove_all(dir, ec);
    }
  } cleanup{dir, keep_sources_dir.has_value()};

  write_file(dir / "model.cpp", module.cpp.data(), module.cpp.size());
  write_file(dir / "model_data.S", module.assembly.data(), module.assembly.size());
  write_file(dir / "weights.bin", module.weights.data(), module.weights.size());
  write_file(dir / "manifest.json", module.manifest.data(), module.manifest.size());
  if (!module.cuda_source.empty()) write_file(dir / "kernels.cu", module.cuda_source.data(), module.cuda_source.size());
  for (const CudaImageFile& image : module.cuda_images) {
    THUNDERC_CHECK(!image.data.empty(), "the CUDA image ", image.file, " was not compiled");
    write_file(dir / image.file, image.data.data(), image.data.size());
  }

  std::vector<std::string> argv = {toolchain.cxx, "-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden",
                                   "-fno-ident", "-o", "model.so"};
  for (const auto& d : toolchain.include_dirs) argv.push_back("-I" + d);
  for (const auto& d : module.link.include_dirs) argv.push_back("-I" + d);
  argv.insert(argv.end(), module.link.compile_flags.begin(), module.link.compile_flags.end());
  argv.insert(argv.end(), toolchain.extra_flags.begin(), toolchain.extra_flags.end());
  argv.push_back("model.cpp");
  argv.push_back("model_data.S");
  for (const auto& lib : module.link.libraries) argv.push_back(lib);
  argv.insert(argv.end(), module.link.link_flags.begin(), module.link.link_flags.end());
  for (const auto& r : module.link.rpaths) argv.push_back("-Wl,-rpath," + r);
  argv.push_back("-Wl,--build-id=sha1");
  std::string log;
  int rc = run_in(dir, argv, log);
  if (rc != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    internal_error("the generated code did not compile (exit ", rc, ")\ncommand: ", cmd, "\nin: ", dir.string(),
                   keep_sources_dir ? "" : " (use --keep-sources DIR to keep the sources)", "\n", log.substr(0, 4000));
  }
  // Replace the outputs atomically: a reader never sees a half-written .so.
  auto install = [](const fs::path& from, const std::string& to) {
    fs::path tmp = to + ".tmp";
    std::error_code ec;
    if (fs::path parent = fs::path(to).parent_path(); !parent.empty()) fs::create_directories(parent, ec);
    fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::rename(tmp, to, ec);
    if (ec) user_error(to, ": cannot write the output (", ec.message(), ")");
  };
  install(dir / "model.so", out_so);
  install(dir / "manifest.json", out_json);
}

}  // namespace thunderc
