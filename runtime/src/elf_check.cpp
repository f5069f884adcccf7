// A structural check of the ELF file before dlopen: glibc maps segments straight from the file, so a
// truncated .so can make the loader touch pages past the end of the file (SIGBUS). Checking that every
// header and loadable segment lies inside the file turns that into a clear error instead.
#include <elf.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "internal.hpp"

namespace thunderc::rt {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

bool range_ok(uint64_t offset, uint64_t count, uint64_t elem, uint64_t file_size) {
  if (elem != 0 && count > UINT64_MAX / elem) return false;
  const uint64_t len = count * elem;
  return offset <= file_size && len <= file_size - offset;
}

}  // namespace

void check_elf_file(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    fail(err == ENOENT || err == ENOTDIR ? THUNDERC_STATUS_NOT_FOUND : THUNDERC_STATUS_IO,
         "cannot open model '" + path + "': " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) fail(THUNDERC_STATUS_IO, "cannot open model '" + path + "': not a regular file");
  std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) fail(THUNDERC_STATUS_IO, "cannot open model '" + path + "': " + std::strerror(errno));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const std::string bad = "cannot load model '" + path + "': ";

  unsigned char ident[EI_NIDENT] = {};
  if (size < EI_NIDENT || std::fread(ident, 1, EI_NIDENT, f.get()) != EI_NIDENT ||
      std::memcmp(ident, ELFMAG, SELFMAG) != 0)
    fail(THUNDERC_STATUS_IO, bad + "not an ELF shared object (bad magic bytes, " + std::to_string(size) +
                                 "-byte file)");
  if (ident[EI_CLASS] != ELFCLASS64)
    fail(THUNDERC_STATUS_IO, bad + "not a 64-bit ELF file");
  if (ident[EI_DATA] != ELFDATA2LSB)
    fail(THUNDERC_STATUS_IO, bad + "not a little-endian ELF file");

  Elf64_Ehdr eh{};
  if (size < sizeof eh || std::fseek(f.get(), 0, SEEK_SET) != 0 || std::fread(&eh, sizeof eh, 1, f.get()) != 1)
    fail(THUNDERC_STATUS_IO, bad + "truncated ELF header (" + std::to_string(size) + "-byte file)");
  if (eh.e_type != ET_DYN)
    fail(THUNDERC_STATUS_IO, bad + "not a shared object (ELF type " + std::to_string(eh.e_type) + ")");
#if defined(__x86_64__)
  if (eh.e_machine != EM_X86_64) fail(THUNDERC_STATUS_IO, bad + "built for another CPU architecture (ELF machine " + std::to_string(eh.e_machine) + ", expected x86-64)");
#elif defined(__aarch64__)
  if (eh.e_machine != EM_AARCH64) fail(THUNDERC_STATUS_IO, bad + "built for another CPU architecture (ELF machine " + std::to_string(eh.e_machine) + ", expected aarch64)");
#endif
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
      !range_ok(eh.e_phoff, eh.e_phnum, sizeof(Elf64_Phdr), size))
    fail(THUNDERC_STATUS_IO, bad + "truncated or corrupt file: program headers lie outside the " +
                                 std::to_string(size) + "-byte file");
  if (eh.e_shoff != 0 && !range_ok(eh.e_shoff, eh.e_shnum, eh.e_shentsize, size))
    fail(THUNDERC_STATUS_IO, bad + "truncated or corrupt file: section headers at byte " +
                                 std::to_string(eh.e_shoff) + " lie outside the " + std::to_string(size) +
                                 "-byte file");
  if (std::fseek(f.get(), static_cast<long>(eh.e_phoff), SEEK_SET) != 0)
    fail(THUNDERC_STATUS_IO, bad + "cannot read program headers");
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    if (std::fread(&ph, sizeof ph, 1, f.get()) != 1) fail(THUNDERC_STATUS_IO, bad + "cannot read program headers");
    if (ph.p_type == PT_LOAD || ph.p_type == PT_DYNAMIC) {
      if (!range_ok(ph.p_offset, ph.p_filesz, 1, size))
        fail(THUNDERC_STATUS_IO, bad + "truncated or corrupt file: segment " + std::to_string(i) + " ends at byte " +
                                     std::to_string(ph.p_offset + ph.p_filesz) + " but the file has " +
                                     std::to_string(size) + " bytes");
    }
  }
}

}  // namespace thunderc::rt
