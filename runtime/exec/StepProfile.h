//===- StepProfile.h - what a profiled step measured ----------------------===//
//
// Executor::run(&profile) brackets every instruction, every point where a
// stream waits for another stream's event, and each stream's start and end
// with timing events on the device (CUDA events on a GPU,
// completion times on the CPU's stream workers), and adds what they
// measured here. The numbers are device time, the same on every backend:
// an instruction's time runs from its stream reaching it (after its waits)
// to its finishing. Exposed communication is the compute stream's (stream
// 0's) time not spent computing because of the other streams: its waits
// for their events, the collectives it runs itself (plans with one stream
// run them there), and the step's tail after its last work while another
// stream is still busy. It is the measured side of the cost model's
// exposed_communication_s (step minus compute, compiler/Analysis/
// CostModel.h), which a plan carries in plan.fbs's CostPrediction.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_EXEC_STEPPROFILE_H
#define FSDP_RUNTIME_EXEC_STEPPROFILE_H

#include <cstdint>
#include <vector>

namespace fsdp::rt {

/// Seconds summed over the profiled steps; divide by `steps` for a mean.
struct StepProfile {
  int64_t steps = 0;
  /// One entry per plan instruction.
  std::vector<double> instructionSeconds;
  /// One entry per plan stream: the time its instructions ran, and the
  /// time its waits for other streams' events held it.
  std::vector<double> streamBusySeconds, streamWaitSeconds;
  /// From the first stream's start to the end of the last stream's work.
  double stepSeconds = 0;
  /// The compute stream held up by communication (and copies): see above.
  double exposedCommunicationSeconds = 0;
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_EXEC_STEPPROFILE_H
