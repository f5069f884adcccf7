// thunderc inspect: see inspect.h.
#include "cli/commands/inspect.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/commands/run.h"
#include "core/ir/dtype.h"
#include "core/ir/error.h"
#include "core/ir/printer.h"

namespace thunderc {
namespace {

using nlohmann::json;

struct InspectFlags {
  std::string model;
  bool json = false;
};

// A manifest value as one line of text: strings bare, arrays comma-separated, objects "key: value".
std::string value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "none";
  if (v.is_array()) {
    if (v.empty()) return "(none)";
    std::string s;
    for (const json& e : v) s += (s.empty() ? "" : ", ") + value_text(e);
    return s;
  }
  if (v.is_object()) {
    std::string s;
    for (auto it = v.begin(); it != v.end(); ++it) s += (s.empty() ? "" : ", ") + it.key() + ": " + value_text(*it);
    return "{" + s + "}";
  }
  return v.dump();
}

// "[1, 64]"; symbolic entries (--cache "symbolic values") print as the symbol ("B") or the affine
// expression ({"const": -1, "B": 2} -> "2*B - 1").
std::string shape_of(const json& shape) {
  bool plain = true;
  for (const json& d : shape) plain = plain && d.is_number_integer();
  if (plain) {
    std::vector<int64_t> dims;
    for (const json& d : shape) dims.push_back(d.get<int64_t>());
    return commands::shape_text(dims);
  }
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const json& d = shape[i];
    std::string e;
    if (d.is_object()) {
      int64_t c = 0;
      for (auto it = d.begin(); it != d.end(); ++it) {
        if (!it->is_number_integer()) continue;
        const int64_t a = it->get<int64_t>();
        if (it.key() == "const") {
          c = a;
          continue;
        }
        if (a == 0) continue;
        std::string term = (a == 1 || a == -1 ? "" : std::to_string(a < 0 ? -a : a) + "*") + it.key();
        e += e.empty() ? (a < 0 ? "-" : "") + term : (a < 0 ? " - " : " + ") + term;
      }
      if (e.empty()) e = std::to_string(c);
      else if (c != 0) e += (c < 0 ? " - " : " + ") + std::to_string(c < 0 ? -c : c);
    } else {
      e = value_text(d);
    }
    s += (i ? ", " : "") + e;
  }
  return s + "]";
}

// Bytes per element of a manifest dtype name (0 for an unknown one: the manifest was checked at open).
std::size_t dtype_bytes(const std::string& name) {
  const std::optional<DType> d = parse_dtype(name);
  return d ? dtype_size(*d) : 0;
}

std::string bytes_text(std::size_t bytes) {
  std::string s = std::to_string(bytes) + " bytes";
  if (bytes >= 1024) s += " (" + format_bytes(bytes) + ")";
  return s;
}

std::string field(const json& obj, const char* key, const std::string& fallback = "?") {
  auto it = obj.find(key);
  return it == obj.end() ? fallback : value_text(*it);
}

void print_summary(std::ostream& os, const std::string& so_path, const json& m, const Model* model) {
  const json empty = json::object();
  const json& source = m.contains("source") ? m["source"] : empty;
  const json& inputs = m.contains("inputs") ? m["inputs"] : json::array();
  const json& outputs = m.contains("outputs") ? m["outputs"] : json::array();

  os << "model:     " << so_path << "\n";
  os << "thunderc:  " << field(m, "thunderc_version") << " (manifest format " << field(m, "format_version")
     << ", ABI " << field(m, "abi_version") << ")\n";
  os << "source:    " << field(source, "path") << " (" << field(source, "frontend", "unknown frontend") << ")\n";
  os << "sha256:    " << field(source, "sha256") << "\n";

  os << "options:\n";
  if (auto it = m.find("options"); it != m.end() && it->is_object() && !it->empty()) {
    std::size_t w = 0;
    for (auto o = it->begin(); o != it->end(); ++o) w = std::max(w, o.key().size());
    for (auto o = it->begin(); o != it->end(); ++o)
      os << "  " << o.key() << ":" << std::string(w + 1 - o.key().size(), ' ') << value_text(*o) << "\n";
  } else {
    os << "  (none recorded)\n";
  }

  // Which level of the host code runs here (the runtime's choice among --cpu-target's levels).
  if (model) {
    std::string levels;
    if (auto o = m.find("options"); o != m.end() && o->is_object()) {
      if (auto t = o->find("cpu_targets"); t != o->end() && t->is_array())
        for (const json& l : *t) levels += (levels.empty() ? "" : ", ") + value_text(l);
      else if (auto t1 = o->find("cpu_target"); t1 != o->end())
        levels = value_text(*t1);
    }
    if (!levels.empty()) {
      const std::string runs = model->cpu_target();
      os << "host code: " << (runs.empty() ? std::string("none of ") + levels + " runs on this CPU"
                                           : runs + " runs here (compiled for " + levels + ")")
         << "\n";
    }
  }

  auto io_line = [](const json& list) {
    std::string s;
    for (const json& t : list) s += (s.empty() ? "" : ", ") + field(t, "name") + ": " + field(t, "dtype");
    return s.empty() ? std::string("(none)") : s;
  };
  os << "inputs:    " << io_line(inputs) << "\n";
  os << "outputs:   " << io_line(outputs) << "\n";

  if (auto w = m.find("weights"); w != m.end() && w->is_object()) {
    const std::size_t count = w->value("count", std::size_t{0});
    os << "weights:   " << count << " tensor" << (count == 1 ? "" : "s") << ", "
       << bytes_text(w->value("bytes", std::size_t{0})) << ", " << field(*w, "storage") << "\n";
  }

  // A training model (--autograd): its state and, with --optimizer, the update.
  if (auto t = m.find("training"); t != m.end() && t->is_object()) {
    std::size_t trainable = 0, buffers = 0, bytes = 0;
    for (const json& p : t->value("parameters", json::array())) {
      (p.value("trainable", true) ? trainable : buffers) += 1;
      bytes += p.value("bytes", std::size_t{0});
    }
    os << "training:  " << trainable << " parameter" << (trainable == 1 ? "" : "s");
    if (buffers) os << ", " << buffers << " buffer" << (buffers == 1 ? "" : "s");
    os << ", " << bytes_text(bytes) << "; " << t->value("gradients", json::array()).size() << " gradients\n";
    if (auto o = t->find("optimizer"); o != t->end() && o->is_object()) {
      std::string state;
      for (const json& s : o->value("state", json::array())) state += (state.empty() ? "" : ", ") + value_text(s);
      os << "optimizer: " << field(*o, "kind") << " (" << field(*o, "entry") << "; state per parameter: " << state << ")\n";
    }
  }

  const json& variants = m.contains("variants") ? m["variants"] : json::array();
  os << "variants:  " << variants.size() << " (a call runs the first, in id order, whose guards match)\n";
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const json& v = variants[i];
    if (model && i < model->num_variants()) {
      const VariantInfo info = model->variant(i);
      os << "  #" << field(v, "id") << "  " << info.entry;  // the entry of the level that runs here
      if (!info.available) os << "  (unavailable here: no " << commands::device_text(info.device) << ")";
    } else {
      os << "  #" << field(v, "id") << "  " << field(v, "entry");
    }
    os << "\n";
    std::string guards;
    if (auto g = v.find("guards"); g != v.end())
      for (const json& guard : *g) {
        guards += (guards.empty() ? "" : ", ") + field(guard, "input") + ": " + field(guard, "dtype") +
                  shape_of(guard.value("shape", json::array())) + " " + field(guard, "device");
        if (!guard.value("contiguous", true)) guards += " (any layout)";
      }
    os << "      inputs:    " << (guards.empty() ? "(none)" : guards) << "\n";
    if (auto d = v.find("dims"); d != v.end() && d->is_object() && !d->empty()) {
      std::string dims;
      for (auto it = d->begin(); it != d->end(); ++it)
        dims += (dims.empty() ? "" : ", ") + it.key() + " in " + field(*it, "min") + ".." + field(*it, "max");
      os << "      dims:      " << dims << " (symbolic: bound from the inputs on every call)\n";
    }
    std::string outs;
    if (auto s = v.find("output_shapes"); s != v.end())
      for (std::size_t k = 0; k < s->size(); ++k) {
        const std::string name = k < outputs.size() ? field(outputs[k], "name") : "output" + std::to_string(k);
        const std::string dtype = k < outputs.size() ? field(outputs[k], "dtype") : "?";
        outs += (outs.empty() ? "" : ", ") + name + ": " + dtype + shape_of((*s)[k]);
      }
    os << "      outputs:   " << (outs.empty() ? "(none)" : outs) << "\n";
    os << "      workspace: " << bytes_text(v.value("workspace_bytes", std::size_t{0})) << "\n";
    std::string execs;
    std::size_t total = 0;
    if (auto e = v.find("executors"); e != v.end() && e->is_object())
      for (auto it = e->begin(); it != e->end(); ++it) {
        const std::size_t n = it->get<std::size_t>();
        total += n;
        execs += (execs.empty() ? "" : ", ") + it.key() + " " + std::to_string(n);
      }
    os << "      executors: " << (execs.empty() ? "(none)" : execs + " (" + std::to_string(total) + " operations)")
       << "\n";
    // A training forward: what it saves, and its backward entry.
    if (auto t = v.find("training"); t != v.end() && t->is_object()) {
      std::size_t saved_bytes = 0, saved = 0;
      for (const json& sv : t->value("saved", json::array())) {
        std::size_t n = dtype_bytes(field(sv, "dtype"));
        for (const json& d : sv.value("shape", json::array())) n *= d.is_number_unsigned() ? d.get<std::size_t>() : 0;
        saved_bytes += n;
        ++saved;
      }
      const json& b = t->value("backward", empty);
      os << "      training:  saves " << saved << " tensor" << (saved == 1 ? "" : "s") << ", " << bytes_text(saved_bytes)
         << ", for the backward " << field(b, "entry") << " (workspace " << bytes_text(b.value("workspace_bytes", std::size_t{0}))
         << ")";
      if (auto r = t->find("rng_blocks"); r != t->end()) os << "; dropout draws " << value_text(*r) << " Philox blocks a call";
      os << "\n";
    }
    // CUDA variants: the kernels in launch order, with their launch configuration and ptxas' registers.
    if (auto c = v.find("cuda"); c != v.end() && c->is_object()) {
      const auto& kernels = c->value("kernels", nlohmann::json::array());
      std::string archs;
      for (const auto& a : c->value("archs", nlohmann::json::array())) archs += (archs.empty() ? "" : ", ") + a.get<std::string>();
      os << "      cuda:      " << kernels.size() << " kernel" << (kernels.size() == 1 ? "" : "s") << ", cubins for "
         << archs << "\n";
      for (const auto& k : kernels) {
        auto dims = [](const nlohmann::json& d) {
          return std::to_string(d[0].get<long>()) + "x" + std::to_string(d[1].get<long>()) + "x" + std::to_string(d[2].get<long>());
        };
        std::string regs;
        for (auto it = k["resources"].begin(); it != k["resources"].end(); ++it)
          regs += (regs.empty() ? "" : ", ") + it.key() + " " + std::to_string((*it)["registers"].get<int>()) + " regs";
        os << "        " << k.value("name", std::string()) << "  grid " << dims(k["grid"]) << " block " << dims(k["block"])
           << (regs.empty() ? "" : "  (" + regs + ")") << "\n          " << k.value("what", std::string()) << "\n";
      }
      // Library calls: the runtime runs them through cuBLASLt/cuDNN, or falls back to the kernels above.
      const auto& calls = c->value("library_calls", nlohmann::json::array());
      if (!calls.empty())
        os << "      library:   " << calls.size() << " call" << (calls.size() == 1 ? "" : "s")
           << " (each falls back to its kernel where the library cannot run it)\n";
      for (const auto& lc : calls)
        os << "        #" << lc.value("id", 0) << " " << lc.value("library", std::string()) << ": "
           << lc.value("what", std::string()) << "\n";
    }
  }
}

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void inspect_command(const InspectFlags& f) {
  std::optional<Model> model;
  std::string text;
  try {
    model.emplace(f.model, OpenOptions{});
    text = model->manifest();
  } catch (const Error& e) {
    // A model built for a device this machine lacks cannot be opened, but its manifest can still be shown.
    std::filesystem::path json_path = f.model;
    json_path.replace_extension(".json");
    std::optional<std::string> on_disk;
    if (e.code() == THUNDERC_STATUS_DEVICE_UNAVAILABLE) on_disk = read_file(json_path);
    if (!on_disk) throw UserError(commands::runtime_message(e, "cannot open model '" + f.model + "'", f.model));
    std::cerr << "thunderc: note: " << e.what() << "; showing " << json_path.string() << "\n";
    text = *on_disk;
  }

  if (f.json) {
    std::cout << text;
    if (text.empty() || text.back() != '\n') std::cout << "\n";
    std::cout.flush();
    return;
  }
  json m;
  try {
    m = json::parse(text);
  } catch (const json::exception& e) {
    user_error("the manifest of '", f.model, "' is not valid JSON: ", e.what());
  }
  std::ostringstream os;
  try {
    print_summary(os, f.model, m, model ? &*model : nullptr);
  } catch (const json::exception& e) {
    user_error("the manifest of '", f.model, "' is malformed: ", e.what());
  }
  std::cout << os.str() << std::flush;
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto flags = std::make_shared<InspectFlags>();
  CLI::App* cmd = app.add_subcommand("inspect", "summarize a compiled model (OUT.so): source, options, variants");
  commands::add_model_argument(*cmd, flags->model);
  cmd->add_flag("--json", flags->json, "print the manifest itself (JSON, as embedded in the .so)");
  cmd->callback([flags]() { inspect_command(*flags); });
}

}  // namespace thunderc
