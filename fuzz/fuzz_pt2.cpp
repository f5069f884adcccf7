// libFuzzer target: the .pt2 reader (core/frontend/pt2.cpp) as thunderc uses it on a user's file: the zip
// reader (central directory, zip64, local headers, CRC-32) on the bytes as a file, then
// parse_exported_program on every models/*.json entry it can read. Bad input must throw UserError; any other
// exception, a crash or a sanitizer report is a finding. Inputs starting with '{' are also parsed directly as
// an ExportedProgram JSON (so the fuzzer reaches the schema checks without building a zip first).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/frontend/pt2.h"
#include "core/ir/error.h"

namespace {

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_pt2: %s\n", what);
  std::abort();
}

// The bytes as a file the reader can open by path: an anonymous memory file, no disk involved.
struct MemFile {
  int fd = -1;
  std::string path;
  MemFile(const uint8_t* data, size_t size) {
    fd = memfd_create("fuzz.pt2", 0);
    if (fd < 0) finding("memfd_create failed");
    for (size_t done = 0; done < size;) {
      ssize_t n = write(fd, data + done, size - done);
      if (n <= 0) finding("write to the memory file failed");
      done += static_cast<size_t>(n);
    }
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  ~MemFile() { close(fd); }
};

void parse(const std::string& json) {
  try {
    thunderc::parse_exported_program(json, "fuzz.pt2");
  } catch (const thunderc::UserError&) {
  }
}

}  // namespace

// The import into a Trace (pt2_import.cpp) needs the whole operator catalog; this target stops at parsing, and
// Pt2Model's vtable only needs the symbol.
thunderc::Trace thunderc::Pt2Model::import(const std::vector<TensorType>&, std::vector<SharpEdge>*, bool) const {
  finding("Pt2Model::import is not part of this target");
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 0 && data[0] == '{') {
    parse(std::string(reinterpret_cast<const char*>(data), size));
    return 0;
  }
  MemFile f(data, size);
  try {
    thunderc::ZipReader zip = thunderc::ZipReader::open(f.path);
    for (const thunderc::ZipEntry& e : zip.entries()) {
      std::string bytes;
      try {
        bytes = zip.read(e);
      } catch (const thunderc::UserError&) {
        continue;  // a corrupt or compressed entry: refused with a message
      }
      if (bytes.size() != e.size) finding("read() returned a size other than the entry's");
      if (e.name.size() >= 5 && e.name.compare(e.name.size() - 5, 5, ".json") == 0) parse(bytes);
    }
  } catch (const thunderc::UserError&) {
  }
  return 0;
}
