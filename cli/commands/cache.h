// `thunderc cache [--cache-dir DIR] [--clear]`: where the compile cache is, how many entries it holds and
// their size; --clear removes them (docs/install.md#compile-cache).
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace thunderc {

// The cache folder for a compile: --cache-dir when given (an empty value turns the cache off), else
// $THUNDERC_CACHE_DIR, else none (empty).
std::string resolve_cache_dir(const std::string& flag_value, bool flag_given);

// Registers the `cache` subcommand (options and callback) on `app`. Mistakes throw thunderc::UserError.
void add_cache_command(CLI::App& app);

}  // namespace thunderc
