// .npy reader/writer; see include/thunderc/npy.hpp.
#include "thunderc/npy.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace thunderc::npy {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct DescrEntry {
  char kind;
  int size;
  DLDataType dtype;
};
constexpr DescrEntry kDescrs[] = {
    {'b', 1, {THUNDERC_DL_BOOL, 8, 1}}, {'u', 1, {kDLUInt, 8, 1}},   {'i', 1, {kDLInt, 8, 1}},
    {'i', 2, {kDLInt, 16, 1}},          {'i', 4, {kDLInt, 32, 1}},   {'i', 8, {kDLInt, 64, 1}},
    {'f', 2, {kDLFloat, 16, 1}},        {'f', 4, {kDLFloat, 32, 1}}, {'f', 8, {kDLFloat, 64, 1}},
    {'c', 8, {kDLComplex, 64, 1}},      {'c', 16, {kDLComplex, 128, 1}},
};

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw Error(name + ": " + what);
}

// A minimal reader for the Python dict literal in the header, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& name) : s_(text), name_(name) {}

  void parse(std::string* descr, bool* fortran, std::vector<int64_t>* shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    ws();
    expect('{');
    while (true) {
      ws();
      if (peek() == '}') { ++i_; break; }
      const std::string key = str();
      ws();
      expect(':');
      ws();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"') bad("'descr' is not a simple dtype string (structured arrays are not supported)");
        *descr = str();
        have_descr = true;
      } else if (key == "fortran_order") {
        *fortran = boolean();
        have_fortran = true;
      } else if (key == "shape") {
        *shape = tuple();
        have_shape = true;
      } else {
        bad("unexpected key '" + key + "'");
      }
      ws();
      if (peek() == ',') { ++i_; continue; }
      ws();
      expect('}');
      break;
    }
    if (!have_descr) bad("missing 'descr'");
    if (!have_fortran) bad("missing 'fortran_order'");
    if (!have_shape) bad("missing 'shape'");
  }

 private:
  [[noreturn]] void bad(const std::string& what) const { fail(name_, "malformed .npy header: " + what); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) bad(std::string("expected '") + c + "' at offset " + std::to_string(i_));
    ++i_;
  }
  std::string str() {
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string at offset " + std::to_string(i_));
    ++i_;
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] != q) ++i_;
    if (i_ >= s_.size()) bad("unterminated string");
    return s_.substr(start, i_++ - start);
  }
  bool boolean() {
    if (s_.compare(i_, 4, "True") == 0) { i_ += 4; return true; }
    if (s_.compare(i_, 5, "False") == 0) { i_ += 5; return false; }
    bad("expected True or False for 'fortran_order'");
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> out;
    while (true) {
      ws();
      if (peek() == ')') { ++i_; break; }
      if (peek() < '0' || peek() > '9') bad("expected a non-negative integer in 'shape'");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        const int d = peek() - '0';
        if (v > (std::numeric_limits<int64_t>::max() - d) / 10) bad("dimension too large in 'shape'");
        v = v * 10 + d;
        ++i_;
      }
      if (peek() == 'L') ++i_;  // Python 2 long suffix
      out.push_back(v);
      ws();
      if (peek() == ',') { ++i_; continue; }
      ws();
      expect(')');
      break;
    }
    if (out.size() > 64) bad("more than 64 dimensions");
    return out;
  }

  const std::string& s_;
  const std::string& name_;
  size_t i_ = 0;
};

DLDataType dtype_from_descr(const std::string& descr, const std::string& name) {
  if (descr.size() < 3) fail(name, "unsupported dtype '" + descr + "'");
  const char order = descr[0];
  if (order == '>') fail(name, "big-endian dtype '" + descr + "' is not supported");
  if (order != '<' && order != '|' && order != '=')
    fail(name, "unsupported dtype '" + descr + "'");
  const char kind = descr[1];
  int size = 0;
  for (size_t i = 2; i < descr.size(); ++i) {
    if (descr[i] < '0' || descr[i] > '9' || size > 1000) fail(name, "unsupported dtype '" + descr + "'");
    size = size * 10 + (descr[i] - '0');
  }
  for (const auto& e : kDescrs)
    if (e.kind == kind && e.size == size) return e.dtype;
  fail(name, "unsupported dtype '" + descr + "' (supported: b1, u1, i1, i2, i4, i8, f2, f4, f8, c8, c16)");
}

}  // namespace

std::string descr_of(DLDataType dtype) {
  for (const auto& e : kDescrs) {
    if (dtype_equal(e.dtype, dtype)) {
      const char order = e.size == 1 ? '|' : '<';
      return std::string(1, order) + e.kind + std::to_string(e.size);
    }
  }
  return {};
}

HostTensor parse(const void* data, size_t size, const std::string& name) {
  const auto* p = static_cast<const unsigned char*>(data);
  if (size < kMagicLen + 2 || std::memcmp(p, kMagic, kMagicLen) != 0)
    fail(name, "not a .npy file (bad magic bytes)");
  const unsigned major = p[6], minor = p[7];
  size_t header_len = 0, prefix = 0;
  if (major == 1) {
    prefix = 10;
    if (size < prefix) fail(name, "truncated .npy header");
    header_len = static_cast<size_t>(p[8]) | static_cast<size_t>(p[9]) << 8;
  } else if (major == 2 || major == 3) {
    prefix = 12;
    if (size < prefix) fail(name, "truncated .npy header");
    header_len = static_cast<size_t>(p[8]) | static_cast<size_t>(p[9]) << 8 | static_cast<size_t>(p[10]) << 16 |
                 static_cast<size_t>(p[11]) << 24;
  } else {
    fail(name, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
  }
  if (header_len > size - prefix)
    fail(name, "truncated .npy header (header says " + std::to_string(header_len) + " bytes, file has " +
                   std::to_string(size - prefix) + " after the preamble)");
  const std::string header(reinterpret_cast<const char*>(p + prefix), header_len);

  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
  HeaderParser(header, name).parse(&descr, &fortran, &shape);
  const DLDataType dtype = dtype_from_descr(descr, name);
  if (fortran) fail(name, "fortran_order arrays are not supported; save a C-order array (np.ascontiguousarray)");

  size_t nbytes = (dtype.bits / 8u);
  for (int64_t d : shape) {
    const auto u = static_cast<uint64_t>(d);
    if (u != 0 && nbytes > std::numeric_limits<size_t>::max() / u) fail(name, "array too large");
    nbytes *= static_cast<size_t>(u);
  }
  const size_t available = size - prefix - header_len;
  if (available < nbytes)
    fail(name, "truncated data: expected " + std::to_string(nbytes) + " bytes for " + descr + " shape (" +
                   [&] {
                     std::string s;
                     for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
                     return s;
                   }() +
                   "), found " + std::to_string(available));
  if (available > nbytes)
    fail(name, std::to_string(available - nbytes) + " unexpected bytes after the array data");

  HostTensor t(dtype, std::move(shape));
  if (nbytes) std::memcpy(t.raw(), p + prefix + header_len, nbytes);
  if (dtype.code == THUNDERC_DL_BOOL) {
    auto* b = static_cast<unsigned char*>(t.raw());
    for (size_t i = 0; i < nbytes; ++i)
      if (b[i] > 1) fail(name, "bool array holds byte value " + std::to_string(b[i]) + " (expected 0 or 1)");
  }
  return t;
}

std::string serialize(const HostTensor& tensor) {
  const std::string descr = descr_of(tensor.dtype());
  if (descr.empty()) throw Error("cannot store dtype " + dtype_string(tensor.dtype()) + " in a .npy file");
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.shape().size(); ++i) {
    dict += std::to_string(tensor.shape()[i]);
    dict += tensor.shape().size() == 1 ? "," : (i + 1 < tensor.shape().size() ? ", " : "");
  }
  dict += "), }";
  // Pad with spaces and a final newline so that the data starts at a multiple of 64 bytes.
  size_t prefix = 10;
  unsigned major = 1;
  if (dict.size() + 1 + prefix > 65535 + prefix) {
    prefix = 12;
    major = 2;
  }
  const size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  const size_t hl = dict.size();

  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(major);
  out += '\0';
  out += static_cast<char>(hl & 0xff);
  out += static_cast<char>((hl >> 8) & 0xff);
  if (major == 2) {
    out += static_cast<char>((hl >> 16) & 0xff);
    out += static_cast<char>((hl >> 24) & 0xff);
  }
  out += dict;
  out.append(static_cast<const char*>(tensor.raw()), tensor.nbytes());
  return out;
}

HostTensor load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(path + ": read error");
  const std::string bytes = ss.str();
  return parse(bytes.data(), bytes.size(), path);
}

void save(const std::string& path, const HostTensor& tensor) {
  std::string bytes;
  try {
    bytes = serialize(tensor);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path + ": cannot create: " + std::strerror(errno));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw Error(path + ": write error");
}

}  // namespace thunderc::npy
