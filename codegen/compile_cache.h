// The compile cache (--cache-dir DIR, or $THUNDERC_CACHE_DIR): compiled models kept under a key that covers
// everything their bytes depend on, so a CI job that compiles the same model again copies the earlier result
// instead (docs/install.md#compile-cache).
//
//   DIR/<key>/model.so, model.json, entry.json   one entry (entry.json: both files' sha256 and what the key
//                                                covered); created in DIR/.tmp-*/ and renamed into place, so
//                                                an entry appears whole or not at all
//
// Two jobs writing the same key at once are safe: the first rename wins and the other job drops its copy
// (both copies hold the same bytes: compilation is deterministic). A hit copies the files out through
// temporary files renamed into place and checks their sha256 against entry.json; an entry that does not
// match is removed and counts as a miss.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "codegen/build.h"

namespace thunderc {

// What the key covers besides the model and the options: this thunderc (its executable's bytes), the
// headers generated code includes, the C++ compiler's identity, the libraries models link, and which
// executors are available here.
std::vector<std::string> toolchain_key_parts(const Toolchain& toolchain);

// sha256 over labelled, length-prefixed parts ("label=value").
std::string cache_key(const std::vector<std::string>& parts);

class CompileCache {
 public:
  // Creates `dir` if needed. UserError if it cannot be created or is not a directory.
  explicit CompileCache(std::filesystem::path dir);

  const std::filesystem::path& dir() const { return dir_; }

  // On a hit, writes the entry's files to out_so and out_json and returns true.
  bool fetch(const std::string& key, const std::string& out_so, const std::string& out_json) const;

  // Stores copies of out_so and out_json under `key`; `description` lists what the key covered.
  void store(const std::string& key, const std::string& out_so, const std::string& out_json,
             const std::vector<std::string>& description) const;

  struct Stats {
    std::size_t entries = 0;
    std::uintmax_t bytes = 0;
  };
  Stats stats() const;

  // Removes every entry (and leftovers of interrupted writes); returns how many entries. Files in DIR that
  // thunderc did not write are left alone.
  std::size_t clear() const;

 private:
  std::filesystem::path dir_;
};

}  // namespace thunderc
