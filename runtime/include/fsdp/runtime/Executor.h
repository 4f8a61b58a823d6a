//===- Executor.h - runs a loaded plan on a device ------------------------===//
//
// The executor turns a verified plan into memory and launches: it allocates
// exactly the plan's persistent region and arena on the device once, binds
// every buffer to its planned offset, prepares one Launch per instruction
// (operand views, attributes) and then runs the instruction stream as many
// times as asked without allocating. Parameters come from the plan's
// safetensors weights file (checked against the plan's hash and parameter
// table); inputs and outputs move through their bound buffers.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_EXECUTOR_H
#define FSDP_RUNTIME_EXECUTOR_H

#include "fsdp/runtime/Device.h"
#include "fsdp/runtime/HostTensor.h"
#include "fsdp/runtime/PlanFile.h"

#include <memory>
#include <string>
#include <vector>

namespace fsdp::rt {

class Executor {
public:
  /// Allocates the plan's memory on `device` and prepares its launches.
  static Status create(const LoadedPlan &plan, Device &device, std::unique_ptr<Executor> &out);
  ~Executor();

  /// Loads every parameter from a safetensors file: `path`, or the plan's
  /// own weights file when empty (whose content hash must match the plan).
  Status loadWeights(const std::string &path = "");

  /// Copies a host tensor into the named graph input; dtype and shape must
  /// match the plan exactly.
  Status setInput(const std::string &name, const TensorRef &value);
  /// Runs every instruction once (one step). With `kernelSeconds`, also
  /// adds each instruction's wall time to its kernel's entry (indexed by
  /// fsdp::plan::Kernel), synchronizing after every launch to measure it.
  Status run(std::vector<double> *kernelSeconds = nullptr);
  /// Copies the named graph output to the host.
  Status getOutput(const std::string &name, HostTensor &out) const;

  /// Names in binding order.
  std::vector<std::string> inputNames() const;
  std::vector<std::string> outputNames() const;
  /// Bytes allocated for plan-managed memory (persistent + arena): exactly
  /// the plan's numbers.
  size_t allocatedBytes() const { return persistent_.size + arena_.size; }

private:
  Executor(const LoadedPlan &plan, Device &device) : plan_(plan), device_(device) {}
  Status prepare();
  TensorRef viewOf(uint32_t buffer) const;
  Status bindingBuffer(bool input, const std::string &name, uint32_t &buffer) const;

  const LoadedPlan &plan_;
  Device &device_;
  DeviceMemory persistent_, arena_;
  std::vector<TensorRef> operands_;           // all launches' operand views
  std::vector<std::vector<int64_t>> ints_;    // attributes, one vector per launch
  std::vector<std::vector<float>> floats_;
  std::vector<Launch> launches_;
  uint64_t step_ = 0;
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_EXECUTOR_H
