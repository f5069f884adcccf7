// Tests of the .npy reader/writer (thunderc_npy).
#include <cmath>
#include <cstring>
#include <string>

#include <unistd.h>

#include <doctest/doctest.h>

#include "thunderc/npy.hpp"

using thunderc::HostTensor;
namespace npy = thunderc::npy;

namespace {

std::string expect_error(const std::string& bytes, const std::string& name = "bad.npy") {
  try {
    npy::parse(bytes.data(), bytes.size(), name);
  } catch (const npy::Error& e) {
    return e.what();
  }
  FAIL("no error for a malformed file");
  return {};
}

// A .npy file with the given header dict (format 1.0) and data bytes.
std::string make_npy(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  const size_t n = header.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>(n >> 8);
  if (major != 1) out += std::string(2, '\0');
  return out + header + data;
}

template <class T>
void round_trip(std::vector<int64_t> shape, std::vector<T> values, const char* descr) {
  CAPTURE(descr);
  HostTensor t = HostTensor::from_vector<T>(shape, values);
  const std::string bytes = npy::serialize(t);
  CHECK(bytes.find(descr) != std::string::npos);
  const size_t header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
  CHECK((10 + header_len) % 64 == 0);
  CHECK(bytes[10 + header_len - 1] == '\n');
  HostTensor back = npy::parse(bytes.data(), bytes.size(), "mem");
  CHECK(back.shape() == shape);
  CHECK(thunderc::dtype_equal(back.dtype(), t.dtype()));
  CHECK(back.to_vector<T>() == values);
}

}  // namespace

TEST_CASE("round trip of every dtype") {
  round_trip<bool>({2, 2}, {true, false, false, true}, "'|b1'");
  round_trip<uint8_t>({3}, {0, 128, 255}, "'|u1'");
  round_trip<int8_t>({3}, {-128, 0, 127}, "'|i1'");
  round_trip<int16_t>({1, 3}, {-32768, 7, 32767}, "'<i2'");
  round_trip<int32_t>({2, 1, 2}, {-1, 2, -3, 2147483647}, "'<i4'");
  round_trip<int64_t>({2}, {-9000000000LL, 9000000000LL}, "'<i8'");
  round_trip<float>({2, 3}, {0.5f, -1.25f, 3e38f, 0.f, 1.f, -0.f}, "'<f4'");
  round_trip<double>({}, {3.141592653589793}, "'<f8'");
  round_trip<float>({0, 4}, {}, "'<f4'");
  // float16 has no C++ type here: raw bytes.
  HostTensor h(DLDataType{kDLFloat, 16, 1}, {2});
  const uint16_t halves[2] = {0x3c00, 0xc000};  // 1.0, -2.0
  std::memcpy(h.raw(), halves, 4);
  const std::string bytes = npy::serialize(h);
  CHECK(bytes.find("'<f2'") != std::string::npos);
  HostTensor back = npy::parse(bytes.data(), bytes.size());
  CHECK(back.dtype().bits == 16);
  CHECK(std::memcmp(back.raw(), halves, 4) == 0);
}

TEST_CASE("header text as numpy writes it") {
  HostTensor t = HostTensor::from_vector<float>({3}, {1, 2, 3});
  const std::string bytes = npy::serialize(t);
  CHECK(bytes.substr(10, 60).find("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }") == 0);
  HostTensor s = HostTensor::from_vector<int64_t>({2, 5}, std::vector<int64_t>(10, 1));
  CHECK(npy::serialize(s).find("'shape': (2, 5), }") != std::string::npos);
}

TEST_CASE("reads format 2.0 and 3.0, double quotes, '=' byte order, spacing") {
  const float v[2] = {1.5f, -2.0f};
  const std::string data(reinterpret_cast<const char*>(v), 8);
  for (int major : {1, 2, 3}) {
    CAPTURE(major);
    HostTensor t = npy::parse(make_npy("{\"descr\":\"=f4\",\"shape\":(2,),\"fortran_order\":False}", data, major).c_str(),
                              make_npy("{\"descr\":\"=f4\",\"shape\":(2,),\"fortran_order\":False}", data, major).size());
    CHECK(t.to_vector<float>() == std::vector<float>{1.5f, -2.0f});
  }
}

TEST_CASE("file round trip and errors name the file") {
  const std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/thunderc_npy_test_" +
                           std::to_string(::getpid()) + ".npy";
  HostTensor t = HostTensor::from_vector<int32_t>({2, 2}, {1, 2, 3, 4});
  npy::save(path, t);
  CHECK(npy::load(path).to_vector<int32_t>() == std::vector<int32_t>{1, 2, 3, 4});
  std::remove(path.c_str());
  try {
    npy::load(path);
    FAIL("expected an error");
  } catch (const npy::Error& e) {
    CHECK(std::string(e.what()).find(path + ": cannot open") == 0);
  }
  try {
    npy::save("/nonexistent/dir/x.npy", t);
    FAIL("expected an error");
  } catch (const npy::Error& e) {
    CHECK(std::string(e.what()).find("/nonexistent/dir/x.npy: cannot create") == 0);
  }
  HostTensor bf(DLDataType{kDLBfloat, 16, 1}, {2});
  CHECK_THROWS_WITH_AS(npy::save("/tmp/never-written.npy", bf),
                       "/tmp/never-written.npy: cannot store dtype bfloat16 in a .npy file", npy::Error);
}

TEST_CASE("malformed files") {
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string data(8, '\0');
  CHECK(expect_error("") == "bad.npy: not a .npy file (bad magic bytes)");
  CHECK(expect_error("PK\x03\x04 this is a zip") == "bad.npy: not a .npy file (bad magic bytes)");
  CHECK(expect_error(std::string("\x93NUMPY\x01\x00\x40", 9)) == "bad.npy: truncated .npy header");
  const std::string good = make_npy(f4, data);
  CHECK(expect_error(good.substr(0, 40)).find("bad.npy: truncated .npy header (header says") == 0);
  CHECK(expect_error(good.substr(0, good.size() - 3)) ==
        "bad.npy: truncated data: expected 8 bytes for <f4 shape (2), found 5");
  CHECK(expect_error(good + "xx") == "bad.npy: 2 unexpected bytes after the array data");
  CHECK(expect_error(make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", data))
            .find("bad.npy: fortran_order arrays are not supported") == 0);
  CHECK(expect_error(make_npy("{'descr': '<c32', 'fortran_order': False, 'shape': (1,), }", data)) ==
        "bad.npy: unsupported dtype '<c32' (supported: b1, u1, i1, i2, i4, i8, f2, f4, f8, c8, c16)");
  CHECK(expect_error(make_npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data)) ==
        "bad.npy: big-endian dtype '>f4' is not supported");
  CHECK(expect_error(make_npy("{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", data))
            .find("unsupported dtype '<U3'") != std::string::npos);
  CHECK(expect_error(make_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", data))
            .find("structured arrays are not supported") != std::string::npos);
  CHECK(expect_error(make_npy("{'descr': '<f4', 'fortran_order': False}", data)) ==
        "bad.npy: malformed .npy header: missing 'shape'");
  CHECK(expect_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }", data))
            .find("malformed .npy header: expected a non-negative integer in 'shape'") != std::string::npos);
  CHECK(expect_error(make_npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", data))
            .find("expected True or False") != std::string::npos);
  CHECK(expect_error(make_npy("{'descr': '<f4, 'fortran_order': False, 'shape': (2,), }", data))
            .find("malformed .npy header") != std::string::npos);
  CHECK(expect_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, 99999999999), }", data)) ==
        "bad.npy: array too large");
  std::string v9 = good;
  v9[6] = 9;
  CHECK(expect_error(v9) == "bad.npy: unsupported .npy format version 9.0");
  CHECK(expect_error(make_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x01\x07", 2)))
            .find("bool array holds byte value 7") != std::string::npos);
}

TEST_CASE("HostTensor") {
  HostTensor t = HostTensor::from_vector<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(t.numel() == 6);
  CHECK(t.nbytes() == 24);
  CHECK(reinterpret_cast<uintptr_t>(t.raw()) % 64 == 0);
  DLTensor d = t.dl();
  CHECK(d.ndim == 2);
  CHECK(d.shape[1] == 3);
  CHECK(d.strides == nullptr);
  CHECK(d.dtype.code == kDLInt);
  CHECK_THROWS_AS(t.data<float>(), std::invalid_argument);
  CHECK_THROWS_AS(HostTensor::from_vector<float>({2}, {1.0f}), std::invalid_argument);
}
