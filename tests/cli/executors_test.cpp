// Unit tests of the executor framework (core/executors): registry, resolve_executors, claim_executors, on
// hand-built traces. No LibTorch.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/executors/executor.h"
#include "core/ir/error.h"
#include "core/ir/printer.h"
#include "core/ir/trace.h"

using namespace thunderc;

namespace {

TensorType f32(Shape shape, Device d = Device::cpu()) { return {DType::Float32, std::move(shape), d}; }

// x -> relu -> linear(w) -> add 1.0 -> output
Trace small_trace(Device d = Device::cpu()) {
  Trace t;
  ValueId x = t.add_input("x", f32({2, 4}, d));
  auto data = std::make_shared<ConstantData>();
  data->bytes.resize(3 * 4 * 4);
  ValueId w = t.add_constant("w", f32({3, 4}, d), data);
  ValueId r = t.emit1(op("relu"), {Operand::tensor(x)}, {}, "model.py(3): forward");
  ValueId l = t.emit1(op("linear"), {Operand::tensor(r), Operand::tensor(w), Operand::none()}, {},
                      "model.py(4): forward");
  ValueId a = t.emit1(op("add"), {Operand::tensor(l), Operand::number(1.0)}, {}, "model.py(5): forward");
  t.set_outputs({a});
  return t;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no UserError)";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("registry lists the seven executors in order") {
  std::vector<std::string> names;
  for (const Executor* e : all_executors()) names.push_back(e->name());
  CHECK(names == std::vector<std::string>{"torch", "cpp", "blas", "onednn", "nvfuser", "cublas", "cudnn"});
  CHECK(executor_names() == "torch, cpp, blas, onednn, nvfuser, cublas, cudnn");
  CHECK(find_executor("nope") == nullptr);

  const Executor* torch = find_executor("torch");
  REQUIRE(torch);
  CHECK(torch->is_always());
  CHECK(torch->implemented());
  CHECK(torch->serves(DeviceKind::CPU));
  CHECK(torch->availability(DeviceKind::CPU).available);
  // torch implements every operator of the catalog.
  for (const OpDef* def : op_registry().all()) CHECK_MESSAGE(torch->implements(def->name), def->name);

  // The native CPU executors are implemented; the CUDA ones are declared but claim nothing yet.
  for (const char* name : {"cpp", "blas", "onednn"}) {
    const Executor* e = find_executor(name);
    REQUIRE(e);
    CHECK(e->implemented());
    CHECK_FALSE(e->is_always());
    CHECK(e->num_impls() > 0);
    CHECK_FALSE(e->categories().empty());
  }
  CHECK(find_executor("blas")->implements("linear"));
  CHECK(find_executor("cpp")->implements("softmax"));
  CHECK_FALSE(find_executor("cpp")->implements("conv2d"));
  const Executor* nv = find_executor("nvfuser");
  CHECK(nv->implemented());
  for (const char* name : {"softmax", "layer_norm", "linear", "matmul", "conv2d", "max_pool2d"})
    CHECK(nv->implements(name));
  CHECK(nv->serves(DeviceKind::CUDA));
  CHECK_FALSE(nv->serves(DeviceKind::CPU));
  for (const char* name : {"cublas", "cudnn"}) {
    const Executor* e = find_executor(name);
    REQUIRE(e);
    CHECK(e->implemented());
    CHECK_FALSE(e->is_always());
    CHECK_FALSE(e->categories().empty());
    CHECK_FALSE(e->description().empty());
  }
  for (const char* name : {"linear", "matmul", "bmm", "addmm"}) CHECK(find_executor("cublas")->implements(name));
  CHECK(find_executor("cublas")->num_impls() == 4);
  CHECK(find_executor("cudnn")->implements("conv2d"));
  CHECK(find_executor("cudnn")->implements("scaled_dot_product_attention"));
  CHECK(find_executor("cudnn")->num_impls() == 2);
  // nvfuser's own GEMM/convolution/attention kernels are a fallback claim; its loop operators are preferred.
  CHECK(nv->claim_of("linear") == Executor::Claim::Fallback);
  CHECK(nv->claim_of("conv2d") == Executor::Claim::Fallback);
  CHECK(nv->claim_of("scaled_dot_product_attention") == Executor::Claim::Fallback);
  CHECK(nv->claim_of("softmax") == Executor::Claim::Preferred);
  CHECK(find_executor("cpp")->serves(DeviceKind::CPU));
  CHECK_FALSE(find_executor("cpp")->serves(DeviceKind::CUDA));
  CHECK(find_executor("cudnn")->serves(DeviceKind::CUDA));
  CHECK_FALSE(find_executor("cudnn")->serves(DeviceKind::CPU));

  // Not serving a device is reported as unavailable, with a reason.
  Availability a = find_executor("cublas")->availability(DeviceKind::CPU);
  CHECK_FALSE(a.available);
  CHECK(contains(a.reason, "not on cpu"));
}

TEST_CASE("CUDA executors probe the driver and give a reason when unusable") {
  for (const char* name : {"nvfuser", "cublas", "cudnn"}) {
    Availability a = find_executor(name)->availability(DeviceKind::CUDA);
    if (!a.available) CHECK_FALSE(a.reason.empty());
  }
}

TEST_CASE("torch on CUDA follows what the frontend reports") {
  set_torch_cuda_support(false, "LibTorch was built without CUDA");
  Availability a = find_executor("torch")->availability(DeviceKind::CUDA);
  CHECK_FALSE(a.available);
  CHECK(a.reason == "LibTorch was built without CUDA");

  Trace t = small_trace(Device::cuda());
  auto unclaimed = claim_executors(t, {find_executor("torch")});
  CHECK(unclaimed.size() == 3);

  set_torch_cuda_support(true);
  CHECK(find_executor("torch")->availability(DeviceKind::CUDA).available);
  unclaimed = claim_executors(t, {find_executor("torch")});
  CHECK(unclaimed.empty());
  set_torch_cuda_support(false, "LibTorch was built without CUDA");
}

TEST_CASE("a fallback claim yields to a preferred one later in the list, but not to an always-executor") {
  Trace t;
  ValueId x = t.add_input("x", TensorType{DType::Float32, {4, 8}, Device::cuda(0)});
  ValueId w = t.add_input("w", TensorType{DType::Float32, {6, 8}, Device::cuda(0)});
  t.set_outputs({t.emit1(op("linear"), {Operand::tensor(x), Operand::tensor(w), Operand::none()}, {})});
  auto owner = [&](std::vector<std::string> names) {
    std::vector<const Executor*> exs;
    for (const auto& n : names) exs.push_back(find_executor(n));
    Trace c = t;
    CHECK(claim_executors(c, exs).empty());
    return c.symbols()[0].executor;
  };
  CHECK(owner({"nvfuser"}) == "nvfuser");
  CHECK(owner({"nvfuser", "cublas"}) == "cublas");  // the card's order: nvfuser first, the library still wins
  CHECK(owner({"cublas", "nvfuser"}) == "cublas");
  set_torch_cuda_support(true);
  CHECK(owner({"nvfuser", "torch"}) == "nvfuser");  // torch is everyone's last resort
  CHECK(owner({"torch", "nvfuser"}) == "torch");    // ... unless listed first
  set_torch_cuda_support(false, "LibTorch was built without CUDA");
}

TEST_CASE("default executors: cpp, onednn and blas on cpu, then cudnn, cublas, nvfuser on cuda where NVRTC is found") {
  CHECK(default_executor_names(DeviceKind::CPU) == std::vector<std::string>{"cpp", "onednn", "blas"});
  CHECK(default_executor_names(DeviceKind::CUDA) == std::vector<std::string>{"cudnn", "cublas", "nvfuser"});
  ExecutorSelection cpu = default_executors(DeviceKind::CPU);
  if (find_executor("onednn")->availability(DeviceKind::CPU).available) {
    CHECK(cpu.names() == std::vector<std::string>{"cpp", "onednn", "blas"});
    CHECK(cpu.notes.empty());
  } else {  // built without oneDNN's headers, or libdnnl missing: left out, saying why
    CHECK(cpu.names() == std::vector<std::string>{"cpp", "blas"});
    REQUIRE(cpu.notes.size() == 1);
    CHECK(cpu.notes[0].rfind("onednn: unavailable (", 0) == 0);
  }
  ExecutorSelection cuda = default_executors(DeviceKind::CUDA);
  Availability nvrtc = find_executor("nvfuser")->availability(DeviceKind::CUDA);
  if (nvrtc.available) {
    CHECK(cuda.names() == std::vector<std::string>{"cudnn", "cublas", "nvfuser"});
    CHECK(cuda.notes.empty());
  } else {
    CHECK(cuda.executors.empty());
    CHECK(cuda.notes.size() == 3);
    CHECK(contains(nvrtc.reason, "NVRTC"));
  }
}

TEST_CASE("select_device: --device, or the device every executor in --executors serves") {
  CHECK(select_device(std::nullopt, {}) == Device::cpu());
  CHECK(select_device(std::nullopt, {"cpp", "blas"}) == Device::cpu());
  CHECK(select_device(std::nullopt, {"nvfuser", "cudnn"}) == Device::cuda(0));
  CHECK(select_device(std::nullopt, {"torch"}) == Device::cpu());  // torch serves both
  CHECK(select_device(Device::cuda(1), {"torch"}) == Device::cuda(1));
  CHECK(select_device(Device::cuda(0), {"nvfuser"}) == Device::cuda(0));
  auto message = [](const std::optional<Device>& d, const std::vector<std::string>& e) {
    try {
      select_device(d, e);
    } catch (const UserError& err) {
      return std::string(err.what());
    }
    return std::string("no error");
  };
  CHECK(contains(message(std::nullopt, {"cpp", "nvfuser"}), "mixes CPU executors (cpp) with CUDA executors (nvfuser)"));
  CHECK(contains(message(Device::cpu(), {"nvfuser"}), "--device cpu does not match --executors: nvfuser runs on cuda only"));
  CHECK(contains(message(Device::cuda(0), {"blas"}), "blas runs on cpu only"));
}

TEST_CASE("resolve_executors") {
  SUBCASE("defaults plus the always-executor") {
    ExecutorSelection s = resolve_executors({}, DeviceKind::CPU, false);
    CHECK(s.names() == std::vector<std::string>{"cpp", "onednn", "blas", "torch"});
    CHECK(s.notes.empty());
  }
  SUBCASE("requested order is kept, torch appended once") {
    ExecutorSelection s = resolve_executors({"blas", "torch", "cpp", "blas"}, DeviceKind::CPU, false);
    CHECK(s.names() == std::vector<std::string>{"blas", "torch", "cpp"});
    CHECK(contains(s.names_str(), "blas, torch, cpp"));
  }
  SUBCASE("standalone appends nothing") {
    ExecutorSelection s = resolve_executors({"cpp"}, DeviceKind::CPU, true);
    CHECK(s.names() == std::vector<std::string>{"cpp"});
    CHECK(resolve_executors({}, DeviceKind::CPU, true).names() == std::vector<std::string>{"cpp", "onednn", "blas"});
  }
  SUBCASE("unknown name lists the known ones") {
    std::string msg = error_of([] { resolve_executors({"cpp", "tensorrt"}, DeviceKind::CPU, false); });
    CHECK(contains(msg, "unknown executor 'tensorrt'"));
    CHECK(contains(msg, "torch, cpp, blas, onednn, nvfuser, cublas, cudnn"));
  }
  SUBCASE("executor for another device") {
    std::string msg = error_of([] { resolve_executors({"cudnn"}, DeviceKind::CPU, false); });
    CHECK(contains(msg, "executor 'cudnn' runs on cuda, not on cpu"));
    msg = error_of([] { resolve_executors({"cpp"}, DeviceKind::CUDA, false); });
    CHECK(contains(msg, "executor 'cpp' runs on cpu, not on cuda"));
  }
  SUBCASE("unavailable executor gives the reason") {
    Availability a = find_executor("nvfuser")->availability(DeviceKind::CUDA);
    if (!a.available) {
      std::string msg = error_of([] { resolve_executors({"nvfuser"}, DeviceKind::CUDA, false); });
      CHECK(contains(msg, "executor 'nvfuser' is not available: " + a.reason));
    }
  }
  SUBCASE("torch unavailable on cuda is left out and noted") {
    set_torch_cuda_support(false, "LibTorch was built without CUDA");
    ExecutorSelection s = resolve_executors({}, DeviceKind::CUDA, false);
    CHECK(std::none_of(s.executors.begin(), s.executors.end(), [](const Executor* e) { return e->name() == "torch"; }));
    CHECK(std::any_of(s.notes.begin(), s.notes.end(),
                      [](const std::string& n) { return contains(n, "torch: unavailable on cuda (LibTorch was built without CUDA)"); }));
  }
}

TEST_CASE("claim_executors: the first executor whose checker accepts wins") {
  // Test executors: "pointwise" runs relu and add but only in float32 and only rank <= 2; "mm" runs linear.
  Executor::Info pi;
  pi.name = "pointwise";
  pi.description = "test";
  pi.devices = {DeviceKind::CPU};
  pi.implemented = true;
  Executor pointwise(pi);
  auto f32_rank2 = [](const Trace& t, const BoundSymbol& s) {
    for (ValueId out : s.outputs)
      if (t.type(out).dtype != DType::Float32 || t.type(out).rank() > 2) return false;
    return true;
  };
  pointwise.register_impl("relu", f32_rank2);
  pointwise.register_impl("add", f32_rank2);

  Executor::Info mi = pi;
  mi.name = "mm";
  Executor mm(mi);
  mm.register_impl("linear");

  Trace t = small_trace();
  const Executor* torch = find_executor("torch");

  SUBCASE("all claimed in order") {
    auto unclaimed = claim_executors(t, {&pointwise, &mm, torch});
    CHECK(unclaimed.empty());
    CHECK(t.symbols()[0].executor == "pointwise");
    CHECK(t.symbols()[1].executor == "mm");
    CHECK(t.symbols()[2].executor == "pointwise");
    // The printer shows the executor.
    CHECK(contains(print_trace(t), "pointwise.relu(x)"));
    CHECK(contains(print_trace(t), "mm.linear("));
    auto counts = executor_counts(t);
    REQUIRE(counts.size() == 2);
    CHECK(counts[0] == std::make_pair(std::string("pointwise"), std::size_t{2}));
    CHECK(counts[1] == std::make_pair(std::string("mm"), std::size_t{1}));
  }
  SUBCASE("order decides") {
    claim_executors(t, {torch, &pointwise, &mm});
    for (const BoundSymbol& s : t.symbols()) CHECK(s.executor == "torch");
  }
  SUBCASE("checker rejects: falls through to the next executor") {
    Trace t3;
    ValueId x = t3.add_input("x", f32({2, 3, 4}));
    ValueId r = t3.emit1(op("relu"), {Operand::tensor(x)}, {});
    t3.set_outputs({r});
    auto unclaimed = claim_executors(t3, {&pointwise, torch});
    CHECK(unclaimed.empty());
    CHECK(t3.symbols()[0].executor == "torch");
  }
  SUBCASE("unclaimed symbols are returned with op and source, and claims are reset") {
    claim_executors(t, {torch});
    auto unclaimed = claim_executors(t, {&pointwise});
    REQUIRE(unclaimed.size() == 1);
    CHECK(unclaimed[0].index == 1);
    CHECK(unclaimed[0].op == "linear");
    CHECK(unclaimed[0].source == "model.py(4): forward");
    CHECK(t.symbols()[1].executor.empty());
    CHECK(t.symbols()[0].executor == "pointwise");

    ExecutorSelection sel;
    sel.executors = {&pointwise};
    std::string msg = unclaimed_message(t, unclaimed, sel);
    CHECK(contains(msg, "no executor can run 1 of 3 operations"));
    CHECK(contains(msg, "linear  at model.py(4): forward"));
    CHECK(contains(msg, "executors asked: pointwise"));
    CHECK(contains(msg, "hint: without --standalone, torch"));
  }
  SUBCASE("cpp alone cannot run linear; the message says who was asked") {
    auto unclaimed = claim_executors(t, {find_executor("cpp")});
    REQUIRE(unclaimed.size() == 1);
    CHECK(unclaimed[0].op == "linear");
    ExecutorSelection sel = resolve_executors({"cpp"}, DeviceKind::CPU, true);
    std::string msg = unclaimed_message(t, unclaimed, sel);
    CHECK(contains(msg, "no executor can run 1 of 3 operations"));
    CHECK(contains(msg, "executors asked: cpp"));
  }
  SUBCASE("unclaimed list is capped") {
    auto unclaimed = claim_executors(t, {});
    std::string msg = unclaimed_message(t, unclaimed, ExecutorSelection{}, 2);
    CHECK(contains(msg, "... and 1 more"));
    CHECK(contains(msg, "executors asked: (none)"));
  }
}

TEST_CASE("register_impl rejects operators the catalog does not know") {
  Executor::Info i;
  i.name = "x";
  i.devices = {DeviceKind::CPU};
  Executor e(i);
  CHECK_THROWS_AS(e.register_impl("no_such_op"), InternalError);
}
