// `thunderc inspect OUT.so [--json]`: what a compiled model contains, read from its manifest (docs/manifest.md):
// compiler version, source model, options, inputs/outputs, weights and every variant. --json prints the
// manifest itself.
#pragma once

namespace CLI {
class App;
}

namespace thunderc {

// Registers the `inspect` subcommand (options and callback) on `app`. Mistakes throw thunderc::UserError.
void add_inspect_command(CLI::App& app);

}  // namespace thunderc
