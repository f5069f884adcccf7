// Turns the claimed traces of every variant into the sources of one model .so: a C++ file with one
// exported entry per variant (the trace as comments, each symbol emitted by its executor's backend), an
// assembler file that embeds the weights blob and the manifest with .incbin (never as C literals), and
// the blob itself. Output is deterministic: same traces and manifest, same bytes.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/backend.h"
#include "codegen/memory_plan.h"
#include "core/ir/symbolic.h"
#include "core/ir/trace.h"

namespace thunderc {

struct ModuleVariant {
  const Trace* trace = nullptr;
  std::string label;  // "x=1x64:float32", for comments
  // Symbolic variants (--cache "symbolic values"): sizes as expressions in the symbols, read from the inputs
  // at run time; `trace` is the one traced at the symbols' maxima. Null for fixed shapes.
  const SymbolicTrace* symbolic = nullptr;
  // A bounded variant (core/transforms/value_bounds.h): the runtime sends it only calls whose floating-point
  // inputs are all finite with |x| <= input_bound (the guards' finite_max_abs). 0: no such guard.
  double input_bound = 0;
  // --autograd (docs/training.md): a training forward's first `model_outputs` outputs are the model's, the
  // saved tensors follow, then the updated buffers (TrainingModule::updates); `backward` is the index of the
  // variant holding its backward program. A backward, or --optimizer's update (TrainingModule::optimizer), is a
  // program (`is_program`): an entry of the .so but no variant of the manifest; programs follow every variant.
  std::optional<std::size_t> backward;
  bool is_program = false;
  std::size_t model_outputs = 0;
  // Dropout: the Philox counter blocks one call of this training forward draws (TrainingTraces::rng_blocks);
  // > 0: the forward's last input is the RNG state.
  std::uint64_t rng_blocks = 0;
};

// --autograd: the parameters' initial values (embedded after the weights, exported as thunderc_parameters)
// and the gradients the backward programs write, for the manifest's "training" object.
struct TrainingModule {
  struct Parameter {
    std::string name;
    TensorType type;
    std::shared_ptr<const ConstantData> initial;
    std::size_t offset = 0;  // in the parameters blob (set by compile_model)
    bool trainable = true;   // false: a buffer (--module-mode train's running statistics), no gradient
  };
  std::vector<Parameter> parameters;
  // Buffers (parameter indices) whose new values every training forward writes after its saved tensors.
  std::vector<std::size_t> updates;
  struct Gradient {
    std::string name;
    bool parameter = false;
  };
  std::vector<Gradient> gradients;
  // --optimizer (core/transforms/optimizer.h): the update program, variants[program], whose entry updates the
  // trainable parameters and the state slots in place.
  struct Optimizer {
    std::string kind;  // "sgd", "adamw"
    std::size_t program = 0;
    std::vector<std::string> state_slots, scalars;
  };
  std::optional<Optimizer> optimizer;
};

// Constants of all variants packed into one blob; equal constants (same type and bytes) stored once.
struct WeightsBlob {
  std::vector<unsigned char> bytes;
  std::size_t count = 0;                                // distinct constants
  std::vector<std::map<ValueId, std::size_t>> offsets;  // per variant: constant -> offset
};

struct ModulePlan {
  WeightsBlob weights;
  std::vector<VariantMemoryPlan> memory;  // per variant
};

using BackendSet = std::map<std::string, std::unique_ptr<Backend>>;

ModulePlan plan_module(const std::vector<ModuleVariant>& variants, const BackendSet& backends);

// Name of variant i's exported entry point.
std::string variant_entry(std::size_t i);

// A variant runs on CUDA when its inputs (or, without inputs, its outputs) are CUDA tensors.
bool is_cuda_variant(const Trace& trace);

// One compiled form of the CUDA module (codegen/nvfuser/nvrtc.h fills `data` after generate_module).
struct CudaImageFile {
  std::string arch;  // "sm_80", or "compute_90" for PTX
  bool ptx = false;
  std::string file;  // name beside model.cpp, e.g. "cuda_sm_80.cubin"
  std::vector<unsigned char> data;
};

struct GeneratedModule {
  std::string cpp;        // model.cpp
  std::vector<std::string> part_sources;  // model_part<k>.cpp: parts of split variants (generate_module)
  std::string assembly;   // model_data.S, .incbin's weights.bin, manifest.json and the CUDA images
  std::vector<unsigned char> weights;
  std::string manifest;   // set by the caller before building (model.cpp does not depend on it)
  LinkInputs link;        // union of the backends used
  // CUDA: every kernel of every variant (in launch-index order), the variant each belongs to, the module's
  // source (kernels.cu) and the images to embed (one cubin per architecture, then PTX of the newest).
  std::vector<CudaKernel> kernels;
  std::vector<std::size_t> kernel_variant;
  std::vector<LibraryCall> library_calls;  // by id, and the variant making each
  std::vector<std::size_t> library_call_variant;
  std::string cuda_source;                // empty: no CUDA variant
  std::vector<CudaImageFile> cuda_images;
  std::vector<std::string> entries;       // the exported variant entries, variant_entry(i) for each variant
  // The host code's -march levels: cpu_targets[0] for every source, and each further level's build of
  // model.cpp and its parts, whose entries carry the level's suffix (set by compile_model; empty: no -march).
  std::vector<std::string> cpu_targets;
};

// Lines of operation code above which a CPU variant is split into parts, one source file each, so that a
// large model compiles on several cores (--split-lines; docs/install.md#parallel-and-distributed-builds).
constexpr std::size_t kDefaultSplitLines = 3000;

// The name of part_sources[k].
std::string part_source_name(std::size_t k);

// `header` is a comment for the top of model.cpp (e.g. the command line); any text is safe. `cuda_archs`
// ("sm_80", ...) are the architectures CUDA variants are compiled for. `profile` (--profile, CPU inference
// variants only): every operation is timed, and the .so exports thunderc_profile (abi.h).
GeneratedModule generate_module(const std::vector<ModuleVariant>& variants, const ModulePlan& plan,
                                const BackendSet& backends, const std::string& header,
                                const std::vector<std::string>& cuda_archs = {},
                                std::size_t split_lines = kDefaultSplitLines, bool profile = false);

}  // namespace thunderc
