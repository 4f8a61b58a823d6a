//===- Train.cpp - fsdp-run on a training plan ----------------------------===//
//
// World size is 1 until the FSDP issue: this process is rank 0 of 1, but
// the data layout is passed as (rank, world size) so multi-rank runs only
// change the RankLayout. A step's time covers staging its inputs, the
// compiled step and reading the loss back: what a user waits for.
//
//===----------------------------------------------------------------------===//

#include "tools/fsdp-run/Train.h"

#include "fsdp/runtime/DataSource.h"
#include "fsdp/runtime/TrainLog.h"
#include "tools/fsdp-run/Progress.h"

#include <unistd.h>

#include <chrono>

namespace fsdp::run {

using namespace fsdp::rt;

namespace {

/// The data source the options describe, or an exit code.
int openData(const RunOptions &opts, Executor &executor, std::unique_ptr<DataSource> &source) {
  std::vector<InputSpec> specs;
  for (const std::string &name : executor.inputNames()) {
    InputSpec spec;
    spec.name = name;
    if (Status s = executor.inputType(name, spec.dtype, spec.shape); !s)
      return fail(s.message());
    specs.push_back(std::move(spec));
  }
  RankLayout layout; // rank 0 of 1 until multi-rank execution lands
  if (!opts.dataPath.empty()) {
    if (!opts.inputs.empty())
      return fail("--input=" + opts.inputs.begin()->first + ": the plan's inputs come from --data=" +
                  opts.dataPath + " (give --data or --input, not both)");
    if (Status s = openTokenFile(specs, opts.dataPath, layout, source); !s)
      return fail(s.message());
    return 0;
  }
  for (const InputSpec &spec : specs)
    if (!opts.inputs.count(spec.name))
      return fail("missing --input=" + spec.name +
                  "=FILE.npy (a training plan takes each input as a .npy of samples stacked "
                  "on dimension 0, or --data=FILE for token models)");
  if (Status s = openSampleFiles(specs, opts.inputs, layout, source); !s)
    return fail(s.message());
  return 0;
}

} // namespace

int runTraining(const RunOptions &opts, Executor &executor) {
  std::unique_ptr<DataSource> data;
  if (int code = openData(opts, executor, data))
    return code;
  MetricsFile metrics;
  if (!opts.metricsPath.empty())
    if (Status s = metrics.open(opts.metricsPath); !s)
      return fail(s.message());
  double baseLr = opts.lr ? *opts.lr : executor.baseLearningRate();
  int64_t firstStep = 1, lastStep = opts.steps;
  Progress progress(stdout, isatty(STDOUT_FILENO), firstStep, lastStep,
                    opts.logEvery ? *opts.logEvery : defaultLogEvery(lastStep));
  std::vector<double> kernelSeconds;
  for (int64_t step = firstStep; step <= lastStep; ++step) {
    StepRecord record;
    DType lossType = DType::F32;
    record.step = step;
    record.totalSteps = lastStep;
    record.lr = opts.lrSchedule.at(baseLr, step, lastStep);
    auto start = std::chrono::steady_clock::now();
    Status s = data->fill(step - 1);
    for (size_t i = 0; s && i < data->inputs().size(); ++i)
      s = executor.setInput(data->inputs()[i], data->batch()[i].ref());
    if (s)
      s = executor.setLearningRate(record.lr);
    if (s)
      s = executor.setStep(step);
    if (s)
      s = executor.run(opts.profile ? &kernelSeconds : nullptr);
    if (s)
      s = executor.getLoss(record.loss, &lossType);
    if (!s)
      return fail(cat("step ", step, ": ", s.message()));
    record.lossIsF64 = lossType == DType::F64;
    record.stepSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    record.samples = data->samplesPerStep();
    record.tokens = data->tokensPerStep();
    record.peakBytes = executor.allocatedBytes();
    if (!opts.metricsPath.empty())
      if (Status m = metrics.write(record); !m)
        return fail(m.message());
    progress.update(record);
  }
  progress.finish();
  if (opts.timing)
    std::printf("time per step: %.3f ms (%lld steps, %zu bytes planned)\n",
                progress.seconds() * 1e3 / (lastStep - firstStep + 1),
                static_cast<long long>(lastStep - firstStep + 1), executor.allocatedBytes());
  if (opts.profile)
    printProfile(kernelSeconds, lastStep - firstStep + 1);
  if (!opts.saveWeightsPath.empty()) {
    if (Status s = executor.saveWeights(opts.saveWeightsPath); !s)
      return fail(s.message());
    std::printf("wrote %s (%zu parameters)\n", opts.saveWeightsPath.c_str(),
                executor.parameterNames().size());
  }
  if (!opts.outputsDir.empty())
    return writeOutputs(opts.outputsDir, executor);
  return 0;
}

} // namespace fsdp::run
