//===- OneDnnMatmul.cpp - the primitive cache and its execution -----------===//
//
// The cache is an ordered map of entries that are never erased (a plan has
// a few dozen product shapes), so an entry's address is stable and each
// thread keeps its own memory objects for it (bound once, pointed at the
// call's operands each call: no handle is made per call). Refusals are
// cached too, so oneDNN is asked once per shape. oneDNN's C++ API reports
// failures by exception; they are caught where the primitive is created,
// and turn into a refusal. A product's pieces are resolved to entries
// before any runs, so a refusal leaves the result untouched for the
// caller's fallback.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/OneDnnMatmul.h"

#include "runtime/backends/cpu/KernelThreads.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

// libgomp's C entry point (the OpenMP runtime oneDNN runs on). Declared
// here rather than through <omp.h>, which clang builds do not have without
// LLVM's libomp; the ABI is the OpenMP standard's.
extern "C" void omp_set_num_threads(int);

namespace fsdp::rt::cpu {
namespace {

using dnnl::memory;

/// One piece's primitive: `rows` rows of the product, the leading
/// dimensions of a, b and out (a's is the whole product's m when a is
/// transposed), the operands' type and the result's.
struct Key {
  int64_t rows, n, k, lda, ldb, ldc;
  bool transA, transB;
  DType dtype, outDtype;
  uint32_t alphaBits, betaBits;
  bool operator<(const Key &o) const {
    return std::tie(rows, n, k, lda, ldb, ldc, transA, transB, dtype, outDtype, alphaBits,
                    betaBits) < std::tie(o.rows, o.n, o.k, o.lda, o.ldb, o.ldc, o.transA,
                                         o.transB, o.dtype, o.outDtype, o.alphaBits, o.betaBits);
  }
};

/// Rows per piece at least (below, a piece's copy of b costs more than its
/// share of the product), and pieces at most.
constexpr int64_t kMinRows = 64;
constexpr int kMaxPieces = 64;

/// A cached primitive, or a refusal (ok false).
struct Entry {
  bool ok = false;
  int64_t rows = 0;
  std::string impl;
  memory::desc a, b, out, scratch;
  dnnl::matmul primitive;
};

dnnl::engine &cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

bool dnnlType(DType t, memory::data_type &out) {
  switch (t) {
  case DType::F32: out = memory::data_type::f32; return true;
  case DType::BF16: out = memory::data_type::bf16; return true;
  case DType::F16: out = memory::data_type::f16; return true;
  default: return false;
  }
}

uint32_t bitsOf(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

/// Whether oneDNN's ISA on this CPU has bf16 instructions. Without them
/// oneDNN emulates bf16 products (gemm:jit on avx512_core took the
/// benchmark GPT's bf16 step to 617 ms, against 207 ms widened to sgemm
/// and 191 in f32, on a Xeon capped by ONEDNN_MAX_CPU_ISA), so bf16 is
/// taken on AVX512-BF16 and AMX only. f16 keeps oneDNN's own choice (its
/// JIT or nothing: oneDNN 2.6 offered none on that Xeon, AVX512-FP16 and
/// all, and the reference loop is refused below).
bool bf16Native() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

std::unique_ptr<Entry> createEntry(const Key &key, float alpha, float beta) {
  auto e = std::make_unique<Entry>();
  e->rows = key.rows;
  memory::data_type t, outType;
  if (!dnnlType(key.dtype, t) || !dnnlType(key.outDtype, outType) ||
      (key.dtype == DType::BF16 && !bf16Native()))
    return e;
  const memory::dim m = key.rows, n = key.n, k = key.k;
  e->a = memory::desc({m, k}, t, key.transA ? memory::dims{1, key.lda} : memory::dims{key.lda, 1});
  e->b = memory::desc({k, n}, t, key.transB ? memory::dims{1, key.ldb} : memory::dims{key.ldb, 1});
  e->out = memory::desc({m, n}, outType, memory::dims{key.ldc, 1});
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (alpha != 1.0f)
      attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(beta);
      attr.set_post_ops(ops);
    }
    // Each piece runs on one thread (the pool splits the rows), and a
    // primitive's blocking depends on the team it is created for.
    omp_set_num_threads(1);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e->a, e->b, e->out), attr, cpuEngine());
    e->impl = pd.impl_info_str();
    // oneDNN's reference loop is slower than widening to sgemm.
    if (e->impl.rfind("ref", 0) == 0)
      return e;
    e->scratch = pd.scratchpad_desc();
    e->primitive = dnnl::matmul(pd);
    e->ok = true;
  } catch (const dnnl::error &) {
    e->ok = false;
  }
  return e;
}

const Entry &entryFor(const Key &key, float alpha, float beta) {
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<Entry>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Entry> &slot = cache[key];
  if (!slot)
    slot = createEntry(key, alpha, beta);
  return *slot;
}

/// The key of `rows` rows of a strided product from `dtype` to `outDtype`.
Key keyOf(const StridedProduct &s, int64_t rows, DType dtype, DType outDtype, float alpha,
          float beta) {
  return Key{rows,     s.n,      s.k,   s.lda,    s.ldb,         s.ldc,
             s.transA, s.transB, dtype, outDtype, bitsOf(alpha), bitsOf(beta)};
}

/// A contiguous product's key: its leading dimensions are its sizes.
Key keyOf(const ProductShape &s, int64_t rows, DType dtype, float alpha, float beta) {
  const int64_t lda = s.transA ? s.m : s.k, ldb = s.transB ? s.k : s.n;
  const StridedProduct strided{s.m, s.n, s.k, lda, ldb, s.n, s.transA, s.transB};
  return keyOf(strided, rows, dtype, dtype, alpha, beta);
}

/// The pieces a product's rows split into: the rank's kernel threads, so
/// the same on every rank thread and whether or not the pool is free
/// (which only decides who runs them).
int piecesOf(const ProductShape &s) {
  const int64_t byRows = std::max<int64_t>(1, s.m / kMinRows);
  return static_cast<int>(std::min<int64_t>({byRows, rankKernelThreads(), kMaxPieces}));
}

int64_t pieceBegin(const ProductShape &s, int pieces, int i) { return s.m * i / pieces; }

/// What one thread keeps: its stream, its scratchpad (grown, 64-byte
/// aligned as oneDNN prefers) and its memory objects per cache entry.
struct ThreadState {
  struct Bound {
    memory a, b, out, scratch;
  };
  dnnl::stream stream{cpuEngine()};
  std::unique_ptr<void, decltype(&std::free)> scratch{nullptr, &std::free};
  size_t scratchBytes = 0;
  std::map<const Entry *, Bound> bound;

  void *scratchOf(size_t bytes) {
    if (bytes > scratchBytes) {
      const size_t rounded = (bytes + 63) / 64 * 64;
      scratch.reset(std::aligned_alloc(64, rounded));
      scratchBytes = scratch ? rounded : 0;
    }
    return scratch.get();
  }

  Bound &boundFor(const Entry &e) {
    auto it = bound.find(&e);
    if (it == bound.end()) {
      const dnnl::engine &engine = cpuEngine();
      it = bound
               .emplace(&e, Bound{memory(e.a, engine, nullptr), memory(e.b, engine, nullptr),
                                  memory(e.out, engine, nullptr),
                                  memory(e.scratch, engine, nullptr)})
               .first;
    }
    return it->second;
  }
};

ThreadState &threadState() {
  static thread_local ThreadState state;
  return state;
}

/// Runs entry e on this thread over the operands at a, b and out.
Status execute(const Entry &e, const void *a, const void *b, void *out) {
  ThreadState &state = threadState();
  // oneDNN on this thread alone: no OpenMP team beside the rank's pool.
  omp_set_num_threads(1);
  void *scratch = state.scratchOf(e.scratch.get_size());
  if (!scratch && e.scratch.get_size() > 0)
    return Status::error("oneDNN matmul: no memory for its scratchpad");
  ThreadState::Bound &bound = state.boundFor(e);
  bound.a.set_data_handle(const_cast<void *>(a));
  bound.b.set_data_handle(const_cast<void *>(b));
  bound.out.set_data_handle(out);
  bound.scratch.set_data_handle(scratch);
  // The C API's argument array: the C++ one takes a map.
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, bound.a.get()},
                                  {DNNL_ARG_WEIGHTS, bound.b.get()},
                                  {DNNL_ARG_DST, bound.out.get()},
                                  {DNNL_ARG_SCRATCHPAD, bound.scratch.get()}};
  if (dnnl_primitive_execute(e.primitive.get(), state.stream.get(), 4, args) != dnnl_success)
    return Status::error("oneDNN matmul: execution failed");
  state.stream.wait();
  return Status::ok();
}

/// Execution cannot fail for the descriptors the primitives were created
/// with, given their scratchpad; were it to, the result is incomplete and
/// no fallback could redo it (beta has been applied to some rows).
void abortOn(const Status &status) {
  if (status)
    return;
  std::fprintf(stderr, "fsdp: %s\n", status.message().c_str());
  std::abort();
}

const char *isaName(dnnl::cpu_isa isa) {
  switch (isa) {
  case dnnl::cpu_isa::sse41: return "sse41";
  case dnnl::cpu_isa::avx: return "avx";
  case dnnl::cpu_isa::avx2: return "avx2";
  case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
  case dnnl::cpu_isa::avx512_core: return "avx512_core";
  case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
  case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
  case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
  case dnnl::cpu_isa::all: return "all";
  default: return "other";
  }
}

} // namespace

bool oneDnnProduct(const ProductShape &s, DType dtype, const void *a, const void *b, void *out,
                   float alpha, float beta) {
  const int pieces = piecesOf(s);
  const Entry *entries[kMaxPieces];
  for (int i = 0; i < pieces; ++i) {
    const int64_t rows = pieceBegin(s, pieces, i + 1) - pieceBegin(s, pieces, i);
    // At most two row counts: look each up once.
    entries[i] = i > 0 && entries[i - 1]->rows == rows
                     ? entries[i - 1]
                     : &entryFor(keyOf(s, rows, dtype, alpha, beta), alpha, beta);
    if (!entries[i]->ok)
      return false;
  }
  const size_t size = dtypeSize(dtype);
  auto run = [&](int64_t begin, int64_t end) -> Status {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t row = pieceBegin(s, pieces, static_cast<int>(i));
      // Row `row` of op(a): a column of a stored transposed.
      const int64_t aOffset = s.transA ? row : row * s.k;
      FSDP_RETURN_IF_ERROR(execute(*entries[i], static_cast<const char *>(a) + aOffset * size, b,
                                   static_cast<char *>(out) + row * s.n * size));
    }
    return Status::ok();
  };
  abortOn(parallelFor(0, pieces, 1, run));
  return true;
}

bool oneDnnStridedProduct(const StridedProduct &s, DType dtype, const void *a, const void *b,
                          float *out, bool accumulate) {
  const float beta = accumulate ? 1.0f : 0.0f;
  const Key key = keyOf(s, s.m, dtype, DType::F32, 1.0f, beta);
  const Entry &e = entryFor(key, 1.0f, beta);
  if (!e.ok)
    return false;
  abortOn(execute(e, a, b, out));
  return true;
}

bool oneDnnTakes(DType dtype) {
  ProductShape s;
  s.m = s.n = 64;
  s.k = 64;
  return entryFor(keyOf(s, s.m, dtype, 1.0f, 0.0f), 1.0f, 0.0f).ok;
}

std::string oneDnnImplementation(const ProductShape &s, DType dtype) {
  const Entry &e = entryFor(keyOf(s, s.m, dtype, 1.0f, 0.0f), 1.0f, 0.0f);
  return e.ok ? e.impl : std::string();
}

const char *oneDnnIsa() { return isaName(dnnl::get_effective_cpu_isa()); }

} // namespace fsdp::rt::cpu
