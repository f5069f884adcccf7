// TorchScript frontend tests. Parity of output types with LibTorch on every sample; errors and sharp edges
// on small modules defined here with TorchScript source.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "doctest_with_torch.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/frontend/op_coverage.h"
#include "core/frontend/torchscript.h"
#include "core/ir/error.h"
#include "core/ir/printer.h"
#include "core/ir/verifier.h"

using namespace thunderc;
namespace fs = std::filesystem;

namespace {

std::string sample(const std::string& name) { return std::string(THUNDERC_SAMPLES) + "/" + name; }

std::map<std::string, int> op_counts(const Trace& t) {
  std::map<std::string, int> counts;
  for (const BoundSymbol& s : t.symbols()) ++counts[s.op->name];
  return counts;
}

// Imports with the recorded shapes and checks the output types against LibTorch's forward.
Trace import_and_compare(const std::string& name) {
  TorchScriptModel model = TorchScriptModel::load(sample(name));
  REQUIRE(model.recorded_shapes().has_value());
  std::vector<TensorType> types = model.resolve_shapes(*model.recorded_shapes(), Device::cpu());
  Trace t = model.import(types);
  verify_trace(t, "torchscript-import");

  torch::jit::Module ref = torch::jit::load(sample(name));
  ref.eval();
  std::vector<c10::IValue> args;
  for (const TensorType& type : types) args.push_back(torch::randn(type.shape));
  c10::IValue out = ref.forward(args);
  std::vector<at::Tensor> outs;
  if (out.isTensor()) outs.push_back(out.toTensor());
  else
    for (const auto& e : out.toTupleRef().elements()) outs.push_back(e.toTensor());
  REQUIRE(outs.size() == t.outputs().size());
  for (std::size_t i = 0; i < outs.size(); ++i) {
    CHECK(Shape(outs[i].sizes().begin(), outs[i].sizes().end()) == t.type(t.outputs()[i]).shape);
    CHECK(t.type(t.outputs()[i]).dtype == DType::Float32);
  }
  return t;
}

// Saves a module whose forward is `source` (TorchScript) and returns its path.
std::string save_module(const std::string& name, const std::string& source,
                        const std::function<void(torch::jit::Module&)>& setup = nullptr) {
  torch::jit::Module m("__torch__." + name);
  if (setup) setup(m);
  m.define(source);
  fs::create_directories(THUNDERC_TEST_TMP);
  std::string path = std::string(THUNDERC_TEST_TMP) + "/" + name + ".pt";
  m.save(path);
  return path;
}

Trace import_file(const std::string& path, Shape shape, std::vector<SharpEdge>* edges = nullptr) {
  TorchScriptModel model = TorchScriptModel::load(path);
  Trace t = model.import({TensorType{DType::Float32, std::move(shape), Device::cpu()}}, edges);
  verify_trace(t, "torchscript-import");
  return t;
}

std::string import_error(const std::string& path, Shape shape) {
  try {
    import_file(path, std::move(shape));
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no error>";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<std::string> kinds(const std::vector<SharpEdge>& edges) {
  std::vector<std::string> k;
  for (const auto& e : edges) k.push_back(e.kind);
  return k;
}

}  // namespace

TEST_CASE("every sample imports with LibTorch's output shapes and the expected operators") {
  SUBCASE("mlp") {
    auto c = op_counts(import_and_compare("mlp.pt"));
    CHECK(c == std::map<std::string, int>{{"linear", 2}, {"layer_norm", 1}, {"gelu", 1}});
  }
  SUBCASE("mlp_scripted") {
    auto c = op_counts(import_and_compare("mlp_scripted.pt"));
    CHECK(c == std::map<std::string, int>{{"linear", 2}, {"layer_norm", 1}, {"gelu", 1}});
  }
  SUBCASE("cnn") {
    auto c = op_counts(import_and_compare("cnn.pt"));
    CHECK(c["conv2d"] == 6);
    CHECK(c["batch_norm"] == 6);
    CHECK(c["max_pool2d"] == 2);
    CHECK(c["adaptive_avg_pool2d"] == 1);
    CHECK(c["add"] == 1);
    CHECK(c["linear"] == 1);
  }
  SUBCASE("gpt_block") {
    Trace t = import_and_compare("gpt_block.pt");
    auto c = op_counts(t);
    CHECK(c["linear"] == 4);
    CHECK(c["layer_norm"] == 2);
    CHECK(c["softmax"] == 1);
    CHECK(c["masked_fill"] == 1);
    CHECK(c["matmul"] == 2);
    CHECK(c["gelu"] == 1);
    CHECK(c.count("dropout") == 0);  // identity at inference
    // The causal mask and the shape arithmetic were evaluated at compile time.
    CHECK(c.count("eq") == 0);
  }
  SUBCASE("gpt_block_scripted takes the 3-D branch of its `if x.dim() == 3`") {
    auto c = op_counts(import_and_compare("gpt_block_scripted.pt"));
    CHECK(c["linear"] == 4);
    CHECK(c.count("reshape") == 1);
  }
}

TEST_CASE("unsupported operators are listed together with counts and locations") {
  std::string path = save_module("Unsupported", R"(
def forward(self, x):
    a = torch.cumprod(x, 0)
    b = torch.cumprod(a, 1)
    return torch.trace(b) + torch.relu(x)
)");
  std::string err = import_error(path, {3, 3});
  INFO(err);
  CHECK(contains(err, "2 operators are not supported"));
  CHECK(contains(err, "aten::cumprod x2"));
  CHECK(contains(err, "aten::trace x1"));
  CHECK(!contains(err, "relu"));
}

TEST_CASE("data-dependent control flow and values are rejected clearly") {
  SUBCASE("branching on tensor data") {
    std::string path = save_module("DataBranch", R"(
def forward(self, x):
    if bool(x.sum() > 0):
        return x * 2
    return x
)");
    CHECK(contains(import_error(path, {4}), "data-dependent"));
  }
  SUBCASE("operators whose output shape depends on the values: listed with the reason") {
    std::string path = save_module("DataDependentOps", R"(
def forward(self, x):
    return torch.nonzero(x).float().sum() + torch.masked_select(x, x > 0).sum()
)");
    std::string err = import_error(path, {4});
    INFO(err);
    CHECK(contains(err, "aten::nonzero x1"));
    CHECK(contains(err, "aten::masked_select x1"));
    CHECK(contains(err, "depends on the input's values"));
  }
  SUBCASE("a shape read from tensor data") {
    std::string path = save_module("DataShape", R"(
def forward(self, x):
    n = int(x[0])
    return x.reshape([n, -1])
)");
    CHECK(contains(import_error(path, {4}), "data-dependent"));
  }
}

TEST_CASE("files that are not TorchScript models give clear errors") {
  fs::create_directories(THUNDERC_TEST_TMP);
  auto load_error = [](const std::string& path) {
    try {
      TorchScriptModel::load(path);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  CHECK(contains(load_error(std::string(THUNDERC_TEST_TMP) + "/missing.pt"), "cannot open"));
  std::string text = std::string(THUNDERC_TEST_TMP) + "/text.pt";
  std::ofstream(text) << "hello";
  CHECK(contains(load_error(text), "not a TorchScript model"));
  std::string corrupt = std::string(THUNDERC_TEST_TMP) + "/corrupt.pt";
  std::ofstream(corrupt) << "PK\x03\x04garbage that is not a zip archive";
  CHECK(contains(load_error(corrupt), "cannot load it as a TorchScript module"));
  // A real model cut in half.
  std::ifstream in(sample("mlp.pt"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string truncated = std::string(THUNDERC_TEST_TMP) + "/truncated.pt";
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  CHECK(contains(load_error(truncated), "cannot load it as a TorchScript module"));
}

TEST_CASE("in-place operators are functionalized") {
  SUBCASE("updates of intermediate values") {
    std::string path = save_module("InplaceChain", R"(
def forward(self, x):
    y = x * 2
    y.add_(1)
    y.relu_()
    return y + x
)");
    Trace t = import_file(path, {3});
    auto c = op_counts(t);
    CHECK(c == std::map<std::string, int>{{"mul", 1}, {"add", 2}, {"relu", 1}});
    CHECK(contains(print_trace(t), "add(t2, x)"));  // the final add reads the updated y
  }
  SUBCASE("an update of a clone leaves the original") {
    std::string path = save_module("InplaceClone", R"(
def forward(self, x):
    z = x.clone()
    z.floor_()
    return x + z
)");
    Trace t = import_file(path, {3});
    CHECK(op_counts(t) == std::map<std::string, int>{{"reshape", 1}, {"floor", 1}, {"add", 1}});
    CHECK(contains(print_trace(t), "add(x, t1)"));  // x itself, not its floor
  }
  SUBCASE("an update through a view writes back into the base (alias updates)") {
    std::string path = save_module("InplaceView", R"(
def forward(self, x):
    y = x * 2
    y[:, 0] = 5.0
    v = y.view([-1])
    v.add_(1)
    return y
)");
    auto c = op_counts(import_file(path, {2, 3}));
    CHECK(c["select_scatter"] == 1);  // y[:, 0] = 5 writes back into y
    CHECK(c["reshape"] >= 2);         // v = y.view(-1), and v's update viewed back as y
    TorchScriptModel model = TorchScriptModel::load(path);
    Trace skipped = model.import({TensorType{DType::Float32, {2, 3}, Device::cpu()}}, nullptr, /*alias_updates=*/false);
    CHECK(op_counts(skipped).count("select_scatter") == 0);
  }
}

TEST_CASE("sharp edges are recorded for each construct") {
  auto edges_of = [](const std::string& path, Shape shape) {
    std::vector<SharpEdge> edges;
    import_file(path, std::move(shape), &edges);
    return kinds(edges);
  };
  using K = std::vector<std::string>;
  CHECK(edges_of(save_module("ShapeBranch", R"(
def forward(self, x):
    if x.size(0) > 1:
        return x * 2
    return x * 3
)"), {2, 3}) == K{"shape-dependent-control-flow"});
  CHECK(edges_of(save_module("Random", R"(
def forward(self, x):
    return x + torch.rand([3])
)"), {3}) == K{"random"});
  CHECK(edges_of(save_module("InplaceInput", R"(
def forward(self, x):
    x.add_(1)
    return x * 2
)"), {3}) == K{"inplace-input"});
  CHECK(edges_of(save_module("ReturnsInput", R"(
def forward(self, x):
    return x.view([-1])
)"), {2, 3}) == K{"output-aliases-input"});
  CHECK(edges_of(save_module("GlobalState", R"(
def forward(self, x):
    if torch.is_grad_enabled():
        return x * 2
    return x * 3
)"), {3}) == K{"global-state"});
  CHECK(edges_of(save_module("FrozenAttribute", R"(
def forward(self, x):
    return x * self.scale
)", [](torch::jit::Module& m) { m.register_attribute("scale", c10::FloatType::get(), 0.5); }), {3}) ==
        K{"frozen-attribute"});
  CHECK(edges_of(sample("mlp.pt"), {1, 64}).empty());
}

TEST_CASE("sharp-edge modes: allow ignores, warn prints each, error fails listing all") {
  std::vector<SharpEdge> edges = {{"random", "is random", "m.py:3"}, {"inplace-input", "modifies x", ""}};
  std::ostringstream out;
  apply_sharp_edge_mode(edges, SharpEdgeMode::Allow, "m.pt", out);
  CHECK(out.str().empty());
  apply_sharp_edge_mode(edges, SharpEdgeMode::Warn, "m.pt", out);
  CHECK(contains(out.str(), "warning: sharp edge in m.pt: [random] m.py:3: is random"));
  CHECK(contains(out.str(), "[inplace-input] modifies x"));
  try {
    apply_sharp_edge_mode(edges, SharpEdgeMode::Error, "m.pt", out);
    FAIL("expected a UserError");
  } catch (const UserError& e) {
    CHECK(contains(e.what(), "2 sharp edges"));
    CHECK(contains(e.what(), "[random]"));
    CHECK(contains(e.what(), "[inplace-input]"));
  }
  CHECK(parse_sharp_edge_mode("warn") == SharpEdgeMode::Warn);
  CHECK(!parse_sharp_edge_mode("loud").has_value());
}

// thunderc --list-ops's data: every name either frontend imports maps to a catalog operator or says why not.
TEST_CASE("op coverage: every imported ATen name has its operator, executors and Core ATen entry") {
  CHECK(aten_base_name("aten::relu_") == "relu");
  CHECK(aten_base_name("torch.ops.aten.add_.Tensor") == "add");
  CHECK(aten_base_name("aten::__and__") == "__and__");
  CHECK(aten_base_name("prim::Constant").empty());
  CHECK(catalog_op_for_aten("view") == std::optional<std::string>("reshape"));
  CHECK(catalog_op_for_aten("dropout") == std::optional<std::string>(""));
  CHECK_FALSE(catalog_op_for_aten("no_such_operator").has_value());

  const OpCoverage cov = op_coverage();
  std::string unknown;
  for (const std::string& u : cov.unknown) unknown += u + " ";
  CHECK_MESSAGE(cov.unknown.empty(), "imported names op_coverage.cpp does not map: " << unknown);
  auto find = [&](const std::string& name) -> const OpCoverage::Op& {
    for (const auto& op : cov.ops)
      if (op.name == name) return op;
    FAIL("no operator " << name);
    return cov.ops.front();
  };
  auto has = [](const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  const auto& reshape = find("reshape");
  CHECK(has(reshape.aten, "view"));
  CHECK(has(reshape.aten, "unsqueeze"));
  CHECK(has(reshape.torchscript, "aten::view"));
  CHECK(has(reshape.pt2, "torch.ops.aten.view.default"));
  CHECK(has(reshape.core_aten, "view.default"));
  const auto& embedding = find("embedding");
  CHECK(has(embedding.executors, "cpp"));
  CHECK(has(embedding.executors, "torch"));
  CHECK(find("linear").executors == std::vector<std::string>{"torch", "blas", "onednn", "nvfuser", "cublas"});

  CHECK(cov.core_aten.size() == 189);  // torch 2.15's list (core_aten_ops.inc)
  bool add_tensor = false, cumsum = false, sort = false, scatter_add = false, nonzero = false;
  for (const auto& a : cov.core_aten) {
    if (a.overload == "add.Tensor") add_tensor = a.imported && a.op == "add";
    if (a.overload == "cumsum.default") cumsum = a.imported && a.op == "cumsum";
    if (a.overload == "sort.default") sort = a.imported && a.op == "sort";
    if (a.overload == "scatter_add.default") scatter_add = a.imported && a.op == "scatter_reduce";
    if (a.overload == "nonzero.default") nonzero = !a.imported;
  }
  CHECK(add_tensor);
  CHECK(cumsum);
  CHECK(sort);
  CHECK(scatter_add);
  CHECK(nonzero);  // a value-dependent shape: never imported
}
