//===- GemmMapping.cpp - (being written) ----------------------------------===//
#include "runtime/backends/cuda/GemmMapping.h"
