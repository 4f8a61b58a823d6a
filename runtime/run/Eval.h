//===- Eval.h - fsdp-run's validation passes --------------------------------===//
//
// --eval-data=FILE (a token file) or --eval-input=NAME=FILE.npy (one per
// input) evaluate the model being trained: after every --eval-every=K
// steps and after the last one, M batches (--eval-batches, default every
// whole batch the data holds) run through the training plan's evaluation
// prefix (Executor::runEval: the step's forward pass on the same parameter
// shards, up to each rank's local mean loss; nothing of the step changes).
// Evaluation batch e feeds rank r the global samples e*b*N + j of the data
// contract, j in [r*b, (r+1)*b), with its own counter (docs: DESIGN's data
// contract); the batches never wrap around the data. The run's val_loss
// is the mean over the M batches of the mean over ranks of the local
// losses, summed in rank order on every rank, so every strategy at the
// same world size reports the same bits.
//
// Refused before anything runs (exit 1): a plan without an evaluation
// prefix or with active dropout in it (evaluation in torch's eval() mode
// is not implemented yet), data holding fewer than M whole batches, and
// token ids outside the vocabulary of the embedding they index (the rows
// of the Gather's table that reads the input).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_RUN_EVAL_H
#define FSDP_RUNTIME_RUN_EVAL_H

#include "runtime/exec/Executor.h"
#include "runtime/train/DataSource.h"
#include "runtime/run/Driver.h"

#include <cstdint>
#include <memory>

namespace fsdp::run {

class Evaluation {
public:
  /// Opens the evaluation data of `options` for the executor's rank and
  /// checks it against the plan. Collective: every rank fails together.
  static rt::Status open(const RunOptions &options, rt::Executor &executor,
                         std::unique_ptr<Evaluation> &out);
  /// Whether an evaluation follows step `step` of a run ending at `lastStep`.
  bool dueAfter(int64_t step, int64_t lastStep) const;
  /// Runs the M batches (collective) and returns the val_loss, the same on
  /// every rank.
  rt::Status run(double &valLoss);
  int64_t batches() const { return batches_; }

private:
  Evaluation(rt::Executor &executor, std::unique_ptr<rt::DataSource> data, int64_t every,
             int64_t batches)
      : executor_(executor), data_(std::move(data)), every_(every), batches_(batches) {}

  rt::Executor &executor_;
  std::unique_ptr<rt::DataSource> data_;
  int64_t every_, batches_;
};

} // namespace fsdp::run

#endif // FSDP_RUNTIME_RUN_EVAL_H
