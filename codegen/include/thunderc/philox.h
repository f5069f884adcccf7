/* The counter-based random numbers of --module-mode train's dropout (docs/training.md "Dropout"):
 * Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC'11), the
 * generator PyTorch's CUDA dropout uses too. Each 128-bit counter gives four 32-bit numbers; nothing else is
 * state, so a forward and the backward that recomputes its mask draw the same numbers, any element can be
 * drawn by any thread, and a (seed, offset) pair makes a call reproducible.
 *
 * Element i of a dropout_mask whose counter block is `block`, in a call with RNG state (seed, offset), takes
 * lane i % 4 of philox(counter = offset + block + i / 4 as a 64-bit number in words 0..1, words 2..3 zero;
 * key = seed's low and high words) and is kept (1) when that number r satisfies r < keep * 2^32 (compared
 * exactly, in double), else dropped (0): a Bernoulli(keep) draw for keep = 1 - p.
 *
 * C++ (generated code, the ATen shim and the tests include it). Checked against Random123's
 * known-answer vectors in tests/codegen/cpp/philox_test.cpp. */
#ifndef THUNDERC_PHILOX_H_
#define THUNDERC_PHILOX_H_

#include <stdint.h>

static inline void thunderc_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) { /* the Weyl key schedule between rounds */
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0, hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* The four numbers of counter block `block` (a 64-bit counter) under `seed`. */
static inline void thunderc_philox_block(uint64_t seed, uint64_t block, uint32_t out[4]) {
  const uint32_t counter[4] = {(uint32_t)block, (uint32_t)(block >> 32), 0u, 0u};
  const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  thunderc_philox4x32_10(counter, key, out);
}

/* Element `first` .. first + n - 1 of the mask whose stream starts at counter block `block`, into dst[0 .. n):
 * 1 where kept (probability `keep`), 0 where dropped. */
template <typename T>
inline void thunderc_dropout_mask(T* dst, int64_t first, int64_t n, uint64_t seed, uint64_t block, double keep) {
  const double limit = keep * 4294967296.0;
  uint32_t r[4];
  for (int64_t i = first; i < first + n; ++i) {
    if (i == first || i % 4 == 0) thunderc_philox_block(seed, block + (uint64_t)(i / 4), r);
    dst[i - first] = (double)r[i % 4] < limit ? T(1) : T(0);
  }
}

/* Counter blocks a mask of n elements takes (the next mask of a call starts that many blocks later). */
static inline uint64_t thunderc_dropout_blocks(int64_t n) { return (uint64_t)((n + 3) / 4); }

#endif /* THUNDERC_PHILOX_H_ */
