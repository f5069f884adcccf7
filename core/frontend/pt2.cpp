// The .pt2 archive: zip reader, archive layout, ExportedProgram JSON and weights (see pt2.h). No LibTorch.
#include "core/frontend/pt2.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>

#include "core/ir/error.h"

namespace thunderc {

namespace {

using json = nlohmann::json;

// --- zip -------------------------------------------------------------------------------------------------

std::uint32_t crc32_of(const std::string& bytes) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::uint64_t le(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string read_at(const std::string& path, std::uint64_t offset, std::uint64_t size, std::uint64_t file_size) {
  if (offset > file_size || size > file_size - offset)
    user_error(path, ": the zip archive is truncated or corrupt (a record at byte ", offset, " of ", size,
               " bytes runs past the end of the ", file_size, "-byte file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error(path, ": cannot open the model file (", std::strerror(errno), ")");
  std::string out(static_cast<std::size_t>(size), '\0');
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(out.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::uint64_t>(in.gcount()) != size) user_error(path, ": cannot read ", size, " bytes at ", offset);
  return out;
}

}  // namespace

ZipReader ZipReader::open(const std::string& path) {
  ZipReader z;
  z.path_ = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) user_error(path, ": is a directory, not a model file");
  {
    std::ifstream probe(path, std::ios::binary);
    if (!probe) user_error(path, ": cannot open the model file (", std::strerror(errno), ")");
  }
  z.file_size_ = std::filesystem::file_size(path, ec);
  if (ec) user_error(path, ": cannot read the model file size (", ec.message(), ")");
  const std::string not_zip = ": not a zip archive (a torch.export .pt2 file is one)";
  if (z.file_size_ < 22) user_error(path, not_zip, "; it is only ", z.file_size_, " bytes");
  // The end-of-central-directory record is in the last 22 + 65535 bytes (its comment is at most 64 KiB).
  std::uint64_t tail_size = std::min<std::uint64_t>(z.file_size_, 22 + 65535);
  std::string tail = read_at(path, z.file_size_ - tail_size, tail_size, z.file_size_);
  const auto* t = reinterpret_cast<const unsigned char*>(tail.data());
  std::int64_t eocd = -1;
  for (std::int64_t i = static_cast<std::int64_t>(tail_size) - 22; i >= 0; --i)
    if (le(t + i, 4) == 0x06054b50u) {
      eocd = i;
      break;
    }
  if (eocd < 0) {
    if (tail.size() >= 2 && std::string(path).size() && read_at(path, 0, 2, z.file_size_) == "PK")
      user_error(path, ": the zip archive is truncated or corrupt (no end-of-central-directory record)");
    user_error(path, not_zip);
  }
  std::uint64_t count = le(t + eocd + 10, 2), cd_size = le(t + eocd + 12, 4), cd_offset = le(t + eocd + 16, 4);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_offset == 0xFFFFFFFFu) {
    // zip64: the locator sits right before the end-of-central-directory record.
    std::uint64_t eocd_abs = z.file_size_ - tail_size + static_cast<std::uint64_t>(eocd);
    if (eocd_abs < 20) user_error(path, ": the zip64 archive is corrupt (no zip64 locator)");
    std::string loc = read_at(path, eocd_abs - 20, 20, z.file_size_);
    const auto* l = reinterpret_cast<const unsigned char*>(loc.data());
    if (le(l, 4) != 0x07064b50u) user_error(path, ": the zip64 archive is corrupt (no zip64 locator)");
    std::string rec = read_at(path, le(l + 8, 8), 56, z.file_size_);
    const auto* r = reinterpret_cast<const unsigned char*>(rec.data());
    if (le(r, 4) != 0x06064b50u) user_error(path, ": the zip64 archive is corrupt (bad zip64 end record)");
    count = le(r + 32, 8), cd_size = le(r + 40, 8), cd_offset = le(r + 48, 8);
  }
  if (count > cd_size / 46 + 1) user_error(path, ": the zip archive is corrupt (", count, " entries in a ", cd_size, "-byte directory)");
  std::string cd = read_at(path, cd_offset, cd_size, z.file_size_);
  const auto* c = reinterpret_cast<const unsigned char*>(cd.data());
  std::uint64_t pos = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (pos + 46 > cd.size() || le(c + pos, 4) != 0x02014b50u)
      user_error(path, ": the zip archive is corrupt (central directory entry ", i, " is damaged)");
    ZipEntry e;
    e.method = static_cast<std::uint16_t>(le(c + pos + 10, 2));
    e.crc32 = static_cast<std::uint32_t>(le(c + pos + 16, 4));
    e.compressed_size = le(c + pos + 20, 4);
    e.size = le(c + pos + 24, 4);
    std::uint64_t name_len = le(c + pos + 28, 2), extra_len = le(c + pos + 30, 2), comment_len = le(c + pos + 32, 2);
    e.local_header_offset = le(c + pos + 42, 4);
    if (pos + 46 + name_len + extra_len + comment_len > cd.size())
      user_error(path, ": the zip archive is corrupt (central directory entry ", i, " runs past the directory)");
    e.name.assign(cd.data() + pos + 46, name_len);
    // zip64 extended information: the fields that are 0xFFFFFFFF above, in this order.
    const unsigned char* x = c + pos + 46 + name_len;
    for (std::uint64_t k = 0; k + 4 <= extra_len;) {
      std::uint64_t id = le(x + k, 2), len = le(x + k + 2, 2);
      if (k + 4 + len > extra_len) break;
      if (id == 0x0001) {
        std::uint64_t f = k + 4;
        auto take = [&](std::uint64_t& field) {
          if (field == 0xFFFFFFFFu && f + 8 <= k + 4 + len) field = le(x + f, 8), f += 8;
        };
        take(e.size);
        take(e.compressed_size);
        take(e.local_header_offset);
      }
      k += 4 + len;
    }
    pos += 46 + name_len + extra_len + comment_len;
    z.index_[e.name] = z.entries_.size();
    z.entries_.push_back(std::move(e));
  }
  return z;
}

const ZipEntry* ZipReader::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

std::string ZipReader::read(const std::string& name) const {
  const ZipEntry* e = find(name);
  if (!e) user_error(path_, ": the archive has no entry '", name, "'");
  return read(*e);
}

std::string ZipReader::read(const ZipEntry& e) const {
  if (e.method != 0)
    user_error(path_, ": entry '", e.name, "' is compressed (zip method ", e.method,
               "); thunderc reads stored entries, which is what torch.export.save writes");
  std::string header = read_at(path_, e.local_header_offset, 30, file_size_);
  const auto* h = reinterpret_cast<const unsigned char*>(header.data());
  if (le(h, 4) != 0x04034b50u) user_error(path_, ": the zip archive is corrupt (bad local header for '", e.name, "')");
  std::uint64_t start = e.local_header_offset + 30 + le(h + 26, 2) + le(h + 28, 2);
  if (e.compressed_size != e.size) user_error(path_, ": the zip archive is corrupt (stored entry '", e.name, "' has two sizes)");
  std::string data = read_at(path_, start, e.size, file_size_);
  if (crc32_of(data) != e.crc32) user_error(path_, ": the zip archive is corrupt (CRC mismatch in '", e.name, "')");
  return data;
}

// --- ExportedProgram JSON ----------------------------------------------------------------------------

namespace {

std::optional<std::int64_t> sym_literal(const json& s) {
  if (s.contains("as_int")) return s.at("as_int").get<std::int64_t>();
  return std::nullopt;
}

// A float of the export's JSON: a number, or one of the strings torch.export writes for the values JSON cannot
// hold ("Infinity", "-Infinity", "NaN": masked_fill(mask, float("-inf")) is common in attention).
double json_float(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  throw std::runtime_error("expected a float, got " + v.dump().substr(0, 80));
}

Pt2Arg parse_arg(const json& j) {
  Pt2Arg a;
  if (!j.is_object() || j.size() != 1) throw std::runtime_error("an argument must be an object with one tag: " + j.dump().substr(0, 80));
  const std::string tag = j.begin().key();
  const json& v = j.begin().value();
  a.tag = tag;
  using K = Pt2Arg::Kind;
  if (tag == "as_none") a.kind = K::None;
  else if (tag == "as_tensor") a.kind = K::Tensor, a.names.push_back(v.at("name").get<std::string>());
  else if (tag == "as_tensors") {
    a.kind = K::Tensors;
    for (const auto& t : v) a.names.push_back(t.at("name").get<std::string>());
  } else if (tag == "as_optional_tensors") {
    a.kind = K::OptionalTensors;
    for (const auto& t : v) a.names.push_back(t.contains("as_tensor") ? t.at("as_tensor").at("name").get<std::string>() : "");
  } else if (tag == "as_optional_tensor") {
    if (v.contains("as_tensor")) a.kind = K::Tensor, a.names.push_back(v.at("as_tensor").at("name").get<std::string>());
    else a.kind = K::None;
  } else if (tag == "as_int") a.kind = K::Int, a.ints.push_back(v.get<std::int64_t>());
  else if (tag == "as_ints") a.kind = K::Ints, a.ints = v.get<std::vector<std::int64_t>>();
  else if (tag == "as_float") a.kind = K::Float, a.floats.push_back(json_float(v));
  else if (tag == "as_floats") {
    a.kind = K::Floats;
    for (const json& f : v) a.floats.push_back(json_float(f));
  }
  else if (tag == "as_bool") a.kind = K::Bool, a.ints.push_back(v.get<bool>());
  else if (tag == "as_bools") {
    a.kind = K::Bools;
    for (const auto& b : v) a.ints.push_back(b.get<bool>());
  } else if (tag == "as_string") a.kind = K::String, a.strings.push_back(v.get<std::string>());
  else if (tag == "as_strings") a.kind = K::Strings, a.strings = v.get<std::vector<std::string>>();
  else if (tag == "as_sym_int" || tag == "as_sym_ints") {
    a.kind = tag == "as_sym_int" ? K::SymInt : K::SymInts;
    for (const json& s : tag == "as_sym_int" ? json::array({v}) : v) {
      auto lit = sym_literal(s);
      a.ints.push_back(lit.value_or(0));
      a.names.push_back(lit ? "" : s.at("as_name").get<std::string>());
    }
  } else if (tag == "as_scalar_type") a.kind = K::ScalarType, a.ints.push_back(v.get<std::int64_t>());
  else if (tag == "as_memory_format") a.kind = K::MemoryFormat, a.ints.push_back(v.get<std::int64_t>());
  else if (tag == "as_layout") a.kind = K::Layout, a.ints.push_back(v.get<std::int64_t>());
  else if (tag == "as_device") a.kind = K::Device, a.strings.push_back(v.at("type").get<std::string>());
  else a.kind = K::Other;
  return a;
}

Pt2TensorMeta parse_meta(const json& j) {
  Pt2TensorMeta m;
  m.scalar_type = j.at("dtype").get<int>();
  for (const json& s : j.at("sizes")) {
    if (auto lit = sym_literal(s)) {
      m.sizes.push_back(*lit);
      m.size_exprs.emplace_back();
    } else if (s.contains("as_expr")) {
      const json& e = s.at("as_expr");
      std::int64_t hint = 0;
      if (e.contains("hint") && e.at("hint").is_object() && e.at("hint").contains("as_int")) hint = e.at("hint").at("as_int").get<std::int64_t>();
      m.sizes.push_back(hint);
      m.size_exprs.push_back(e.at("expr_str").get<std::string>());
    } else {
      throw std::runtime_error("unknown size form " + s.dump().substr(0, 80));
    }
  }
  for (const json& s : j.at("strides")) m.strides.push_back(sym_literal(s).value_or(-1));
  if (j.contains("storage_offset")) m.storage_offset = sym_literal(j.at("storage_offset")).value_or(-1);  // -1: symbolic
  return m;
}

std::string take_single_tag(const json& j, const json** value) {
  if (!j.is_object() || j.size() != 1) throw std::runtime_error("a spec must be an object with one tag");
  *value = &j.begin().value();
  return j.begin().key();
}

}  // namespace

bool Pt2TensorMeta::is_static() const {
  return std::all_of(size_exprs.begin(), size_exprs.end(), [](const std::string& s) { return s.empty(); });
}

std::optional<DType> pt2_dtype(int t) {
  switch (t) {
    case 1: return DType::UInt8;
    case 2: return DType::Int8;
    case 3: return DType::Int16;
    case 4: return DType::Int32;
    case 5: return DType::Int64;
    case 6: return DType::Float16;
    case 7: return DType::Float32;
    case 8: return DType::Float64;
    case 10: return DType::Complex64;
    case 11: return DType::Complex128;
    case 12: return DType::Bool;
    case 13: return DType::BFloat16;
    default: return std::nullopt;
  }
}

std::string pt2_scalar_type_name(int t) {
  static const std::map<int, const char*> names = {
      {0, "UNKNOWN"}, {1, "BYTE"}, {2, "CHAR"}, {3, "SHORT"}, {4, "INT"}, {5, "LONG"}, {6, "HALF"}, {7, "FLOAT"},
      {8, "DOUBLE"}, {9, "COMPLEXHALF"}, {10, "COMPLEXFLOAT"}, {11, "COMPLEXDOUBLE"}, {12, "BOOL"}, {13, "BFLOAT16"},
      {28, "UINT16"}, {29, "FLOAT8E4M3FN"}, {30, "FLOAT8E5M2"}, {31, "FLOAT8E4M3FNUZ"}, {32, "FLOAT8E5M2FNUZ"},
      {33, "FLOAT8E8M0FNU"}, {34, "UINT32"}, {35, "UINT64"}};
  auto it = names.find(t);
  return it == names.end() ? "ScalarType " + std::to_string(t) : it->second;
}

std::string Pt2Node::location() const {
  // The last frame of the stack trace is the model's own line: 'File "m.py", line 12, in forward\n    code'.
  std::string loc;
  std::size_t pos = stack_trace.rfind("File \"");
  if (pos != std::string::npos) {
    std::size_t q = stack_trace.find('"', pos + 6);
    std::size_t l = stack_trace.find("line ", q == std::string::npos ? pos : q);
    if (q != std::string::npos && l != std::string::npos) {
      std::string file = stack_trace.substr(pos + 6, q - pos - 6);
      std::size_t slash = file.rfind('/');
      if (slash != std::string::npos) file = file.substr(slash + 1);
      std::size_t e = l + 5;
      while (e < stack_trace.size() && std::isdigit(static_cast<unsigned char>(stack_trace[e]))) ++e;
      loc = file + ":" + stack_trace.substr(l + 5, e - l - 5);
    }
  }
  if (name.empty()) return loc;
  return loc.empty() ? "node " + name : loc + " (node " + name + ")";
}

Pt2Program parse_exported_program(const std::string& text, const std::string& context) {
  Pt2Program p;
  try {
    json j = json::parse(text);
    const json& sv = j.at("schema_version");
    p.schema_major = sv.at("major").get<int>();
    p.schema_minor = sv.at("minor").get<int>();
    if (p.schema_major != 8)
      user_error(context, ": ExportedProgram schema version ", p.schema_major, ".", p.schema_minor,
                 " is not supported; thunderc reads schema 8.x (torch 2.6 and later)");
    if (j.contains("torch_version") && j.at("torch_version").is_string()) p.torch_version = j.at("torch_version").get<std::string>();
    if (j.contains("verifiers") && j.at("verifiers").is_array())
      for (const json& v : j.at("verifiers")) p.verifiers.push_back(v.get<std::string>());
    if (j.contains("range_constraints"))
      for (const auto& [sym, r] : j.at("range_constraints").items()) {
        Pt2Program::Range range;
        if (r.contains("min_val") && r.at("min_val").is_number_integer()) range.min = r.at("min_val").get<std::int64_t>();
        if (r.contains("max_val") && r.at("max_val").is_number_integer()) range.max = r.at("max_val").get<std::int64_t>();
        p.range_constraints[sym] = range;
      }
    const json& gm = j.at("graph_module");
    const json& g = gm.at("graph");
    for (const auto& [name, meta] : g.at("tensor_values").items()) p.tensor_values[name] = parse_meta(meta);
    std::vector<Pt2Arg> graph_inputs;
    for (const json& a : g.at("inputs")) graph_inputs.push_back(parse_arg(a));
    for (const json& a : g.at("outputs")) p.graph_outputs.push_back(parse_arg(a));
    for (const json& n : g.at("nodes")) {
      Pt2Node node;
      node.target = n.at("target").get<std::string>();
      if (n.contains("name") && n.at("name").is_string()) node.name = n.at("name").get<std::string>();
      for (const json& in : n.at("inputs")) node.inputs.push_back({in.at("name").get<std::string>(), parse_arg(in.at("arg"))});
      for (const json& out : n.at("outputs")) node.outputs.push_back(parse_arg(out));
      if (n.contains("metadata") && n.at("metadata").is_object()) {
        const json& md = n.at("metadata");
        if (md.contains("stack_trace") && md.at("stack_trace").is_string()) node.stack_trace = md.at("stack_trace").get<std::string>();
        if (md.contains("nn_module_stack") && md.at("nn_module_stack").is_string())
          node.nn_module_stack = md.at("nn_module_stack").get<std::string>();
      }
      p.nodes.push_back(std::move(node));
    }
    const json& sig = gm.at("signature");
    const json& ins = sig.at("input_specs");
    if (ins.size() != graph_inputs.size())
      user_error(context, ": the signature has ", ins.size(), " input specs for ", graph_inputs.size(), " graph inputs");
    for (std::size_t i = 0; i < ins.size(); ++i) {
      const json* v = nullptr;
      Pt2InputSpec s;
      s.kind = take_single_tag(ins[i], &v);
      const json& arg = v->contains("arg") ? v->at("arg") : *v;
      if (arg.contains("name") && arg.at("name").is_string()) s.name = arg.at("name").get<std::string>();
      else if (arg.contains("as_tensor")) s.name = arg.at("as_tensor").at("name").get<std::string>();
      for (const char* key : {"parameter_name", "buffer_name", "tensor_constant_name", "custom_obj_name"})
        if (v->contains(key)) s.target = v->at(key).get<std::string>();
      if (s.name.empty() && graph_inputs[i].kind == Pt2Arg::Kind::Tensor) s.name = graph_inputs[i].names[0];
      p.input_specs.push_back(std::move(s));
    }
    for (const json& o : sig.at("output_specs")) {
      const json* v = nullptr;
      p.output_kinds.push_back(take_single_tag(o, &v));
    }
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    user_error(context, ": the serialized ExportedProgram is malformed or of an unknown layout: ", e.what());
  }
  return p;
}

// --- archive -----------------------------------------------------------------------------------------

namespace {

// Reads `config` (fqn -> PayloadMeta) and gathers each tensor's elements, densely, from its file in `dir`.
void load_tensors(const ZipReader& zip, const std::string& root, const std::string& config_path, const std::string& dir,
                  std::map<std::string, Pt2Tensor>& out) {
  const ZipEntry* e = zip.find(root + config_path);
  if (!e) return;
  json config;
  try {
    config = json::parse(zip.read(*e)).at("config");
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& ex) {
    user_error(zip.path(), ": ", config_path, " is malformed: ", ex.what());
  }
  std::map<std::string, std::string> files;  // path_name -> bytes, read once (tensors may share a storage)
  for (const auto& [fqn, payload] : config.items()) {
    Pt2Tensor t;
    std::string file;
    try {
      if (payload.value("use_pickle", false))
        user_error(zip.path(), ": tensor '", fqn, "' is stored pickled (a tensor subclass or an unusual layout); "
                   "thunderc reads raw tensors only");
      file = payload.at("path_name").get<std::string>();
      t.meta = parse_meta(payload.at("tensor_meta"));
      t.is_param = payload.value("is_param", false);
    } catch (const UserError&) {
      throw;
    } catch (const std::exception& ex) {
      user_error(zip.path(), ": ", config_path, ": entry '", fqn, "' is malformed: ", ex.what());
    }
    auto dt = pt2_dtype(t.meta.scalar_type);
    if (!dt) user_error(zip.path(), ": tensor '", fqn, "' has dtype ", pt2_scalar_type_name(t.meta.scalar_type), ", which thunderc does not support");
    if (!t.meta.is_static()) user_error(zip.path(), ": tensor '", fqn, "' has a symbolic size");
    t.dtype = *dt;
    if (!files.count(file)) files[file] = zip.read(root + dir + file);
    const std::string& bytes = files[file];
    const std::size_t es = dtype_size(t.dtype);
    const std::size_t rank = t.meta.sizes.size();
    if (t.meta.strides.size() != rank) user_error(zip.path(), ": tensor '", fqn, "' has ", t.meta.strides.size(), " strides for rank ", rank);
    std::uint64_t count = 1;
    for (std::int64_t s : t.meta.sizes) {
      if (s < 0 || (s > 0 && count > (std::uint64_t{1} << 40) / static_cast<std::uint64_t>(s)))
        user_error(zip.path(), ": tensor '", fqn, "' has an impossible shape ", shape_str(t.meta.sizes));
      count *= static_cast<std::uint64_t>(s);
    }
    // Bounds: the largest element index must lie inside the file.
    std::int64_t max_index = t.meta.storage_offset;
    if (count > 0)
      for (std::size_t d = 0; d < rank; ++d) {
        if (t.meta.strides[d] < 0) user_error(zip.path(), ": tensor '", fqn, "' has a negative stride");
        max_index += (t.meta.sizes[d] - 1) * t.meta.strides[d];
      }
    if (t.meta.storage_offset < 0 || (count > 0 && static_cast<std::uint64_t>(max_index + 1) * es > bytes.size()))
      user_error(zip.path(), ": tensor '", fqn, "' (shape ", shape_str(t.meta.sizes), ", offset ", t.meta.storage_offset,
                 ") does not fit its ", bytes.size(), "-byte file '", file, "'");
    auto data = std::make_shared<ConstantData>();
    data->bytes.resize(static_cast<std::size_t>(count * es));
    std::vector<std::int64_t> idx(rank, 0);
    for (std::uint64_t i = 0; i < count; ++i) {
      std::int64_t off = t.meta.storage_offset;
      for (std::size_t d = 0; d < rank; ++d) off += idx[d] * t.meta.strides[d];
      std::memcpy(data->bytes.data() + i * es, bytes.data() + off * es, es);
      for (std::size_t d = rank; d-- > 0;) {
        if (++idx[d] < t.meta.sizes[d]) break;
        idx[d] = 0;
      }
    }
    t.data = std::move(data);
    out[fqn] = std::move(t);
  }
}

}  // namespace

Pt2Program read_pt2_program(const ZipReader& zip) {
  // Every record sits under one root folder ("<name>/archive_format").
  std::string root;
  for (const ZipEntry& e : zip.entries()) {
    std::size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.substr(slash + 1) == "archive_format") {
      root = e.name.substr(0, slash + 1);
      break;
    }
  }
  if (root.empty()) {
    for (const ZipEntry& e : zip.entries())
      if (e.name.find("serialized_exported_program.json") != std::string::npos)
        user_error(zip.path(), ": an ExportedProgram archive in the older layout (serialized_exported_program.json, "
                   "torch 2.1-2.5); thunderc reads the layout of torch 2.6 and later: save it again with a newer torch");
    user_error(zip.path(), ": not a torch.export archive (no archive_format record; torch.export.save writes one)");
  }
  std::string format = zip.read(root + "archive_format");
  if (format != "pt2")
    user_error(zip.path(), ": archive_format is '", format.substr(0, 40), "', not 'pt2'; thunderc reads torch.export archives");
  const ZipEntry* version = zip.find(root + "archive_version");
  std::string v = version ? zip.read(*version) : "0";
  if (v != "0")
    user_error(zip.path(), ": archive_version ", v.substr(0, 40), " is not supported; thunderc reads pt2 archive version 0");
  if (const ZipEntry* bo = zip.find(root + "byteorder"))
    if (zip.read(*bo) != "little") user_error(zip.path(), ": the archive's byteorder is not little-endian");

  std::vector<std::string> models;
  for (const ZipEntry& e : zip.entries()) {
    const std::string prefix = root + "models/";
    if (e.name.rfind(prefix, 0) == 0 && e.name.size() > prefix.size() + 5 && e.name.substr(e.name.size() - 5) == ".json" &&
        e.name.find('/', prefix.size()) == std::string::npos)
      models.push_back(e.name.substr(prefix.size(), e.name.size() - prefix.size() - 5));
  }
  if (models.empty()) user_error(zip.path(), ": the archive holds no ExportedProgram (no models/*.json)");
  std::string name = models[0];
  if (models.size() > 1) {
    if (std::find(models.begin(), models.end(), "model") == models.end()) {
      std::string list;
      for (const auto& m : models) list += (list.empty() ? "" : ", ") + m;
      user_error(zip.path(), ": the archive holds several programs (", list, "); thunderc compiles one named 'model'");
    }
    name = "model";
  }
  Pt2Program p = parse_exported_program(zip.read(root + "models/" + name + ".json"), zip.path() + " (models/" + name + ".json)");
  p.model_name = name;
  load_tensors(zip, root, "data/weights/" + name + "_weights_config.json", "data/weights/", p.weights);
  load_tensors(zip, root, "data/constants/" + name + "_constants_config.json", "data/constants/", p.constants);
  return p;
}

ModelFormat detect_model_format(const std::string& path) {
  bool named_pt2 = std::filesystem::path(path).extension() == ".pt2";
  try {
    ZipReader zip = ZipReader::open(path);
    for (const ZipEntry& e : zip.entries()) {
      std::size_t slash = e.name.find('/');
      if (slash != std::string::npos && e.name.substr(slash + 1) == "archive_format") return ModelFormat::Pt2;
      if (e.name.find("serialized_exported_program.json") != std::string::npos) return ModelFormat::Pt2;
    }
  } catch (const UserError&) {
  }
  return named_pt2 ? ModelFormat::Pt2 : ModelFormat::TorchScript;
}

// --- Pt2Model ----------------------------------------------------------------------------------------

std::unique_ptr<Pt2Model> Pt2Model::load(const std::string& path) {
  auto m = std::make_unique<Pt2Model>();
  m->path_ = path;
  ZipReader zip = ZipReader::open(path);
  m->program_ = read_pt2_program(zip);
  const Pt2Program& p = m->program_;
  Specialization recorded;
  for (const Pt2InputSpec& s : p.input_specs) {
    if (s.kind == "user_input") {
      auto it = p.tensor_values.find(s.name);
      if (it == p.tensor_values.end())
        user_error(path, ": user input '", s.name, "' is not a tensor (non-tensor inputs are not supported yet)");
      InputShape shape;
      shape.name = s.name;
      shape.shape = it->second.sizes;
      shape.dtype = pt2_dtype(it->second.scalar_type);
      if (!shape.dtype)
        user_error(path, ": input '", s.name, "' has dtype ", pt2_scalar_type_name(it->second.scalar_type),
                   ", which thunderc does not support");
      m->input_names_.push_back(s.name);
      recorded.push_back(std::move(shape));
    } else if (s.kind == "parameter" || s.kind == "buffer") {
      if (s.kind == "parameter") m->parameters_.push_back(s.target);
      // A non-persistent buffer (register_buffer(..., persistent=False), e.g. rotary tables) is stored with the
      // constants.
      bool non_persistent = s.kind == "buffer" && p.constants.count(s.target);
      if (!p.weights.count(s.target) && !non_persistent)
        user_error(path, ": ", s.kind, " '", s.target, "' has no data in the archive's weights",
                   s.kind == "buffer" ? " or constants" : "");
    } else if (s.kind == "tensor_constant") {
      if (!p.constants.count(s.target) && !p.weights.count(s.target))
        user_error(path, ": tensor constant '", s.target, "' has no data in the archive's constants");
    } else {
      user_error(path, ": graph input '", s.name, "' is a ", s.kind, ", which thunderc does not support");
    }
  }
  m->recorded_ = std::move(recorded);
  return m;
}

std::string pt2_plain_symbol(const std::string& expr) {
  auto identifier = [](const std::string& s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  };
  if (identifier(expr)) return expr;
  const std::string head = "Symbol('";
  if (expr.rfind(head, 0) != 0) return {};
  std::size_t end = expr.find('\'', head.size());
  if (end == std::string::npos) return {};
  std::string name = expr.substr(head.size(), end - head.size());
  std::string rest = expr.substr(end + 1);
  if (!identifier(name) || rest.empty() || rest.find_first_of("+-*/()") != rest.rfind(')') || rest.back() != ')') return {};
  return name;
}

std::optional<ModelFrontend::DeclaredDims> Pt2Model::declared_dims(std::string* why_not,
                                                                   const std::vector<DimRange>& bounds) const {
  auto refuse = [&](const std::string& why) -> std::optional<DeclaredDims> {
    if (why_not) *why_not = why;
    return std::nullopt;
  };
  auto bound_of = [&](const std::string& sym) -> const DimRange* {
    for (const DimRange& b : bounds)
      if (b.name == sym) return &b;
    return nullptr;
  };
  // Every --dim bound must name one of the export's dimension symbols.
  std::vector<std::string> declared;
  for (const std::string& name : input_names_)
    for (const std::string& e : program_.tensor_values.at(name).size_exprs) {
      std::string sym = e.empty() ? std::string() : pt2_plain_symbol(e);
      if (!sym.empty() && std::find(declared.begin(), declared.end(), sym) == declared.end()) declared.push_back(sym);
    }
  for (const DimRange& b : bounds)
    if (std::find(declared.begin(), declared.end(), b.name) == declared.end()) {
      std::string names;
      for (const std::string& x : declared) names += (names.empty() ? "" : ", ") + x;
      user_error("--dim ", b.name, ": the export has no dynamic dimension named ", b.name,
                 names.empty() ? std::string(" (it has none)") : " (it has " + names + ")");
    }
  DeclaredDims out;
  for (const std::string& name : input_names_) {
    const Pt2TensorMeta& meta = program_.tensor_values.at(name);
    InputShape in;
    in.name = name;
    in.shape = meta.sizes;
    in.dtype = pt2_dtype(meta.scalar_type);
    in.symbols.assign(meta.sizes.size(), std::string());
    bool any = false;
    for (std::size_t d = 0; d < meta.sizes.size(); ++d) {
      if (meta.size_exprs[d].empty()) continue;
      std::string sym = pt2_plain_symbol(meta.size_exprs[d]);
      if (sym.empty())
        return refuse("input '" + name + "' dimension " + std::to_string(d) + " is the expression " +
                      meta.size_exprs[d] + ", not one symbol");
      auto r = program_.range_constraints.find(sym);
      const bool known = r != program_.range_constraints.end();
      const std::int64_t lo = std::max<std::int64_t>(known ? r->second.min.value_or(1) : 1, 1);
      const std::optional<std::int64_t> hi = known ? r->second.max : std::nullopt;
      const DimRange* b = bound_of(sym);
      if (!b && !hi)
        return refuse("dimension " + sym + " (input '" + name + "' dimension " + std::to_string(d) +
                      ") has no upper bound in the export (give its Dim a max=, or bound it here with --dim " + sym +
                      "=LO:HI)");
      if (b && (b->lo < lo || (hi && b->hi > *hi)))
        user_error("--dim ", b->name, "=", b->lo, ":", b->hi, " is outside the export's range of ", sym, ", ", lo, "..",
                   hi ? std::to_string(*hi) : std::string("inf"));
      if (std::none_of(out.dims.begin(), out.dims.end(), [&](const DimRange& x) { return x.name == sym; }))
        out.dims.push_back(b ? DimRange{sym, b->lo, b->hi} : DimRange{sym, lo, *hi});
      in.symbols[d] = sym;
      in.shape[d] = 0;
      any = true;
    }
    if (!any) in.symbols.clear();
    out.spec.push_back(std::move(in));
  }
  if (out.dims.empty()) return refuse("");
  for (const DimRange& d : out.dims)
    if (d.hi <= d.lo) return refuse("dimension " + d.name + " has the range " + std::to_string(d.lo) + ".." + std::to_string(d.hi));
  return out;
}

std::string Pt2Model::description() const {
  return "torch.export, written by torch " + (program_.torch_version.empty() ? std::string("(unknown)") : program_.torch_version) +
         ", schema " + std::to_string(program_.schema_major) + "." + std::to_string(program_.schema_minor);
}

std::vector<TensorType> Pt2Model::resolve_shapes(const Specialization& spec, Device device) const {
  const auto& names = input_names_;
  std::vector<InputShape> given = match_input_shapes(path_, names, spec, "the program");
  std::vector<TensorType> types;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const Pt2TensorMeta& meta = program_.tensor_values.at(names[i]);
    const Shape& shape = given[i].shape;
    // The export fixed every static dimension (views in the graph hard-code it); dynamic ones stay in range.
    if (shape.size() != meta.sizes.size())
      user_error(path_, ": --shapes gives input '", names[i], "' rank ", shape.size(), ", but the export has rank ",
                 meta.sizes.size(), " (", shape_str(meta.sizes), ")");
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (meta.size_exprs[d].empty()) {
        if (shape[d] != meta.sizes[d])
          user_error(path_, ": --shapes gives input '", names[i], "' size ", shape[d], " in dimension ", d,
                     ", but that dimension is static in the export (", meta.sizes[d], ")");
        continue;
      }
      auto r = program_.range_constraints.find(meta.size_exprs[d]);
      for (const auto& [sym, range] : program_.range_constraints)
        if (meta.size_exprs[d].find("'" + sym + "'") != std::string::npos) r = program_.range_constraints.find(sym);
      if (r != program_.range_constraints.end() &&
          ((r->second.min && shape[d] < *r->second.min) || (r->second.max && shape[d] > *r->second.max)))
        user_error(path_, ": --shapes gives input '", names[i], "' size ", shape[d], " in dimension ", d,
                   ", outside the range the export allows (", r->second.min ? std::to_string(*r->second.min) : "-inf",
                   "..", r->second.max ? std::to_string(*r->second.max) : "inf", ")");
    }
    std::optional<DType> dtype = given[i].dtype;
    if (!dtype) dtype = pt2_dtype(meta.scalar_type);
    types.push_back(TensorType{dtype.value_or(DType::Float32), shape, device});
  }
  return types;
}

std::string Pt2Model::graph_str() const {
  std::ostringstream os;
  auto arg_str = [](const Pt2Arg& a) {
    std::ostringstream s;
    switch (a.kind) {
      case Pt2Arg::Kind::None: s << "None"; break;
      case Pt2Arg::Kind::Tensor: s << "%" << a.names[0]; break;
      case Pt2Arg::Kind::Tensors:
      case Pt2Arg::Kind::OptionalTensors:
        s << "[";
        for (std::size_t i = 0; i < a.names.size(); ++i) s << (i ? ", " : "") << (a.names[i].empty() ? "None" : "%" + a.names[i]);
        s << "]";
        break;
      case Pt2Arg::Kind::Int: case Pt2Arg::Kind::Bool: case Pt2Arg::Kind::ScalarType: s << a.ints[0]; break;
      case Pt2Arg::Kind::Float: s << a.floats[0]; break;
      case Pt2Arg::Kind::Ints: case Pt2Arg::Kind::Bools:
        s << "[";
        for (std::size_t i = 0; i < a.ints.size(); ++i) s << (i ? ", " : "") << a.ints[i];
        s << "]";
        break;
      case Pt2Arg::Kind::SymInt: case Pt2Arg::Kind::SymInts:
        s << "[";
        for (std::size_t i = 0; i < a.ints.size(); ++i) s << (i ? ", " : "") << (a.names[i].empty() ? std::to_string(a.ints[i]) : a.names[i]);
        s << "]";
        break;
      case Pt2Arg::Kind::String: s << "'" << a.strings[0] << "'"; break;
      default: s << "<" << a.tag << ">"; break;
    }
    return s.str();
  };
  os << "graph(";
  for (std::size_t i = 0; i < program_.input_specs.size(); ++i)
    os << (i ? ", " : "") << "%" << program_.input_specs[i].name << " [" << program_.input_specs[i].kind
       << (program_.input_specs[i].target.empty() ? "" : " " + program_.input_specs[i].target) << "]";
  os << "):\n";
  for (const Pt2Node& n : program_.nodes) {
    os << "  ";
    for (std::size_t i = 0; i < n.outputs.size(); ++i) os << (i ? ", " : "") << arg_str(n.outputs[i]);
    os << " = " << n.target << "(";
    for (std::size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << n.inputs[i].name << "=" << arg_str(n.inputs[i].arg);
    os << ")\n";
  }
  os << "  return ";
  for (std::size_t i = 0; i < program_.graph_outputs.size(); ++i) os << (i ? ", " : "") << arg_str(program_.graph_outputs[i]);
  return os.str() + "\n";
}

}  // namespace thunderc
