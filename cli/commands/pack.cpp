#include "cli/commands/pack.h"

#include <CLI/CLI.hpp>
#include <dlfcn.h>
#include <elf.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands/run.h"
#include "codegen/build.h"
#include "codegen/resources.h"
#include "core/ir/error.h"
#include "core/util/sha256.h"
#include "thunderc/runtime.hpp"

namespace thunderc {

namespace fs = std::filesystem;

namespace {

struct PackFlags {
  std::string model;
  std::string output;
};

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) user_error(p.string(), ": cannot read (", std::strerror(errno), ")");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) user_error(p.string(), ": cannot write (", std::strerror(errno), ")");
}

// The DT_NEEDED entries of a 64-bit little-endian ELF shared library (empty if it is not one).
std::vector<std::string> needed_libraries(const fs::path& path) {
  const std::string f = read_bytes(path);
  std::vector<std::string> out;
  if (f.size() < sizeof(Elf64_Ehdr) || std::memcmp(f.data(), ELFMAG, SELFMAG) != 0 || f[EI_CLASS] != ELFCLASS64 ||
      f[EI_DATA] != ELFDATA2LSB)
    return out;
  Elf64_Ehdr eh;
  std::memcpy(&eh, f.data(), sizeof eh);
  auto section = [&](std::size_t i, Elf64_Shdr& sh) {
    const std::size_t off = eh.e_shoff + i * sizeof(Elf64_Shdr);
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || off + sizeof sh > f.size()) return false;
    std::memcpy(&sh, f.data() + off, sizeof sh);
    return true;
  };
  for (std::size_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr dyn, str;
    if (!section(i, dyn) || dyn.sh_type != SHT_DYNAMIC || !section(dyn.sh_link, str)) continue;
    if (dyn.sh_offset + dyn.sh_size > f.size() || str.sh_offset + str.sh_size > f.size()) return out;
    for (std::size_t k = 0; (k + 1) * sizeof(Elf64_Dyn) <= dyn.sh_size; ++k) {
      Elf64_Dyn d;
      std::memcpy(&d, f.data() + dyn.sh_offset + k * sizeof d, sizeof d);
      if (d.d_tag == DT_NULL) break;
      if (d.d_tag != DT_NEEDED || d.d_un.d_val >= str.sh_size) continue;
      const char* name = f.data() + str.sh_offset + d.d_un.d_val;
      out.emplace_back(name, strnlen(name, str.sh_size - d.d_un.d_val));
    }
  }
  return out;
}

// Where the runtime this process uses lives (thunderc links it).
fs::path runtime_library() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&thunderc_runtime_version), &info) || !info.dli_fname)
    internal_error("pack: cannot locate libthunderc_runtime.so (dladdr failed)");
  return fs::canonical(info.dli_fname);
}

void pack_command(const PackFlags& flags) {
  const fs::path so(flags.model);
  // Opening it checks that it is a thunderc model this runtime can run (a clear error otherwise).
  std::string manifest;
  try {
    Model model(flags.model);
    manifest = model.manifest();
  } catch (const Error& e) {
    user_error(commands::runtime_message(e, "pack", flags.model));
  }
  const std::string name = so.stem().string();
  const fs::path out = flags.output.empty() ? fs::path(name + "-bundle.tar.gz") : fs::path(flags.output);
  if (out.extension() != ".gz" && out.extension() != ".tgz")
    user_error("pack: -o ", out.string(), " should end in .tar.gz or .tgz (the bundle is a gzip-compressed tarball)");

  std::string tmpl = (fs::temp_directory_path() / "thunderc-pack-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) user_error("pack: cannot create a temporary directory: ", std::strerror(errno));
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{tmpl};
  const fs::path root = fs::path(tmpl) / name;
  fs::create_directories(root / "lib");
  fs::create_directories(root / "include" / "thunderc");

  fs::copy_file(so, root / (name + ".so"));
  const fs::path json = fs::path(so).replace_extension(".json");
  write_bytes(root / (name + ".json"), fs::exists(json) ? read_bytes(json) : manifest);
  const fs::path runtime = runtime_library();
  fs::copy_file(runtime, root / "lib" / "libthunderc_runtime.so");
  for (const char* h : {"abi.h", "runtime.h", "runtime.hpp", "tensor.hpp"})
    fs::copy_file(fs::path(resource_paths().runtime_include) / "thunderc" / h, root / "include" / "thunderc" / h);

  // What the target must provide: the libraries the model and the runtime need, less what the bundle holds.
  std::set<std::string> needed;
  for (const std::string& lib : needed_libraries(so)) needed.insert(lib);
  for (const std::string& lib : needed_libraries(runtime)) needed.insert(lib);
  bool torch = false;
  if (needed.count("libthunderc_aten_shim.so")) {
    torch = true;
    needed.erase("libthunderc_aten_shim.so");
    const std::string shim = resource_paths().aten_shim_library;
    if (!shim.empty() && fs::exists(shim)) fs::copy_file(shim, root / "lib" / "libthunderc_aten_shim.so");
  }
  std::string libs;
  for (const std::string& lib : needed) libs += "  " + lib + "\n";
  std::string readme =
      name + ": a model compiled by thunderc " THUNDERC_VERSION "\n\n"
      "  " + name + ".so, " + name + ".json   the model and its manifest (`thunderc inspect " + name + ".so` summarizes it)\n"
      "  lib/libthunderc_runtime.so        the runtime that opens it (C ABI over DLPack tensors)\n"
      "  include/thunderc/                 its headers: runtime.h (C), runtime.hpp (C++); they include <dlpack/dlpack.h>\n"
      "                                    (Debian: libdlpack-dev)\n\n"
      "Build against it:  c++ app.cpp -Iinclude -Llib -lthunderc_runtime -Wl,-rpath,'$ORIGIN/lib'\n"
      "From Python:       THUNDERC_RUNTIME_LIBRARY=lib/libthunderc_runtime.so, then thunderc.load(\"" + name + ".so\")\n\n"
      "System libraries the model and the runtime load (install them on the target machine):\n" + libs;
  if (torch)
    readme += "\nThis model calls the torch executor: it needs LibTorch on the target, and lib/libthunderc_aten_shim.so\n"
              "on the library path (LD_LIBRARY_PATH=lib). Compile with --standalone to ship without LibTorch.\n";
  write_bytes(root / "README.txt", readme);

  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) files.push_back(fs::relative(e.path(), root));
  std::sort(files.begin(), files.end());
  std::string sums;
  for (const fs::path& f : files) sums += sha256_file((root / f).string()) + "  " + f.string() + "\n";
  write_bytes(root / "SHA256SUMS", sums);

  // Reproducible: the same inputs give the same bytes.
  const fs::path tmp_out = fs::absolute(out).string() + ".tmp";
  // tar's log goes beside the bundle's folder, not into it.
  std::string tar_output;
  const int rc = run_program(tmpl,
                             {"tar", "--sort=name", "--mtime=@0", "--owner=0", "--group=0", "--numeric-owner",
                              "--mode=u+rw,go+r,go-w", "--use-compress-program=gzip -n", "-cf", tmp_out.string(),
                              "-C", tmpl, name},
                             "tar.log", tar_output, "install GNU tar and gzip");
  if (rc != 0) {
    std::error_code ec;
    fs::remove(tmp_out, ec);
    user_error("pack: tar failed (exit ", rc, ") writing ", out.string(), ": ", tar_output.substr(0, 2000));
  }
  std::error_code ec;
  fs::rename(tmp_out, out, ec);
  if (ec) user_error("pack: cannot write ", out.string(), " (", ec.message(), ")");
  std::printf("thunderc: packed %s -> %s (%zu files: the model, its manifest, the runtime, headers, README.txt)\n",
              flags.model.c_str(), out.string().c_str(), files.size() + 1);
  std::printf("  the target needs: %s%s\n", [&] {
    std::string s;
    for (const std::string& lib : needed) s += (s.empty() ? "" : ", ") + lib;
    return s;
  }().c_str(), torch ? ", LibTorch" : "");
}

}  // namespace

void add_pack_command(CLI::App& app) {
  auto flags = std::make_shared<PackFlags>();
  CLI::App* cmd = app.add_subcommand("pack", "bundle a compiled model with the runtime and headers into a .tar.gz to ship");
  commands::add_model_argument(*cmd, flags->model);
  cmd->add_option("-o,--output", flags->output, "the tarball to write (default: <name>-bundle.tar.gz here)")
      ->type_name("BUNDLE.tar.gz");
  cmd->callback([flags]() { pack_command(*flags); });
}

}  // namespace thunderc
