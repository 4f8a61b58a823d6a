//===- DType.h - element types the runtime stores -------------------------===//
//
// The element types a plan's buffers can hold. The numbering is the plan
// schema's (runtime/plan/plan.fbs) so the two convert by value; names
// follow the nn dialect (f32, bf16, i64, ui8, i1).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_SUPPORT_DTYPE_H
#define FSDP_RUNTIME_SUPPORT_DTYPE_H

#include <cstddef>
#include <cstdint>

namespace fsdp::rt {

enum class DType : uint8_t {
  F32 = 0, F64 = 1, F16 = 2, BF16 = 3,
  I8 = 4, I16 = 5, I32 = 6, I64 = 7,
  U8 = 8, U16 = 9, U32 = 10, U64 = 11,
  Bool = 12,
};
inline constexpr int kNumDTypes = 13;

inline size_t dtypeSize(DType t) {
  switch (t) {
  case DType::I8: case DType::U8: case DType::Bool: return 1;
  case DType::F16: case DType::BF16: case DType::I16: case DType::U16: return 2;
  case DType::F32: case DType::I32: case DType::U32: return 4;
  case DType::F64: case DType::I64: case DType::U64: return 8;
  }
  return 0;
}

inline const char *dtypeName(DType t) {
  static const char *names[] = {"f32", "f64", "f16", "bf16", "i8", "i16", "i32",
                                "i64", "ui8", "ui16", "ui32", "ui64", "i1"};
  return static_cast<int>(t) < kNumDTypes ? names[static_cast<int>(t)] : "invalid";
}

inline bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_SUPPORT_DTYPE_H
