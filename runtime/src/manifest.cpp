// Manifest parsing and validation (schema: docs/manifest.md). Every field the runtime uses is checked
// for presence and type; errors name the field by its JSON path.
#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "cpu_isa.hpp"
#include "internal.hpp"

namespace thunderc::rt {
namespace {

using json = nlohmann::json;

class Validator {
 public:
  explicit Validator(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void error(const std::string& path, const std::string& what) const {
    fail(THUNDERC_STATUS_MANIFEST, origin_ + ": " + (path.empty() ? "" : path + ": ") + what);
  }

  static std::string type_of(const json& j) {
    if (j.is_number_integer()) return "integer";
    return j.type_name();
  }

  const json& field(const json& obj, const char* key, const std::string& path) const {
    if (!obj.is_object()) error(path, "expected an object, got " + type_of(obj));
    auto it = obj.find(key);
    if (it == obj.end()) error(join(path, key), "missing");
    return *it;
  }

  std::string string_field(const json& obj, const char* key, const std::string& path) const {
    const json& v = field(obj, key, path);
    if (!v.is_string()) error(join(path, key), "expected a string, got " + type_of(v));
    return v.get<std::string>();
  }

  bool bool_field(const json& obj, const char* key, const std::string& path) const {
    const json& v = field(obj, key, path);
    if (!v.is_boolean()) error(join(path, key), "expected true or false, got " + type_of(v));
    return v.get<bool>();
  }

  uint64_t uint_value(const json& v, const std::string& path, uint64_t max) const {
    if (v.is_number_unsigned()) {
      const auto u = v.get<uint64_t>();
      if (u > max) error(path, "value " + std::to_string(u) + " is too large");
      return u;
    }
    if (v.is_number_integer()) {
      error(path, "expected a non-negative integer, got " + std::to_string(v.get<int64_t>()));
    }
    error(path, "expected a non-negative integer, got " + type_of(v));
  }

  uint64_t uint_field(const json& obj, const char* key, const std::string& path, uint64_t max) const {
    return uint_value(field(obj, key, path), join(path, key), max);
  }

  const json& array_field(const json& obj, const char* key, const std::string& path) const {
    const json& v = field(obj, key, path);
    if (!v.is_array()) error(join(path, key), "expected an array, got " + type_of(v));
    return v;
  }

  std::vector<int64_t> shape_value(const json& v, const std::string& path) const {
    if (!v.is_array()) error(path, "expected an array of non-negative integers, got " + type_of(v));
    std::vector<int64_t> shape;
    for (size_t i = 0; i < v.size(); ++i) {
      shape.push_back(static_cast<int64_t>(
          uint_value(v[i], index(path, i), static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))));
    }
    return shape;
  }

  DLDataType dtype_field(const json& obj, const std::string& path, std::string* name) const {
    *name = string_field(obj, "dtype", path);
    DLDataType dt{};
    if (!thunderc_dtype_from_name(name->c_str(), &dt))
      error(join(path, "dtype"), "unknown dtype '" + *name +
                                     "' (known: bool, uint8, int8, int16, int32, int64, float16, "
                                     "bfloat16, float32, float64, complex64, complex128)");
    return dt;
  }

  std::vector<TensorDesc> tensor_list(const json& root, const char* key) const {
    const json& arr = array_field(root, key, "");
    std::vector<TensorDesc> out;
    for (size_t i = 0; i < arr.size(); ++i) {
      const std::string path = index(key, i);
      TensorDesc d;
      d.name = string_field(arr[i], "name", path);
      d.dtype = dtype_field(arr[i], path, &d.dtype_name);
      out.push_back(std::move(d));
    }
    return out;
  }

  // A concrete shape (training manifests have no symbols): at most 64 dimensions, a size that fits.
  std::vector<int64_t> fixed_shape_field(const json& obj, const std::string& path, DLDataType dtype,
                                         size_t* bytes) const {
    const std::string spath = join(path, "shape");
    std::vector<int64_t> shape = shape_value(field(obj, "shape", path), spath);
    if (shape.size() > 64) error(spath, "more than 64 dimensions");
    if (!dense_nbytes(shape.data(), static_cast<int>(shape.size()), dtype, bytes)) error(spath, "tensor size overflows");
    return shape;
  }

  static std::string join(const std::string& path, const char* key) {
    return path.empty() ? std::string(key) : path + "." + key;
  }
  static std::string index(const std::string& path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

 private:
  std::string origin_;
};

// "training.optimizer" (thunderc --optimizer): the kind, its entry, and exactly the state slots and
// hyperparameters this runtime knows for the kind (a newer compiler's extra ones would be computed by nobody).
void parse_optimizer(const Validator& v, const json& jo, const std::string& opath, Training& t) {
  if (!jo.is_object()) v.error(opath, "expected an object, got " + Validator::type_of(jo));
  OptimizerDesc o;
  o.kind = v.string_field(jo, "kind", opath);
  if (o.kind != "sgd" && o.kind != "adamw")
    v.error(Validator::join(opath, "kind"), "expected \"sgd\" or \"adamw\", got \"" + o.kind + "\"");
  o.entry = v.string_field(jo, "entry", opath);
  if (o.entry.empty()) v.error(Validator::join(opath, "entry"), "empty symbol name");
  o.workspace_bytes = static_cast<size_t>(v.uint_field(jo, "workspace_bytes", opath, std::numeric_limits<size_t>::max() / 2));
  if (auto je = jo.find("executors"); je != jo.end() && !je->is_object())
    v.error(Validator::join(opath, "executors"), "expected an object, got " + Validator::type_of(*je));
  auto strings = [&](const char* key) {
    const json& a = v.array_field(jo, key, opath);
    std::vector<std::string> out;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_string())
        v.error(Validator::index(Validator::join(opath, key), i), "expected a string, got " + Validator::type_of(a[i]));
      out.push_back(a[i].get<std::string>());
    }
    return out;
  };
  auto list = [](const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
  };
  o.state = strings("state");
  if (o.state != optimizer_state_names(o.kind))
    v.error(Validator::join(opath, "state"), "is [" + list(o.state) + "], but " + o.kind + "'s state is [" +
                                                 list(optimizer_state_names(o.kind)) + "]");
  o.scalars = strings("scalars");
  const std::vector<std::string>& known = optimizer_scalar_names(o.kind);
  for (size_t i = 0; i < o.scalars.size(); ++i) {
    const std::string spath = Validator::index(Validator::join(opath, "scalars"), i);
    if (std::find(known.begin(), known.end(), o.scalars[i]) == known.end())
      v.error(spath, "'" + o.scalars[i] + "' is no hyperparameter of " + o.kind + " this runtime computes (" + list(known) + ")");
    for (size_t j = 0; j < i; ++j)
      if (o.scalars[j] == o.scalars[i]) v.error(spath, "'" + o.scalars[i] + "' is also scalars[" + std::to_string(j) + "]");
  }
  t.optimizer = std::move(o);
}

// The top-level "training" object of a training model (docs/manifest.md).
void parse_training(const Validator& v, const json& jt, Manifest& m) {
  const std::string tpath = "training";
  if (!jt.is_object()) v.error(tpath, "expected an object, got " + Validator::type_of(jt));
  m.training_model = true;
  Training& t = m.training;
  const json& params = v.array_field(jt, "parameters", tpath);
  const std::string ppath0 = Validator::join(tpath, "parameters");
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string ppath = Validator::index(ppath0, i);
    ParameterDesc p;
    p.name = v.string_field(params[i], "name", ppath);
    if (p.name.empty()) v.error(Validator::join(ppath, "name"), "empty name");
    for (size_t j = 0; j < t.parameters.size(); ++j)
      if (t.parameters[j].name == p.name)
        v.error(Validator::join(ppath, "name"), "'" + p.name + "' is also " + Validator::index(ppath0, j) + "'s name");
    p.dtype = v.dtype_field(params[i], ppath, &p.dtype_name);
    size_t bytes = 0;
    p.shape = v.fixed_shape_field(params[i], ppath, p.dtype, &bytes);
    const uint64_t limit = std::numeric_limits<size_t>::max() / 2;
    p.offset = static_cast<size_t>(v.uint_field(params[i], "offset", ppath, limit));
    if (p.offset % 64 != 0)
      v.error(Validator::join(ppath, "offset"), std::to_string(p.offset) + " is not a multiple of 64");
    p.bytes = static_cast<size_t>(v.uint_field(params[i], "bytes", ppath, limit));
    if (p.bytes != bytes)
      v.error(Validator::join(ppath, "bytes"), "is " + std::to_string(p.bytes) + ", but a " + p.dtype_name +
                                                   shape_to_string(p.shape) + " tensor has " + std::to_string(bytes) +
                                                   " bytes");
    if (auto jtr = params[i].find("trainable"); jtr != params[i].end()) p.trainable = v.bool_field(params[i], "trainable", ppath);
    t.parameters.push_back(std::move(p));
  }
  if (auto ju = jt.find("updates"); ju != jt.end()) {
    const json& updates = v.array_field(jt, "updates", tpath);
    const std::string upath0 = Validator::join(tpath, "updates");
    for (size_t i = 0; i < updates.size(); ++i) {
      const std::string upath = Validator::index(upath0, i);
      if (t.parameters.empty()) v.error(upath, "there are no parameters to update");
      const size_t k = static_cast<size_t>(v.uint_value(updates[i], upath, t.parameters.size() - 1));
      if (t.parameters[k].trainable)
        v.error(upath, "parameter '" + t.parameters[k].name + "' is trainable; only buffers (\"trainable\": false) are updated by the forward");
      for (size_t j = 0; j < t.updates.size(); ++j)
        if (t.updates[j] == k) v.error(upath, "parameter '" + t.parameters[k].name + "' is also " + Validator::index(upath0, j));
      t.updates.push_back(k);
    }
  }

  const json& grads = v.array_field(jt, "gradients", tpath);
  const std::string gpath0 = Validator::join(tpath, "gradients");
  for (size_t i = 0; i < grads.size(); ++i) {
    const std::string gpath = Validator::index(gpath0, i);
    GradientDesc g;
    g.name = v.string_field(grads[i], "name", gpath);
    const std::string kind = v.string_field(grads[i], "kind", gpath);
    auto find = [&](const auto& list) {
      for (size_t k = 0; k < list.size(); ++k)
        if (list[k].name == g.name) return k;
      return list.size();
    };
    auto names = [](const auto& list) {
      std::string s;
      for (const auto& e : list) s += (s.empty() ? "" : ", ") + e.name;
      return s.empty() ? std::string("none") : s;
    };
    if (kind == "input") {
      g.index = find(m.inputs);
      if (g.index == m.inputs.size())
        v.error(Validator::join(gpath, "name"), "'" + g.name + "' is not an input of the model (inputs: " +
                                                    names(m.inputs) + ")");
    } else if (kind == "parameter") {
      g.is_parameter = true;
      g.index = find(t.parameters);
      if (g.index == t.parameters.size())
        v.error(Validator::join(gpath, "name"), "'" + g.name + "' is not a parameter (training.parameters: " +
                                                    names(t.parameters) + ")");
    } else {
      v.error(Validator::join(gpath, "kind"), "expected \"input\" or \"parameter\", got \"" + kind + "\"");
    }
    for (size_t j = 0; j < t.gradients.size(); ++j)
      if (t.gradients[j].is_parameter == g.is_parameter && t.gradients[j].index == g.index)
        v.error(gpath, "the gradient of " + kind + " '" + g.name + "' is also " + Validator::index(gpath0, j));
    t.gradients.push_back(std::move(g));
  }
  for (size_t k = 0; k < t.parameters.size(); ++k) {
    bool found = false;
    for (const GradientDesc& g : t.gradients) found = found || (g.is_parameter && g.index == k);
    if (!found && t.parameters[k].trainable)
      v.error(gpath0, "parameter '" + t.parameters[k].name + "' has no gradient (every trainable parameter must have one)");
    if (found && !t.parameters[k].trainable)
      v.error(gpath0, "'" + t.parameters[k].name + "' is a buffer (\"trainable\": false) and cannot have a gradient");
  }
  if (auto jo = jt.find("optimizer"); jo != jt.end()) parse_optimizer(v, *jo, Validator::join(tpath, "optimizer"), t);
}

// A variant's "training" object (training models only): saved tensors and the backward entry.
void parse_variant_training(const Validator& v, const json& jt, const std::string& vpath, const Manifest& m,
                            Variant& var) {
  const std::string tpath = Validator::join(vpath, "training");
  if (!jt.is_object()) v.error(tpath, "expected an object, got " + Validator::type_of(jt));
  if (var.symbolic())
    v.error(Validator::join(vpath, "dims"), "a training model cannot have symbolic variants (every shape is fixed)");
  if (var.device.device_type != kDLCPU && var.device.device_type != kDLCUDA)
    v.error(tpath, "training variants run on the cpu or on cuda, this one is on " + var.device_name);
  // The parameters live in one place (host memory, or one CUDA device): every variant is on one kind of device.
  if (!m.variants.empty() && m.variants.front().device.device_type != var.device.device_type)
    v.error(tpath, "every variant of a training model runs on one kind of device, where its parameters live: "
                   "variants[0] is on " + m.variants.front().device_name + ", this one on " + var.device_name);
  VariantTraining& vt = var.training;
  const json& saved = v.array_field(jt, "saved", tpath);
  for (size_t i = 0; i < saved.size(); ++i) {
    const std::string spath = Validator::index(Validator::join(tpath, "saved"), i);
    SavedSpec sp;
    sp.dtype = v.dtype_field(saved[i], spath, &sp.dtype_name);
    sp.shape = v.fixed_shape_field(saved[i], spath, sp.dtype, &sp.bytes);
    vt.saved.push_back(std::move(sp));
  }
  if (jt.find("rng_blocks") != jt.end()) {
    vt.rng_blocks = v.uint_field(jt, "rng_blocks", tpath, std::numeric_limits<int64_t>::max());
    if (vt.rng_blocks == 0) v.error(Validator::join(tpath, "rng_blocks"), "must be positive (absent: no dropout)");
  }
  const std::string bpath = Validator::join(tpath, "backward");
  const json& jb = v.field(jt, "backward", tpath);
  if (!jb.is_object()) v.error(bpath, "expected an object, got " + Validator::type_of(jb));
  vt.backward_entry = v.string_field(jb, "entry", bpath);
  if (vt.backward_entry.empty()) v.error(Validator::join(bpath, "entry"), "empty symbol name");
  vt.backward_workspace_bytes =
      static_cast<size_t>(v.uint_field(jb, "workspace_bytes", bpath, std::numeric_limits<size_t>::max() / 2));
  if (auto je = jb.find("executors"); je != jb.end() && !je->is_object())
    v.error(Validator::join(bpath, "executors"), "expected an object, got " + Validator::type_of(*je));
  const std::string gpath = Validator::join(bpath, "gradient_shapes");
  const json& shapes = v.array_field(jb, "gradient_shapes", bpath);
  const std::vector<GradientDesc>& grads = m.training.gradients;
  if (shapes.size() != grads.size())
    v.error(gpath, "has " + std::to_string(shapes.size()) + " entries but training.gradients has " +
                       std::to_string(grads.size()));
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string path = Validator::index(gpath, i);
    std::vector<int64_t> shape = v.shape_value(shapes[i], path);
    const GradientDesc& g = grads[i];
    const std::vector<int64_t>& want =
        g.is_parameter ? m.training.parameters[g.index].shape : var.guards[g.index].shape;
    if (shape != want)
      v.error(path, "is " + shape_to_string(shape) + ", but " + (g.is_parameter ? "parameter '" : "input '") + g.name +
                        "' has shape " + shape_to_string(want) + " (a gradient has the shape of its tensor)");
    vt.gradient_shapes.push_back(std::move(shape));
  }
}

}  // namespace

Manifest parse_manifest(const std::string& text, const std::string& origin) {
  Validator v(origin);
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    v.error("", std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) v.error("", "expected a JSON object at the top level, got " + Validator::type_of(root));

  const std::string format = v.string_field(root, "format", "");
  if (format != "thunderc-manifest")
    v.error("format", "expected \"thunderc-manifest\", got \"" + format + "\"");
  const uint64_t format_version = v.uint_field(root, "format_version", "", 0xffffffffu);
  if (format_version != 1)
    v.error("format_version", "version " + std::to_string(format_version) +
                                  " is not supported by this runtime (it reads version 1)");

  Manifest m;
  m.abi_version = static_cast<uint32_t>(v.uint_field(root, "abi_version", "", 0xffffffffu));
  m.inputs = v.tensor_list(root, "inputs");
  m.outputs = v.tensor_list(root, "outputs");
  if (auto jt = root.find("training"); jt != root.end()) parse_training(v, *jt, m);

  // Device of a variant without inputs: options.device when present, else cpu.
  DLDevice default_device{kDLCPU, 0};
  if (auto opts = root.find("options"); opts != root.end() && opts->is_object()) {
    if (auto dev = opts->find("device"); dev != opts->end() && dev->is_string()) {
      if (!parse_device(dev->get<std::string>(), &default_device)) default_device = DLDevice{kDLCPU, 0};
    }
    if (auto cache = opts->find("cache"); cache != opts->end()) {
      const std::string mode = cache->is_string() ? cache->get<std::string>() : cache->dump();
      if (mode == "constant values") m.cache = CacheMode::ConstantValues;
      else if (mode == "same input") m.cache = CacheMode::SameInput;
      else if (mode == "no caching") m.cache = CacheMode::NoCaching;
      else if (mode == "symbolic values") m.cache = CacheMode::SymbolicValues;
      else
        v.error("options.cache", "'" + mode + "' is not a cache mode this runtime supports (constant values, same "
                                 "input, no caching, symbolic values)");
    }
    if (auto target = opts->find("cpu_target"); target != opts->end()) {
      if (!target->is_string()) v.error("options.cpu_target", "expected a string, got " + Validator::type_of(*target));
      m.cpu_target = target->get<std::string>();
      if (!is_cpu_isa_level(m.cpu_target))
        v.error("options.cpu_target", "'" + m.cpu_target + "' is not a CPU target this runtime knows (x86-64, "
                                      "x86-64-v2, x86-64-v3, x86-64-v4)");
    }
    if (auto targets = opts->find("cpu_targets"); targets != opts->end()) {
      if (!targets->is_array() || targets->empty())
        v.error("options.cpu_targets", "expected a non-empty array of CPU targets, got " + Validator::type_of(*targets));
      if (m.cpu_target.empty()) v.error("options.cpu_targets", "given without options.cpu_target, its lowest level");
      for (size_t i = 0; i < targets->size(); ++i) {
        const json& t = (*targets)[i];
        const std::string path = Validator::index("options.cpu_targets", i);
        if (!t.is_string()) v.error(path, "expected a string, got " + Validator::type_of(t));
        const std::string level = t.get<std::string>();
        if (!is_cpu_isa_level(level))
          v.error(path, "'" + level + "' is not a CPU target this runtime knows (x86-64, x86-64-v2, x86-64-v3, x86-64-v4)");
        if (i == 0 && level != m.cpu_target)
          v.error(path, "'" + level + "' differs from options.cpu_target '" + m.cpu_target + "' (the lowest level comes first)");
        if (i > 0 && cpu_isa_rank(level) <= cpu_isa_rank(m.cpu_targets.back()))
          v.error(path, "'" + level + "' does not come after '" + m.cpu_targets.back() + "' (levels are listed ascending, once each)");
        m.cpu_targets.push_back(level);
      }
    } else if (!m.cpu_target.empty()) {
      m.cpu_targets = {m.cpu_target};
    }
    if (auto precision = opts->find("precision"); precision != opts->end()) {
      if (!precision->is_string()) v.error("options.precision", "expected a string, got " + Validator::type_of(*precision));
      m.precision = precision->get<std::string>();
      if (m.precision != "fp32" && m.precision != "tf32" && m.precision != "bf16" && m.precision != "fp16")
        v.error("options.precision", "'" + m.precision + "' is not a precision this runtime knows (fp32, tf32, bf16, fp16)");
    }
    if (auto profile = opts->find("profile"); profile != opts->end()) {
      if (!profile->is_boolean()) v.error("options.profile", "expected true or false, got " + Validator::type_of(*profile));
      m.profile = profile->get<bool>();
    }
    if (auto graphs = opts->find("cuda_graphs"); graphs != opts->end()) {
      if (!graphs->is_boolean()) v.error("options.cuda_graphs", "expected true or false, got " + Validator::type_of(*graphs));
      m.cuda_graphs = graphs->get<bool>();
    }
  }

  const json& variants = v.array_field(root, "variants", "");
  if (variants.empty()) v.error("variants", "the manifest lists no variants");
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    const json& jv = variants[vi];
    const std::string vpath = Validator::index("variants", vi);
    Variant var;
    var.id = v.uint_field(jv, "id", vpath, std::numeric_limits<uint32_t>::max());
    if (var.id != vi)
      v.error(Validator::join(vpath, "id"),
              "expected " + std::to_string(vi) + " (the variant's position), got " + std::to_string(var.id));
    var.entry = v.string_field(jv, "entry", vpath);
    if (var.entry.empty()) v.error(Validator::join(vpath, "entry"), "empty symbol name");

    if (auto jd = jv.find("dims"); jd != jv.end()) {
      const std::string dpath = Validator::join(vpath, "dims");
      if (!jd->is_object()) v.error(dpath, "expected an object, got " + Validator::type_of(*jd));
      for (auto it = jd->begin(); it != jd->end(); ++it) {
        const std::string path = Validator::join(dpath, it.key().c_str());
        SymDim d;
        d.name = it.key();
        const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
        d.min = static_cast<int64_t>(v.uint_field(*it, "min", path, limit));
        d.max = static_cast<int64_t>(v.uint_field(*it, "max", path, limit));
        if (d.min > d.max) v.error(path, "min " + std::to_string(d.min) + " exceeds max " + std::to_string(d.max));
        var.dims.push_back(std::move(d));
      }
      if (var.dims.size() > 64) v.error(dpath, "more than 64 symbols");
    }
    auto dim_index = [&](const std::string& name) {
      for (size_t k = 0; k < var.dims.size(); ++k)
        if (var.dims[k].name == name) return static_cast<int>(k);
      return -1;
    };
    std::vector<int64_t> at_max;  // each symbol's maximum, for the overflow checks
    for (const SymDim& d : var.dims) at_max.push_back(d.max);
    std::vector<bool> bound(var.dims.size(), false);

    const json& guards = v.array_field(jv, "guards", vpath);
    if (guards.size() != m.inputs.size())
      v.error(Validator::join(vpath, "guards"), "has " + std::to_string(guards.size()) +
                                                    " entries but the model has " +
                                                    std::to_string(m.inputs.size()) + " inputs");
    for (size_t gi = 0; gi < guards.size(); ++gi) {
      const std::string gpath = Validator::index(Validator::join(vpath, "guards"), gi);
      Guard g;
      g.input = v.string_field(guards[gi], "input", gpath);
      if (g.input != m.inputs[gi].name)
        v.error(Validator::join(gpath, "input"),
                "names '" + g.input + "' but input " + std::to_string(gi) + " is '" + m.inputs[gi].name + "'");
      g.dtype = v.dtype_field(guards[gi], gpath, &g.dtype_name);
      {
        const std::string spath = Validator::join(gpath, "shape");
        const json& js = v.field(guards[gi], "shape", gpath);
        if (!js.is_array()) v.error(spath, "expected an array of non-negative integers, got " + Validator::type_of(js));
        g.shape_text = "[";
        for (size_t d = 0; d < js.size(); ++d) {
          if (js[d].is_string() && !var.dims.empty()) {
            const int k = dim_index(js[d].get<std::string>());
            if (k < 0)
              v.error(Validator::index(spath, d), "symbol '" + js[d].get<std::string>() + "' is not in " +
                                                      Validator::join(vpath, "dims"));
            g.shape.push_back(-1);
            g.sym.push_back(k);
            bound[k] = true;
            g.shape_text += (d ? ", " : "") + var.dims[k].name;
          } else {
            g.shape.push_back(static_cast<int64_t>(v.uint_value(
                js[d], Validator::index(spath, d), static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))));
            g.sym.push_back(-1);
            g.shape_text += (d ? ", " : "") + std::to_string(g.shape.back());
          }
        }
        g.shape_text += "]";
      }
      if (g.shape.size() > 64) v.error(Validator::join(gpath, "shape"), "more than 64 dimensions");
      g.device_name = v.string_field(guards[gi], "device", gpath);
      if (!parse_device(g.device_name, &g.device))
        v.error(Validator::join(gpath, "device"),
                "unsupported device '" + g.device_name + "' (expected cpu, cuda or cuda:N)");
      g.contiguous = v.bool_field(guards[gi], "contiguous", gpath);
      if (auto it = guards[gi].find("finite_max_abs"); it != guards[gi].end()) {
        const std::string bpath = Validator::join(gpath, "finite_max_abs");
        if (!it->is_number() || !(it->get<double>() >= 1) || !std::isfinite(it->get<double>()))
          v.error(bpath, "expected a finite number >= 1, got " + (it->is_number() ? it->dump() : Validator::type_of(*it)));
        if (g.dtype.code != kDLFloat && g.dtype.code != kDLBfloat)
          v.error(bpath, "only a floating-point input can have one (this one is " + g.dtype_name + ")");
        if (g.device.device_type != kDLCPU)
          v.error(bpath, "only a cpu input can have one (this one is on " + g.device_name + ")");
        g.finite_max_abs = it->get<double>();
        var.bounded = true;
      }
      size_t bytes = 0;
      std::vector<int64_t> largest = g.shape;
      for (size_t d = 0; d < largest.size(); ++d)
        if (g.sym[d] >= 0) largest[d] = at_max[g.sym[d]];
      if (!dense_nbytes(largest.data(), static_cast<int>(largest.size()), g.dtype, &bytes))
        v.error(Validator::join(gpath, "shape"), "tensor size overflows");
      var.guards.push_back(std::move(g));
    }
    if (!var.guards.empty()) {
      var.device = var.guards[0].device;
      var.device_name = device_to_string(var.device);
      for (size_t gi = 1; gi < var.guards.size(); ++gi) {
        if (var.guards[gi].device.device_type != var.device.device_type ||
            var.guards[gi].device.device_id != var.device.device_id)
          v.error(Validator::join(vpath, "guards"),
                  "inputs on different devices (" + var.device_name + " and " +
                      device_to_string(var.guards[gi].device) + ") are not supported");
      }
    } else {
      var.device = default_device;
      var.device_name = device_to_string(default_device);
    }

    const json& oshapes = v.array_field(jv, "output_shapes", vpath);
    if (oshapes.size() != m.outputs.size())
      v.error(Validator::join(vpath, "output_shapes"),
              "has " + std::to_string(oshapes.size()) + " entries but the model has " +
                  std::to_string(m.outputs.size()) + " outputs");
    for (size_t oi = 0; oi < oshapes.size(); ++oi) {
      const std::string opath = Validator::index(Validator::join(vpath, "output_shapes"), oi);
      if (!oshapes[oi].is_array())
        v.error(opath, "expected an array of non-negative integers, got " + Validator::type_of(oshapes[oi]));
      std::vector<int64_t> shape, largest;
      std::vector<AffineDim> affine;
      for (size_t d = 0; d < oshapes[oi].size(); ++d) {
        const json& e = oshapes[oi][d];
        const std::string dpath = Validator::index(opath, d);
        AffineDim f;
        if (e.is_object() && !var.dims.empty()) {
          // {"const": c, "B": a, ...}: c + a*B + ...
          for (auto it = e.begin(); it != e.end(); ++it) {
            if (!it->is_number_integer())
              v.error(Validator::join(dpath, it.key().c_str()), "expected an integer, got " + Validator::type_of(*it));
            if (it.key() == "const") {
              f.c = it->get<int64_t>();
            } else {
              const int k = dim_index(it.key());
              if (k < 0) v.error(dpath, "symbol '" + it.key() + "' is not in " + Validator::join(vpath, "dims"));
              f.terms.push_back({k, it->get<int64_t>()});
            }
          }
          // An affine size is smallest and largest at corners of the symbols' box: check both, overflow-checked,
          // so that no binding in range gives a negative or overflowing size.
          int64_t lo = f.c, hi = f.c;
          bool overflow = false;
          for (const auto& [k, a] : f.terms) {
            const int64_t at_min_k = var.dims[k].min, at_max_k = at_max[k];
            int64_t small = 0, big = 0;
            overflow = overflow || __builtin_mul_overflow(a, a >= 0 ? at_min_k : at_max_k, &small) ||
                       __builtin_mul_overflow(a, a >= 0 ? at_max_k : at_min_k, &big) ||
                       __builtin_add_overflow(lo, small, &lo) || __builtin_add_overflow(hi, big, &hi);
          }
          if (overflow) v.error(dpath, "the size overflows within the symbols' ranges");
          if (lo < 0) {
            std::string where;
            for (const auto& [k, a] : f.terms)
              where += (where.empty() ? "" : ", ") + var.dims[k].name + " = " +
                       std::to_string(a >= 0 ? var.dims[k].min : at_max[k]);
            v.error(dpath, "negative size " + std::to_string(lo) + " at " + where);
          }
          shape.push_back(f.terms.empty() ? f.c : -1);
          largest.push_back(hi);
        } else {
          f.c = static_cast<int64_t>(
              v.uint_value(e, dpath, static_cast<uint64_t>(std::numeric_limits<int64_t>::max())));
          shape.push_back(f.c);
          largest.push_back(f.c);
        }
        affine.push_back(std::move(f));
      }
      if (shape.size() > 64) v.error(opath, "more than 64 dimensions");
      size_t bytes = 0;
      if (!dense_nbytes(largest.data(), static_cast<int>(largest.size()), m.outputs[oi].dtype, &bytes))
        v.error(opath, "tensor size overflows");
      var.output_shapes.push_back(std::move(shape));
      var.output_dims.push_back(std::move(affine));
    }
    for (size_t k = 0; k < var.dims.size(); ++k)
      if (!bound[k])
        v.error(Validator::join(Validator::join(vpath, "dims"), var.dims[k].name.c_str()),
                "no input guard has this symbol, so it cannot be bound");
    var.workspace_bytes = static_cast<size_t>(
        v.uint_field(jv, "workspace_bytes", vpath, std::numeric_limits<size_t>::max() / 2));
    if (auto jt = jv.find("training"); m.is_training()) {
      if (jt == jv.end())
        v.error(Validator::join(vpath, "training"), "missing (every variant of a training model has one)");
      parse_variant_training(v, *jt, vpath, m, var);
    } else if (jt != jv.end()) {
      v.error(Validator::join(vpath, "training"), "present, but the manifest has no top-level training object");
    }

    // Signature used in dispatch messages: "x: float32[1, 64] cpu, y: int64[1] cpu".
    if (var.guards.empty()) var.signature = "(no inputs) " + var.device_name;
    for (size_t gi = 0; gi < var.guards.size(); ++gi) {
      if (gi) var.signature += ", ";
      const Guard& g = var.guards[gi];
      var.signature += g.input + ": " + g.dtype_name + g.shape_text + " " + device_to_string(g.device);
      if (g.finite_max_abs > 0) var.signature += " finite |x| <= " + format_bound(g.finite_max_abs);
    }
    for (size_t k = 0; k < var.dims.size(); ++k)
      var.signature += (k ? ", " : " (") + var.dims[k].name + " in " + std::to_string(var.dims[k].min) + ".." +
                       std::to_string(var.dims[k].max) + (k + 1 == var.dims.size() ? ")" : "");
    m.variants.push_back(std::move(var));
  }
  return m;
}

std::string bind_dims(const Variant& v, const std::vector<TensorDesc>& inputs, const DLTensor* tensors, size_t n,
                      int64_t* values) {
  if (!v.symbolic()) return {};
  // Where each symbol was bound: input, dimension (input == n: not yet).
  size_t from_input[64], from_dim[64];
  const size_t count = v.dims.size() < 64 ? v.dims.size() : 64;
  for (size_t k = 0; k < count; ++k) from_input[k] = n, from_dim[k] = 0;
  for (size_t i = 0; i < n && i < v.guards.size(); ++i) {
    const Guard& g = v.guards[i];
    if (static_cast<size_t>(tensors[i].ndim) != g.shape.size()) continue;  // guard_mismatch reports it
    for (size_t d = 0; d < g.sym.size(); ++d) {
      const int k = g.sym[d];
      if (k < 0 || static_cast<size_t>(k) >= count) continue;
      const SymDim& sd = v.dims[k];
      const int64_t got = tensors[i].shape[d];
      // Messages only on failure: a matching call allocates nothing here.
      auto where = [&] { return "input '" + inputs[i].name + "' dimension " + std::to_string(d); };
      if (from_input[k] == n) {
        if (got < sd.min || got > sd.max)
          return where() + " is " + std::to_string(got) + ", outside " + sd.name + "'s range " + std::to_string(sd.min) +
                 ".." + std::to_string(sd.max);
        values[k] = got;
        from_input[k] = i, from_dim[k] = d;
      } else if (values[k] != got) {
        return where() + " is " + std::to_string(got) + ", but " + sd.name + " = " + std::to_string(values[k]) +
               " from input '" + inputs[from_input[k]].name + "' dimension " + std::to_string(from_dim[k]) +
               " (every " + sd.name + " must be equal)";
      }
    }
  }
  return {};
}

bool output_shape(const Variant& v, size_t i, const int64_t* values, int64_t* shape) {
  const auto& fixed = v.output_shapes[i];
  for (size_t d = 0; d < fixed.size(); ++d) {
    if (fixed[d] >= 0 || !v.symbolic()) {
      shape[d] = fixed[d];
      continue;
    }
    const AffineDim& f = v.output_dims[i][d];
    int64_t e = f.c;
    for (const auto& [k, a] : f.terms) {
      int64_t term = 0;
      if (__builtin_mul_overflow(a, values[k], &term) || __builtin_add_overflow(e, term, &e)) return false;
    }
    if (e < 0) return false;
    shape[d] = e;
  }
  return true;
}

}  // namespace thunderc::rt
