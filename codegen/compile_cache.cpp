#include "codegen/compile_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "codegen/blas/blas_backend.h"
#include "codegen/onednn/onednn_backend.h"
#include "codegen/resources.h"
#include "core/executors/executor.h"
#include "core/ir/error.h"
#include "core/util/sha256.h"

namespace thunderc {

namespace fs = std::filesystem;

namespace {

constexpr char kSo[] = "model.so";
constexpr char kJson[] = "model.json";
constexpr char kEntry[] = "entry.json";
constexpr char kTmpPrefix[] = ".tmp-";

bool is_key(const std::string& name) {
  return name.size() == 64 && std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string digest_or_missing(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) ? sha256_file(p.string()) : std::string("missing");
}

// A library too large to hash on every compile: its path, size and modification time (a package upgrade
// changes them).
std::string file_stamp(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return path + " (missing)";
  return path + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

// Every file in the headers' folders, by name and content.
std::string headers_digest() {
  const ResourcePaths& r = resource_paths();
  std::vector<fs::path> dirs;
  for (const std::string& d : {r.runtime_include, r.codegen_include, r.cpp_include, r.blas_include, r.onednn_include,
                               r.aten_shim_include}) {
    fs::path p = fs::path(d) / "thunderc";
    if (std::find(dirs.begin(), dirs.end(), p) == dirs.end()) dirs.push_back(p);
  }
  std::vector<fs::path> files;
  std::error_code ec;
  for (const fs::path& d : dirs)
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec)) files.push_back(it->path());
  std::sort(files.begin(), files.end());
  Sha256 h;
  for (const fs::path& f : files) {
    const std::string line = f.string() + " " + sha256_file(f.string()) + "\n";
    h.update(line.data(), line.size());
  }
  return h.hex_digest();
}

void copy_into(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) user_error("compile cache: cannot copy ", from.string(), " to ", to.string(), " (", ec.message(), ")");
}

}  // namespace

std::vector<std::string> toolchain_key_parts(const Toolchain& toolchain) {
  std::vector<std::string> parts;
  parts.push_back("cache-format=1");
  parts.push_back("thunderc-version=" THUNDERC_VERSION);
  // The executable's bytes cover the code generators and every path compiled into them.
  parts.push_back("thunderc-executable=" + digest_or_missing("/proc/self/exe"));
  parts.push_back("headers=" + headers_digest());
  parts.push_back("compiler=" + compiler_identity(toolchain));
  for (const std::string& f : toolchain.extra_flags) parts.push_back("compiler-flag=" + f);
  parts.push_back("objcopy=" + toolchain.objcopy);
  parts.push_back("aten-shim=" + toolchain.aten_shim.library + " " + digest_or_missing(toolchain.aten_shim.library));
  const OnednnLocation onednn = OnednnLocation::from_build();
  parts.push_back("onednn=" + file_stamp(onednn.library) + " " +
                  digest_or_missing(fs::path(onednn.include_dir) / "oneapi" / "dnnl" / "dnnl_version.h"));
  parts.push_back("openblas=" + file_stamp(BlasLocation::from_build().library));
  // Availability decides the default executors and the always-executors.
  for (const Executor* e : all_executors())
    for (DeviceKind k : e->devices()) {
      const Availability a = e->availability(k);
      parts.push_back("executor=" + e->name() + "/" + device_kind_name(k) + ": " +
                      (a.available ? std::string("available") : "unavailable: " + a.reason));
    }
  const char* nvrtc = std::getenv("THUNDERC_NVRTC_LIBRARY");
  parts.push_back(std::string("env THUNDERC_NVRTC_LIBRARY=") + (nvrtc ? nvrtc : ""));
  return parts;
}

std::string cache_key(const std::vector<std::string>& parts) {
  Sha256 h;
  for (const std::string& p : parts) {
    const std::string len = std::to_string(p.size()) + ":";
    h.update(len.data(), len.size());
    h.update(p.data(), p.size());
  }
  return h.hex_digest();
}

CompileCache::CompileCache(fs::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  if (dir_.empty()) user_error("--cache-dir: empty path");
  if (fs::exists(dir_, ec) && !fs::is_directory(dir_, ec))
    user_error("--cache-dir ", dir_.string(), ": exists and is not a directory");
  fs::create_directories(dir_, ec);
  if (ec) user_error("--cache-dir ", dir_.string(), ": cannot create it (", ec.message(), ")");
}

bool CompileCache::fetch(const std::string& key, const std::string& out_so, const std::string& out_json) const {
  const fs::path entry = dir_ / key;
  std::error_code ec;
  if (!fs::is_directory(entry, ec)) return false;
  nlohmann::json meta;
  try {
    std::ifstream in(entry / kEntry);
    meta = nlohmann::json::parse(in);
    const std::string so_sha = meta.at("model.so").get<std::string>();
    const std::string json_sha = meta.at("model.json").get<std::string>();
    // Checked on the cache's files before anything is written: a damaged entry never reaches the outputs.
    if (sha256_file((entry / kSo).string()) != so_sha || sha256_file((entry / kJson).string()) != json_sha)
      throw std::runtime_error("checksum mismatch");
  } catch (const std::exception&) {  // UserError (unreadable file) included
    // Damaged (or removed under us): drop it; the caller compiles and stores a fresh one.
    fs::remove_all(entry, ec);
    return false;
  }
  install_file(entry / kSo, out_so);
  install_file(entry / kJson, out_json);
  // Recently used: `touch` the entry (a cleanup by age keeps what is in use).
  fs::last_write_time(entry, fs::file_time_type::clock::now(), ec);
  return true;
}

void CompileCache::store(const std::string& key, const std::string& out_so, const std::string& out_json,
                         const std::vector<std::string>& description) const {
  std::string tmpl = (dir_ / (std::string(kTmpPrefix) + "XXXXXX")).string();
  if (!mkdtemp(tmpl.data()))
    user_error("--cache-dir ", dir_.string(), ": cannot create a temporary directory (", std::strerror(errno), ")");
  const fs::path tmp(tmpl);
  std::error_code ec;
  struct Cleanup {
    fs::path path;
    ~Cleanup() {
      std::error_code e;
      if (!path.empty()) fs::remove_all(path, e);
    }
  } cleanup{tmp};
  copy_into(out_so, tmp / kSo);
  copy_into(out_json, tmp / kJson);
  nlohmann::json meta;
  meta["format"] = "thunderc-compile-cache";
  meta["format_version"] = 1;
  meta["key"] = key;
  meta["model.so"] = sha256_file((tmp / kSo).string());
  meta["model.json"] = sha256_file((tmp / kJson).string());
  meta["key_covers"] = description;
  {
    std::ofstream out(tmp / kEntry);
    out << meta.dump(2) << "\n";
    if (!out) user_error("--cache-dir ", dir_.string(), ": cannot write ", (tmp / kEntry).string());
  }
  ::chmod(tmp.c_str(), 0755);  // mkdtemp makes it 0700; an entry is as readable as the files in it
  // rename(2) of a directory onto an existing non-empty one fails: the writer that got there first wins.
  if (::rename(tmp.c_str(), (dir_ / key).c_str()) == 0) {
    cleanup.path.clear();
    return;
  }
  if (errno == EEXIST || errno == ENOTEMPTY) return;  // another job stored the same key; ours is dropped
  if (errno == ENOENT) return;  // `thunderc cache --clear` removed our temporary directory meanwhile
  user_error("--cache-dir ", dir_.string(), ": cannot store the entry (", std::strerror(errno), ")");
}

CompileCache::Stats CompileCache::stats() const {
  Stats s;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    if (!is_key(it->path().filename().string()) || !it->is_directory(ec)) continue;
    ++s.entries;
    for (fs::directory_iterator f(it->path(), ec), fend; !ec && f != fend; f.increment(ec))
      if (f->is_regular_file(ec)) s.bytes += f->file_size(ec);
  }
  return s;
}

std::size_t CompileCache::clear() const {
  std::size_t n = 0;
  std::error_code ec;
  std::vector<fs::path> doomed;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!it->is_directory(ec)) continue;
    if (is_key(name)) {
      doomed.push_back(it->path());
      ++n;
    } else if (name.rfind(kTmpPrefix, 0) == 0) {
      doomed.push_back(it->path());
    }
  }
  if (ec) user_error("--cache-dir ", dir_.string(), ": cannot list it (", ec.message(), ")");
  for (const fs::path& p : doomed) {
    fs::remove_all(p, ec);
    if (ec) user_error("--cache-dir ", dir_.string(), ": cannot remove ", p.string(), " (", ec.message(), ")");
  }
  return n;
}

}  // namespace thunderc
