// `thunderc bench OUT.so [--shapes S] [--warmup N] [--iterations N] [--threads N] [--json] [--compare MODEL.pt]`:
// times a compiled model on deterministic random inputs of one variant's shapes (min/median/p90 latency), and
// with --compare also times the original TorchScript model on the same inputs and compares the outputs. A model
// compiled with --autograd is timed a training step at a time (forward_train + backward), and --compare times
// LibTorch autograd's step on the module (eval mode, not frozen) and compares the gradients as well. A model
// compiled with --profile also gets a table of the operations that took the most time per timed call.
#pragma once

namespace CLI {
class App;
}

namespace thunderc {

// Registers the `bench` subcommand (options and callback) on `app`. Mistakes throw thunderc::UserError.
void add_bench_command(CLI::App& app);

}  // namespace thunderc
