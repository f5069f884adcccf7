// Data-movement operators: reshape, permute, expand, slice, select, cat, flip, repeat, constant_pad_nd, pad. Arguments are normalized by the
// frontend (no negative dims or indices, slices clamped), and the meta functions insist on it.
#include <algorithm>

#include "core/ir/error.h"
#include "core/ops/meta_util.h"
#include "core/ops/ops.h"
#include "core/ops/vjp.h"

namespace thunderc {

namespace {
Operand T(ValueId v) { return Operand::tensor(v); }

// Reverse-mode rules: data movement moves the gradient back.
void register_shape_vjps(OpRegistry& r) {
  using V = VjpBuilder;
  set_vjp(r, "reshape", [](V& b) { b.give(0, b.reshape(b.g(), b.shape(b.in(0)))); });
  set_vjp(r, "permute", [](V& b) {
    const IntList& dims = b.attrs().get_ints("dims");
    std::vector<std::int64_t> inverse(dims.size());
    for (std::size_t k = 0; k < dims.size(); ++k) inverse[static_cast<std::size_t>(dims[k])] = static_cast<std::int64_t>(k);
    b.give(0, b.permute(b.g(), inverse));
  });
  set_vjp(r, "expand", [](V& b) { b.give(0, b.g()); });  // give() sums over the expanded dims
  set_vjp(r, "flip", [](V& b) { b.give(0, b.emit("flip", {T(b.g())}, {{"dims", b.attrs().get_ints("dims")}})); });
  set_vjp(r, "slice", [](V& b) {
    const Attrs& a = b.attrs();
    b.give(0, b.emit("slice_scatter", {T(b.zeros(b.type(b.in(0)))), T(b.g())},
                     {{"dim", a.get_int("dim")}, {"start", a.get_int("start")}, {"end", a.get_int("end")},
                      {"step", a.get_int("step")}}));
  });
  set_vjp(r, "select", [](V& b) {
    b.give(0, b.emit("select_scatter", {T(b.zeros(b.type(b.in(0)))), T(b.g())},
                     {{"dim", b.attrs().get_int("dim")}, {"index", b.attrs().get_int("index")}}));
  });
  set_vjp(r, "cat", [](V& b) {
    const std::size_t rank = b.shape(b.out()).size();
    const auto dim = static_cast<std::size_t>(wrap_dim(b.attrs().get_int("dim"), rank, "cat"));
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < b.sym().inputs.size(); ++i) {
      const Shape& piece = b.shape(b.in(i));
      if (piece.size() != rank) continue;  // a 1-D empty tensor, which cat skips
      const std::int64_t size = piece[dim];
      if (b.wants(i))
        b.give(i, b.emit("slice", {T(b.g())},
                         {{"dim", static_cast<std::int64_t>(dim)}, {"start", offset}, {"end", offset + size}, {"step", std::int64_t{1}}}));
      offset += size;
    }
  });
}
}  // namespace

void register_shape_ops(OpRegistry& r) {
  r.add({"reshape", OpCategory::Shape, {{"a"}}, {{"shape", AttrType::IntList}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           TensorType out = m.tensor(0);
           Shape shape = m.attrs.get_ints("shape");
           std::int64_t known = 1;
           int infer = -1;
           for (std::size_t i = 0; i < shape.size(); ++i) {
             if (shape[i] == -1) {
               if (infer >= 0) user_error("reshape: only one dimension can be -1 in ", shape_str(shape));
               infer = static_cast<int>(i);
             } else if (shape[i] < 0) {
               user_error("reshape: invalid size ", shape[i], " in ", shape_str(shape));
             } else {
               if (__builtin_mul_overflow(known, shape[i], &known))
                 user_error("reshape: the sizes of ", shape_str(shape), " overflow int64");
             }
           }
           std::int64_t numel = out.numel();
           if (infer >= 0) {
             if (known == 0 || numel % known != 0)
               user_error("reshape: shape ", shape_str(shape), " is invalid for an input of shape ",
                          shape_str(out.shape));
             shape[infer] = numel / known;
           } else if (known != numel) {
             user_error("reshape: shape ", shape_str(shape), " is invalid for an input of shape ", shape_str(out.shape),
                        " (", numel, " elements)");
           }
           out.shape = shape;
           return {out};
         },
         "same elements in row-major order, new shape (one -1 is inferred)"});
  r.add({"permute", OpCategory::Shape, {{"a"}}, {{"dims", AttrType::IntList}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           TensorType out = m.tensor(0);
           const IntList& dims = m.attrs.get_ints("dims");
           IntList sorted = dims;
           std::sort(sorted.begin(), sorted.end());
           bool is_perm = sorted.size() == out.rank();
           for (std::size_t i = 0; is_perm && i < sorted.size(); ++i) is_perm = sorted[i] == static_cast<std::int64_t>(i);
           if (!is_perm)
             user_error("permute: ", shape_str(dims), " is not a permutation of the dims of ", shape_str(out.shape));
           for (std::size_t i = 0; i < dims.size(); ++i) out.shape[i] = m.tensor(0).shape[dims[i]];
           return {out};
         },
         "out.shape[i] = a.shape[dims[i]]"});
  r.add({"expand", OpCategory::Shape, {{"a"}}, {{"shape", AttrType::IntList}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           const IntList& shape = m.attrs.get_ints("shape");
           if (shape.size() < a.rank())
             user_error("expand: target ", shape_str(shape), " has fewer dims than the input ", shape_str(a.shape));
           TensorType out = a;
           out.shape = shape;
           std::size_t lead = shape.size() - a.rank();
           for (std::size_t i = 0; i < shape.size(); ++i) {
             std::int64_t want = shape[i];
             if (i < lead) {
               if (want < 0) user_error("expand: new leading dimension ", i, " cannot be ", want);
               continue;
             }
             std::int64_t have = a.shape[i - lead];
             if (want == -1) out.shape[i] = have;
             else if (want < 0) user_error("expand: invalid size ", want, " in ", shape_str(shape));
             else if (have != want && have != 1)
               user_error("expand: dimension ", i, " of size ", have, " cannot expand to ", want, " (input ",
                          shape_str(a.shape), ", target ", shape_str(shape), ")");
           }
           return {out};
         },
         "broadcasts size-1 dims to shape (-1 keeps a dim)"});
  r.add({"slice", OpCategory::Shape, {{"a"}},
         {{"dim", AttrType::Int}, {"start", AttrType::Int}, {"end", AttrType::Int}, {"step", AttrType::Int, false, std::int64_t{1}}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           TensorType out = m.tensor(0);
           auto dim = m.attrs.get_int("dim"), start = m.attrs.get_int("start"), end = m.attrs.get_int("end"),
                step = m.attrs.get_int("step");
           if (dim < 0 || dim >= static_cast<std::int64_t>(out.rank()))
             internal_error("slice: dim ", dim, " not normalized for rank ", out.rank());
           std::int64_t size = out.shape[dim];
           if (step < 1) user_error("slice: step must be positive, got ", step);
           if (start < 0 || start > end || end > size)
             internal_error("slice: bounds [", start, ", ", end, ") not normalized for size ", size);
           out.shape[dim] = (end - start + step - 1) / step;
           return {out};
         },
         "a[..., start:end:step, ...] along dim (normalized bounds)"});
  r.add({"select", OpCategory::Shape, {{"a"}}, {{"dim", AttrType::Int}, {"index", AttrType::Int}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           TensorType out = m.tensor(0);
           auto dim = m.attrs.get_int("dim"), index = m.attrs.get_int("index");
           if (dim < 0 || dim >= static_cast<std::int64_t>(out.rank()) || index < 0 || index >= out.shape[dim])
             internal_error("select: dim ", dim, " index ", index, " not normalized for shape ", shape_str(out.shape));
           out.shape.erase(out.shape.begin() + dim);
           return {out};
         },
         "a[..., index, ...] along dim, which is removed"});
  // The functional form of an in-place update through a slice or select view: `a` with that region
  // replaced by `src` (which has the region's shape and is cast to a's dtype).
  r.add({"slice_scatter", OpCategory::Shape, {{"a"}, {"src"}},
         {{"dim", AttrType::Int}, {"start", AttrType::Int}, {"end", AttrType::Int}, {"step", AttrType::Int, false, std::int64_t{1}}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           auto dim = m.attrs.get_int("dim"), start = m.attrs.get_int("start"), end = m.attrs.get_int("end"),
                step = m.attrs.get_int("step");
           if (dim < 0 || dim >= static_cast<std::int64_t>(a.rank()) || step < 1 || start < 0 || start > end ||
               end > a.shape[dim])
             internal_error("slice_scatter: bounds not normalized for shape ", shape_str(a.shape));
           Shape region = a.shape;
           region[dim] = (end - start + step - 1) / step;
           if (m.tensor(1).shape != region)
             user_error("slice_scatter: src has shape ", shape_str(m.tensor(1).shape), ", the region is ", shape_str(region));
           return {TensorType{a.dtype, a.shape, common_device(m)}};
         },
         "a with a[..., start:end:step, ...] along dim replaced by src"});
  r.add({"select_scatter", OpCategory::Shape, {{"a"}, {"src"}}, {{"dim", AttrType::Int}, {"index", AttrType::Int}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           auto dim = m.attrs.get_int("dim"), index = m.attrs.get_int("index");
           if (dim < 0 || dim >= static_cast<std::int64_t>(a.rank()) || index < 0 || index >= a.shape[dim])
             internal_error("select_scatter: dim ", dim, " index ", index, " not normalized for ", shape_str(a.shape));
           Shape region = a.shape;
           region.erase(region.begin() + dim);
           if (m.tensor(1).shape != region)
             user_error("select_scatter: src has shape ", shape_str(m.tensor(1).shape), ", the region is ", shape_str(region));
           return {TensorType{a.dtype, a.shape, common_device(m)}};
         },
         "a with a[..., index, ...] along dim replaced by src"});
  r.add({"cat", OpCategory::Shape, {{"tensors", false, false, true}}, {{"dim", AttrType::Int}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& first = m.tensor(0);
           auto dim = wrap_dim(m.attrs.get_int("dim"), first.rank(), "cat");
           if (first.rank() == 0) user_error("cat: zero-dimensional tensors cannot be concatenated");
           TensorType out = first;
           out.shape[dim] = 0;
           for (std::size_t i = 0; i < m.inputs.size(); ++i) {
             const TensorType& t = m.tensor(i);
             bool same = t.rank() == first.rank();
             for (std::size_t d = 0; same && d < t.rank(); ++d) same = d == static_cast<std::size_t>(dim) || t.shape[d] == first.shape[d];
             if (!same)
               user_error("cat: tensor ", i, " has shape ", shape_str(t.shape), ", which does not match ",
                          shape_str(first.shape), " outside dimension ", dim);
             out.shape[dim] += t.shape[dim];
           }
           out.dtype = result_type(m.inputs);
           out.device = common_device(m);
           return {out};
         },
         "concatenation along dim (dtypes promoted)"});
  r.add({"flip", OpCategory::Shape, {{"a"}}, {{"dims", AttrType::IntList}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           std::vector<bool> seen(a.rank(), false);
           for (std::int64_t d : m.attrs.get_ints("dims")) {
             auto w = static_cast<std::size_t>(wrap_dim(d, a.rank(), "flip"));
             if (a.rank() > 0 && seen[w]) user_error("flip: dim ", d, " appears more than once in ", shape_str(m.attrs.get_ints("dims")));
             if (a.rank() > 0) seen[w] = true;
           }
           return {a};
         },
         "reverses the order of the elements along each of dims"});
  r.add({"repeat", OpCategory::Shape, {{"a"}}, {{"repeats", AttrType::IntList}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           const IntList& rep = m.attrs.get_ints("repeats");
           if (rep.size() < a.rank())
             user_error("repeat: ", shape_str(rep), " has fewer entries than the input has dims ", shape_str(a.shape));
           TensorType out = a;
           out.shape.assign(rep.size(), 1);
           const std::size_t lead = rep.size() - a.rank();
           for (std::size_t i = 0; i < rep.size(); ++i) {
             if (rep[i] < 0) user_error("repeat: repeats must be non-negative, got ", shape_str(rep));
             const std::int64_t size = i < lead ? 1 : a.shape[i - lead];
             if (__builtin_mul_overflow(size, rep[i], &out.shape[i])) user_error("repeat: the sizes overflow int64");
           }
           return {out};
         },
         "tiles a repeats[i] times along dim i (leading repeats add dims)"});
  r.add({"constant_pad_nd", OpCategory::Shape, {{"a"}}, {{"pad", AttrType::IntList}, {"value", AttrType::Float, false, 0.0}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           const IntList& pad = m.attrs.get_ints("pad");
           if (pad.size() % 2 != 0 || pad.size() / 2 > a.rank())
             user_error("constant_pad_nd: pad ", shape_str(pad), " must hold a (before, after) pair per padded dim, for at most ",
                        a.rank(), " dims");
           TensorType out = a;
           for (std::size_t k = 0; k < pad.size() / 2; ++k) {
             std::int64_t& size = out.shape[a.rank() - 1 - k];
             if (__builtin_add_overflow(size, pad[2 * k], &size) || __builtin_add_overflow(size, pad[2 * k + 1], &size) || size < 0)
               user_error("constant_pad_nd: padding ", shape_str(pad), " makes dimension ", a.rank() - 1 - k, " of ",
                          shape_str(a.shape), " negative");
           }
           return {out};
         },
         "pads (or, with negative amounts, crops) the last dims: pad = (before, after) per dim from the last"});
  r.add({"pad", OpCategory::Shape, {{"a"}}, {{"pad", AttrType::IntList}, {"mode", AttrType::String}},
         [](const MetaArgs& m) -> std::vector<TensorType> {
           const TensorType& a = m.tensor(0);
           const IntList& pad = m.attrs.get_ints("pad");
           const std::string& mode = m.attrs.get_string("mode");
           if (mode != "reflect" && mode != "replicate")
             user_error("pad: mode must be 'reflect' or 'replicate', got ", quote_string(mode));
           if (pad.empty() || pad.size() % 2 != 0 || pad.size() / 2 > a.rank())
             user_error("pad: pad ", shape_str(pad), " must hold a (before, after) pair per padded dim, for at most ",
                        a.rank(), " dims");
           TensorType out = a;
           for (std::size_t k = 0; k < pad.size() / 2; ++k) {
             const std::size_t d = a.rank() - 1 - k;
             const std::int64_t size = a.shape[d], before = pad[2 * k], after = pad[2 * k + 1];
             if (mode == "reflect" && (before >= size || after >= size || before < 0 || after < 0))
               user_error("pad: reflect padding (", before, ", ", after, ") must be non-negative and less than dimension ",
                          d, "'s size ", size);
             if (mode == "replicate" && (size == 0 || before < 0 || after < 0))
               user_error("pad: replicate padding (", before, ", ", after, ") needs non-negative amounts and a non-empty dimension ", d);
             out.shape[d] = size + before + after;
           }
           return {out};
         },
         "pads the last dims by reflecting (without repeating the edge) or replicating the edge values"});
  register_shape_vjps(r);
}

}  // namespace thunderc
