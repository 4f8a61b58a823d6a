//===- GemmMapping.h - row-major products as column-major BLAS calls ------===//
// (being written)
#ifndef FSDP_RUNTIME_BACKENDS_CUDA_GEMMMAPPING_H
#define FSDP_RUNTIME_BACKENDS_CUDA_GEMMMAPPING_H
#endif
