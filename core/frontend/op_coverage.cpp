#include "core/frontend/op_coverage.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/executors/executor.h"
#include "core/frontend/core_aten_ops.inc"
#include "core/frontend/frontend.h"
#include "core/ir/op.h"
#include "core/transforms/decompose.h"

namespace thunderc {

namespace {

// ATen operators the frontends import as a catalog operator of another name: the one that computes it, for a
// composite its main one (baddbmm -> bmm, then mul and add). The handlers in torchscript_ops.cpp and
// pt2_import.cpp are the code behind each line. "__and___"/"__or___": the TorchScript table's in-place
// spelling of the dunder ops (aten_base_name keeps a name that ends in "__").
const std::map<std::string, std::string>& aten_aliases() {
  static const std::map<std::string, std::string> table = {
      // Renames and internal spellings.
      {"_adaptive_avg_pool2d", "adaptive_avg_pool2d"},
      {"_log_softmax", "log_softmax"},
      {"_softmax", "softmax"},
      {"_native_batch_norm_legit_no_training", "batch_norm"},
      {"native_layer_norm", "layer_norm"},
      {"max_pool2d_with_indices", "max_pool2d"},
      {"mm", "matmul"},
      {"baddbmm", "bmm"},
      {"rsub", "sub"},
      {"floor_divide", "div"},
      {"true_divide", "div"},
      {"clip", "clamp"},
      {"clamp_min", "clamp"},
      {"clamp_max", "clamp"},
      {"relu6", "hardtanh"},
      {"std", "var"},  // then sqrt
      {"pad", "constant_pad_nd"},  // mode 'constant'; reflect and replicate: pad
      {"reflection_pad1d", "pad"},
      {"reflection_pad2d", "pad"},
      {"reflection_pad3d", "pad"},
      {"replication_pad1d", "pad"},
      {"replication_pad2d", "pad"},
      {"replication_pad3d", "pad"},
      {"native_group_norm", "group_norm"},
      {"scatter_add", "scatter_reduce"},  // reduce="sum"
      {"index_fill", "index_put"},        // the index at dim, the value broadcast
      {"_embedding_bag", "embedding_bag"},
      {"grid_sampler", "grid_sampler_2d"},  // 4-D inputs
      {"_adaptive_avg_pool3d", "adaptive_avg_pool3d"},
      {"max_pool3d_with_indices", "max_pool3d"},  // the values
      {"max", "maximum"},  // max(a, b); max(a) is amax, max(a, dim) amax and argmax
      {"min", "minimum"},
      {"__and__", "bitwise_and"},  // on bool tensors: logical_and
      {"__and___", "bitwise_and"},
      {"__or__", "bitwise_or"},
      {"__or___", "bitwise_or"},
      {"__xor__", "bitwise_xor"},  // on bool tensors: logical_xor
      {"__xor___", "bitwise_xor"},
      // Convolutions: 1-D ones as 2-D ones of height 1.
      {"_convolution", "conv2d"},
      {"convolution", "conv2d"},
      {"conv1d", "conv2d"},
      // Casts.
      {"to", "to_dtype"},
      {"_to_copy", "to_dtype"},
      {"type_as", "to_dtype"},
      {"float", "to_dtype"},
      {"double", "to_dtype"},
      {"half", "to_dtype"},
      {"int", "to_dtype"},
      {"long", "to_dtype"},
      {"bool", "to_dtype"},
      // Views and data movement.
      {"view", "reshape"},
      {"_unsafe_view", "reshape"},
      {"view_as", "reshape"},
      {"reshape_as", "reshape"},
      {"flatten", "reshape"},
      {"unflatten", "reshape"},
      {"squeeze", "reshape"},
      {"unsqueeze", "reshape"},
      {"t", "permute"},
      {"transpose", "permute"},
      {"expand_as", "expand"},
      {"narrow", "slice"},
      {"chunk", "slice"},
      {"split", "slice"},
      {"split_with_sizes", "slice"},
      {"unbind", "select"},
      {"concat", "cat"},
      {"concatenate", "cat"},
      {"stack", "reshape"},
      // In-place writes, functionalized: self becomes the (converted, broadcast) source.
      {"copy", "to_dtype"},
      {"fill", "expand"},
      {"zero", "expand"},
      // Rewritten at import into the operators that compute them (pt2_import.cpp, composites()).
      {"_cdist_forward", "sum"},  // the p-norm of differences (amax for p = inf)
      {"cdist", "sum"},
      {"_pdist_forward", "sum"},  // the rows' pairs gathered by index_select, then as cdist
      {"pdist", "sum"},
      {"as_strided", "index_select"},  // a gather by an index map
      {"col2im", "scatter_reduce"},    // a scatter-add by an index map
      {"_native_batch_norm_legit", "var"},  // batch statistics (mean, var), then the affine map
      // torch.fft as ATen's primitives (zero padding or trimming first where n / s ask for it); the parts of
      // a complex tensor through its interleaved pairs.
      {"_fft_r2c", "fft_r2c"},
      {"_fft_c2r", "fft_c2r"},
      {"_fft_c2c", "fft_c2c"},
      {"fft_rfft", "fft_r2c"},
      {"fft_rfft2", "fft_r2c"},
      {"fft_rfftn", "fft_r2c"},
      {"fft_ihfft", "fft_r2c"},  // then conjugated
      {"fft_irfft", "fft_c2r"},
      {"fft_irfft2", "fft_c2r"},
      {"fft_irfftn", "fft_c2r"},
      {"fft_hfft", "fft_c2r"},  // of the conjugate
      {"fft_fft", "fft_c2c"},   // fft_r2c (two-sided) of a real tensor
      {"fft_fft2", "fft_c2c"},
      {"fft_fftn", "fft_c2c"},
      {"fft_ifft", "fft_c2c"},
      {"fft_ifft2", "fft_c2c"},
      {"fft_ifftn", "fft_c2c"},
      {"real", "view_as_real"},  // then select
      {"imag", "view_as_real"},
      {"angle", "atan2"},
      {"conj", "view_as_complex"},  // (re, -im) paired again
      {"conj_physical", "view_as_complex"},
      {"_conj", "view_as_complex"},
      {"_conj_physical", "view_as_complex"},
      // PyTorch's fused transformer kernels, written back as the ops they compute.
      {"_native_multi_head_attention", "linear"},
      {"_transformer_encoder_layer_fwd", "linear"},
  };
  return table;
}

// ATen operators imported without an operator of their own, and why.
const std::map<std::string, std::string>& aten_without_op() {
  static const std::map<std::string, std::string> table = {
      {"alias", "an identity"},
      {"resolve_conj", "an identity (conjugation is never lazy here)"},
      {"resolve_neg", "an identity (negation is never lazy here)"},
      {"clone", "an identity (values are never mutated in place)"},
      {"contiguous", "an identity (layouts are the compiler's)"},
      {"detach", "an identity (inference)"},
      {"lift_fresh", "an identity"},
      {"lift_fresh_copy", "an identity"},
      {"dropout", "an identity in eval mode; dropout_mask and ATen's arithmetic in --module-mode train"},
      {"alpha_dropout", "an identity in eval mode; dropout_mask and ATen's arithmetic in --module-mode train"},
      {"feature_dropout", "an identity in eval mode; dropout_mask and ATen's arithmetic in --module-mode train"},
      {"feature_alpha_dropout", "an identity in eval mode; dropout_mask and ATen's arithmetic in --module-mode train"},
      {"native_dropout", "an identity in eval mode (its mask all true)"},
      {"_assert_tensor_metadata", "an assertion on the dtype, checked at import"},
      {"zeros_like", "a constant made at compile time (shapes are fixed)"},
      {"empty_like", "a constant made at compile time (its contents are unspecified: zeros)"},
      {"zeros", "a constant made at compile time: one element, broadcast"},
      {"ones", "a constant made at compile time: one element, broadcast"},
      {"full", "a constant made at compile time: one element, broadcast"},
      {"empty", "a constant made at compile time (its contents are unspecified: zeros)"},
      {"empty_strided", "a constant made at compile time (its contents are unspecified: zeros)"},
      {"new_empty", "a constant made at compile time (its contents are unspecified: zeros)"},
      {"scalar_tensor", "a 0-dim constant made at compile time"},
      {"ones_like", "a constant made at compile time (shapes are fixed)"},
      {"full_like", "a constant made at compile time (shapes are fixed)"},
      {"new_zeros", "a constant made at compile time (shapes are fixed)"},
      {"new_ones", "a constant made at compile time (shapes are fixed)"},
      {"new_full", "a constant made at compile time (shapes are fixed)"},
      {"rand_like", "sampled once at compile time (a sharp edge: every call sees the same values)"},
      {"randn_like", "sampled once at compile time (a sharp edge: every call sees the same values)"},
      {"rand", "sampled once at compile time (a sharp edge: every call sees the same values)"},
      {"randn", "sampled once at compile time (a sharp edge: every call sees the same values)"},
      {"randperm", "sampled once at compile time (a sharp edge: every call sees the same values)"},
      {"arange", "a constant made at compile time"},
      {"sym_size", "a size, known or symbolic at compile time"},
      {"sym_numel", "a number of elements, known or symbolic at compile time"},
      {"sym_stride", "a stride of a contiguous tensor, known or symbolic at compile time"},
      {"sym_storage_offset", "0: a contiguous tensor's offset"},
  };
  return table;
}

const char* const kCoreAten[] = {THUNDERC_CORE_ATEN_OPS};

void add_sorted(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) {
    v.push_back(s);
    std::sort(v.begin(), v.end());
  }
}

}  // namespace

std::string aten_base_name(const std::string& imported) {
  std::string base;
  if (imported.rfind("aten::", 0) == 0) base = imported.substr(6);
  else if (imported.rfind("torch.ops.aten.", 0) == 0) {
    base = imported.substr(15);
    base = base.substr(0, base.find('.'));
  } else
    return "";
  if (base.size() > 1 && base.back() == '_' && base[base.size() - 2] != '_') base.pop_back();
  return base;
}

std::optional<std::string> catalog_op_for_aten(const std::string& base) {
  auto it = aten_aliases().find(base);
  if (it != aten_aliases().end()) return it->second;
  if (aten_without_op().count(base)) return std::string();
  if (op_registry().find(base)) return base;
  return std::nullopt;
}

OpCoverage op_coverage() {
  OpCoverage cov;
  std::map<std::string, std::size_t> index;
  for (const OpDef* d : op_registry().all()) {
    if (d->category == OpCategory::Fusion) continue;  // a region, made by passes: no ATen operator
    const std::string& n = d->name;
    if (n.size() > 5 && n.compare(n.size() - 5, 5, "_nhwc") == 0) continue;  // channels-last form, made by a pass
    OpCoverage::Op op;
    op.name = d->name;
    op.category = op_category_name(d->category);
    op.doc = d->doc;
    for (const Executor* e : all_executors())
      if (e->implements(d->name)) {
        op.executors.push_back(e->name());
        op.native_cpu = op.native_cpu || (e->serves(DeviceKind::CPU) && !e->is_always());
    const std::vector<std::string> rules = decomposable_ops();
    op.decomposes = std::find(rules.begin(), rules.end(), d->name) != rules.end();
      }
    index[op.name] = cov.ops.size();
    cov.ops.push_back(std::move(op));
  }
  std::map<std::string, std::size_t> without;
  const ImportedOps imported = imported_ops();
  auto note = [&](const std::string& name, bool ts) {
    const std::string base = aten_base_name(name);
    if (base.empty()) return;  // prim:: and other non-ATen kinds
    const auto target = catalog_op_for_aten(base);
    if (!target) {
      add_sorted(cov.unknown, name);
      return;
    }
    if (!target->empty()) {
      OpCoverage::Op& op = cov.ops.at(index.at(*target));
      add_sorted(op.aten, base);
      add_sorted(ts ? op.torchscript : op.pt2, name);
      return;
    }
    auto [it, fresh] = without.emplace(base, cov.without_op.size());
    if (fresh) cov.without_op.push_back({base, aten_without_op().at(base), {}, {}});
    OpCoverage::Imported& w = cov.without_op[it->second];
    add_sorted(ts ? w.torchscript : w.pt2, name);
  };
  for (const std::string& k : imported.torchscript) note(k, true);
  for (const std::string& k : imported.pt2) note(k, false);
  std::sort(cov.without_op.begin(), cov.without_op.end(),
            [](const OpCoverage::Imported& a, const OpCoverage::Imported& b) { return a.aten < b.aten; });

  // PyTorch's Core ATen opset: which overloads the .pt2 frontend imports, and onto which operator.
  cov.core_aten_torch = THUNDERC_CORE_ATEN_TORCH_VERSION;
  const std::set<std::string> pt2(imported.pt2.begin(), imported.pt2.end());
  for (const char* overload : kCoreAten) {
    OpCoverage::CoreAten c;
    c.overload = overload;
    c.imported = pt2.count("torch.ops.aten." + c.overload) > 0;
    if (c.imported) {
      c.op = catalog_op_for_aten(aten_base_name("torch.ops.aten." + c.overload)).value_or("");
      if (!c.op.empty()) cov.ops.at(index.at(c.op)).core_aten.push_back(c.overload);
    }
    cov.core_aten.push_back(std::move(c));
  }
  return cov;
}

}  // namespace thunderc
