// Dropout's counter-based random numbers (codegen/include/thunderc/philox.h): Philox4x32-10 against Random123's
// known-answer vectors, the mask's draws (chunks equal the whole, the kept fraction), and the cpp executor's
// dropout_mask kernel against the header, bit for bit, across its parallel chunks and both counter words.
#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <vector>

#include "cpp_test_util.h"
#include "thunderc/philox.h"

using namespace cpptest;

TEST_CASE("philox4x32-10: Random123's known-answer vectors") {
  struct Kat {
    std::array<std::uint32_t, 4> counter;
    std::array<std::uint32_t, 2> key;
    std::array<std::uint32_t, 4> out;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}};
  for (const Kat& k : kats) {
    std::uint32_t out[4];
    thunderc_philox4x32_10(k.counter.data(), k.key.data(), out);
    for (int i = 0; i < 4; ++i) CHECK(out[i] == k.out[i]);
  }
  // The block form puts the 64-bit counter in words 0..1 and the seed in the key, low word first.
  std::uint32_t a[4], b[4];
  const std::uint32_t counter[4] = {0x243f6a88, 0x85a308d3, 0, 0}, key[2] = {0xa4093822, 0x299f31d0};
  thunderc_philox4x32_10(counter, key, a);
  thunderc_philox_block(0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, b);
  CHECK(std::memcmp(a, b, sizeof a) == 0);
}

TEST_CASE("dropout mask draws: any chunk equals that part of the whole mask, and the kept fraction is 1 - p") {
  const std::int64_t n = 10003;
  const std::uint64_t seed = 42, block = 7;
  std::vector<float> whole(n);
  thunderc_dropout_mask(whole.data(), 0, n, seed, block, 0.7);
  for (std::int64_t first : {std::int64_t{0}, std::int64_t{4}, std::int64_t{4096}, std::int64_t{9996}}) {
    const std::int64_t count = std::min<std::int64_t>(1000, n - first);
    std::vector<float> part(count);
    thunderc_dropout_mask(part.data(), first, count, seed, block, 0.7);
    CHECK(std::memcmp(part.data(), whole.data() + first, count * sizeof(float)) == 0);
  }
  double kept = 0;
  for (float v : whole) {
    REQUIRE((v == 0.0f || v == 1.0f));
    kept += v;
  }
  CHECK(kept / n == doctest::Approx(0.7).epsilon(0.02));  // 4.6 standard deviations; deterministic numbers
  // Another seed, or the next blocks, give other masks; keep 1 keeps all, keep 0 drops all.
  std::vector<float> other(n), next(n), all(n), none(n);
  thunderc_dropout_mask(other.data(), 0, n, seed + 1, block, 0.7);
  thunderc_dropout_mask(next.data(), 0, n, seed, block + thunderc_dropout_blocks(n), 0.7);
  CHECK(other != whole);
  CHECK(next != whole);
  thunderc_dropout_mask(all.data(), 0, n, seed, block, 1.0);
  thunderc_dropout_mask(none.data(), 0, n, seed, block, 0.0);
  CHECK(std::vector<float>(n, 1.0f) == all);
  CHECK(std::vector<float>(n, 0.0f) == none);
  CHECK(thunderc_dropout_blocks(4) == 1);
  CHECK(thunderc_dropout_blocks(5) == 2);
}

TEST_CASE("cpp dropout_mask: the header's draws at the call's (seed, offset), in every chunk, float32 and float64") {
  for (DType d : {DType::Float32, DType::Float64}) {
    CAPTURE(dtype_name(d));
    Trace t;
    const ValueId rng = t.add_input("rng", TensorType{DType::Int64, {2}, Device::cpu()});
    // 3 x 5000 elements: four parallel chunks of 4096, the last partial; block 11 within the call.
    const ValueId mask = t.emit1(op("dropout_mask"), {T(rng)},
                                 {{"shape", IntList{3, 5000}}, {"dtype", d}, {"p", 0.375}, {"block", std::int64_t{11}}});
    t.set_outputs({mask});
    thunderc::Model m(compile(claimed(t, {"cpp"}), {"cpp"}, std::string("dropout_mask_") + dtype_name(d)));
    for (std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{0x123456789abcdef0ull}}) {
      const std::uint64_t offset = (std::uint64_t{1} << 32) - 3;  // the counter's low word wraps within the mask
      HostTensor in(dl(DType::Int64), {2});
      static_cast<std::int64_t*>(in.raw())[0] = static_cast<std::int64_t>(seed);
      static_cast<std::int64_t*>(in.raw())[1] = static_cast<std::int64_t>(offset);
      const std::vector<HostTensor> out = m.run(std::vector<HostTensor>{in});
      const std::int64_t n = 3 * 5000;
      if (d == DType::Float32) {
        std::vector<float> expected(n);
        thunderc_dropout_mask(expected.data(), 0, n, seed, offset + 11, 0.625);
        CHECK(std::memcmp(out[0].raw(), expected.data(), n * sizeof(float)) == 0);
      } else {
        std::vector<double> expected(n);
        thunderc_dropout_mask(expected.data(), 0, n, seed, offset + 11, 0.625);
        CHECK(std::memcmp(out[0].raw(), expected.data(), n * sizeof(double)) == 0);
      }
    }
  }
}
