// Test driver: a `thunderc` with only the run, inspect and bench subcommands, mapping errors the way
// cli/main.cpp does (UserError: "thunderc: error: ..." and exit 1; anything else: exit 3).
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands/bench.h"
#include "cli/commands/inspect.h"
#include "cli/commands/run.h"
#include "cli/messages.h"
#include "core/ir/error.h"

int main(int argc, char** argv) {
  CLI::App app("thunderc (test driver: run, inspect, bench)", "thunderc");
  thunderc::add_run_command(app);
  thunderc::add_inspect_command(app);
  thunderc::add_bench_command(app);
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return thunderc::commands::parse_error_exit(app, e);
  } catch (const thunderc::UserError& e) {
    std::cerr << "thunderc: error: " << thunderc::printable_message(e.what()) << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "thunderc: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "thunderc: internal error (this is a bug in thunderc, please report it): " << e.what() << "\n";
    return 3;
  }
  return 0;
}
