// thunderc CUDA emulation: compile CUDA C++ kernel source as host C++ (g++ -std=c++17
// -DTHUNDERC_CUDA_EMULATION) and run it on the CPU with real block and warp synchronization.
// Test-only, header-only. See tests/cuda_emu/README.md for what it checks and what it cannot catch.
//
// Model:
// - thunderc_emu::launch(grid, block, dynamic_shared_bytes, body) runs `body` once per CUDA thread. Blocks
//   run one after another; the threads of one block are cooperative fibers (own stacks; a small register
//   switch on x86-64, ucontext elsewhere) in ONE OS thread, so a
//   function-local `static` (what `__shared__` expands to) is exactly one block's shared memory.
// - A fiber runs until it reaches __syncthreads(), a warp collective (__shfl*_sync, __ballot_sync,
//   __all_sync, __any_sync, __syncwarp) or returns. When no fiber can run, the scheduler releases the block
//   barrier (all threads at the same __syncthreads() call site, none exited) and any complete warp
//   collective; if neither is possible it throws thunderc_emu::Error("barrier divergence in block (x,y,z):
//   ...") instead of hanging.
// - Exceptions thrown by kernel code (including the emulator's own checks run inside a thread) are
//   rethrown from launch() as is; other threads of that block are abandoned without unwinding.
// - launch() holds a process-wide mutex (one per shared object that includes this header): launches from
//   several OS threads are serialized, which also makes the non-atomic atomics below correct.
// - Dynamic shared memory: `extern __shared__ T name[];` cannot be expressed in host C++. Generated code
//   writes THUNDERC_DYNAMIC_SHARED(T, name); in CUDA mode it must define
//     #define THUNDERC_DYNAMIC_SHARED(T, name) extern __shared__ __align__(16) T name[]
//   itself (this header is only included in emulation mode). In emulation the buffer is 16-byte aligned,
//   dynamic_shared_bytes long, and filled with 0xFF bytes (float NaN) at the start of every block.
#pragma once

#ifndef THUNDERC_CUDA_EMULATION
#error "thunderc/cuda_emu.h is only for emulation builds (-DTHUNDERC_CUDA_EMULATION)"
#endif

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <math.h>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// ---------------------------------------------------------------------------------------------------------
// Keywords
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static
#define __constant__
#define __managed__
#define __align__(n) __attribute__((aligned(n)))
// __restrict__ is a GCC/Clang keyword already.
// Fiber switches: on x86-64 a minimal switch of the callee-saved registers (no system call; ucontext's
// swapcontext saves the signal mask with one per switch, ~40x slower). Elsewhere, or with
// -DTHUNDERC_EMU_UCONTEXT, ucontext.
#if defined(__x86_64__) && !defined(THUNDERC_EMU_UCONTEXT)
#define THUNDERC_EMU_ASM_SWITCH 1
// thunderc_emu_switch(save, to): saves rbp, rbx, r12-r15, MXCSR and the x87 control word on the current
// stack, stores the stack pointer in *save, continues on the stack `to` (made by this function or by
// detail::init_fiber_context). Weak + hidden: every object that includes this header may define it.
__asm__(
    ".text\n"
    ".weak thunderc_emu_switch\n"
    ".hidden thunderc_emu_switch\n"
    ".type thunderc_emu_switch,@function\n"
    "thunderc_emu_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  subq $8, %rsp\n  stmxcsr (%rsp)\n  fnstcw 4(%rsp)\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  ldmxcsr (%rsp)\n  fldcw 4(%rsp)\n  addq $8, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size thunderc_emu_switch, .-thunderc_emu_switch\n");
extern "C" __attribute__((visibility("hidden"))) void thunderc_emu_switch(void** save, void* to);
#endif

// Under AddressSanitizer every switch is announced (__sanitizer_start/finish_switch_fiber), so that ASan knows
// which stack is current (exceptions unwinding on a fiber stack, no-return calls), and a fiber stack is
// unpoisoned before it is reused: a finished fiber never returns through its frames' epilogues, so their
// redzones would stay poisoned under the next block's fiber.
#if defined(__SANITIZE_ADDRESS__)
#define THUNDERC_EMU_ASAN 1
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#define THUNDERC_DYNAMIC_SHARED(T, name) T* const name = reinterpret_cast<T*>(::thunderc_emu::detail::dynamic_shared())

// ---------------------------------------------------------------------------------------------------------
// Vector types (CUDA's sizes and alignments)
struct uint3 { unsigned x, y, z; };
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
struct alignas(8) float2 { float x, y; };
struct float3 { float x, y, z; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct int3 { int x, y, z; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(16) longlong2 { long long x, y; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int3 make_int3(int x, int y, int z) { return {x, y, z}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return {x, y, z}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
inline double2 make_double2(double x, double y) { return {x, y}; }
inline longlong2 make_longlong2(long long x, long long y) { return {x, y}; }
static_assert(sizeof(float2) == 8 && alignof(float2) == 8, "float2");
static_assert(sizeof(float4) == 16 && alignof(float4) == 16, "float4");
static_assert(sizeof(double2) == 16 && alignof(double2) == 16, "double2");

constexpr int warpSize = 32;

namespace thunderc_emu {

// Everything the emulator reports: barrier divergence, bad launch configurations, misuse of warp collectives.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

enum class Wait : unsigned char { Ready, Block, Warp, Done };
enum class WarpOp : unsigned char { Sync, Idx, Up, Down, Xor, Ballot, All, Any };
enum class BlockOp : unsigned char { Sync, Count, And, Or };

inline const char* warp_op_name(WarpOp op) {
  switch (op) {
    case WarpOp::Sync: return "__syncwarp";
    case WarpOp::Idx: return "__shfl_sync";
    case WarpOp::Up: return "__shfl_up_sync";
    case WarpOp::Down: return "__shfl_down_sync";
    case WarpOp::Xor: return "__shfl_xor_sync";
    case WarpOp::Ballot: return "__ballot_sync";
    case WarpOp::All: return "__all_sync";
    case WarpOp::Any: return "__any_sync";
  }
  return "?";
}

struct Fiber {
#ifdef THUNDERC_EMU_ASM_SWITCH
  void* sp = nullptr;
#else
  ucontext_t ctx;
#endif
#ifdef THUNDERC_EMU_ASAN
  void* stack = nullptr;  // the lowest address of its stack (kStackBytes)
#endif
  uint3 tid{0, 0, 0};
  unsigned linear = 0;
  Wait wait = Wait::Ready;
  // __syncthreads*
  const char* site_file = nullptr;
  int site_line = 0;
  BlockOp bop = BlockOp::Sync;
  int bpred = 0;
  int bresult = 0;
  // warp collectives
  WarpOp wop = WarpOp::Sync;
  unsigned wmask = 0;
  int warg = 0;
  int wwidth = 32;
  unsigned wsize = 0;
  alignas(16) unsigned char win[16];
  alignas(16) unsigned char wout[16];
  std::exception_ptr error;
};

// Fiber stacks: mmap'ed once (MAP_NORESERVE, a PROT_NONE guard page below each so an overflow faults
// instead of corrupting a neighbour), reused by every later launch, released at exit.
constexpr std::size_t kStackBytes = 256 * 1024;

class StackPool {
 public:
  ~StackPool() {
    for (void* base : bases_) munmap(base, kStackBytes + guard());
  }
  void* get(std::size_t i) {
    while (bases_.size() <= i) {
      void* base = mmap(nullptr, kStackBytes + guard(), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (base == MAP_FAILED) throw Error("thunderc_emu: cannot allocate a fiber stack");
      mprotect(base, guard(), PROT_NONE);
      bases_.push_back(base);
    }
    return static_cast<char*>(bases_[i]) + guard();
  }

 private:
  static std::size_t guard() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }
  std::vector<void*> bases_;
};

struct alignas(16) SharedChunk {
  unsigned char bytes[16];
};

struct Launch {
  dim3 grid, block;
  uint3 block_idx{0, 0, 0};
  unsigned nthreads = 0;
  Fiber* fibers = nullptr;
  Fiber* current = nullptr;
  void* body = nullptr;
  void (*invoke)(void*) = nullptr;
#ifdef THUNDERC_EMU_ASM_SWITCH
  void* scheduler_sp = nullptr;
#else
  ucontext_t scheduler;
#endif
  unsigned char* dynamic_shared = nullptr;
  unsigned dynamic_shared_bytes = 0;
#ifdef THUNDERC_EMU_ASAN
  const void* scheduler_stack = nullptr;  // the launching thread's stack, as ASan reports it
  std::size_t scheduler_stack_size = 0;
#endif
};

inline thread_local Launch* tl_launch = nullptr;

inline std::mutex& launch_mutex() {
  static std::mutex m;
  return m;
}
inline StackPool& stack_pool() {
  static StackPool pool;
  return pool;
}
inline std::vector<Fiber>& fiber_storage() {
  static std::vector<Fiber> fibers;
  return fibers;
}

[[noreturn]] inline void outside_kernel(const char* what) {
  std::fprintf(stderr, "thunderc_emu: %s used outside a kernel launch\n", what);
  std::abort();
}

inline Launch& cur_launch(const char* what) {
  Launch* l = tl_launch;
  if (!l || !l->current) outside_kernel(what);
  return *l;
}
inline Fiber& cur_fiber(const char* what) { return *cur_launch(what).current; }

inline unsigned char* dynamic_shared() { return cur_launch("dynamic shared memory").dynamic_shared; }

inline std::string block_name(const Launch& l) {
  std::ostringstream os;
  os << "block (" << l.block_idx.x << "," << l.block_idx.y << "," << l.block_idx.z << ")";
  return os.str();
}
inline std::string thread_name(const Fiber& f) {
  std::ostringstream os;
  os << "thread (" << f.tid.x << "," << f.tid.y << "," << f.tid.z << ")";
  return os.str();
}

// On a fiber, right after a switch to it: ASan learns the scheduler's stack, for the switch back.
inline void asan_arrived_on_fiber(Launch& l) {
#ifdef THUNDERC_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &l.scheduler_stack, &l.scheduler_stack_size);
#else
  (void)l;
#endif
}

// Switch from the current fiber back to the scheduler; returns when the scheduler resumes this fiber.
inline void yield_to_scheduler(Fiber& f) {
  Launch& l = *tl_launch;
#ifdef THUNDERC_EMU_ASAN
  __sanitizer_start_switch_fiber(nullptr, l.scheduler_stack, l.scheduler_stack_size);  // no fake stacks here
#endif
#ifdef THUNDERC_EMU_ASM_SWITCH
  thunderc_emu_switch(&f.sp, l.scheduler_sp);
#else
  swapcontext(&f.ctx, &l.scheduler);
#endif
  asan_arrived_on_fiber(l);
}

inline void resume_fiber(Launch& l, Fiber& f) {
#ifdef THUNDERC_EMU_ASAN
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, f.stack, kStackBytes);
#endif
#ifdef THUNDERC_EMU_ASM_SWITCH
  thunderc_emu_switch(&l.scheduler_sp, f.sp);
#else
  swapcontext(&l.scheduler, &f.ctx);
#endif
#ifdef THUNDERC_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
}

// Bottom of every fiber: runs the kernel body for the thread the scheduler resumed (l.current).
inline void fiber_main() {
  Launch& l = *tl_launch;
  Fiber& f = *l.current;
  asan_arrived_on_fiber(l);
  try {
    l.invoke(l.body);
  } catch (...) {
    f.error = std::current_exception();
  }
  f.wait = Wait::Done;
  yield_to_scheduler(f);
  std::abort();  // a finished fiber is never resumed
}

inline bool same_site(const Fiber& a, const Fiber& b) {
  return a.site_line == b.site_line &&
         (a.site_file == b.site_file || std::strcmp(a.site_file, b.site_file) == 0);
}

// ---- block barrier ----
inline int syncthreads_at(BlockOp op, int pred, const char* file, int line) {
  Fiber& f = cur_fiber("__syncthreads");
  f.wait = Wait::Block;
  f.bop = op;
  f.bpred = pred != 0;
  f.site_file = file;
  f.site_line = line;
  yield_to_scheduler(f);
  return f.bresult;
}

inline bool try_release_block(Launch& l) {
  const Fiber* first = nullptr;
  for (unsigned i = 0; i < l.nthreads; ++i) {
    const Fiber& f = l.fibers[i];
    if (f.wait != Wait::Block) return false;  // someone exited or waits at a warp collective
    if (!first) first = &f;
    else if (!same_site(*first, f) || first->bop != f.bop) return false;
  }
  if (!first) return false;
  int count = 0;
  for (unsigned i = 0; i < l.nthreads; ++i) count += l.fibers[i].bpred;
  int result = 0;
  switch (first->bop) {
    case BlockOp::Sync: result = 0; break;
    case BlockOp::Count: result = count; break;
    case BlockOp::And: result = count == static_cast<int>(l.nthreads); break;
    case BlockOp::Or: result = count > 0; break;
  }
  for (unsigned i = 0; i < l.nthreads; ++i) {
    l.fibers[i].bresult = result;
    l.fibers[i].wait = Wait::Ready;
  }
  return true;
}

// ---- warp collectives ----
inline unsigned warp_lanes_present(const Launch& l, unsigned warp) {
  unsigned base = warp * 32, n = l.nthreads - base < 32 ? l.nthreads - base : 32;
  return n == 32 ? 0xffffffffu : ((1u << n) - 1u);
}

inline void warp_collective(WarpOp op, unsigned mask, const void* value, std::size_t size, int arg, int width) {
  Launch& l = cur_launch(warp_op_name(op));
  Fiber& f = *l.current;
  unsigned lane = f.linear % 32;
  if (!(mask & (1u << lane))) {
    std::ostringstream os;
    os << "thunderc_emu: " << warp_op_name(op) << " in " << block_name(l) << " " << thread_name(f)
       << ": mask 0x" << std::hex << mask << " does not contain the calling lane " << std::dec << lane;
    throw Error(os.str());
  }
  if (width < 1 || width > 32 || (width & (width - 1)) != 0) {
    std::ostringstream os;
    os << "thunderc_emu: " << warp_op_name(op) << " in " << block_name(l) << " " << thread_name(f) << ": width "
       << width << " is not a power of two in [1, 32]";
    throw Error(os.str());
  }
  f.wait = Wait::Warp;
  f.wop = op;
  f.wmask = mask;
  f.warg = arg;
  f.wwidth = width;
  f.wsize = static_cast<unsigned>(size);
  std::memset(f.win, 0, sizeof f.win);
  if (size) std::memcpy(f.win, value, size);
  yield_to_scheduler(f);
}

// Releases every warp collective whose lanes (mask & lanes present in the warp, minus exited ones) have all
// arrived with the same mask. Lanes that exited or are not in the mask are not taking part: reading their
// value gives poison bytes (0xFF: NaN for floats, -1 for integers), as CUDA leaves that undefined.
inline bool try_release_warps(Launch& l) {
  bool released = false;
  unsigned nwarps = (l.nthreads + 31) / 32;
  for (unsigned w = 0; w < nwarps; ++w) {
    unsigned present = warp_lanes_present(l, w);
    Fiber* lanes = l.fibers + w * 32;
    for (unsigned lane = 0; lane < 32; ++lane) {
      if (!(present & (1u << lane)) || lanes[lane].wait != Wait::Warp) continue;
      const unsigned mask = lanes[lane].wmask;
      unsigned group = mask & present, participants = 0;
      bool complete = true;
      for (unsigned g = 0; g < 32 && complete; ++g) {
        if (!(group & (1u << g))) continue;
        const Fiber& o = lanes[g];
        if (o.wait == Wait::Done) continue;
        if (o.wait != Wait::Warp || o.wmask != mask) complete = false;
        else participants |= 1u << g;
      }
      if (!complete) continue;
      const Fiber& lead = lanes[lane];
      for (unsigned g = 0; g < 32; ++g) {
        if (!(participants & (1u << g))) continue;
        const Fiber& o = lanes[g];
        if (o.wop != lead.wop || o.wsize != lead.wsize || o.wwidth != lead.wwidth) {
          std::ostringstream os;
          os << "thunderc_emu: warp collective mismatch in " << block_name(l) << " warp " << w << ": "
             << thread_name(lead) << " calls " << warp_op_name(lead.wop) << " (" << lead.wsize
             << " bytes, width " << lead.wwidth << ") while " << thread_name(o) << " calls "
             << warp_op_name(o.wop) << " (" << o.wsize << " bytes, width " << o.wwidth << ") with the same mask";
          throw Error(os.str());
        }
      }
      unsigned votes = 0;
      for (unsigned g = 0; g < 32; ++g) {
        if ((participants & (1u << g)) && lanes[g].win[0]) votes |= 1u << g;
      }
      for (unsigned g = 0; g < 32; ++g) {
        if (!(participants & (1u << g))) continue;
        Fiber& o = lanes[g];
        const int width = o.wwidth;
        const unsigned base = g & ~static_cast<unsigned>(width - 1);
        unsigned src = g;
        unsigned result = 0;
        switch (o.wop) {
          case WarpOp::Sync: break;
          case WarpOp::Idx: src = base + (static_cast<unsigned>(o.warg) & static_cast<unsigned>(width - 1)); break;
          case WarpOp::Up:
            src = (g - base) >= static_cast<unsigned>(o.warg) ? g - static_cast<unsigned>(o.warg) : g;
            break;
          case WarpOp::Down:
            src = (g - base) + static_cast<unsigned>(o.warg) < static_cast<unsigned>(width)
                      ? g + static_cast<unsigned>(o.warg)
                      : g;
            break;
          case WarpOp::Xor:
            src = g ^ static_cast<unsigned>(o.warg);
            if (src >= base + static_cast<unsigned>(width) || src >= 32) src = g;
            break;
          case WarpOp::Ballot: result = votes; break;
          case WarpOp::All: result = (votes == participants); break;
          case WarpOp::Any: result = (votes != 0); break;
        }
        switch (o.wop) {
          case WarpOp::Idx:
          case WarpOp::Up:
          case WarpOp::Down:
          case WarpOp::Xor:
            if (participants & (1u << src)) std::memcpy(o.wout, lanes[src].win, sizeof o.wout);
            else std::memset(o.wout, 0xFF, sizeof o.wout);
            break;
          default:
            std::memcpy(o.wout, &result, sizeof result);
            break;
        }
      }
      for (unsigned g = 0; g < 32; ++g) {
        if (participants & (1u << g)) lanes[g].wait = Wait::Ready;
      }
      released = true;
    }
  }
  return released;
}

[[noreturn]] inline void report_divergence(const Launch& l) {
  struct Site {
    std::string what;
    unsigned count;
    const Fiber* first;
  };
  std::vector<Site> sites;
  auto add = [&](const std::string& what, const Fiber& f) {
    for (Site& s : sites) {
      if (s.what == what) {
        ++s.count;
        return;
      }
    }
    sites.push_back({what, 1, &f});
  };
  for (unsigned i = 0; i < l.nthreads; ++i) {
    const Fiber& f = l.fibers[i];
    std::ostringstream os;
    if (f.wait == Wait::Done) {
      os << "have exited";
    } else if (f.wait == Wait::Block) {
      os << "wait at __syncthreads() at " << f.site_file << ":" << f.site_line;
    } else {
      os << "wait at " << warp_op_name(f.wop) << "(mask 0x" << std::hex << f.wmask << std::dec << ") in warp "
         << f.linear / 32;
    }
    add(os.str(), f);
  }
  std::ostringstream os;
  os << "barrier divergence in " << block_name(l) << ": no thread can proceed:";
  for (const Site& s : sites) {
    os << "\n  " << s.count << " thread(s) " << s.what << " (first: " << thread_name(*s.first) << ")";
  }
  throw Error(os.str());
}

template <typename F>
void invoke_body(void* p) {
  (*static_cast<std::remove_reference_t<F>*>(p))();
}

struct LaunchScope {
  Launch* previous;
  explicit LaunchScope(Launch* l) : previous(tl_launch) { tl_launch = l; }
  ~LaunchScope() { tl_launch = previous; }
};

#ifdef THUNDERC_EMU_ASM_SWITCH
// A fresh stack that thunderc_emu_switch "returns" into fiber_main with the ABI's alignment: from the top,
// a null return address (ends backtraces), fiber_main's address, rbp rbx r12-r15 = 0, MXCSR/x87 defaults.
inline void init_fiber_context(Fiber& f, void* stack) {
#ifdef THUNDERC_EMU_ASAN
  f.stack = stack;
  __asan_unpoison_memory_region(stack, kStackBytes);
#endif
  auto top = reinterpret_cast<std::uintptr_t>(stack) + kStackBytes;
  top &= ~static_cast<std::uintptr_t>(15);
  auto* words = reinterpret_cast<std::uint64_t*>(top);
  words[-1] = 0;
  words[-2] = reinterpret_cast<std::uint64_t>(&fiber_main);
  for (int k = 3; k <= 8; ++k) words[-k] = 0;
  const std::uint32_t fp[2] = {0x1F80u, 0x037Fu};  // MXCSR, x87 control word
  std::memcpy(&words[-9], fp, sizeof fp);
  f.sp = &words[-9];
}
#else
// Kept out of line: getcontext returns twice, which would make GCC warn about (and pessimize) the caller.
__attribute__((noinline)) inline void init_fiber_context(Fiber& f, void* stack) {
#ifdef THUNDERC_EMU_ASAN
  f.stack = stack;
  __asan_unpoison_memory_region(stack, kStackBytes);
#endif
  getcontext(&f.ctx);
  f.ctx.uc_stack.ss_sp = stack;
  f.ctx.uc_stack.ss_size = kStackBytes;
  f.ctx.uc_link = nullptr;
  makecontext(&f.ctx, &fiber_main, 0);
}
#endif

inline void run_grid(Launch& l) {
  std::vector<Fiber>& fibers = fiber_storage();
  if (fibers.size() < l.nthreads) fibers.resize(l.nthreads);
  l.fibers = fibers.data();
  for (unsigned i = 0; i < l.nthreads; ++i) stack_pool().get(i);
  std::vector<SharedChunk> dyn((l.dynamic_shared_bytes + 15) / 16 + 1);
  l.dynamic_shared = dyn.data()->bytes;

  for (unsigned bz = 0; bz < l.grid.z; ++bz) {
    for (unsigned by = 0; by < l.grid.y; ++by) {
      for (unsigned bx = 0; bx < l.grid.x; ++bx) {
        l.block_idx = {bx, by, bz};
        std::memset(l.dynamic_shared, 0xFF, dyn.size() * sizeof(SharedChunk));
        for (unsigned i = 0; i < l.nthreads; ++i) {
          Fiber& f = l.fibers[i];
          f.linear = i;
          f.tid = {i % l.block.x, (i / l.block.x) % l.block.y, i / (l.block.x * l.block.y)};
          f.wait = Wait::Ready;
          f.error = nullptr;
          init_fiber_context(f, stack_pool().get(i));
        }
        for (;;) {
          bool ran = false, all_done = true;
          for (unsigned i = 0; i < l.nthreads; ++i) {
            Fiber& f = l.fibers[i];
            if (f.wait != Wait::Ready) {
              if (f.wait != Wait::Done) all_done = false;
              continue;
            }
            ran = true;
            l.current = &f;
            resume_fiber(l, f);
            l.current = nullptr;
            if (f.error) {
              std::exception_ptr e = f.error;
              f.error = nullptr;
              std::rethrow_exception(e);
            }
            if (f.wait != Wait::Done) all_done = false;
          }
          if (ran) continue;
          if (all_done) break;
          if (try_release_warps(l)) continue;
          if (try_release_block(l)) continue;
          report_divergence(l);
        }
      }
    }
  }
}

}  // namespace detail

// Runs `body` once per CUDA thread of a grid x block launch (see the top of this file). Throws
// thunderc_emu::Error for an invalid configuration or a synchronization error, and rethrows whatever the
// kernel throws. Serialized process-wide; must not be called from inside a kernel.
template <typename F>
void launch(const unsigned* grid, const unsigned* block, unsigned dynamic_shared_bytes, F&& body) {
  if (detail::tl_launch) throw Error("thunderc_emu::launch: called from inside a kernel");
  std::lock_guard<std::mutex> lock(detail::launch_mutex());
  detail::Launch l;
  l.grid = dim3(grid[0], grid[1], grid[2]);
  l.block = dim3(block[0], block[1], block[2]);
  const unsigned long long threads = 1ull * l.block.x * l.block.y * l.block.z;
  if (l.grid.x == 0 || l.grid.y == 0 || l.grid.z == 0 || threads == 0 || threads > 1024 || l.block.z > 64 ||
      l.grid.y > 65535 || l.grid.z > 65535) {
    std::ostringstream os;
    os << "thunderc_emu::launch: invalid configuration grid (" << l.grid.x << "," << l.grid.y << "," << l.grid.z
       << ") block (" << l.block.x << "," << l.block.y << "," << l.block.z
       << ") (CUDA: at most 1024 threads per block, block.z <= 64, grid.y/z <= 65535, no zero)";
    throw Error(os.str());
  }
  l.nthreads = static_cast<unsigned>(threads);
  l.dynamic_shared_bytes = dynamic_shared_bytes;
  l.body = const_cast<void*>(static_cast<const void*>(std::addressof(body)));
  l.invoke = &detail::invoke_body<F>;
  detail::LaunchScope scope(&l);
  detail::run_grid(l);
}

template <typename F>
void launch(dim3 grid, dim3 block, unsigned dynamic_shared_bytes, F&& body) {
  const unsigned g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
  launch(g, b, dynamic_shared_bytes, std::forward<F>(body));
}

}  // namespace thunderc_emu

// ---------------------------------------------------------------------------------------------------------
// Built-in variables
#define threadIdx (::thunderc_emu::detail::cur_fiber("threadIdx").tid)
#define blockIdx (::thunderc_emu::detail::cur_launch("blockIdx").block_idx)
#define blockDim (::thunderc_emu::detail::cur_launch("blockDim").block)
#define gridDim (::thunderc_emu::detail::cur_launch("gridDim").grid)

// ---------------------------------------------------------------------------------------------------------
// Synchronization. __syncthreads() records its call site: threads of a block must all wait at the same one.
#define __syncthreads() \
  ((void)::thunderc_emu::detail::syncthreads_at(::thunderc_emu::detail::BlockOp::Sync, 0, __FILE__, __LINE__))
#define __syncthreads_count(p) \
  ::thunderc_emu::detail::syncthreads_at(::thunderc_emu::detail::BlockOp::Count, (p), __FILE__, __LINE__)
#define __syncthreads_and(p) \
  ::thunderc_emu::detail::syncthreads_at(::thunderc_emu::detail::BlockOp::And, (p), __FILE__, __LINE__)
#define __syncthreads_or(p) \
  ::thunderc_emu::detail::syncthreads_at(::thunderc_emu::detail::BlockOp::Or, (p), __FILE__, __LINE__)

// __trap(): the kernel stops (an index out of range, PyTorch's device-side assert). On a GPU the launch fails
// with CUDA_ERROR_LAUNCH_FAILED; here launch() throws this Error, whose message starts with "__trap()" (the
// fake driver, tests/runtime/fake_cuda/, turns it into that status).
[[noreturn]] inline void __trap() {
  std::ostringstream os;
  os << "__trap() in block (" << blockIdx.x << "," << blockIdx.y << "," << blockIdx.z << ") thread (" << threadIdx.x
     << "," << threadIdx.y << "," << threadIdx.z << ")";
  throw ::thunderc_emu::Error(os.str());
}

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::thunderc_emu::detail::warp_collective(::thunderc_emu::detail::WarpOp::Sync, mask, nullptr, 0, 0, 32);
}
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}

// Lanes of the calling warp that exist and have not exited (CUDA: the currently converged lanes).
inline unsigned __activemask() {
  using namespace ::thunderc_emu::detail;
  Launch& l = cur_launch("__activemask");
  unsigned warp = l.current->linear / 32, present = warp_lanes_present(l, warp), mask = 0;
  for (unsigned g = 0; g < 32; ++g) {
    if ((present & (1u << g)) && l.fibers[warp * 32 + g].wait != Wait::Done) mask |= 1u << g;
  }
  return mask;
}

namespace thunderc_emu {
namespace detail {
template <typename T>
T shuffle(WarpOp op, unsigned mask, T var, int arg, int width) {
  static_assert(std::is_trivially_copyable<T>::value, "warp shuffles need a trivially copyable type");
  static_assert(sizeof(T) <= 16, "warp shuffles take at most 16 bytes");
  warp_collective(op, mask, &var, sizeof(T), arg, width);
  T out = var;
  std::memcpy(static_cast<void*>(&out), cur_fiber("shuffle").wout, sizeof(T));
  return out;
}
inline unsigned vote(WarpOp op, unsigned mask, int pred) {
  unsigned char p = pred != 0;
  warp_collective(op, mask, &p, 1, 0, 32);
  unsigned out;
  std::memcpy(&out, cur_fiber("vote").wout, sizeof out);
  return out;
}
}  // namespace detail
}  // namespace thunderc_emu

template <typename T>
T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize) {
  return ::thunderc_emu::detail::shuffle(::thunderc_emu::detail::WarpOp::Idx, mask, var, srcLane, width);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ::thunderc_emu::detail::shuffle(::thunderc_emu::detail::WarpOp::Up, mask, var, static_cast<int>(delta),
                                         width);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ::thunderc_emu::detail::shuffle(::thunderc_emu::detail::WarpOp::Down, mask, var, static_cast<int>(delta),
                                         width);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize) {
  return ::thunderc_emu::detail::shuffle(::thunderc_emu::detail::WarpOp::Xor, mask, var, laneMask, width);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  return ::thunderc_emu::detail::vote(::thunderc_emu::detail::WarpOp::Ballot, mask, pred);
}
inline int __all_sync(unsigned mask, int pred) {
  return static_cast<int>(::thunderc_emu::detail::vote(::thunderc_emu::detail::WarpOp::All, mask, pred));
}
inline int __any_sync(unsigned mask, int pred) {
  return static_cast<int>(::thunderc_emu::detail::vote(::thunderc_emu::detail::WarpOp::Any, mask, pred));
}

// ---------------------------------------------------------------------------------------------------------
// Atomics: fibers never interleave inside a read-modify-write, so plain operations are atomic here.
#define THUNDERC_EMU_ATOMIC(name, T, expr) \
  inline T name(T* address, T val) {       \
    T old = *address;                      \
    *address = (expr);                     \
    return old;                            \
  }
THUNDERC_EMU_ATOMIC(atomicAdd, int, old + val)
THUNDERC_EMU_ATOMIC(atomicAdd, unsigned, old + val)
THUNDERC_EMU_ATOMIC(atomicAdd, unsigned long long, old + val)
THUNDERC_EMU_ATOMIC(atomicAdd, float, old + val)
THUNDERC_EMU_ATOMIC(atomicAdd, double, old + val)
THUNDERC_EMU_ATOMIC(atomicSub, int, old - val)
THUNDERC_EMU_ATOMIC(atomicSub, unsigned, old - val)
THUNDERC_EMU_ATOMIC(atomicMax, int, old > val ? old : val)
THUNDERC_EMU_ATOMIC(atomicMax, unsigned, old > val ? old : val)
THUNDERC_EMU_ATOMIC(atomicMax, long long, old > val ? old : val)
THUNDERC_EMU_ATOMIC(atomicMax, unsigned long long, old > val ? old : val)
THUNDERC_EMU_ATOMIC(atomicMin, int, old < val ? old : val)
THUNDERC_EMU_ATOMIC(atomicMin, unsigned, old < val ? old : val)
THUNDERC_EMU_ATOMIC(atomicMin, long long, old < val ? old : val)
THUNDERC_EMU_ATOMIC(atomicMin, unsigned long long, old < val ? old : val)
THUNDERC_EMU_ATOMIC(atomicExch, int, val)
THUNDERC_EMU_ATOMIC(atomicExch, unsigned, val)
THUNDERC_EMU_ATOMIC(atomicExch, unsigned long long, val)
THUNDERC_EMU_ATOMIC(atomicExch, float, val)
THUNDERC_EMU_ATOMIC(atomicAnd, int, old & val)
THUNDERC_EMU_ATOMIC(atomicAnd, unsigned, old & val)
THUNDERC_EMU_ATOMIC(atomicAnd, unsigned long long, old & val)
THUNDERC_EMU_ATOMIC(atomicOr, int, old | val)
THUNDERC_EMU_ATOMIC(atomicOr, unsigned, old | val)
THUNDERC_EMU_ATOMIC(atomicOr, unsigned long long, old | val)
THUNDERC_EMU_ATOMIC(atomicXor, int, old ^ val)
THUNDERC_EMU_ATOMIC(atomicXor, unsigned, old ^ val)
THUNDERC_EMU_ATOMIC(atomicXor, unsigned long long, old ^ val)
THUNDERC_EMU_ATOMIC(atomicInc, unsigned, old >= val ? 0u : old + 1u)
THUNDERC_EMU_ATOMIC(atomicDec, unsigned, (old == 0u || old > val) ? val : old - 1u)
#undef THUNDERC_EMU_ATOMIC
#define THUNDERC_EMU_ATOMIC_CAS(T)                    \
  inline T atomicCAS(T* address, T compare, T val) { \
    T old = *address;                                \
    if (old == compare) *address = val;              \
    return old;                                      \
  }
THUNDERC_EMU_ATOMIC_CAS(int)
THUNDERC_EMU_ATOMIC_CAS(unsigned)
THUNDERC_EMU_ATOMIC_CAS(unsigned long long)
THUNDERC_EMU_ATOMIC_CAS(unsigned short)
#undef THUNDERC_EMU_ATOMIC_CAS

// ---------------------------------------------------------------------------------------------------------
// Math. <math.h> provides expf, logf, ..., the double versions, the float overloads of exp/log/..., and
// isnan/isinf/isfinite for float and double in the global namespace; INFINITY and NAN. The intrinsics
// below are computed exactly (CUDA's fast-math intrinsics round differently).
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __exp10f(float x) { return powf(10.0f, x); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fadd_rn(float x, float y) { return x + y; }
inline float __fmul_rn(float x, float y) { return x * y; }
inline float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : (x == x ? x : 0.0f)); }
inline float __int_as_float(int x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}
inline int __float_as_int(float x) {
  int i;
  std::memcpy(&i, &x, sizeof i);
  return i;
}
inline float __uint_as_float(unsigned x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}
inline unsigned __float_as_uint(float x) {
  unsigned i;
  std::memcpy(&i, &x, sizeof i);
  return i;
}
// The PTX conversions generated code writes as inline asm on the device (cvt.rn.f16.f32, cvt.f32.f16,
// cvt.rn.bf16.f32): round to nearest even, as the hardware does. These are thunderc's host converters (the
// ones the compiler stores weights with), reached relative to this header so that no extra -I is needed.
#include "../../../../core/ir/half.h"
inline unsigned short thunderc_emu_cvt_rn_f16_f32(float f) { return thunderc::float_to_f16(f); }
inline float thunderc_emu_cvt_f32_f16(unsigned short h) { return thunderc::f16_to_float(h); }
inline unsigned short thunderc_emu_cvt_rn_bf16_f32(float f) { return thunderc::float_to_bf16(f); }
inline double __longlong_as_double(long long x) {
  double d;
  std::memcpy(&d, &x, sizeof d);
  return d;
}
inline long long __double_as_longlong(double x) {
  long long i;
  std::memcpy(&i, &x, sizeof i);
  return i;
}
inline int __float2int_rn(float x) { return static_cast<int>(nearbyintf(x)); }
inline int __float2int_rz(float x) { return static_cast<int>(x); }
inline int __float2int_rd(float x) { return static_cast<int>(floorf(x)); }
inline int __float2int_ru(float x) { return static_cast<int>(ceilf(x)); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}

// min/max as CUDA provides them unqualified (same-type and mixed arithmetic types, the common type wins;
// floating point like fminf/fmaxf: a NaN operand loses).
// Do not combine with `using namespace std;` (std::min/std::max would make calls ambiguous).
template <typename A, typename B,
          typename = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  if (std::is_floating_point<C>::value) return static_cast<C>(std::fmin(static_cast<C>(a), static_cast<C>(b)));
  return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
}
template <typename A, typename B,
          typename = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  if (std::is_floating_point<C>::value) return static_cast<C>(std::fmax(static_cast<C>(a), static_cast<C>(b)));
  return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
}

template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
