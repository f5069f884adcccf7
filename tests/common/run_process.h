// Runs a program from a test and captures what it prints: the shared helper of every test that drives the
// thunderc binary (or readelf) through a shell.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

namespace thunderc_test {

struct ProcessResult {
  int code = -1;    // exit status; 128 + signal when killed; -1 when the shell could not start
  std::string out;  // stdout and stderr together
  std::string cmd;  // the shell command that ran
};

// 'text' for /bin/sh, any bytes allowed.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `cmd` with /bin/sh; stderr is merged into `out` unless `merge_stderr` is false (then it goes to the
// test's own stderr, e.g. when `out` must be JSON).
inline ProcessResult run_shell(const std::string& cmd, bool merge_stderr = true) {
  ProcessResult r;
  r.cmd = cmd;
  FILE* p = popen((merge_stderr ? cmd + " 2>&1" : cmd).c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return r;
}

// Runs `program` with `args` (each quoted), in `cwd` when given.
inline std::string command_line(const std::string& program, const std::vector<std::string>& args) {
  std::string cmd = shell_quote(program);
  for (const std::string& a : args) cmd += " " + shell_quote(a);
  return cmd;
}

inline ProcessResult run_program(const std::string& program, const std::vector<std::string>& args,
                                 const std::string& cwd = "") {
  return run_shell((cwd.empty() ? "" : "cd " + shell_quote(cwd) + " && ") + command_line(program, args));
}

}  // namespace thunderc_test
