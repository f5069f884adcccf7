// `thunderc grad OUT.so [--input NAME=FILE.npy]... [FILE.npy ...] [--grad-output G.npy]... --output-dir DIR`:
// one training step's forward and backward of a model compiled with --autograd, through the deployment runtime.
// Writes DIR/output<i>.npy and DIR/grad_<name>.npy for every gradient (each parameter under its state_dict
// name, e.g. grad_fc.weight.npy, and each input compiled with --requires-grad). See docs/training.md.
#pragma once

namespace CLI {
class App;
}

namespace thunderc {

// Registers the `grad` subcommand on `app`. Mistakes throw thunderc::UserError.
void add_grad_command(CLI::App& app);

}  // namespace thunderc
