//===- DataSource.h - the training data contract --------------------------===//
//
// What a training run feeds each step, exactly as docs/design.md's data contract
// says, so runs are comparable with other tools. The plan's inputs have
// shape [K*b, ...] with b the per-rank micro-batch and K the micro-batches
// per step (--grad-accum; 1 without); the global batch is B = b * N * K
// over N ranks, and rows [k*b, (k+1)*b) of rank r hold global samples
// [k*b*N + r*b, k*b*N + (r+1)*b): micro-batch k spreads over all ranks,
// and K = 1 is rank r taking samples [r*b, (r+1)*b).
// Two sources: sample files (one .npy per input, S samples stacked on dim 0;
// sample j of step s is row (s*B + j) mod S) and a token file (n integer
// ids; sample j of step s starts at ((s*B + j) * T) mod (n - T - 1), the
// first input gets T tokens from there and the second the T tokens one
// further on). Files are validated once when opened (shapes, dtypes, every
// value convertible without loss to its input's dtype), so filling a step
// only copies and cannot fail on the data.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_TRAIN_DATASOURCE_H
#define FSDP_RUNTIME_TRAIN_DATASOURCE_H

#include "runtime/support/HostTensor.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fsdp::rt {

/// A plan input: name, dtype and shape [b, ...].
struct InputSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

/// Which rank of how many this process feeds.
/// And how many micro-batches (K) each input binding stacks.
struct RankLayout {
  int64_t rank = 0;
  int64_t worldSize = 1;
  int64_t gradAccum = 1;
  /// Evaluation (--eval-data): a batch is one micro-batch per rank (b x N
  /// samples, no K), read into micro-batch 0's rows, which are all the
  /// evaluation prefix reads; the other micro-batches' rows repeat them.
  bool firstMicroBatchOnly = false;

  /// Global samples per step: b x N x K (b x N under firstMicroBatchOnly).
  int64_t samplesPerStep(int64_t microBatch) const {
    return microBatch * worldSize * (firstMicroBatchOnly ? 1 : gradAccum);
  }
};

/// The global sample (0 <= j < B) that row `row` of a rank's input binding
/// holds, for micro-batches of `microBatch` rows: the data contract's
/// k*b*N + r*b + i for row k*b + i.
int64_t globalSampleOfRow(RankLayout layout, int64_t microBatch, int64_t row);

/// Row of a sample file holding `numSamples` rows that global sample `j`
/// of 0-based step `step` reads: (step*B + j) mod S.
int64_t sampleRow(int64_t step, int64_t j, int64_t globalBatch, int64_t numSamples);
/// First token of global sample `j` of 0-based step `step` in a token file
/// of `numTokens` ids with sequence length T: ((step*B + j) * T) mod (n - T - 1).
/// Requires numTokens >= T + 2. Exact for any step (no 64-bit overflow).
int64_t tokenStart(int64_t step, int64_t j, int64_t globalBatch, int64_t seqLen,
                   int64_t numTokens);

/// Converts `n` elements from one dtype to another; with `lossless`, fails
/// naming the first element that does not survive the round trip
/// (to `to` and back to `from` bit for bit).
Status convertElements(DType from, const void *src, DType to, void *dst, int64_t n,
                       bool lossless);

/// Reads a token file: `.npy` of any integer dtype and shape (flattened),
/// or raw little-endian uint16 (`.bin`). The result is 1-D.
Status readTokenFile(const std::string &path, HostTensor &out);

/// Feeds the plan's inputs, step by step.
class DataSource {
public:
  virtual ~DataSource() = default;
  /// One tensor per input named in inputs(), shaped as the plan input.
  const std::vector<HostTensor> &batch() const { return batch_; }
  const std::vector<std::string> &inputs() const { return names_; }
  /// Fills batch() with the rank's samples of 0-based step `step`.
  virtual Status fill(int64_t step) = 0;
  /// Samples and tokens (0 when not a token source) of one global step.
  int64_t samplesPerStep() const { return globalBatch_; }
  virtual int64_t tokensPerStep() const { return 0; }
  /// Global samples 0, 1, ... the data holds before the contract's
  /// indexing wraps around: S for sample files (the smallest file's), the
  /// windows starting below n - T - 1 for a token file. An evaluation pass
  /// reads only these (fsdp-run --eval-batches).
  virtual int64_t distinctSamples() const = 0;

protected:
  /// Allocates batch() for `inputs` once; fill() only writes into it.
  void bind(const std::vector<InputSpec> &inputs, int64_t globalBatch);

  std::vector<HostTensor> batch_;
  std::vector<std::string> names_;
  int64_t globalBatch_ = 0;
};

/// Sample files: `files` maps an input name to its .npy path, one per
/// input of `inputs` (no more, no fewer).
Status openSampleFiles(const std::vector<InputSpec> &inputs,
                       const std::map<std::string, std::string> &files, RankLayout layout,
                       std::unique_ptr<DataSource> &out);

/// A token file for a plan with exactly two integer [b, T] inputs.
Status openTokenFile(const std::vector<InputSpec> &inputs, const std::string &path,
                     RankLayout layout, std::unique_ptr<DataSource> &out);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_TRAIN_DATASOURCE_H
