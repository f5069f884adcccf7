#include "cli/commands/cache.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "codegen/compile_cache.h"
#include "core/ir/error.h"

namespace thunderc {

std::string resolve_cache_dir(const std::string& flag_value, bool flag_given) {
  if (flag_given) return flag_value;
  const char* env = std::getenv("THUNDERC_CACHE_DIR");
  return env ? std::string(env) : std::string();
}

namespace {

struct CacheFlags {
  std::string dir;
  CLI::Option* dir_option = nullptr;
  bool clear = false;
};

void cache_command(const CacheFlags& flags) {
  const std::string dir = resolve_cache_dir(flags.dir, flags.dir_option->count() > 0);
  if (dir.empty())
    user_error("no compile cache: give --cache-dir DIR or set THUNDERC_CACHE_DIR");
  // Never create a folder just to report on it or clear it.
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::printf("compile cache %s: does not exist (0 entries)\n", dir.c_str());
    return;
  }
  CompileCache cache(dir);
  if (flags.clear) {
    const std::size_t n = cache.clear();
    std::printf("compile cache %s: removed %zu entr%s\n", dir.c_str(), n, n == 1 ? "y" : "ies");
    return;
  }
  const CompileCache::Stats s = cache.stats();
  std::printf("compile cache %s: %zu entr%s, %.1f MiB\n", dir.c_str(), s.entries, s.entries == 1 ? "y" : "ies",
              static_cast<double>(s.bytes) / (1024.0 * 1024.0));
}

}  // namespace

void add_cache_command(CLI::App& app) {
  auto flags = std::make_shared<CacheFlags>();
  CLI::App* cmd = app.add_subcommand("cache", "show the compile cache (--cache-dir or $THUNDERC_CACHE_DIR), or --clear it");
  flags->dir_option = cmd->add_option("--cache-dir", flags->dir, "the cache folder (default: $THUNDERC_CACHE_DIR)")
                          ->type_name("DIR");
  cmd->add_flag("--clear", flags->clear, "remove every entry (files thunderc did not write are left alone)");
  cmd->callback([flags]() { cache_command(*flags); });
}

}  // namespace thunderc
