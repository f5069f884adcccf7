// A TorchScript module computing what the runtime's test model (tests/runtime/models/test_model.cpp)
// computes, y = 2*x + 1 and rowsum = x.sum(1), so `bench --compare` can be tested without the compiler.
#include <torch/script.h>

#include <string>

void write_reference_module(const std::string& path) {
  torch::jit::Module m("TestModel");
  m.define(R"(
def forward(self, x):
    return 2.0 * x + 1.0, x.sum(1)
)");
  m.save(path);
}

// The same, but returning one tensor only (for the "outputs do not line up" error).
void write_single_output_module(const std::string& path) {
  torch::jit::Module m("OneOutput");
  m.define(R"(
def forward(self, x):
    return 2.0 * x + 1.0
)");
  m.save(path);
}
