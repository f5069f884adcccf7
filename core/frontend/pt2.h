// The torch.export frontend: reads a `.pt2` archive (torch.export.save) without LibTorch or Python and imports
// its ExportedProgram into a Trace. Three layers, each usable on its own (tests use all three):
//   ZipReader   the archive's central directory; stored entries (what torch writes), CRC-checked
//   Pt2Archive  the layout torch 2.x writes under one root folder: archive_format ("pt2"), archive_version
//               ("0"), models/<name>.json (the serialized ExportedProgram, schema major 8),
//               data/weights/<name>_weights_config.json and data/constants/<name>_constants_config.json
//               (fqn -> file, dtype, sizes, strides, storage offset), the raw bytes under data/weights/ and
//               data/constants/
//   Pt2Model    the ModelFrontend: user inputs, example shapes (from the inputs' tensor meta), import.
// Everything read from the file is data: names become identifiers through sanitize_identifier (the original
// kept as source_name), and messages quote it.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/frontend/frontend.h"

namespace thunderc {

struct ZipEntry {
  std::string name;
  std::uint16_t method = 0;        // 0: stored, 8: deflate (refused when read)
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0, size = 0;
  std::uint64_t local_header_offset = 0;
};

class ZipReader {
 public:
  // Reads the central directory (zip64 too). UserError naming `path` when it is not a readable zip archive.
  static ZipReader open(const std::string& path);
  const std::string& path() const { return path_; }
  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(const std::string& name) const;
  // The entry's bytes, checked against its size and CRC-32. UserError for compressed or corrupt entries.
  std::string read(const ZipEntry& entry) const;
  std::string read(const std::string& name) const;  // UserError when there is no such entry

 private:
  std::string path_;
  std::uint64_t file_size_ = 0;
  std::vector<ZipEntry> entries_;
  std::map<std::string, std::size_t> index_;
};

// An argument as the serialized graph gives it (schema.py's Argument union, one tag set).
struct Pt2Arg {
  enum class Kind { None, Tensor, Tensors, OptionalTensors, Int, Ints, Float, Floats, Bool, Bools, String, Strings,
                    SymInt, SymInts, ScalarType, MemoryFormat, Layout, Device, Other };
  Kind kind = Kind::None;
  std::string tag;                  // the union tag, e.g. "as_tensor" (for messages)
  std::vector<std::string> names;   // Tensor(s): tensor names ("" = None in OptionalTensors); SymInt(s): symbol names ("" = literal)
  std::vector<std::int64_t> ints;   // Int(s), Bool(s) as 0/1, SymInt(s) literals, ScalarType/MemoryFormat/Layout enums
  std::vector<double> floats;       // Float(s)
  std::vector<std::string> strings; // String(s), Device type
};

struct Pt2NamedArg {
  std::string name;  // the schema's argument name ("input", "weight", "stride")
  Pt2Arg arg;
};

struct Pt2Node {
  std::string target;  // "torch.ops.aten.linear.default", "_operator.getitem", ...
  std::string name;    // the FX node's name (may be empty in older archives)
  std::vector<Pt2NamedArg> inputs;
  std::vector<Pt2Arg> outputs;
  std::string stack_trace;     // metadata: the Python stack where the export saw the call (may be empty)
  std::string nn_module_stack;
  // "model.py:12 (fc1)"-style location for messages: last stack frame's file:line, else the node name.
  std::string location() const;
};

// Tensor metadata (schema.py's TensorMeta). A size may be symbolic: then `size_exprs[i]` holds its expression
// text and `sizes[i]` its hint (the example's size).
struct Pt2TensorMeta {
  int scalar_type = 0;  // schema ScalarType enum (7 = FLOAT)
  Shape sizes;
  std::vector<std::string> size_exprs;  // parallel to sizes; empty string = a plain int
  IntList strides;
  std::int64_t storage_offset = 0;  // -1 when symbolic
  bool is_static() const;
};

// The DType of a schema ScalarType, or nullopt (complex, float8, unsigned wider than 8 bits...).
std::optional<DType> pt2_dtype(int scalar_type);
std::string pt2_scalar_type_name(int scalar_type);  // "FLOAT", "COMPLEXFLOAT", ... or "ScalarType 99"

struct Pt2InputSpec {
  std::string kind;    // "user_input", "parameter", "buffer", "tensor_constant", "constant_input", ... (schema tag)
  std::string name;    // the graph input's name
  std::string target;  // parameter/buffer/constant fully qualified name; empty for user inputs
};

struct Pt2Tensor {  // a weight, buffer or constant: dense row-major bytes
  Pt2TensorMeta meta;
  DType dtype = DType::Float32;
  std::shared_ptr<const ConstantData> data;
  bool is_param = false;
};

struct Pt2Program {
  std::string model_name;      // "model"
  std::string torch_version;   // as the archive records it
  int schema_major = 0, schema_minor = 0;
  std::vector<std::string> verifiers;
  std::vector<Pt2InputSpec> input_specs;  // in graph input order
  std::vector<std::string> output_kinds;  // output spec tags, parallel to graph_outputs
  std::vector<Pt2Arg> graph_outputs;
  std::vector<Pt2Node> nodes;
  std::map<std::string, Pt2TensorMeta> tensor_values;
  struct Range { std::optional<std::int64_t> min, max; };
  std::map<std::string, Range> range_constraints;  // symbol -> inclusive range (nullopt: unbounded)
  std::map<std::string, Pt2Tensor> weights;        // fqn -> parameter/buffer
  std::map<std::string, Pt2Tensor> constants;      // fqn -> lifted tensor constant
};

// The symbol a size expression names when it is one plain symbol: "s77" or "Symbol('s77', positive=True,
// integer=True)" (what torch 2.6+ writes). Empty for an expression such as "2*s77".
std::string pt2_plain_symbol(const std::string& expr);

// Reads and checks the archive (format, version, schema major) and loads the program with its weights.
// UserError naming the file and what is wrong.
Pt2Program read_pt2_program(const ZipReader& zip);
// Parses one serialized ExportedProgram (models/<name>.json) without weights (tests, fuzzing).
Pt2Program parse_exported_program(const std::string& json_text, const std::string& context);

class Pt2Model : public ModelFrontend {
 public:
  static std::unique_ptr<Pt2Model> load(const std::string& path);

  const std::string& path() const override { return path_; }
  std::string format() const override { return "pt2"; }
  std::string description() const override;
  const std::vector<std::string>& input_names() const override { return input_names_; }
  std::optional<Specialization> recorded_shapes() const override { return recorded_; }
  std::optional<DeclaredDims> declared_dims(std::string* why_not = nullptr,
                                            const std::vector<DimRange>& bounds = {}) const override;
  std::vector<TensorType> resolve_shapes(const Specialization& spec, Device device) const override;
  Trace import(const std::vector<TensorType>& input_types, std::vector<SharpEdge>* sharp_edges = nullptr,
               bool alias_updates = true) const override;
  std::string graph_str() const override;
  // The graph signature's parameters (the export keeps ops on them in the graph, so nothing is folded).
  std::vector<std::string> parameter_names() const override { return parameters_; }

  const Pt2Program& program() const { return program_; }

 private:
  std::string path_;
  Pt2Program program_;
  std::vector<std::string> input_names_;
  std::vector<std::string> parameters_;
  std::optional<Specialization> recorded_;
};

// Every graph-node target the .pt2 importer handles ("torch.ops.aten.relu.default", ...), sorted.
std::vector<std::string> pt2_imported_targets();

}  // namespace thunderc
