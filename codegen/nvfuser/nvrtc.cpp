// NVRTC through dlopen: the few entry points thunderc needs are declared here (nvrtc.h is not included, so
// the build needs no CUDA toolkit). Resources (registers, static shared memory, local memory per kernel)
// are parsed from ptxas' verbose log (--ptxas-options=-v), which NVRTC returns as the program log.
#include "codegen/nvfuser/nvrtc.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <set>
#include <sstream>

#include "core/ir/error.h"

namespace thunderc {
namespace {

// ---- the NVRTC C API, declared by hand (ABI-stable since CUDA 11.2) ----
using NvrtcResult = int;  // nvrtcResult; 0 = NVRTC_SUCCESS, 6 = NVRTC_ERROR_COMPILATION
using NvrtcProgram = struct NvrtcProgramOpaque*;
constexpr NvrtcResult kNvrtcSuccess = 0;
constexpr NvrtcResult kNvrtcErrorCompilation = 6;

struct NvrtcApi {
  const char* (*GetErrorString)(NvrtcResult) = nullptr;
  NvrtcResult (*Version)(int*, int*) = nullptr;
  NvrtcResult (*GetNumSupportedArchs)(int*) = nullptr;
  NvrtcResult (*GetSupportedArchs)(int*) = nullptr;
  NvrtcResult (*CreateProgram)(NvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*) = nullptr;
  NvrtcResult (*DestroyProgram)(NvrtcProgram*) = nullptr;
  NvrtcResult (*CompileProgram)(NvrtcProgram, int, const char* const*) = nullptr;
  NvrtcResult (*GetPTXSize)(NvrtcProgram, size_t*) = nullptr;
  NvrtcResult (*GetPTX)(NvrtcProgram, char*) = nullptr;
  NvrtcResult (*GetCUBINSize)(NvrtcProgram, size_t*) = nullptr;
  NvrtcResult (*GetCUBIN)(NvrtcProgram, char*) = nullptr;
  NvrtcResult (*GetProgramLogSize)(NvrtcProgram, size_t*) = nullptr;
  NvrtcResult (*GetProgramLog)(NvrtcProgram, char*) = nullptr;
};

struct Loaded {
  NvrtcInfo info;
  NvrtcApi api;
  std::vector<int> arch_numbers;
};

template <typename F>
bool bind(void* handle, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
  return fn != nullptr;
}

Loaded probe() {
  Loaded l;
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("THUNDERC_NVRTC_LIBRARY"); env && *env) candidates.emplace_back(env);
  const char* names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};
  for (const char* dir : {"", "/usr/local/cuda/lib64/", "/usr/local/cuda/targets/x86_64-linux/lib/"}) {
    for (const char* name : names) candidates.push_back(std::string(dir) + name);
  }
  void* handle = nullptr;
  std::string errors;
  for (const std::string& c : candidates) {
    handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      l.info.library = c;
      break;
    }
    const char* e = dlerror();
    if (errors.empty() && e) errors = e;
  }
  if (!handle) {
    l.info.reason = "NVRTC (libnvrtc.so from the CUDA toolkit 12 or 13) was not found; tried libnvrtc.so, "
                    "libnvrtc.so.13, libnvrtc.so.12 on the library path and under /usr/local/cuda (first error: " +
                    errors + "); set THUNDERC_NVRTC_LIBRARY to its path";
    return l;
  }
  std::string missing;
  NvrtcApi& a = l.api;
  bind(handle, "nvrtcGetErrorString", a.GetErrorString, missing);
  bind(handle, "nvrtcVersion", a.Version, missing);
  bind(handle, "nvrtcGetNumSupportedArchs", a.GetNumSupportedArchs, missing);
  bind(handle, "nvrtcGetSupportedArchs", a.GetSupportedArchs, missing);
  bind(handle, "nvrtcCreateProgram", a.CreateProgram, missing);
  bind(handle, "nvrtcDestroyProgram", a.DestroyProgram, missing);
  bind(handle, "nvrtcCompileProgram", a.CompileProgram, missing);
  bind(handle, "nvrtcGetPTXSize", a.GetPTXSize, missing);
  bind(handle, "nvrtcGetPTX", a.GetPTX, missing);
  bind(handle, "nvrtcGetCUBINSize", a.GetCUBINSize, missing);
  bind(handle, "nvrtcGetCUBIN", a.GetCUBIN, missing);
  bind(handle, "nvrtcGetProgramLogSize", a.GetProgramLogSize, missing);
  bind(handle, "nvrtcGetProgramLog", a.GetProgramLog, missing);
  if (!missing.empty()) {
    l.info.reason = l.info.library + " lacks " + missing + " (NVRTC from CUDA 11.2 or newer is needed)";
    return l;  // the handle stays open: harmless
  }
  int major = 0, minor = 0;
  if (a.Version(&major, &minor) != kNvrtcSuccess) {
    l.info.reason = l.info.library + ": nvrtcVersion failed";
    return l;
  }
  l.info.version = std::to_string(major) + "." + std::to_string(minor);
  int n = 0;
  if (a.GetNumSupportedArchs(&n) != kNvrtcSuccess || n <= 0) {
    l.info.reason = l.info.library + ": nvrtcGetNumSupportedArchs failed";
    return l;
  }
  l.arch_numbers.resize(static_cast<size_t>(n));
  if (a.GetSupportedArchs(l.arch_numbers.data()) != kNvrtcSuccess) {
    l.info.reason = l.info.library + ": nvrtcGetSupportedArchs failed";
    return l;
  }
  std::sort(l.arch_numbers.begin(), l.arch_numbers.end());
  l.arch_numbers.erase(std::unique(l.arch_numbers.begin(), l.arch_numbers.end()), l.arch_numbers.end());
  for (int x : l.arch_numbers) l.info.archs.push_back("sm_" + std::to_string(x));
  l.info.available = true;
  return l;  // the library stays loaded for the life of the process
}

const Loaded& loaded() {
  static const Loaded l = probe();
  return l;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// "sm_80" / "sm_90a" -> (80, "a"); false when malformed.
bool split_arch(const std::string& arch, const char* prefix, int& number, std::string& suffix) {
  const size_t plen = std::strlen(prefix);
  if (arch.compare(0, plen, prefix) != 0) return false;
  size_t i = plen, start = plen;
  while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i]))) ++i;
  if (i == start || i - start > 4) return false;
  suffix = arch.substr(i);
  if (!suffix.empty() && suffix != "a") return false;
  number = std::stoi(arch.substr(start, i - start));
  return true;
}

std::string supported_list() {
  const NvrtcInfo& info = nvrtc_info();
  if (!info.available) return "";
  return " (NVRTC " + info.version + " supports " + join(info.archs, ", ") + ")";
}

// Checks one architecture name; returns its number.
int check_arch(const std::string& arch) {
  int number = 0;
  std::string suffix;
  if (!split_arch(arch, "sm_", number, suffix)) {
    user_error("malformed CUDA architecture '", arch, "': expected sm_<N> such as sm_80 or sm_90", supported_list());
  }
  const Loaded& l = loaded();
  if (l.info.available &&
      !std::binary_search(l.arch_numbers.begin(), l.arch_numbers.end(), number)) {
    user_error("CUDA architecture '", arch, "' is not supported", supported_list());
  }
  return number;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

constexpr const char* kProgramName = "thunderc_kernels.cu";

struct Program {
  const NvrtcApi& api;
  NvrtcProgram prog = nullptr;
  explicit Program(const NvrtcApi& a) : api(a) {}
  ~Program() {
    if (prog) api.DestroyProgram(&prog);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
};

std::string program_log(const NvrtcApi& api, NvrtcProgram prog) {
  size_t size = 0;
  if (api.GetProgramLogSize(prog, &size) != kNvrtcSuccess || size == 0) return "";
  std::string log(size, '\0');
  if (api.GetProgramLog(prog, log.data()) != kNvrtcSuccess) return "";
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

// The source lines the log blames ("thunderc_kernels.cu(12): error: ..."), numbered, at most 10.
std::string offending_lines(const std::string& source, const std::string& log) {
  std::vector<std::string> lines;
  {
    std::istringstream is(source);
    std::string line;
    while (std::getline(is, line)) lines.push_back(line);
  }
  std::set<long> seen;
  std::string out;
  const std::string marker = std::string(kProgramName) + "(";
  for (size_t pos = log.find(marker); pos != std::string::npos; pos = log.find(marker, pos + 1)) {
    const size_t num = pos + marker.size();
    const size_t close = log.find(')', num);
    if (close == std::string::npos || close == num) continue;
    const std::string digits = log.substr(num, close - num);
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      continue;
    const long n = std::stol(digits);
    if (n < 1 || n > static_cast<long>(lines.size()) || !seen.insert(n).second) continue;
    if (seen.size() > 10) break;
    out += "\n  " + std::to_string(n) + " | " + lines[static_cast<size_t>(n - 1)];
  }
  return out;
}

std::string result_name(const NvrtcApi& api, NvrtcResult r) {
  const char* s = api.GetErrorString ? api.GetErrorString(r) : nullptr;
  return s ? s : "NVRTC error " + std::to_string(r);
}

struct Compiled {
  std::vector<unsigned char> data;
  std::string log;
};

Compiled compile_one(const NvrtcApi& api, const std::string& source, const std::string& arch, bool ptx) {
  Program p(api);
  NvrtcResult r = api.CreateProgram(&p.prog, source.c_str(), kProgramName, 0, nullptr, nullptr);
  if (r != kNvrtcSuccess) internal_error("nvrtcCreateProgram failed: ", result_name(api, r));
  const std::vector<std::string> options = nvrtc_compile_options(arch);
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  r = api.CompileProgram(p.prog, static_cast<int>(argv.size()), argv.data());
  Compiled c;
  c.log = program_log(api, p.prog);
  if (r == kNvrtcErrorCompilation) {
    internal_error("the generated CUDA source does not compile for ", arch, " (NVRTC ", nvrtc_info().version,
                   "):\n", c.log, "offending source line(s):", offending_lines(source, c.log));
  }
  if (r != kNvrtcSuccess) {
    internal_error("nvrtcCompileProgram failed for ", arch, " with ", result_name(api, r), " (options: ",
                   join(options, " "), "):\n", c.log);
  }
  size_t size = 0;
  r = ptx ? api.GetPTXSize(p.prog, &size) : api.GetCUBINSize(p.prog, &size);
  if (r != kNvrtcSuccess || size == 0) {
    internal_error("NVRTC produced no ", ptx ? "PTX" : "cubin", " for ", arch, " (", result_name(api, r), ")");
  }
  std::vector<char> buffer(size);
  r = ptx ? api.GetPTX(p.prog, buffer.data()) : api.GetCUBIN(p.prog, buffer.data());
  if (r != kNvrtcSuccess) internal_error("NVRTC could not return the image for ", arch, ": ", result_name(api, r));
  if (ptx) {
    while (!buffer.empty() && buffer.back() == '\0') buffer.pop_back();
  } else if (buffer.size() < 4 || std::memcmp(buffer.data(), "\x7f" "ELF", 4) != 0) {
    internal_error("NVRTC returned a cubin for ", arch, " that is not an ELF image");
  }
  c.data.assign(buffer.begin(), buffer.end());
  return c;
}

long number_before(const std::string& line, const std::string& unit) {
  const size_t pos = line.find(unit);
  if (pos == std::string::npos) return -1;
  size_t end = pos;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  if (begin == end) return -1;
  return std::stol(line.substr(begin, end - begin));
}

std::string quoted_after(const std::string& line, const std::string& key) {
  const size_t pos = line.find(key);
  if (pos == std::string::npos) return "";
  const size_t begin = pos + key.size();
  const size_t end = line.find('\'', begin);
  return end == std::string::npos ? "" : line.substr(begin, end - begin);
}

// ptxas -v, as NVRTC 12/13 return it:
//   ptxas info    : Compiling entry function 'k' for 'sm_90'
//   ptxas info    : Function properties for k
//   ptxas         .     1024 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem, 360 bytes cmem[0]
std::map<std::string, KernelResources> parse_ptxas_log(const std::string& log, const std::string& arch) {
  std::map<std::string, KernelResources> out;
  std::string entry, properties_of;
  std::istringstream is(log);
  std::string line;
  while (std::getline(is, line)) {
    if (line.find("Compiling entry function '") != std::string::npos) {
      entry = quoted_after(line, "Compiling entry function '");
      KernelResources& r = out[entry];
      r.kernel = entry;
      r.arch = arch;
    } else if (const size_t p = line.find("Function properties for "); p != std::string::npos) {
      properties_of = trim(line.substr(p + std::strlen("Function properties for ")));
    } else if (line.find("bytes stack frame") != std::string::npos) {
      auto it = out.find(properties_of);
      if (it != out.end()) it->second.local_bytes = std::max(it->second.local_bytes, number_before(line, "bytes stack frame"));
    } else if (line.find("Used ") != std::string::npos && line.find(" registers") != std::string::npos) {
      auto it = out.find(entry);
      if (it == out.end()) continue;
      it->second.registers = static_cast<int>(std::max(0L, number_before(line, " registers")));
      it->second.static_shared_bytes = std::max(0L, number_before(line, "bytes smem"));
      it->second.local_bytes = std::max(it->second.local_bytes, number_before(line, "bytes lmem"));
    }
  }
  return out;
}

bool ptx_has_entry(const std::vector<unsigned char>& ptx, const std::string& name) {
  const std::string text(ptx.begin(), ptx.end());
  for (const char* after : {"(", "\n", " ", "\r"}) {
    if (text.find(".entry " + name + after) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

const NvrtcInfo& nvrtc_info() { return loaded().info; }

std::vector<std::string> parse_cuda_archs(const std::string& text) {
  std::vector<std::pair<std::pair<int, std::string>, std::string>> parsed;
  std::string item;
  std::istringstream is(text);
  while (std::getline(is, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    const int number = check_arch(item);
    parsed.push_back({{number, item.substr(3 + std::to_string(number).size())}, item});
  }
  if (parsed.empty()) user_error("no CUDA architecture given (expected e.g. sm_80,sm_90)", supported_list());
  std::sort(parsed.begin(), parsed.end());
  std::vector<std::string> out;
  for (const auto& p : parsed) {
    if (out.empty() || out.back() != p.second) out.push_back(p.second);
  }
  return out;
}

std::vector<std::string> nvrtc_compile_options(const std::string& arch) {
  std::vector<std::string> options = {"-std=c++17", "-default-device", "-arch=" + arch};
  if (arch.compare(0, 3, "sm_") == 0) options.push_back("--ptxas-options=-v");
  return options;
}

CudaCompileResult compile_cuda(const std::string& source, const std::vector<std::string>& archs,
                               const std::vector<std::string>& kernel_names) {
  const Loaded& l = loaded();
  if (!l.info.available) user_error("cannot compile CUDA kernels: ", l.info.reason);
  THUNDERC_CHECK(!archs.empty(), "compile_cuda needs at least one architecture");
  std::string newest;
  int newest_number = -1;
  for (const std::string& arch : archs) {
    const int n = check_arch(arch);
    if (n > newest_number) {
      newest_number = n;
      newest = arch;
    }
  }
  // One compile per cubin and one for the PTX, independent of each other: run them on separate threads
  // (NVRTC programs are independent; a large model's module takes seconds per architecture).
  const std::string virtual_arch = "compute_" + newest.substr(3);
  std::vector<std::future<Compiled>> jobs;
  for (const std::string& arch : archs)
    jobs.push_back(std::async(std::launch::async, [&l, &source, arch] { return compile_one(l.api, source, arch, false); }));
  jobs.push_back(std::async(std::launch::async, [&l, &source, virtual_arch] { return compile_one(l.api, source, virtual_arch, true); }));
  std::vector<Compiled> done;
  for (auto& j : jobs) done.push_back(j.get());  // rethrows the first failure, in order
  CudaCompileResult result;
  for (std::size_t i = 0; i < archs.size(); ++i) {
    const std::map<std::string, KernelResources> res = parse_ptxas_log(done[i].log, archs[i]);
    for (const std::string& k : kernel_names) {
      auto it = res.find(k);
      if (it != res.end()) result.resources.push_back(it->second);
    }
    result.images.push_back({archs[i], false, std::move(done[i].data)});
  }
  Compiled& ptx = done.back();
  for (const std::string& k : kernel_names) {
    if (!ptx_has_entry(ptx.data, k)) {
      internal_error("kernel '", k, "' is not a __global__ entry of the generated CUDA source (missing or not "
                     "extern \"C\")");
    }
  }
  result.images.push_back({virtual_arch, true, std::move(ptx.data)});
  return result;
}

}  // namespace thunderc
