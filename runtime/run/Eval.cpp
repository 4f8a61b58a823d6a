//===- Eval.cpp - fsdp-run's validation passes ----------------------------===//
//
// Every evaluation reads the same M batches (0 .. M-1), as a validation set
// is read whole each time, so val_loss values of one run compare. The
// checks of Eval.h run when the run begins: the vocabulary check fills
// each of the M batches once and looks at the ids each rank will feed, so
// it covers exactly the data used, however large the file.
//
//===----------------------------------------------------------------------===//

#include "runtime/run/Eval.h"

#include "runtime/plan/KernelTable.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/run/Train.h"

#include <limits>
#include <vector>

namespace fsdp::run {

using namespace fsdp::rt;

namespace {

/// The evaluation data's flag and file, for messages.
std::string evalSource(const RunOptions &opts) {
  if (!opts.evalDataPath.empty())
    return "--eval-data=" + opts.evalDataPath;
  std::string files;
  for (const auto &[name, path] : opts.evalInputs)
    files += (files.empty() ? "" : ", ") + name + "=" + path;
  return "--eval-input " + files;
}

/// Dropout that is active in the prefix: torch evaluates in eval() mode,
/// without it, and the kernel's mode is fixed in the plan.
Status refuseDropout(const plan::Plan &plan, const std::string &path) {
  for (uint32_t i = 0; i < plan.eval_end(); ++i) {
    const plan::Instruction &inst = *plan.instructions()->Get(i);
    if (inst.kernel() != plan::Kernel::Dropout)
      continue;
    const bool training = inst.ints() && inst.ints()->size() > 0 && inst.ints()->Get(0) != 0;
    const float ratio = inst.floats() && inst.floats()->size() > 0 ? inst.floats()->Get(0) : 0;
    if (training && ratio > 0)
      return Status::error(cat(path, ": the forward pass has active dropout (instruction ", i,
                               inst.name() ? " '" + inst.name()->str() + "'" : std::string(),
                               ", ratio ", ratio, "); evaluation without dropout (torch's "
                               "eval() mode) is not implemented yet"));
  }
  return Status::ok();
}

/// An embedding an integer input indexes: the rows of the table a Gather
/// reads with the input as its indices, and the table's name.
struct Vocabulary {
  int64_t rows = std::numeric_limits<int64_t>::max();
  std::string table;
};

/// The smallest table input `buffer` indexes directly (rows max: none).
Vocabulary vocabularyOf(const plan::Plan &plan, uint32_t buffer) {
  Vocabulary v;
  for (uint32_t i = 0; i < plan.eval_end(); ++i) {
    const plan::Instruction &inst = *plan.instructions()->Get(i);
    if (inst.kernel() != plan::Kernel::Gather || inst.inputs()->Get(1) != buffer)
      continue;
    const plan::Buffer &table = *plan.buffers()->Get(inst.inputs()->Get(0));
    int64_t rank = table.shape() ? table.shape()->size() : 0;
    int64_t axis = inst.ints() && inst.ints()->size() ? inst.ints()->Get(0) : 0;
    axis = axis < 0 ? axis + rank : axis;
    if (axis < 0 || axis >= rank || table.shape()->Get(axis) >= v.rows)
      continue;
    v.rows = table.shape()->Get(axis);
    v.table = table.name() ? table.name()->str() : cat("buffer ", inst.inputs()->Get(0));
  }
  return v;
}

/// Every id of the M batches this rank feeds lies in [0, rows) of the
/// embedding its input indexes; for a token file, every input holds the
/// file's ids, so the smallest vocabulary holds for all.
Status checkVocabulary(const RunOptions &opts, Executor &executor, DataSource &data,
                       int64_t batches) {
  const plan::Plan &plan = executor.plan().plan();
  std::vector<Vocabulary> vocab;
  Vocabulary least;
  for (const std::string &name : data.inputs()) {
    Vocabulary v;
    for (const plan::Binding *binding : *plan.inputs())
      if (binding->name()->str() == name)
        v = vocabularyOf(plan, binding->buffer());
    if (v.rows < least.rows)
      least = v;
    vocab.push_back(v);
  }
  if (!opts.evalDataPath.empty())
    vocab.assign(vocab.size(), least);
  std::vector<int64_t> ids;
  for (int64_t e = 0; e < batches; ++e) {
    FSDP_RETURN_IF_ERROR(data.fill(e));
    for (size_t k = 0; k < vocab.size(); ++k) {
      const HostTensor &t = data.batch()[k];
      if (vocab[k].table.empty() || isFloat(t.dtype) || t.dtype == DType::Bool)
        continue;
      ids.resize(t.numElements());
      FSDP_RETURN_IF_ERROR(convertElements(t.dtype, t.data.data(), DType::I64, ids.data(),
                                           t.numElements(), /*lossless=*/false));
      for (int64_t id : ids)
        if (id < 0 || id >= vocab[k].rows)
          return Status::error(cat(evalSource(opts), ": id ", id, " (evaluation batch ", e,
                                   ", input '", data.inputs()[k], "') is outside the model's "
                                   "vocabulary [0, ", vocab[k].rows, "): the rows of '",
                                   vocab[k].table, "'"));
    }
  }
  return Status::ok();
}

/// Opens and checks the evaluation data on this rank.
Status openLocal(const RunOptions &opts, Executor &executor, std::unique_ptr<DataSource> &data,
                 int64_t &batches) {
  const plan::Plan &plan = executor.plan().plan();
  if (!executor.hasEvalPrefix())
    return Status::error(opts.planPath + ": the plan has no evaluation prefix (compiled by an "
                                         "fsdp-opt without validation: compile it again)");
  FSDP_RETURN_IF_ERROR(refuseDropout(plan, opts.planPath));
  if (Status s = openData({opts.evalDataPath, opts.evalInputs, "--eval-data", "--eval-input", true},
                          executor, data);
      !s)
    return Status::error(evalSource(opts) + ": " + s.message());
  const int64_t perBatch = data->samplesPerStep();
  const int64_t whole = data->distinctSamples() / perBatch;
  if (whole < 1 || (opts.evalBatches && *opts.evalBatches > whole))
    return Status::error(cat(evalSource(opts), ": holds ", data->distinctSamples(),
                             " samples, ", whole, " whole evaluation batches of ", perBatch,
                             " (b x world size); ", opts.evalBatches ? *opts.evalBatches : 1,
                             " needed (--eval-batches)"));
  batches = opts.evalBatches.value_or(whole);
  return checkVocabulary(opts, executor, *data, batches);
}

} // namespace

Status Evaluation::open(const RunOptions &opts, Executor &executor,
                        std::unique_ptr<Evaluation> &out) {
  std::unique_ptr<DataSource> data;
  int64_t batches = 0;
  Status local = openLocal(opts, executor, data, batches);
  if (executor.worldSize() > 1)
    local = executor.world().agree(local, "opening the evaluation data");
  if (!local)
    return local;
  out.reset(new Evaluation(executor, std::move(data), opts.evalEvery.value_or(0), batches));
  return Status::ok();
}

bool Evaluation::dueAfter(int64_t step, int64_t lastStep) const {
  return step == lastStep || (every_ > 0 && step % every_ == 0);
}

Status Evaluation::run(double &valLoss) {
  std::vector<double> local(batches_);
  for (int64_t e = 0; e < batches_; ++e) {
    FSDP_RETURN_IF_ERROR(data_->fill(e));
    for (size_t i = 0; i < data_->inputs().size(); ++i)
      FSDP_RETURN_IF_ERROR(executor_.setInput(data_->inputs()[i], data_->batch()[i].ref()));
    FSDP_RETURN_IF_ERROR(executor_.runEval(local[e]));
  }
  // Every rank's losses on every rank, then sums in rank order.
  const int64_t ranks = executor_.worldSize();
  std::vector<double> all(local);
  if (ranks > 1) {
    all.resize(batches_ * ranks);
    FSDP_RETURN_IF_ERROR(executor_.world().allGather(local.data(), all.data(), batches_,
                                                     DType::F64));
  }
  double total = 0;
  for (int64_t e = 0; e < batches_; ++e) {
    double batch = 0;
    for (int64_t r = 0; r < ranks; ++r)
      batch += all[r * batches_ + e];
    total += batch / static_cast<double>(ranks);
  }
  valLoss = total / static_cast<double>(batches_);
  return Status::ok();
}

} // namespace fsdp::run
