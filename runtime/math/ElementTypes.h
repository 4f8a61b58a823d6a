//===- ElementTypes.h - storage types of DTypes and dispatch on them ------===//
//
// Shared by both backends' kernels: `dispatch<Allowed>(dtype, f)` calls
// `f(T{})` with the C++ storage type of a run-time DType (f16 and bf16 get
// distinct tag types, so a template can tell them apart), and reports a
// dtype outside `Allowed` as an error Status instead of instantiating code
// for it. `load`/`store` move between storage and compute types (f16/bf16
// compute in float and round to nearest even on store) and are FSDP_HD, so
// a CUDA kernel stores exactly the CPU's 16-bit patterns. Dispatch itself
// runs on the host (it picks the kernel instantiation to launch).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_MATH_ELEMENTTYPES_H
#define FSDP_RUNTIME_MATH_ELEMENTTYPES_H

#include "runtime/math/HostDevice.h"
#include "runtime/support/DType.h"
#include "runtime/support/Half.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <type_traits>
#include <utility>

namespace fsdp::rt {


// --- Storage and compute types -------------------------------------------------

/// 16-bit float storage: the bit pattern, tagged by format.
struct F16 { uint16_t bits; };
struct BF16 { uint16_t bits; };

/// The type arithmetic on T happens in: float for the 16-bit floats, T
/// itself otherwise (bool included).
template <typename T> struct ComputeTypeOf { using type = T; };
template <> struct ComputeTypeOf<F16> { using type = float; };
template <> struct ComputeTypeOf<BF16> { using type = float; };
template <typename T> using ComputeType = typename ComputeTypeOf<T>::type;

template <typename T>
inline constexpr bool kIsFloatStorage = std::is_floating_point_v<T> ||
                                        std::is_same_v<T, F16> || std::is_same_v<T, BF16>;
template <typename T>
inline constexpr bool kIsIntStorage = std::is_integral_v<T> && !std::is_same_v<T, bool>;

FSDP_HD_INLINE float toCompute(F16 v) { return f16ToFloat(v.bits); }
FSDP_HD_INLINE float toCompute(BF16 v) { return bf16ToFloat(v.bits); }
template <typename T> FSDP_HD_INLINE T toCompute(T v) { return v; }

template <typename T> FSDP_HD_INLINE T fromCompute(ComputeType<T> v) {
  if constexpr (std::is_same_v<T, F16>)
    return F16{floatToF16(v)};
  else if constexpr (std::is_same_v<T, BF16>)
    return BF16{floatToBf16(v)};
  else
    return v;
}

template <typename T> FSDP_HD_INLINE ComputeType<T> load(const T *p) { return toCompute(*p); }
template <typename T> FSDP_HD_INLINE void store(T *p, ComputeType<T> v) { *p = fromCompute<T>(v); }

/// The DType whose storage type is T.
template <typename T> constexpr DType dtypeOf() {
  if constexpr (std::is_same_v<T, float>) return DType::F32;
  else if constexpr (std::is_same_v<T, double>) return DType::F64;
  else if constexpr (std::is_same_v<T, F16>) return DType::F16;
  else if constexpr (std::is_same_v<T, BF16>) return DType::BF16;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::I8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::I16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::I32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::I64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::U8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::U16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::U32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::U64;
  else {
    static_assert(std::is_same_v<T, bool>, "not a storage type");
    return DType::Bool;
  }
}

// --- Dispatch --------------------------------------------------------------------

/// Sets of dtypes, one bit per DType value.
using DTypeSet = uint32_t;
constexpr DTypeSet bitOf(DType t) { return DTypeSet{1} << static_cast<int>(t); }
inline constexpr DTypeSet kFloatTypes =
    bitOf(DType::F32) | bitOf(DType::F64) | bitOf(DType::F16) | bitOf(DType::BF16);
inline constexpr DTypeSet kSignedIntTypes =
    bitOf(DType::I8) | bitOf(DType::I16) | bitOf(DType::I32) | bitOf(DType::I64);
inline constexpr DTypeSet kUnsignedIntTypes =
    bitOf(DType::U8) | bitOf(DType::U16) | bitOf(DType::U32) | bitOf(DType::U64);
inline constexpr DTypeSet kIntTypes = kSignedIntTypes | kUnsignedIntTypes;
inline constexpr DTypeSet kNumericTypes = kFloatTypes | kIntTypes;
inline constexpr DTypeSet kAllTypes = kNumericTypes | bitOf(DType::Bool);
inline constexpr DTypeSet kIndexTypes = bitOf(DType::I32) | bitOf(DType::I64);

inline Status unsupportedDType(const char *op, DType t) {
  return Status::error(cat(op, ": unsupported element type ", dtypeName(t)));
}

namespace detail {
/// Calls f(T{}); a callback returning void counts as success.
template <typename T, typename F> Status callWith(F &f) {
  if constexpr (std::is_void_v<decltype(f(T{}))>) {
    f(T{});
    return Status::ok();
  } else {
    return f(T{});
  }
}
} // namespace detail

/// Calls f(T{}) with the storage type of `t` when `t` is in Allowed, else
/// returns an error naming `op`. Only the allowed types are instantiated.
template <DTypeSet Allowed, typename F>
Status dispatch(DType t, F &&f, const char *op = "kernel") {
#define FSDP_DISPATCH_CASE(DT, T)                                              \
  case DType::DT:                                                              \
    if constexpr ((Allowed & bitOf(DType::DT)) != 0)                           \
      return detail::callWith<T>(f);                                           \
    break;
  switch (t) {
    FSDP_DISPATCH_CASE(F32, float)
    FSDP_DISPATCH_CASE(F64, double)
    FSDP_DISPATCH_CASE(F16, F16)
    FSDP_DISPATCH_CASE(BF16, BF16)
    FSDP_DISPATCH_CASE(I8, int8_t)
    FSDP_DISPATCH_CASE(I16, int16_t)
    FSDP_DISPATCH_CASE(I32, int32_t)
    FSDP_DISPATCH_CASE(I64, int64_t)
    FSDP_DISPATCH_CASE(U8, uint8_t)
    FSDP_DISPATCH_CASE(U16, uint16_t)
    FSDP_DISPATCH_CASE(U32, uint32_t)
    FSDP_DISPATCH_CASE(U64, uint64_t)
    FSDP_DISPATCH_CASE(Bool, bool)
  }
#undef FSDP_DISPATCH_CASE
  return unsupportedDType(op, t);
}

template <typename F> Status dispatchAll(DType t, F &&f, const char *op = "kernel") {
  return dispatch<kAllTypes>(t, std::forward<F>(f), op);
}
template <typename F> Status dispatchNumeric(DType t, F &&f, const char *op = "kernel") {
  return dispatch<kNumericTypes>(t, std::forward<F>(f), op);
}
template <typename F> Status dispatchFloat(DType t, F &&f, const char *op = "kernel") {
  return dispatch<kFloatTypes>(t, std::forward<F>(f), op);
}
template <typename F> Status dispatchIndex(DType t, F &&f, const char *op = "kernel") {
  return dispatch<kIndexTypes>(t, std::forward<F>(f), op);
}

/// For kernels that only move elements: calls f(U{}) with the unsigned
/// integer type of the element's size (uint8_t .. uint64_t).
template <typename F> Status dispatchBySize(DType t, F &&f, const char *op = "kernel") {
  switch (dtypeSize(t)) {
  case 1: return detail::callWith<uint8_t>(f);
  case 2: return detail::callWith<uint16_t>(f);
  case 4: return detail::callWith<uint32_t>(f);
  case 8: return detail::callWith<uint64_t>(f);
  }
  return unsupportedDType(op, t);
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_MATH_ELEMENTTYPES_H
