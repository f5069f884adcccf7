// `thunderc pack OUT.so [-o BUNDLE.tar.gz]`: a tarball to ship a compiled model (docs/install.md#shipping-a-model):
//
//   <name>/<name>.so, <name>.json          the model and its manifest
//   <name>/lib/libthunderc_runtime.so      the runtime this thunderc was built with (and the ATen shim when a
//                                          variant calls the torch executor)
//   <name>/include/thunderc/               the runtime's headers (C and C++)
//   <name>/README.txt                      how to load it, and the system libraries it needs on the target
//   <name>/SHA256SUMS                      every file's sha256
//
// The tarball is reproducible: entries sorted, times, owners and gzip header fixed.
#pragma once

namespace CLI {
class App;
}

namespace thunderc {

// Registers the `pack` subcommand (options and callback) on `app`. Mistakes throw thunderc::UserError.
void add_pack_command(CLI::App& app);

}  // namespace thunderc
