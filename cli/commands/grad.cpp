// thunderc grad: see grad.h.
#include "cli/commands/grad.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <system_error>

#include "cli/commands/run.h"
#include "core/ir/error.h"
#include "thunderc/npy.hpp"

namespace thunderc {

namespace {

struct GradFlags {
  std::string model;
  std::vector<std::string> named;       // --input NAME=FILE.npy
  std::vector<std::string> positional;  // FILE.npy ...
  std::vector<std::string> grad_outputs;  // --grad-output G.npy, one per output in order
  std::string output_dir;
  int threads = 0;
  std::uint64_t seed = 0, offset = 0;  // dropout's RNG state (--seed, --offset)
  int steps = 0;                        // --steps: optimizer steps (--optimizer models)
  std::optional<double> lr;             // --lr: the optimizer's learning rate (default: its own)
};

// A file name for a gradient: the parameter's or input's name with path separators replaced.
std::string gradient_file(const std::string& name) {
  std::string s = "grad_";
  for (char c : name) s += (c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20) ? '_' : c;
  return s + ".npy";
}

void grad_command(const GradFlags& f) {
  Model model = commands::open_model(f.model, f.threads);
  if (!model.is_training())
    user_error(f.model, " was compiled without --autograd, so it has no backward; recompile it with "
               "`thunderc MODEL --autograd` (docs/training.md)");
  if (f.steps < 0) user_error("--steps must be >= 0, got ", f.steps);
  if (f.lr && f.steps == 0) user_error("--lr sets the learning rate of --steps; give --steps N too");
  if ((f.steps > 0 || f.lr) && model.optimizer().empty())
    user_error(f.model, " was compiled without --optimizer, so --steps and --lr have nothing to run; recompile it "
               "with `thunderc MODEL --autograd --optimizer sgd|adamw`");
  const std::vector<HostTensor> inputs = commands::read_inputs(model, f.model, f.named, f.positional);
  Model::ForwardTrainResult fwd;
  const Model::RngState rng{f.seed, f.offset};
  // A CUDA training model runs on cuda:0: the inputs and grad outputs go there, the results come back.
  DLDevice device{kDLCPU, 0};
  try {
    if (std::optional<DLDevice> gpu = commands::cuda_device_for(model, inputs)) device = *gpu;
    fwd = model.forward_train(inputs, &rng, device);
  } catch (const Error& e) {
    throw UserError(commands::runtime_message(e, "the forward of '" + f.model + "' failed", f.model));
  }
  std::vector<HostTensor> outputs = fwd.outputs;

  // The gradients of the outputs: one file each, or ones for a model whose outputs are all single numbers
  // (a loss, as loss.backward() seeds it).
  std::vector<HostTensor> grad_outputs;
  if (f.grad_outputs.empty()) {
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].numel() != 1)
        user_error("output", i, " is ", commands::tensor_text(outputs[i].dtype(), outputs[i].shape()),
                   "; give the gradient of every output with --grad-output G.npy (in output order; only a model "
                   "whose outputs are single numbers, such as a loss, defaults to 1)");
    for (size_t i = 0; i < outputs.size(); ++i)
      grad_outputs.push_back(commands::ones_like(outputs[i], "--grad-output is required for output" + std::to_string(i)));
  } else {
    if (f.grad_outputs.size() != outputs.size())
      user_error(f.grad_outputs.size(), " --grad-output file", f.grad_outputs.size() == 1 ? "" : "s", " for ",
                 outputs.size(), " output", outputs.size() == 1 ? "" : "s", " (one per output, in output order)");
    for (size_t i = 0; i < f.grad_outputs.size(); ++i) {
      HostTensor g;
      try {
        g = npy::load(f.grad_outputs[i]);
      } catch (const npy::Error& e) {
        user_error("--grad-output for output", i, ": ", e.what());
      }
      if (dtype_string(g.dtype()) != dtype_string(outputs[i].dtype()) || g.shape() != outputs[i].shape())
        user_error("--grad-output ", f.grad_outputs[i], " holds ", commands::tensor_text(g.dtype(), g.shape()),
                   ", but output", i, " is ", commands::tensor_text(outputs[i].dtype(), outputs[i].shape()),
                   " (its gradient has the same dtype and shape)");
      grad_outputs.push_back(std::move(g));
    }
  }
  std::vector<HostTensor> grads;
  try {
    grads = model.backward(fwd.context, grad_outputs, device);
  } catch (const Error& e) {
    throw UserError(commands::runtime_message(e, "the backward of '" + f.model + "' failed", f.model));
  }
  // --steps N: N updates by the model's optimizer, a forward and backward on the same inputs before each; step
  // k's dropout masks start k - 1 calls of blocks after --offset. The files hold the last step's outputs and
  // gradients (those its update used) and the parameters after it.
  if (f.steps > 0) {
    thunderc_optimizer_options opts = model.optimizer_options();
    if (f.lr) opts.lr = *f.lr;
    std::vector<DLTensor> probe;
    for (const HostTensor& t : inputs) {
      probe.push_back(t.dl());
      probe.back().device = device;  // selection reads shapes, dtypes and devices only
    }
    const std::uint64_t blocks = model.rng_blocks(model.select_variant(probe));
    try {
      for (int k = 1; k <= f.steps; ++k) {
        if (k > 1) {
          const Model::RngState at{f.seed, f.offset + static_cast<std::uint64_t>(k - 1) * blocks};
          fwd = model.forward_train(inputs, &at, device);
          outputs = fwd.outputs;
          grads = model.backward(fwd.context, grad_outputs, device);
        }
        model.optimizer_step(grads, opts, device);
      }
    } catch (const Error& e) {
      throw UserError(commands::runtime_message(e, "training step of '" + f.model + "' failed", f.model));
    }
  }

  const std::filesystem::path dir = f.output_dir;
  if (!f.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) user_error("cannot create output directory '", f.output_dir, "': ", ec.message());
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string label = "output" + std::to_string(i);
    const std::string path = (dir / (label + ".npy")).string();
    commands::write_npy(path, outputs[i], label);
    std::cout << label << ": " << commands::tensor_text(outputs[i].dtype(), outputs[i].shape()) << " -> " << path << "\n";
  }
  const std::vector<std::string> names = model.gradient_names();
  for (size_t i = 0; i < grads.size(); ++i) {
    const std::string path = (dir / gradient_file(names[i])).string();
    const std::string label = "gradient of " + std::string(model.gradient_is_parameter(i) ? "parameter " : "input ") + names[i];
    commands::write_npy(path, grads[i], label);
    std::cout << label << ": " << commands::tensor_text(grads[i].dtype(), grads[i].shape()) << " -> " << path << "\n";
  }
  if (f.steps > 0) {
    const std::vector<std::string> params = model.parameter_names();
    for (size_t i = 0; i < params.size(); ++i) {
      const DLTensor view = model.parameter(i);
      HostTensor value(view.dtype, std::vector<int64_t>(view.shape, view.shape + view.ndim));
      copy_to_host(view.device, value.raw(), view.data, value.nbytes());
      std::string file = gradient_file(params[i]);
      file.replace(0, 4, "param");  // grad_<name>.npy -> param_<name>.npy
      const std::string path = (dir / file).string();
      const std::string label = "parameter " + params[i] + " after " + std::to_string(f.steps) + " step" + (f.steps == 1 ? "" : "s");
      commands::write_npy(path, value, label);
      std::cout << label << ": " << commands::tensor_text(value.dtype(), value.shape()) << " -> " << path << "\n";
    }
  }
  std::cout.flush();
}

}  // namespace

void add_grad_command(CLI::App& app) {
  auto flags = std::make_shared<GradFlags>();
  CLI::App* cmd = app.add_subcommand(
      "grad", "run one forward and backward of a model compiled with --autograd on inputs read from .npy files");
  commands::add_model_argument(*cmd, flags->model);
  cmd->add_option("FILES", flags->positional, "input .npy files, in the model's input order (after any --input)")
      ->type_name("FILE.npy");
  cmd->add_option("-i,--input", flags->named, "an input by name; repeat for more inputs")
      ->type_name("NAME=FILE.npy")
      ->allow_extra_args(false);
  cmd->add_option("--grad-output", flags->grad_outputs,
                  "the gradient of each output, in output order (same dtype and shape as the output); may be left "
                  "out when every output is a single number (a loss): then 1")
      ->type_name("G.npy")
      ->allow_extra_args(false);
  cmd->add_option("--output-dir", flags->output_dir,
                  "directory for output<i>.npy and grad_<name>.npy (created if missing; default: current directory)")
      ->type_name("DIR");
  cmd->add_option("--seed", flags->seed,
                  "dropout's RNG seed (--module-mode train; default 0): the same seed and offset give the same masks")
      ->type_name("N");
  cmd->add_option("--offset", flags->offset,
                  "dropout's first Philox counter block (default 0); a further step of the same run starts where the "
                  "last ended: offset + the variant's training.rng_blocks (manifest)")
      ->type_name("N");
  cmd->add_option("--steps", flags->steps,
                  "a model compiled with --optimizer: N training steps on these inputs (forward, backward, the "
                  "optimizer's update with its torch.optim defaults); also writes param_<name>.npy after the last")
      ->type_name("N");
  cmd->add_option("--lr", flags->lr, "with --steps: the optimizer's learning rate (default: its own, 1e-3)")
      ->type_name("X");
  cmd->add_option("--threads", flags->threads,
                  "threads the model may use (default 0: $THUNDERC_NUM_THREADS, else all cores)")
      ->type_name("N");
  cmd->footer(
      "Example:\n"
      "  thunderc samples/mlp.pt --autograd --requires-grad x -o mlp_train.so\n"
      "  thunderc grad mlp_train.so x.npy --grad-output gy.npy --output-dir grads\n"
      "      writes grads/output0.npy, grads/grad_x.npy, grads/grad_fc1.weight.npy, ...\n");
  cmd->callback([flags]() { grad_command(*flags); });
}

}  // namespace thunderc
