// Helpers for the transform tests: building traces by hand, constants with given values, and golden files.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/ir/error.h"
#include "core/ir/printer.h"
#include "core/ir/trace.h"
#include "core/ir/verifier.h"

namespace xftest {

using namespace thunderc;

inline TensorType tt(DType dt, Shape shape) { return TensorType{dt, std::move(shape), Device::cpu()}; }
inline TensorType f32(Shape s) { return tt(DType::Float32, std::move(s)); }
inline Operand T(ValueId v) { return Operand::tensor(v); }
inline Operand N(Scalar s) { return Operand::number(s); }
inline std::int64_t I(std::int64_t v) { return v; }

template <typename E>
std::shared_ptr<const ConstantData> data_of(const std::vector<E>& values) {
  auto d = std::make_shared<ConstantData>();
  d->bytes.resize(values.size() * sizeof(E));
  if (!values.empty()) std::memcpy(d->bytes.data(), values.data(), d->bytes.size());
  return d;
}

inline std::shared_ptr<const ConstantData> zeros(const TensorType& t) {
  auto d = std::make_shared<ConstantData>();
  d->bytes.assign(t.nbytes(), 0);
  return d;
}

// Reads a constant's elements back.
template <typename E>
std::vector<E> values_of(const Trace& t, ValueId c) {
  const auto& bytes = t.value(c).data->bytes;
  std::vector<E> out(bytes.size() / sizeof(E));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Compares `actual` with golden/<name>. With THUNDERC_UPDATE_GOLDEN set, rewrites the file from `actual` and
// fails (a run that updates golden files checks nothing: review the diff and rerun without it).
inline void check_golden(const std::string& name, const std::string& actual) {
  std::string path = std::string(THUNDERC_TRANSFORMS_GOLDEN) + "/" + name;
  if (std::getenv("THUNDERC_UPDATE_GOLDEN")) {
    std::ofstream(path) << actual;
    FAIL_CHECK("golden " << path << " updated, rerun without THUNDERC_UPDATE_GOLDEN");
    return;
  }
  std::string expected = read_file(path);
  CHECK_MESSAGE(!expected.empty(), "missing golden file " << path << " (run with THUNDERC_UPDATE_GOLDEN=1)");
  CHECK_MESSAGE(actual == expected, "golden " << name << " differs:\n--- expected\n" << expected << "--- actual\n" << actual);
}

// The Before/After pair of one pass: both traces verify, and both print as the golden files say.
inline void check_before_after(const std::string& name, const Trace& before, const Trace& after) {
  verify_trace(before, "test input");
  verify_trace(after, name);
  check_golden(name + ".before.txt", print_trace(before));
  check_golden(name + ".after.txt", print_trace(after));
}

}  // namespace xftest
