// What thunderc covers of PyTorch's operators, for `thunderc --list-ops`: every catalog operator with the ATen
// operators the frontends import into it and the executors that implement it, and the ATen operators imported
// without an operator of their own (identities such as dropout in eval, constants made at compile time).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace thunderc {

// The ATen operator an imported name stands for: "aten::relu_" and "torch.ops.aten.relu_.default" -> "relu"
// (an in-place variant is its operator); "" for a name that is not an ATen operator ("prim::...").
std::string aten_base_name(const std::string& imported);

// The catalog operator the frontends import ATen operator `base` as: itself when the catalog has it, else what
// the table in op_coverage.cpp says (reshape for "view"; a composite's main operator: bmm for "baddbmm"). Empty:
// no operator of its own (an identity, a constant). nullopt: the tables do not know it (a bug: tests check that
// every imported name is known).
std::optional<std::string> catalog_op_for_aten(const std::string& base);

struct OpCoverage {
  struct Op {
    std::string name, category, doc;
    std::vector<std::string> aten;         // ATen operators imported as this op (base names), sorted
    std::vector<std::string> torchscript;  // the TorchScript node kinds among them
    std::vector<std::string> pt2;          // the torch.export targets among them
    std::vector<std::string> executors;    // executors that implement it, in registry order
    bool native_cpu = false;               // one of them runs on the CPU without LibTorch (not torch)
    bool decomposes = false;               // `decompose` has a rule: where no executor runs it, simpler ones can
    std::vector<std::string> core_aten;    // Core ATen overloads the .pt2 frontend imports as it ("add.Tensor")
  };
  struct CoreAten {      // one overload of PyTorch's Core ATen opset (core_aten_ops.inc)
    std::string overload;  // "add.Tensor"
    bool imported = false;  // by the .pt2 frontend
    std::string op;         // the catalog operator it becomes ("" for none of its own, or not imported)
  };
  struct Imported {  // an ATen operator imported without a catalog operator of its own
    std::string aten;
    std::string why;
    std::vector<std::string> torchscript, pt2;
  };
  std::vector<Op> ops;  // sorted by name
  std::vector<Imported> without_op;
  std::vector<std::string> unknown;  // imported names op_coverage.cpp's tables miss (a bug; empty)
  std::vector<CoreAten> core_aten;   // every Core ATen overload, sorted
  std::string core_aten_torch;       // the torch its list comes from
};

OpCoverage op_coverage();

}  // namespace thunderc
