// The x86-64 micro-architecture levels a model's host code may be compiled for (--cpu-target, manifest
// options.cpu_target), and what each needs from the CPU. The runtime checks them when it opens a model, so a
// .so built for AVX2 runs none of its variants, with a message, on a CPU without it instead of dying with SIGILL.
// Header-only, no runtime state: tests include it with a made-up feature set.
#pragma once

#include <functional>
#include <string>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

namespace thunderc::rt {

// Features as __builtin_cpu_supports names (GCC and clang both know these). Levels per the x86-64 psABI;
// the few level-3 features neither builtin names (F16C, LZCNT, MOVBE) come with AVX2 + BMI2 on every CPU.
inline const std::vector<std::pair<std::string, std::vector<const char*>>>& cpu_isa_levels() {
  static const std::vector<std::pair<std::string, std::vector<const char*>>> levels = {
      {"x86-64", {}},
      {"x86-64-v2", {"popcnt", "sse3", "ssse3", "sse4.1", "sse4.2"}},
      {"x86-64-v3", {"popcnt", "sse3", "ssse3", "sse4.1", "sse4.2", "avx", "avx2", "bmi", "bmi2", "fma"}},
      {"x86-64-v4", {"popcnt", "sse3", "ssse3", "sse4.1", "sse4.2", "avx", "avx2", "bmi", "bmi2", "fma", "avx512f",
                     "avx512bw", "avx512cd", "avx512dq", "avx512vl"}},
  };
  return levels;
}

inline bool is_cpu_isa_level(const std::string& level) {
  for (const auto& [name, features] : cpu_isa_levels())
    if (name == level) return true;
  return false;
}

// The features of `level` that `supports` denies, comma-separated; "" when the CPU runs it.
inline std::string missing_cpu_features(const std::string& level, const std::function<bool(const char*)>& supports) {
  std::string missing;
  for (const auto& [name, features] : cpu_isa_levels()) {
    if (name != level) continue;
    for (const char* f : features)
      if (!supports(f)) missing += (missing.empty() ? "" : ", ") + std::string(f);
  }
  return missing;
}

// Position of `level` in cpu_isa_levels() (each level includes the ones before it); -1 when unknown.
inline int cpu_isa_rank(const std::string& level) {
  const auto& levels = cpu_isa_levels();
  for (size_t i = 0; i < levels.size(); ++i)
    if (levels[i].first == level) return static_cast<int>(i);
  return -1;
}

// Every level's name, ascending.
inline std::vector<std::string> cpu_isa_level_names() {
  std::vector<std::string> names;
  for (const auto& level : cpu_isa_levels()) names.push_back(level.first);
  return names;
}

// A model built for several levels (--cpu-target x86-64-v3,x86-64-v4) exports each entry once per level: the
// lowest level's under the manifest's name, every other level's with this suffix ("__x86_64_v4").
inline std::string cpu_target_symbol_suffix(const std::string& level) {
  std::string s = "__" + level;
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
}

// The best of `levels` (ascending, as the manifest lists them) that `supports` grants and that is not above
// `cap` (THUNDERC_MAX_CPU_TARGET; "" for none); "" when none is.
inline std::string choose_cpu_target(const std::vector<std::string>& levels,
                                     const std::function<bool(const char*)>& supports, const std::string& cap = "") {
  std::string best;
  for (const std::string& level : levels) {
    if (!cap.empty() && cpu_isa_rank(level) > cpu_isa_rank(cap)) continue;
    if (missing_cpu_features(level, supports).empty()) best = level;
  }
  return best;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// The BF16 features, read from CPUID leaf 7 directly: __builtin_cpu_supports does not name them on every
// compiler this file is built with (clang 14 rejects "amx-bf16" at compile time).
inline bool host_cpu_has_bf16_feature(const std::string& f) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  if (f == "avx512bf16") {
    // AVX512_BF16 is CPUID.(7,1):EAX[5]; the avx512f builtin also checks that the OS saves ZMM state.
    if (!__builtin_cpu_supports("avx512f")) return false;
    __cpuid_count(7, 1, eax, ebx, ecx, edx);
    return (eax >> 5) & 1u;
  }
  if (f == "amx-bf16") {
    // AMX-BF16 is CPUID.(7,0):EDX[22]; usable only when the OS enables tile state (XCR0 bits 17 and 18).
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    if (!((edx >> 22) & 1u)) return false;
    unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
    __cpuid(1, a1, b1, c1, d1);
    if (!((c1 >> 27) & 1u)) return false;  // no OSXSAVE: XCR0 cannot be read
    unsigned xcr0_lo = 0, xcr0_hi = 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    return ((xcr0_lo >> 17) & 3u) == 3u;
  }
  return false;
}
#endif

// This CPU, through the compiler's cpuid builtins.
inline bool host_cpu_supports(const char* feature) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  const std::string f = feature;
  if (f == "avx512bf16" || f == "amx-bf16") return host_cpu_has_bf16_feature(f);
#define THUNDERC_CPU_FEATURE(name) \
  if (f == name) return __builtin_cpu_supports(name);
  THUNDERC_CPU_FEATURE("popcnt")
  THUNDERC_CPU_FEATURE("sse3")
  THUNDERC_CPU_FEATURE("ssse3")
  THUNDERC_CPU_FEATURE("sse4.1")
  THUNDERC_CPU_FEATURE("sse4.2")
  THUNDERC_CPU_FEATURE("avx")
  THUNDERC_CPU_FEATURE("avx2")
  THUNDERC_CPU_FEATURE("bmi")
  THUNDERC_CPU_FEATURE("bmi2")
  THUNDERC_CPU_FEATURE("fma")
  THUNDERC_CPU_FEATURE("avx512f")
  THUNDERC_CPU_FEATURE("avx512bw")
  THUNDERC_CPU_FEATURE("avx512cd")
  THUNDERC_CPU_FEATURE("avx512dq")
  THUNDERC_CPU_FEATURE("avx512vl")
#undef THUNDERC_CPU_FEATURE
  return false;
#else
  (void)feature;
  return false;  // not x86-64: no level is runnable (thunderc compiles x86-64 code only)
#endif
}

// --precision bf16 on the CPU is for CPUs with BF16 matrix instructions (AVX512_BF16, or AMX): elsewhere
// bfloat16 only adds conversions to float32 work. "" when `supports` grants one, else the reason.
inline std::string missing_bf16_features(const std::function<bool(const char*)>& supports) {
  if (supports("avx512bf16") || supports("amx-bf16")) return "";
  return "compiled with --precision bf16 for the CPU, which needs AVX512_BF16 or AMX-BF16, and this CPU has "
         "neither; recompile with --precision fp32 (or run it on a CPU with BF16 instructions)";
}

}  // namespace thunderc::rt
