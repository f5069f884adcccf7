// The torch.export (.pt2) frontend, without LibTorch or Python: the zip reader on the fixtures of
// samples/pt2/ (written by samples/export_samples.py) and on truncated, corrupt and hand-made archives; the
// ExportedProgram parser (inputs, weights); the import of every fixture; and, through the thunderc binary,
// compile + run of every fixture against PyTorch's output (rtol 1e-4, atol 1e-5).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/run_process.h"
#include "core/frontend/pt2.h"
#include "core/ir/error.h"
#include "core/ir/verifier.h"
#include "thunderc/npy.hpp"

using namespace thunderc;
namespace fs = std::filesystem;

namespace {

std::string sample(const std::string& name) { return std::string(THUNDERC_SAMPLES) + "/pt2/" + name; }

fs::path tmp_dir(const std::string& name) {
  fs::path d = fs::path(THUNDERC_TEST_TMP) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

std::map<std::string, int> op_counts(const Trace& t) {
  std::map<std::string, int> counts;
  for (const BoundSymbol& s : t.symbols()) ++counts[s.op->name];
  return counts;
}

std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no UserError)";
}

// A minimal zip writer (stored entries) for hand-made archives.
std::uint32_t crc32(const std::string& s) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}

std::string make_zip(const std::vector<std::pair<std::string, std::string>>& files) {
  auto put = [](std::string& o, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) o += static_cast<char>((v >> (8 * i)) & 0xFF);
  };
  std::string out, cd;
  for (const auto& [name, data] : files) {
    std::uint64_t offset = out.size();
    put(out, 0x04034b50, 4), put(out, 20, 2), put(out, 0, 2), put(out, 0, 2), put(out, 0, 4), put(out, crc32(data), 4);
    put(out, data.size(), 4), put(out, data.size(), 4), put(out, name.size(), 2), put(out, 0, 2);
    out += name + data;
    put(cd, 0x02014b50, 4), put(cd, 20, 2), put(cd, 20, 2), put(cd, 0, 2), put(cd, 0, 2), put(cd, 0, 4), put(cd, crc32(data), 4);
    put(cd, data.size(), 4), put(cd, data.size(), 4), put(cd, name.size(), 2), put(cd, 0, 2), put(cd, 0, 2), put(cd, 0, 2);
    put(cd, 0, 2), put(cd, 0, 4), put(cd, offset, 4);
    cd += name;
  }
  std::uint64_t cd_offset = out.size();
  out += cd;
  put(out, 0x06054b50, 4), put(out, 0, 2), put(out, 0, 2), put(out, files.size(), 2), put(out, files.size(), 2);
  put(out, cd.size(), 4), put(out, cd_offset, 4), put(out, 0, 2);
  return out;
}

// The fixture's archive with some records replaced (by name relative to its root folder).
std::string patched_fixture(const std::string& name, const std::map<std::string, std::string>& replace) {
  ZipReader zip = ZipReader::open(sample(name + ".pt2"));
  std::vector<std::pair<std::string, std::string>> files;
  for (const ZipEntry& e : zip.entries()) {
    std::string rel = e.name.substr(e.name.find('/') + 1);
    auto it = replace.find(rel);
    files.emplace_back(e.name, it != replace.end() ? it->second : zip.read(e));
  }
  return make_zip(files);
}

const std::vector<std::string> kFixtures = {"mlp",          "cnn",     "cnn_decomposed",          "gpt_block",
                                            "llama_block",  "inplace", "inplace_view_decomposed", "dynamic_batch",
                                            "dynamic_unbounded", "masked_softmax", "core_ops", "core_ops_decomposed",
                                            "positions", "sampling", "composites", "composites_decomposed",
                                            "dynamic_numel", "spectral", "spectral_decomposed"};

}  // namespace

TEST_CASE("zip reader: the fixtures' entries are stored and CRC-clean") {
  for (const std::string& name : kFixtures) {
    CAPTURE(name);
    ZipReader zip = ZipReader::open(sample(name + ".pt2"));
    REQUIRE(zip.find(name + "/archive_format"));
    CHECK(zip.read(name + "/archive_format") == "pt2");
    CHECK(zip.read(name + "/archive_version") == "0");
    CHECK(zip.find(name + "/models/model.json"));
    for (const ZipEntry& e : zip.entries()) {
      CHECK(e.method == 0);
      CHECK(zip.read(e).size() == e.size);
    }
  }
}

TEST_CASE("zip reader: truncated, corrupt and non-zip files give a UserError, never a crash") {
  fs::path dir = tmp_dir("pt2_corrupt");
  const std::string good = read_bytes(sample("gpt_block.pt2"));

  SUBCASE("truncated at many lengths") {
    for (std::size_t len : {std::size_t{0}, std::size_t{1}, std::size_t{21}, std::size_t{100}, good.size() / 3,
                            good.size() / 2, good.size() - 100, good.size() - 23, good.size() - 1}) {
      CAPTURE(len);
      fs::path p = dir / "truncated.pt2";
      write_bytes(p, good.substr(0, len));
      std::string msg = user_error_of([&] { Pt2Model::load(p.string()); });
      CHECK(msg.find(p.string()) == 0);
    }
    fs::path p = dir / "half.pt2";
    write_bytes(p, good.substr(0, good.size() / 2));
    CHECK(user_error_of([&] { Pt2Model::load(p.string()); }).find("truncated or corrupt") != std::string::npos);
  }
  SUBCASE("a flipped byte in a weight is a CRC mismatch") {
    ZipReader zip = ZipReader::open(sample("gpt_block.pt2"));
    const ZipEntry* w = zip.find("gpt_block/data/weights/weight_0");
    REQUIRE(w);
    std::string bad = good;
    // The data follows the local header, its name and its extra field (torch pads there for alignment).
    auto u16 = [&](std::size_t o) { return static_cast<unsigned char>(good[o]) | (static_cast<unsigned char>(good[o + 1]) << 8); };
    std::size_t at = w->local_header_offset + 30 + u16(w->local_header_offset + 26) + u16(w->local_header_offset + 28) + 10;
    bad[at] = static_cast<char>(bad[at] ^ 0x55);
    fs::path p = dir / "flipped.pt2";
    write_bytes(p, bad);
    CHECK(user_error_of([&] { Pt2Model::load(p.string()); }).find("CRC mismatch in 'gpt_block/data/weights/weight_0'") !=
          std::string::npos);
  }
  SUBCASE("every single-byte corruption of the central directory is caught or harmless") {
    ZipReader zip = ZipReader::open(sample("mlp.pt2"));
    std::string mlp = read_bytes(sample("mlp.pt2"));
    fs::path p = dir / "cd.pt2";
    for (std::size_t i = mlp.size() - 600; i < mlp.size(); i += 7) {
      std::string bad = mlp;
      bad[i] = static_cast<char>(0xFF);
      write_bytes(p, bad);
      try {
        Pt2Model::load(p.string());
      } catch (const UserError&) {
      }
    }
  }
  SUBCASE("not a zip") {
    fs::path p = dir / "text.pt2";
    write_bytes(p, std::string(200, 'x'));
    CHECK(user_error_of([&] { Pt2Model::load(p.string()); }).find("not a zip archive") != std::string::npos);
    CHECK(user_error_of([&] { Pt2Model::load((dir / "missing.pt2").string()); }).find("cannot open") != std::string::npos);
  }
}

TEST_CASE("archive checks: format, version, schema and layout are refused with a message naming them") {
  fs::path dir = tmp_dir("pt2_archive");
  auto load_patched = [&](const std::map<std::string, std::string>& replace) {
    fs::path p = dir / "patched.pt2";
    write_bytes(p, patched_fixture("mlp", replace));
    return user_error_of([&] { Pt2Model::load(p.string()); });
  };
  CHECK(load_patched({}) == "(no UserError)");  // the rewriter itself keeps the archive valid
  CHECK(load_patched({{"archive_version", "7"}}).find("archive_version 7 is not supported") != std::string::npos);
  CHECK(load_patched({{"archive_format", "zip"}}).find("archive_format is 'zip'") != std::string::npos);
  std::string json = ZipReader::open(sample("mlp.pt2")).read("mlp/models/model.json");
  std::string v9 = json;
  std::size_t at = v9.find("\"major\": 8");
  REQUIRE(at != std::string::npos);
  v9.replace(at, 10, "\"major\": 9");
  CHECK(load_patched({{"models/model.json", v9}}).find("schema version 9.") != std::string::npos);
  CHECK(load_patched({{"models/model.json", "{\"schema_version\": "}}).find("malformed") != std::string::npos);

  fs::path old = dir / "old.pt2";
  write_bytes(old, make_zip({{"m/serialized_exported_program.json", "{}"}, {"m/version", "1"}}));
  CHECK(detect_model_format(old.string()) == ModelFormat::Pt2);
  CHECK(user_error_of([&] { Pt2Model::load(old.string()); }).find("older layout") != std::string::npos);
  fs::path ts = dir / "torchscript.pt";
  write_bytes(ts, make_zip({{"m/data.pkl", "x"}, {"m/code/__torch__.py", "x"}}));
  CHECK(detect_model_format(ts.string()) == ModelFormat::TorchScript);
  CHECK(detect_model_format(std::string(THUNDERC_SAMPLES) + "/mlp.pt") == ModelFormat::TorchScript);
  CHECK(detect_model_format(sample("mlp.pt2")) == ModelFormat::Pt2);
}

TEST_CASE("parser: inputs, weights and their dtypes and shapes") {
  auto mlp = Pt2Model::load(sample("mlp.pt2"));
  CHECK(mlp->input_names() == std::vector<std::string>{"x"});
  CHECK(mlp->format() == "pt2");
  CHECK(mlp->description().find("torch 2.") != std::string::npos);
  const Pt2Program& p = mlp->program();
  CHECK(p.schema_major == 8);
  REQUIRE(p.weights.size() == 6);
  CHECK(p.weights.at("fc1.weight").dtype == DType::Float32);
  CHECK(p.weights.at("fc1.weight").meta.sizes == Shape{32, 16});
  CHECK(p.weights.at("fc1.weight").data->bytes.size() == 32 * 16 * 4);
  CHECK(p.weights.at("fc2.bias").meta.sizes == Shape{8});
  CHECK(p.weights.at("fc1.weight").is_param);
  REQUIRE(mlp->recorded_shapes());
  CHECK(mlp->recorded_shapes()->at(0).shape == Shape{4, 16});

  auto cnn = Pt2Model::load(sample("cnn.pt2"));
  const Pt2Program& c = cnn->program();
  CHECK(c.weights.size() == 11);  // 8 parameters, 3 buffers
  CHECK(c.weights.at("bn1.num_batches_tracked").dtype == DType::Int64);
  CHECK(c.weights.at("bn1.num_batches_tracked").meta.sizes.empty());
  CHECK_FALSE(c.weights.at("bn1.running_mean").is_param);
  int buffers = 0;
  for (const Pt2InputSpec& s : c.input_specs) buffers += s.kind == "buffer";
  CHECK(buffers == 3);
  CHECK(cnn->recorded_shapes()->at(0).shape == Shape{2, 3, 16, 16});

  auto dyn = Pt2Model::load(sample("dynamic_batch.pt2"));
  const Pt2TensorMeta& x = dyn->program().tensor_values.at("x");
  CHECK_FALSE(x.is_static());
  CHECK(x.sizes == Shape{4, 12});
  REQUIRE(dyn->program().range_constraints.size() == 1);
  const auto& range = dyn->program().range_constraints.begin()->second;
  CHECK(range.min == 1);
  CHECK(range.max == 16);

  SUBCASE("declared dimensions: the export's Dim becomes a symbol with its range") {
    auto declared = dyn->declared_dims();
    REQUIRE(declared.has_value());
    REQUIRE(declared->dims.size() == 1);
    CHECK(declared->dims[0].name == "s77");
    CHECK(declared->dims[0].lo == 1);
    CHECK(declared->dims[0].hi == 16);
    REQUIRE(declared->spec.size() == 1);
    CHECK(declared->spec[0].name == "x");
    CHECK(declared->spec[0].symbols == std::vector<std::string>{"s77", ""});
    CHECK(declared->spec[0].shape[1] == 12);
    std::string why = "unchanged";
    CHECK_FALSE(mlp->declared_dims(&why).has_value());
    CHECK(why.empty());  // static: nothing to say
  }
  SUBCASE("declared dimensions narrowed by --dim bounds, and an unbounded Dim bounded by one") {
    auto narrowed = dyn->declared_dims(nullptr, {{"s77", 2, 8}});
    REQUIRE(narrowed.has_value());
    CHECK(narrowed->dims[0].lo == 2);
    CHECK(narrowed->dims[0].hi == 8);
    CHECK(user_error_of([&] { dyn->declared_dims(nullptr, {{"s77", 1, 17}}); }).find("outside the export's range of s77, 1..16") !=
          std::string::npos);
    CHECK(user_error_of([&] { dyn->declared_dims(nullptr, {{"B", 1, 8}}); }).find("no dynamic dimension named B (it has s77)") !=
          std::string::npos);
    auto unbounded = Pt2Model::load(sample("dynamic_unbounded.pt2"));
    std::string why;
    CHECK_FALSE(unbounded->declared_dims(&why).has_value());
    CHECK(why.find("has no upper bound in the export") != std::string::npos);
    CHECK(why.find("--dim s77=LO:HI") != std::string::npos);
    auto bounded = unbounded->declared_dims(nullptr, {{"s77", 1, 64}});
    REQUIRE(bounded.has_value());
    CHECK(bounded->dims[0].lo == 1);
    CHECK(bounded->dims[0].hi == 64);
  }
  SUBCASE("a plain symbol, as torch writes it") {
    CHECK(pt2_plain_symbol("s77") == "s77");
    CHECK(pt2_plain_symbol("Symbol('s77', positive=True, integer=True)") == "s77");
    CHECK(pt2_plain_symbol("2*s77").empty());
    CHECK(pt2_plain_symbol("Symbol('s77')*2").empty());
    CHECK(pt2_plain_symbol("Symbol('s77'").empty());
    CHECK(pt2_plain_symbol("Symbol('a b')").empty());
    CHECK(pt2_plain_symbol("").empty());
  }
  SUBCASE("--shapes: static dimensions are fixed, dynamic ones stay in range") {
    CHECK(dyn->resolve_shapes(parse_shapes_flag("x=9x12"), Device::cpu()).at(0).shape == Shape{9, 12});
    CHECK(user_error_of([&] { dyn->resolve_shapes(parse_shapes_flag("x=17x12"), Device::cpu()); }).find("(1..16)") !=
          std::string::npos);
    CHECK(user_error_of([&] { mlp->resolve_shapes(parse_shapes_flag("x=4x17"), Device::cpu()); }).find("static in the export") !=
          std::string::npos);
    CHECK(user_error_of([&] { mlp->resolve_shapes(parse_shapes_flag("y=4x16"), Device::cpu()); }).find("names input 'y'") !=
          std::string::npos);
  }
}

TEST_CASE("import: every fixture at its example shapes") {
  struct Expect {
    std::string name;
    Shape out;
    std::vector<std::string> ops;
  };
  for (const Expect& e : std::vector<Expect>{
           {"mlp", {4, 8}, {"linear", "layer_norm", "gelu"}},
           {"cnn", {2, 10}, {"conv2d", "batch_norm", "relu", "max_pool2d", "adaptive_avg_pool2d", "linear"}},
           {"cnn_decomposed", {2, 10}, {"conv2d", "batch_norm", "max_pool2d", "mean", "permute", "addmm"}},
           {"gpt_block", {2, 8, 32}, {"layer_norm", "linear", "slice", "scaled_dot_product_attention", "silu", "add"}},
           {"llama_block", {2, 12, 32}, {"rms_norm", "linear", "cat", "neg", "expand", "scaled_dot_product_attention", "silu"}},
           {"dynamic_batch", {4, 6}, {"linear", "relu", "mul", "sub", "softmax"}},
           {"positions", {466}, {"sort", "topk", "prod", "diagonal", "scatter", "scatter_reduce", "index", "index_put",
                                 "masked_fill", "remainder", "upsample_bilinear2d"}},
           {"sampling", {708}, {"max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "grid_sampler_2d", "embedding_bag"}},
           // cdist and pdist as differences and norms, as_strided a gather, col2im a scatter-add (index_put after
           // run_decompositions), batch norm with batch statistics as mean and var, atan2 with out=.
           {"composites", {181}, {"sub", "sqrt", "amax", "pow", "ceil", "isnan", "index_select", "scatter_reduce", "var", "rsqrt", "atan2"}},
           {"composites_decomposed", {181}, {"sub", "sqrt", "amax", "pow", "ceil", "isnan", "index_select", "index_put", "var", "rsqrt", "atan2"}},
           // torch.fft's functions (fft_rfft.default, ...) and after run_decompositions() ATen's primitives
           // (_fft_r2c.default, ...); complex mul/div/abs lowered to real operators on view_as_real pairs.
           {"spectral", {4, 16}, {"fft_r2c", "fft_c2r", "fft_c2c", "view_as_real", "view_as_complex", "hypot", "select"}},
           {"spectral_decomposed", {4, 16}, {"fft_r2c", "fft_c2r", "fft_c2c", "view_as_real", "view_as_complex", "hypot", "select"}}}) {
    CAPTURE(e.name);
    auto m = Pt2Model::load(sample(e.name + ".pt2"));
    std::vector<SharpEdge> edges;
    Trace t = m->import(m->resolve_shapes(*m->recorded_shapes(), Device::cpu()), &edges);
    verify_trace(t, "pt2-import");
    CHECK(t.constructed_by == "pt2-import");
    REQUIRE(t.outputs().size() == 1);
    CHECK(t.type(t.outputs()[0]).shape == e.out);
    auto counts = op_counts(t);
    for (const std::string& op : e.ops) CHECK_MESSAGE(counts.count(op), op);
    CHECK(edges.size() == (e.name == "dynamic_batch" ? 1u : 0u));
    // Weights keep their names as source names; printed names are identifiers.
    // (llama_block's rotary tables are top-level buffers, "cos" and "sin"; the rest are module.weight).
    std::size_t dotted = 0;
    for (ValueId c : t.constants()) {
      CHECK(!t.value(c).source_name.empty());
      dotted += t.value(c).source_name.find('.') != std::string::npos;
      CHECK(t.value(c).name.find('.') == std::string::npos);
    }
    if (e.name != "positions" && e.name.rfind("spectral", 0) != 0) CHECK(dotted > 0);  // these have no submodules
  }
  SUBCASE("the dynamic batch at another size") {
    auto m = Pt2Model::load(sample("dynamic_batch.pt2"));
    Trace t = m->import(m->resolve_shapes(parse_shapes_flag("x=11x12"), Device::cpu()));
    CHECK(t.type(t.outputs()[0]).shape == Shape{11, 6});
  }
}

TEST_CASE("import: a float the export wrote as \"-Infinity\" (masked_fill with -inf) is -inf") {
  auto m = Pt2Model::load(sample("masked_softmax.pt2"));
  Trace t = m->import(m->resolve_shapes(*m->recorded_shapes(), Device::cpu()));
  std::size_t fills = 0;
  for (const BoundSymbol& s : t.symbols()) {
    if (s.op->name != "masked_fill") continue;
    ++fills;
    REQUIRE(s.inputs.size() == 3);
    REQUIRE(s.inputs[2].kind == OperandKind::Scalar);
    const double v = s.inputs[2].scalar.to_double();
    CHECK(std::isinf(v));
    CHECK(v < 0);
  }
  CHECK(fills == 1);
}

TEST_CASE("import: in-place ops (relu_, add_, hardtanh_, dropout_) become their functional forms") {
  auto m = Pt2Model::load(sample("inplace.pt2"));
  Trace t = m->import(m->resolve_shapes(*m->recorded_shapes(), Device::cpu()));
  verify_trace(t, "pt2-import");
  // fc1 -> relu -> fc2 -> + x -> hardtanh -> (dropout: nothing at eval) -> unflatten (a reshape) -> sum.
  std::vector<std::string> ops;
  for (const BoundSymbol& s : t.symbols()) ops.push_back(s.op->name);
  CHECK(ops == std::vector<std::string>{"linear", "relu", "linear", "add", "hardtanh", "reshape", "sum"});
  const BoundSymbol& add = t.symbols()[3];
  CHECK(add.inputs[0].value == t.symbols()[2].outputs[0]);  // reads fc2's result, the tensor updated in place
  CHECK(add.inputs[1].value == t.inputs()[0]);
  CHECK(t.type(t.symbols()[5].outputs[0]).shape == Shape{3, 4, 4});  // unflatten(-1, (4, -1))
}

TEST_CASE("import: an in-place update through a view of a tensor read later is refused, naming the remedy") {
  auto m = Pt2Model::load(sample("inplace_view.pt2"));
  std::string msg = user_error_of([&] { m->import(m->resolve_shapes(*m->recorded_shapes(), Device::cpu())); });
  CHECK(msg.find("aten.add_.Tensor at export_samples.py:") != std::string::npos);
  CHECK(msg.find("writes in place into 'select', a view of 'mul' read later") != std::string::npos);
  CHECK(msg.find("run_decompositions()") != std::string::npos);
  // The decomposed export (inplace_view_decomposed) compiles and matches: see the binary test below.
  auto d = Pt2Model::load(sample("inplace_view_decomposed.pt2"));
  Trace t = d->import(d->resolve_shapes(*d->recorded_shapes(), Device::cpu()));
  auto counts = op_counts(t);
  CHECK(counts.count("where"));
}

// Each rewrite refuses what its gather or scatter could not compute as PyTorch does, with the reason (the
// composites fixture, one argument patched each time).
TEST_CASE("import: cdist, as_strided and col2im refuse arguments they cannot compute, and training batch norm with running statistics") {
  const std::string json = ZipReader::open(sample("composites.pt2")).read("composites/models/model.json");
  auto import_patched = [&](const std::string& from, const std::string& to) {
    std::string patched = json;
    const std::size_t at = patched.find(from);
    REQUIRE(at != std::string::npos);
    patched.replace(at, from.size(), to);
    fs::path p = tmp_dir("pt2_composites") / "patched.pt2";
    write_bytes(p, patched_fixture("composites", {{"models/model.json", patched}}));
    return user_error_of([&] {
      auto m = Pt2Model::load(p.string());
      m->import(m->resolve_shapes(*m->recorded_shapes(), Device::cpu()));
    });
  };
  const std::string p_half = "\"name\": \"p\", \"arg\": {\"as_float\": 0.5}";
  CHECK(import_patched(p_half, p_half) == "(no UserError)");  // the patching itself keeps the program valid
  CHECK(import_patched(p_half, "\"name\": \"p\", \"arg\": {\"as_float\": -1.0}").find("p must be a non-negative number") !=
        std::string::npos);
  std::string msg = import_patched("\"name\": \"storage_offset\", \"arg\": {\"as_int\": 1}",
                                   "\"name\": \"storage_offset\", \"arg\": {\"as_int\": 30}");
  CHECK(msg.find("aten.as_strided.default at export_samples.py:") != std::string::npos);
  CHECK(msg.find("reads element 37 of a tensor of 32 elements") != std::string::npos);
  msg = import_patched("\"output_size\", \"arg\": {\"as_ints\": [3, 3]}", "\"output_size\", \"arg\": {\"as_ints\": [5, 5]}");
  CHECK(msg.find("aten.col2im.default") != std::string::npos);
  CHECK(msg.find("expects 16 blocks (the last dimension) for these sizes, got 4") != std::string::npos);
  msg = import_patched("\"kernel_size\", \"arg\": {\"as_ints\": [2, 2]}", "\"kernel_size\", \"arg\": {\"as_ints\": [3, 2]}");
  CHECK(msg.find("divisible by the kernel's size 6") != std::string::npos);

  auto m = Pt2Model::load(sample("batch_norm_training.pt2"));
  msg = user_error_of([&] { m->import(m->resolve_shapes(*m->recorded_shapes(), Device::cpu())); });
  CHECK(msg.find("in place") != std::string::npos);
  CHECK(msg.find("eval mode") != std::string::npos);
}

// rand, randn, randn_like and randperm are sampled once at compile time from a generator seeded by the node:
// one "random" sharp edge each, the same values every import, and the distributions they name (4000 uniform
// samples: mean 0.5 +- 0.03, in [0, 1); 4000 normal ones: mean 0 +- 0.1, std 1 +- 0.1; a permutation of 0..49).
TEST_CASE("import: random operators are sampled at compile time, deterministically, with a sharp edge each") {
  auto m = Pt2Model::load(sample("random_ops.pt2"));
  std::vector<SharpEdge> edges;
  Trace t = m->import(m->resolve_shapes(*m->recorded_shapes(), Device::cpu()), &edges);
  Trace again = m->import(m->resolve_shapes(*m->recorded_shapes(), Device::cpu()));
  REQUIRE(edges.size() == 4);
  for (const SharpEdge& e : edges) {
    CHECK(e.kind == "random");
    CHECK(e.message.find("sampled once at compile time") != std::string::npos);
    CHECK(e.location.find("export_samples.py:") != std::string::npos);
  }
  std::map<std::string, std::vector<ValueId>> by_name;
  for (ValueId c : t.constants()) by_name[t.value(c).source_name].push_back(c);
  REQUIRE(by_name["rand"].size() == 1);
  REQUIRE(by_name["randn"].size() == 2);  // randn, randn_like
  REQUIRE(by_name["randperm"].size() == 1);
  for (std::size_t i = 0; i < t.constants().size(); ++i)
    CHECK(t.value(t.constants()[i]).data->bytes == again.value(again.constants()[i]).data->bytes);
  auto floats = [&](ValueId v) {
    const auto& b = t.value(v).data->bytes;
    std::vector<double> out;
    if (t.type(v).dtype == DType::Float64)
      for (std::size_t i = 0; i < b.size(); i += 8) { double d; std::memcpy(&d, &b[i], 8); out.push_back(d); }
    else
      for (std::size_t i = 0; i < b.size(); i += 4) { float f; std::memcpy(&f, &b[i], 4); out.push_back(f); }
    return out;
  };
  const std::vector<double> u = floats(by_name["rand"][0]);
  REQUIRE(u.size() == 4000);
  double sum = 0;
  for (double x : u) {
    CHECK((x >= 0 && x < 1));
    sum += x;
  }
  CHECK(sum / 4000 == doctest::Approx(0.5).epsilon(0.06));
  ValueId normal = t.type(by_name["randn"][0]).dtype == DType::Float64 ? by_name["randn"][0] : by_name["randn"][1];
  CHECK(t.type(normal).dtype == DType::Float64);  // randn(..., dtype=torch.float64)
  const std::vector<double> g = floats(normal);
  REQUIRE(g.size() == 4000);
  double mean = 0, sq = 0;
  for (double x : g) mean += x / 4000;
  for (double x : g) sq += (x - mean) * (x - mean) / 4000;
  CHECK(std::fabs(mean) < 0.1);
  CHECK(std::fabs(std::sqrt(sq) - 1) < 0.1);
  const ValueId perm = by_name["randperm"][0];
  CHECK(t.type(perm).dtype == DType::Int64);
  std::vector<std::int64_t> p(50);
  REQUIRE(t.value(perm).data->bytes.size() == 50 * 8);
  std::memcpy(p.data(), t.value(perm).data->bytes.data(), 50 * 8);
  std::vector<std::int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (std::int64_t i = 0; i < 50; ++i) CHECK(sorted[static_cast<std::size_t>(i)] == i);
  CHECK(p != sorted);  // shuffled
}

TEST_CASE("import: unsupported operators are listed together with counts and locations") {
  auto m = Pt2Model::load(sample("unsupported.pt2"));
  std::string msg = user_error_of([&] { m->import(m->resolve_shapes(*m->recorded_shapes(), Device::cpu())); });
  CHECK(msg.find("2 operators are not supported by thunderc (3 uses)") != std::string::npos);
  CHECK(msg.find("aten.cummax.default x2  at export_samples.py:") != std::string::npos);
  CHECK(msg.find("aten.median.dim x1  at export_samples.py:") != std::string::npos);
  CHECK(msg.find("(node cummax_1)") != std::string::npos);
}

#ifdef THUNDERC_BIN
namespace {
thunderc_test::ProcessResult run_thunderc(const std::vector<std::string>& args, const std::string& cwd = "") {
  return thunderc_test::run_program(THUNDERC_BIN, args, cwd);
}

// The 4 rows of a row-independent model's fixture (input or PyTorch's output), repeated to n rows: PyTorch's
// values at batch size n.
// Compiles a fixture with a dynamic batch --standalone into `so`: one symbolic variant over s77 in `range`.
void compile_one_symbolic_variant(const std::string& fixture, const std::string& so, const std::string& range) {
  auto r = run_thunderc({sample(fixture + ".pt2"), "-o", so, "--standalone"});
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("1 variant,") != std::string::npos);
  CHECK(r.out.find("symbolic sizes: s77 in " + range) != std::string::npos);
}

// `thunderc run so input --expect expected` within the tolerances.
void check_run_matches(const std::string& so, const std::string& input, const std::string& expected, const std::string& rtol,
                       const std::string& atol, const fs::path& dir) {
  auto run = run_thunderc({"run", so, input, "--expect", expected, "--rtol", rtol, "--atol", atol, "--output-dir", dir.string()});
  INFO(run.out);
  CHECK(run.code == 0);
  CHECK(run.out.find("output0: matches") != std::string::npos);
}

thunderc::HostTensor repeat_rows(const thunderc::HostTensor& t, int64_t n) {
  const int64_t w = t.shape()[1];
  std::vector<float> v(static_cast<std::size_t>(n * w));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < w; ++j) v[i * w + j] = t.data<float>()[(i % 4) * w + j];
  return thunderc::HostTensor::from_vector<float>({n, w}, v);
}
}  // namespace

// --autograd on torch.export programs: `thunderc grad` gives every parameter's gradient and the input's, which
// must match torch 2.x autograd through the same program (samples/pt2/grads/<name>/, written by
// samples/pt2_gradients.py from the committed .pt2 files) within |ours - ref| <= 1e-5 * max(1, max |ref|) +
// 1e-5 * |ref| (float32 through a few layers; the tolerance of tests/e2e/training_test.cpp).
TEST_CASE("thunderc binary: --autograd on .pt2 fixtures: gradients match torch 2.x autograd") {
  for (const std::string name : {"mlp", "cnn", "gpt_block", "llama_block"}) {
    CAPTURE(name);
    const fs::path dir = tmp_dir("pt2_grad_" + name), ref = fs::path(THUNDERC_SAMPLES) / "pt2" / "grads" / name;
    const std::string so = (dir / (name + ".so")).string();
    auto r = run_thunderc({sample(name + ".pt2"), "--autograd", "--requires-grad", "x", "-o", so});
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto g = run_thunderc({"grad", so, sample(name + ".input.npy"), "--grad-output", (ref / "grad_output0.npy").string(),
                           "--output-dir", (dir / "out").string()});
    INFO(g.out);
    REQUIRE(g.code == 0);
    std::size_t refs = 0, ours = 0;
    for (const auto& e : fs::directory_iterator(dir / "out"))
      ours += e.path().filename().string().rfind("grad_", 0) == 0;
    for (const auto& e : fs::directory_iterator(ref)) {
      const std::string file = e.path().filename().string();
      if (file == "grad_output0.npy") continue;
      CAPTURE(file);
      ++refs;
      REQUIRE(fs::exists(dir / "out" / file));
      const thunderc::HostTensor want = thunderc::npy::load(e.path().string());
      const thunderc::HostTensor got = thunderc::npy::load((dir / "out" / file).string());
      REQUIRE(got.shape() == want.shape());
      double scale = 1, worst = 0;
      for (std::size_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::abs(double(want.data<float>()[i])));
      for (std::size_t i = 0; i < want.numel(); ++i) {
        const double w = want.data<float>()[i], d = std::abs(double(got.data<float>()[i]) - w);
        worst = std::max(worst, d - (1e-5 * scale + 1e-5 * std::abs(w)));
      }
      CHECK_MESSAGE(worst <= 0, file << ": exceeds the tolerance by " << worst << " (scale " << scale << ")");
    }
    CHECK(refs > 2);
    CHECK(ours == refs);  // every gradient thunderc wrote has a reference, and the other way round
  }
}

TEST_CASE("thunderc binary: every .pt2 fixture compiles without --shapes and matches PyTorch (rtol 1e-4, atol 1e-5)") {
  fs::path dir = tmp_dir("pt2_e2e");
  for (const std::string& name : kFixtures) {
    CAPTURE(name);
    std::string so = (dir / (name + ".so")).string();
    auto r = run_thunderc({sample(name + ".pt2"), "-o", so});
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto run = run_thunderc({"run", so, sample(name + ".input.npy"), "--expect", sample(name + ".expected.npy"), "--rtol", "1e-4",
                         "--atol", "1e-5", "--output-dir", dir.string()});
    INFO(run.out);
    CHECK(run.code == 0);
    CHECK(run.out.find("output0: matches") != std::string::npos);
    std::string manifest = read_bytes(dir / (name + ".json"));
    CHECK(manifest.find("\"frontend\": \"pt2\"") != std::string::npos);
  }
  SUBCASE("the orderings, scatters, indexing, sampling and FFT fixtures compile --standalone (cpp alone)") {
    for (const std::string name : {"positions", "sampling", "composites", "composites_decomposed", "spectral", "spectral_decomposed"}) {
      CAPTURE(name);
      const std::string so = (dir / (name + "_standalone.so")).string();
      auto r = run_thunderc({sample(name + ".pt2"), "-o", so, "--standalone"});
      INFO(r.out);
      REQUIRE(r.code == 0);
      auto run = run_thunderc({"run", so, sample(name + ".input.npy"), "--expect", sample(name + ".expected.npy"), "--rtol",
                               "1e-4", "--atol", "1e-5", "--output-dir", dir.string()});
      INFO(run.out);
      CHECK(run.code == 0);
    }
  }
  SUBCASE("--shapes within the dynamic range makes variants") {
    // Each with a bounded variant ahead of it: oneDNN fuses the linear's relu for bounded inputs.
    auto r = run_thunderc({sample("dynamic_batch.pt2"), "-o", (dir / "db.so").string(), "--shapes", "x=1x12", "--shapes", "x=16x12"});
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(r.out.find("4 variants") != std::string::npos);
    CHECK(r.out.find("variant 2 is bounded") != std::string::npos);
    r = run_thunderc({sample("dynamic_batch.pt2"), "-o", (dir / "db.so").string(), "--shapes", "x=1x12", "--shapes",
                      "x=16x12", "--bounded-variants", "off"});
    CHECK(r.code == 0);
    CHECK(r.out.find("2 variants") != std::string::npos);
  }
  SUBCASE("examine names the frontend") {
    auto r = run_thunderc({"examine", sample("gpt_block.pt2")});
    CHECK(r.code == 0);
    CHECK(r.out.find("(torch.export, written by torch 2.") != std::string::npos);
    CHECK(r.out.find("scaled_dot_product_attention") != std::string::npos);
  }
}

// The export's Dim("B", min=1, max=16) (serialized as s77) becomes one symbolic variant on the native
// executors. The model treats rows independently, so the fixture's rows, repeated to any batch size, give
// PyTorch's outputs at that size.
TEST_CASE("thunderc binary: a dynamic batch compiles to one symbolic variant, --standalone, matching at every size") {
  fs::path dir = tmp_dir("pt2_symbolic");
  std::string so = (dir / "db.so").string();
  auto r = run_thunderc({sample("dynamic_batch.pt2"), "-o", so, "--executors", "cpp,blas", "--standalone"});
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("1 variant,") != std::string::npos);
  CHECK(r.out.find("symbolic sizes: s77 in 1..16") != std::string::npos);
  std::string manifest = read_bytes(dir / "db.json");
  CHECK(manifest.find("\"cache\": \"symbolic values\"") != std::string::npos);
  CHECK(manifest.find("\"s77\"") != std::string::npos);

  thunderc::HostTensor x4 = thunderc::npy::load(sample("dynamic_batch.input.npy"));
  thunderc::HostTensor y4 = thunderc::npy::load(sample("dynamic_batch.expected.npy"));
  REQUIRE(x4.shape() == std::vector<int64_t>{4, 12});
  REQUIRE(y4.shape() == std::vector<int64_t>{4, 6});
  for (int64_t b : {1, 3, 4, 7, 16}) {
    CAPTURE(b);
    std::string in = (dir / ("x" + std::to_string(b) + ".npy")).string();
    std::string want = (dir / ("y" + std::to_string(b) + ".npy")).string();
    thunderc::npy::save(in, repeat_rows(x4, b));
    thunderc::npy::save(want, repeat_rows(y4, b));
    auto run = run_thunderc({"run", so, in, "--expect", want, "--rtol", "1e-4", "--atol", "1e-5", "--output-dir", dir.string()});
    INFO(run.out);
    CHECK(run.code == 0);
    CHECK(run.out.find("output0: matches") != std::string::npos);
  }
  SUBCASE("a batch outside the export's range is refused, naming the dimension and the range") {
    std::string in = (dir / "x17.npy").string();
    thunderc::npy::save(in, repeat_rows(x4, 17));
    auto run = run_thunderc({"run", so, in, "--output-dir", dir.string()});
    INFO(run.out);
    CHECK(run.code == 1);
    CHECK(run.out.find("s77") != std::string::npos);
    CHECK(run.out.find("17") != std::string::npos);
    CHECK(run.out.find("1..16") != std::string::npos);
  }
  SUBCASE("--cache \"constant values\" specializes at the example size instead") {
    auto c = run_thunderc({sample("dynamic_batch.pt2"), "-o", (dir / "fixed.so").string(), "--cache", "constant values"});
    INFO(c.out);
    CHECK(c.code == 0);
    CHECK(c.out.find("symbolic sizes") == std::string::npos);
    CHECK(read_bytes(dir / "fixed.json").find("\"cache\": \"constant values\"") != std::string::npos);
  }
}

// dynamic_numel.pt2: x.reshape(x.numel()) * 2 under Dim("B", min=1, max=16), which the export writes with
// aten.sym_numel; one symbolic variant whose output length follows the batch.
TEST_CASE("thunderc binary: sym_numel under a dynamic batch gives one symbolic variant, right at every size") {
  fs::path dir = tmp_dir("pt2_numel");
  const std::string so = (dir / "numel.so").string();
  compile_one_symbolic_variant("dynamic_numel", so, "1..16");
  for (int64_t b : {1, 5, 16}) {
    CAPTURE(b);
    std::vector<float> x(static_cast<std::size_t>(b * 4)), y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = 0.25f * static_cast<float>(i) - 3.0f;
      y[i] = 2.0f * x[i];
    }
    const std::string in = (dir / ("x" + std::to_string(b) + ".npy")).string(), want = (dir / "y.npy").string();
    thunderc::npy::save(in, thunderc::HostTensor::from_vector<float>({b, 4}, x));
    thunderc::npy::save(want, thunderc::HostTensor::from_vector<float>({b * 4}, y));
    check_run_matches(so, in, want, "0", "0", dir);
  }
}

// dynamic_composites.pt2: cdist and nn.BatchNorm1d(track_running_stats=False) over Dim("B", min=2, max=16); the
// batch statistics divide by the run-time batch size. PyTorch's outputs at batch 4 (the example) and 7.
TEST_CASE("thunderc binary: cdist and batch-statistics batch norm over a dynamic batch give one symbolic variant") {
  fs::path dir = tmp_dir("pt2_dynamic_composites");
  const std::string so = (dir / "dc.so").string();
  compile_one_symbolic_variant("dynamic_composites", so, "2..16");
  for (const std::string name : {"dynamic_composites", "dynamic_composites.b7"}) {
    CAPTURE(name);
    check_run_matches(so, sample(name + ".input.npy"), sample(name + ".expected.npy"), "1e-4", "1e-5", dir);
  }
}

// dynamic_dense_block.pt2: two DenseNet dense layers over Dim("B", min=1, max=8); each concatenation feeds a
// batch norm and relu that the loop lowering stores piece by piece (codegen/loops/region_lowering.h), so the
// symbolic variant's merged code holds one nest per piece. PyTorch's outputs at batch 2 (the example) and 5.
TEST_CASE("thunderc binary: DenseNet-style concatenations over a dynamic batch give one symbolic variant") {
  fs::path dir = tmp_dir("pt2_dynamic_dense_block");
  const std::string so = (dir / "db.so").string();
  compile_one_symbolic_variant("dynamic_dense_block", so, "1..8");
  for (const std::string name : {"dynamic_dense_block", "dynamic_dense_block.b5"}) {
    CAPTURE(name);
    check_run_matches(so, sample(name + ".input.npy"), sample(name + ".expected.npy"), "1e-4", "1e-5", dir);
  }
}

// dynamic_unbounded.pt2: the dynamic_batch model with Dim("B") and no bounds (torch records s77 in 0..inf). It
// compiles specialized at its example size, with a sharp edge that names the remedy; --dim s77=1:32 makes one
// symbolic variant, --standalone, matching PyTorch at every size (rows repeated, as above).
TEST_CASE("thunderc binary: --dim bounds an unbounded export Dim into one symbolic variant") {
  fs::path dir = tmp_dir("pt2_unbounded");
  auto fixed = run_thunderc({sample("dynamic_unbounded.pt2"), "-o", (dir / "fixed.so").string(), "--sharp-edges", "warn"});
  INFO(fixed.out);
  REQUIRE(fixed.code == 0);
  CHECK(fixed.out.find("symbolic sizes") == std::string::npos);
  CHECK(fixed.out.find("s77 in 0..inf); this variant is specialized to 4 (--dim s77=LO:HI compiles one symbolic variant") !=
        std::string::npos);

  std::string so = (dir / "sym.so").string();
  auto r = run_thunderc({sample("dynamic_unbounded.pt2"), "-o", so, "--dim", "s77=1:32", "--standalone"});
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("symbolic sizes: s77 in 1..32") != std::string::npos);
  CHECK(read_bytes(dir / "sym.json").find("\"cache\": \"symbolic values\"") != std::string::npos);
  thunderc::HostTensor x4 = thunderc::npy::load(sample("dynamic_unbounded.input.npy"));
  thunderc::HostTensor y4 = thunderc::npy::load(sample("dynamic_unbounded.expected.npy"));
  for (int64_t b : {1, 4, 9, 32, 33}) {
    CAPTURE(b);
    std::string in = (dir / ("x" + std::to_string(b) + ".npy")).string();
    std::string want = (dir / ("y" + std::to_string(b) + ".npy")).string();
    thunderc::npy::save(in, repeat_rows(x4, b));
    thunderc::npy::save(want, repeat_rows(y4, b));
    auto run = run_thunderc({"run", so, in, "--expect", want, "--rtol", "1e-4", "--atol", "1e-5", "--output-dir", dir.string()});
    INFO(run.out);
    if (b <= 32) {
      CHECK(run.code == 0);
      CHECK(run.out.find("output0: matches") != std::string::npos);
    } else {  // beyond --dim's bound
      CHECK(run.code == 1);
      CHECK(run.out.find("1..32") != std::string::npos);
    }
  }
  SUBCASE("--dim names a symbol the export does not have, or contradicts --cache") {
    auto bad = run_thunderc({sample("dynamic_unbounded.pt2"), "-o", so, "--dim", "B=1:8"});
    CHECK(bad.code == 1);
    CHECK(bad.out.find("--dim B: the export has no dynamic dimension named B (it has s77)") != std::string::npos);
    auto none = run_thunderc({sample("mlp.pt2"), "-o", so, "--dim", "s77=1:8"});
    CHECK(none.code == 1);
    CHECK(none.out.find("(it has none)") != std::string::npos);
    auto cache = run_thunderc({sample("dynamic_unbounded.pt2"), "-o", so, "--dim", "s77=1:8", "--cache", "constant values"});
    CHECK(cache.code == 1);
    CHECK(cache.out.find("contradicts") != std::string::npos);
  }
}

TEST_CASE("thunderc binary: an input name with a newline and quotes from the file is printed escaped") {
  // The input "x" renamed everywhere in the program to x"<newline>evil: examine quotes and escapes it, the
  // compile still works (generated code uses sanitized identifiers only).
  ZipReader zip = ZipReader::open(sample("mlp.pt2"));
  std::string program;
  for (const ZipEntry& e : zip.entries())
    if (e.name.size() > 17 && e.name.substr(e.name.size() - 17) == "models/model.json") program = zip.read(e);
  REQUIRE_FALSE(program.empty());
  const std::string from = "\"x\"", to = "\"x\\\"\\nevil\"";
  std::size_t n = 0;
  for (std::size_t at = program.find(from); at != std::string::npos; at = program.find(from, at + to.size()), ++n)
    program.replace(at, from.size(), to);
  REQUIRE(n > 0);
  fs::path dir = tmp_dir("pt2_names");
  write_bytes(dir / "odd.pt2", patched_fixture("mlp", {{"models/model.json", program}}));
  auto r = run_thunderc({"examine", (dir / "odd.pt2").string()});
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(r.out.find("Inputs: 'x\"\\nevil'") != std::string::npos);
  CHECK(r.out.find("evil\n") == std::string::npos);  // never a raw newline from the file
  auto c = run_thunderc({(dir / "odd.pt2").string(), "-o", (dir / "odd.so").string()});
  INFO(c.out);
  CHECK(c.code == 0);
}

TEST_CASE("thunderc binary: a .pt2 with unsupported operators lists them and exits 1") {
  fs::path dir = tmp_dir("pt2_unsupported");
  auto r = run_thunderc({sample("unsupported.pt2"), "-o", (dir / "u.so").string()});
  CHECK(r.code == 1);
  CHECK(r.out.find("2 operators are not supported by thunderc (3 uses)") != std::string::npos);
  CHECK(r.out.find("aten.cummax.default x2") != std::string::npos);
  CHECK(r.out.find("aten.median.dim x1") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "u.so"));
}
#endif
