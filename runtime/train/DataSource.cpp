//===- DataSource.cpp - the training data contract ------------------------===//
//
// Both sources keep their file in its own dtype and convert rows into the
// plan inputs' dtypes as they fill a step (the CPU Cast kernel is the one
// conversion). Whether a file converts without loss is settled once when it
// is opened, by a round trip over the whole file in chunks: every element
// goes to the input's dtype and back and must come back bit for bit. Index
// math uses 128-bit intermediates, so step * B * T cannot overflow for any
// step a run could reach.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/DataSource.h"

#include "runtime/io/Npy.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/io/FileIO.h"

#include <algorithm>
#include <cstring>

namespace fsdp::rt {
namespace {

using detail::shapeString;

TensorRef flatView(DType dtype, const void *data, int64_t n) {
  TensorRef ref;
  ref.dtype = dtype;
  ref.rank = 1;
  ref.dims[0] = n;
  ref.data = const_cast<void *>(data);
  return ref;
}

/// One element as text, exactly (integers as integers, floats to 17 digits).
std::string valueText(DType dtype, const void *element) {
  char text[64];
  if (isFloat(dtype)) {
    double v = 0;
    (void)cpu::cast(flatView(dtype, element, 1), flatView(DType::F64, &v, 1));
    std::snprintf(text, sizeof(text), "%.17g", v);
  } else if (dtype == DType::U64) {
    uint64_t v;
    std::memcpy(&v, element, sizeof(v));
    std::snprintf(text, sizeof(text), "%llu", static_cast<unsigned long long>(v));
  } else {
    int64_t v = 0;
    (void)cpu::cast(flatView(dtype, element, 1), flatView(DType::I64, &v, 1));
    std::snprintf(text, sizeof(text), "%lld", static_cast<long long>(v));
  }
  return text;
}

std::string typeText(DType dtype, const std::vector<int64_t> &shape) {
  return dtypeName(dtype) + shapeString(shape.data(), shape.size());
}

bool isInteger(DType t) { return !isFloat(t) && t != DType::Bool; }

Status checkLayout(RankLayout layout) {
  if (layout.worldSize < 1 || layout.rank < 0 || layout.rank >= layout.worldSize)
    return Status::error(cat("rank ", layout.rank, " of world size ", layout.worldSize,
                             " is out of range"));
  if (layout.gradAccum < 1)
    return Status::error(cat("gradient accumulation of ", layout.gradAccum,
                             " micro-batches: must be >= 1"));
  return Status::ok();
}

/// Rows per micro-batch of an input binding of `rows` rows, which must hold
/// K whole micro-batches.
Status microBatchRows(const InputSpec &spec, RankLayout layout, int64_t &out) {
  int64_t rows = spec.shape.empty() ? 0 : spec.shape[0];
  if (rows % layout.gradAccum != 0)
    return Status::error(cat("input '", spec.name, "' has ", rows, " rows, not ",
                             layout.gradAccum, " micro-batches of equal size"));
  out = rows / layout.gradAccum;
  return Status::ok();
}

/// Rows of sample files, one file per input.
class SampleSource final : public DataSource {
public:
  struct File {
    HostTensor samples;
    int64_t rowElements = 0;
  };

  SampleSource(const std::vector<InputSpec> &inputs, std::vector<File> files, RankLayout layout,
               int64_t microBatch)
      : files_(std::move(files)), layout_(layout), microBatch_(microBatch) {
    bind(inputs, layout.samplesPerStep(microBatch));
  }

  Status fill(int64_t step) override {
    for (size_t k = 0; k < files_.size(); ++k) {
      const File &file = files_[k];
      HostTensor &out = batch_[k];
      size_t inBytes = file.rowElements * dtypeSize(file.samples.dtype);
      size_t outBytes = file.rowElements * dtypeSize(out.dtype);
      for (int64_t i = 0; i < microBatch_ * layout_.gradAccum; ++i) {
        int64_t row = sampleRow(step, globalSampleOfRow(layout_, microBatch_, i), globalBatch_,
                                file.samples.shape[0]);
        FSDP_RETURN_IF_ERROR(convertElements(file.samples.dtype,
                                             file.samples.data.data() + row * inBytes,
                                             out.dtype, out.data.data() + i * outBytes,
                                             file.rowElements, /*lossless=*/false));
      }
    }
    return Status::ok();
  }

  int64_t distinctSamples() const override {
    int64_t least = files_.empty() ? 0 : files_[0].samples.shape[0];
    for (const File &file : files_)
      least = std::min(least, file.samples.shape[0]);
    return least;
  }

private:
  std::vector<File> files_;
  RankLayout layout_;
  int64_t microBatch_;
};

/// Windows of one token file: inputs then targets one token further on.
class TokenSource final : public DataSource {
public:
  TokenSource(const std::vector<InputSpec> &inputs, HostTensor tokens, RankLayout layout)
      : tokens_(std::move(tokens)), layout_(layout),
        microBatch_(inputs[0].shape[0] / layout.gradAccum), seqLen_(inputs[0].shape[1]) {
    bind(inputs, layout.samplesPerStep(microBatch_));
  }

  Status fill(int64_t step) override {
    size_t tokenBytes = dtypeSize(tokens_.dtype);
    for (int64_t i = 0; i < microBatch_ * layout_.gradAccum; ++i) {
      int64_t start = tokenStart(step, globalSampleOfRow(layout_, microBatch_, i), globalBatch_,
                                 seqLen_, tokens_.shape[0]);
      for (int k = 0; k < 2; ++k) {
        HostTensor &out = batch_[k];
        FSDP_RETURN_IF_ERROR(convertElements(
            tokens_.dtype, tokens_.data.data() + (start + k) * tokenBytes, out.dtype,
            out.data.data() + i * seqLen_ * dtypeSize(out.dtype), seqLen_, /*lossless=*/false));
      }
    }
    return Status::ok();
  }

  int64_t tokensPerStep() const override { return globalBatch_ * seqLen_; }
  // Starts j * T below n - T - 1 (openTokenFile ensured n >= T + 2).
  int64_t distinctSamples() const override {
    return (tokens_.shape[0] - seqLen_ - 2) / seqLen_ + 1;
  }

private:
  HostTensor tokens_;
  RankLayout layout_;
  int64_t microBatch_, seqLen_;
};

/// Whether every element of `t` converts to `to` without loss; the error
/// names the element, its value and `what` the destination is.
Status checkLossless(const HostTensor &t, DType to, const std::string &what) {
  Status s = convertElements(t.dtype, t.data.data(), to, nullptr, t.numElements(), true);
  if (s.isOk())
    return s;
  return Status::error(s.message() + " (" + what + " is " + dtypeName(to) + ")");
}

} // namespace

void DataSource::bind(const std::vector<InputSpec> &inputs, int64_t globalBatch) {
  for (const InputSpec &spec : inputs) {
    HostTensor t;
    t.dtype = spec.dtype;
    t.shape = spec.shape;
    t.data.resize(static_cast<size_t>(t.numElements()) * dtypeSize(t.dtype));
    batch_.push_back(std::move(t));
    names_.push_back(spec.name);
  }
  globalBatch_ = globalBatch;
}

int64_t globalSampleOfRow(RankLayout layout, int64_t microBatch, int64_t row) {
  int64_t k = layout.firstMicroBatchOnly ? 0 : row / microBatch, i = row % microBatch;
  return (k * layout.worldSize + layout.rank) * microBatch + i;
}

int64_t sampleRow(int64_t step, int64_t j, int64_t globalBatch, int64_t numSamples) {
  __int128 index = static_cast<__int128>(step) * globalBatch + j;
  return static_cast<int64_t>(index % numSamples);
}

int64_t tokenStart(int64_t step, int64_t j, int64_t globalBatch, int64_t seqLen,
                   int64_t numTokens) {
  __int128 index = static_cast<__int128>(step) * globalBatch + j;
  return static_cast<int64_t>(index * seqLen % (numTokens - seqLen - 1));
}

Status convertElements(DType from, const void *src, DType to, void *dst, int64_t n,
                       bool lossless) {
  if (!lossless)
    return cpu::cast(flatView(from, src, n), flatView(to, dst, n));
  // Chunks bound the scratch memory when checking a whole (large) file, and
  // a small one gets no more than it needs; `dst` may be null when only the
  // check is wanted.
  const int64_t chunkSize = std::min<int64_t>(int64_t(1) << 16, n);
  std::vector<char> there(chunkSize * dtypeSize(to)), back(chunkSize * dtypeSize(from));
  const char *in = static_cast<const char *>(src);
  size_t fromSize = dtypeSize(from), toSize = dtypeSize(to);
  for (int64_t begin = 0; begin < n; begin += chunkSize) {
    int64_t count = std::min(chunkSize, n - begin);
    const char *chunk = in + begin * fromSize;
    char *out = dst ? static_cast<char *>(dst) + begin * toSize : there.data();
    FSDP_RETURN_IF_ERROR(cpu::cast(flatView(from, chunk, count), flatView(to, out, count)));
    FSDP_RETURN_IF_ERROR(
        cpu::cast(flatView(to, out, count), flatView(from, back.data(), count)));
    if (std::memcmp(back.data(), chunk, count * fromSize) == 0)
      continue;
    for (int64_t i = 0; i < count; ++i)
      if (std::memcmp(back.data() + i * fromSize, chunk + i * fromSize, fromSize) != 0)
        return Status::error(cat("element ", begin + i, " (", valueText(from, chunk + i * fromSize),
                                 ") of ", dtypeName(from), " is not representable in ",
                                 dtypeName(to)));
  }
  return Status::ok();
}

Status readTokenFile(const std::string &path, HostTensor &out) {
  auto endsWith = [&](const char *suffix) {
    size_t n = std::strlen(suffix);
    return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
  };
  HostTensor tokens;
  if (endsWith(".npy")) {
    FSDP_RETURN_IF_ERROR(readNpy(path, tokens));
    if (!isInteger(tokens.dtype))
      return Status::error("token file '" + path + "' holds " + dtypeName(tokens.dtype) +
                           "; token ids must be an integer dtype");
    tokens.shape = {tokens.numElements()};
  } else if (endsWith(".bin")) {
    detail::InputFile file;
    FSDP_RETURN_IF_ERROR(detail::withContext("token file '" + path + "'", file.open(path)));
    if (file.size() % 2 != 0)
      return Status::error(cat("token file '", path, "' has ", file.size(),
                               " bytes, not a whole number of uint16 tokens"));
    tokens.dtype = DType::U16;
    tokens.shape = {static_cast<int64_t>(file.size() / 2)};
    tokens.data.resize(file.size());
    FSDP_RETURN_IF_ERROR(detail::withContext(
        "token file '" + path + "'", file.readAt(0, tokens.data.data(), file.size())));
  } else {
    return Status::error("token file '" + path +
                         "': expected .npy (integer ids) or .bin (raw little-endian uint16)");
  }
  out = std::move(tokens);
  return Status::ok();
}

Status openSampleFiles(const std::vector<InputSpec> &inputs,
                       const std::map<std::string, std::string> &files, RankLayout layout,
                       std::unique_ptr<DataSource> &out) {
  FSDP_RETURN_IF_ERROR(checkLayout(layout));
  std::string known;
  for (const InputSpec &spec : inputs)
    known += (known.empty() ? "" : ", ") + spec.name;
  for (const auto &entry : files)
    if (std::none_of(inputs.begin(), inputs.end(),
                     [&](const InputSpec &s) { return s.name == entry.first; }))
      return Status::error("input '" + entry.first + "' (file '" + entry.second +
                           "') is not in the plan (it has: " + known + ")");
  std::vector<SampleSource::File> sampleFiles;
  int64_t microBatch = -1;
  for (const InputSpec &spec : inputs) {
    auto it = files.find(spec.name);
    if (it == files.end())
      return Status::error("no data for input '" + spec.name + "' (give --input=" + spec.name +
                           "=FILE.npy)");
    const std::string &path = it->second;
    std::string context = "npy file '" + path + "' for input '" + spec.name + "'";
    if (spec.shape.empty())
      return Status::error(context + ": the input is a scalar; training inputs need a batch "
                                     "dimension");
    if (microBatch >= 0 && spec.shape[0] != microBatch * layout.gradAccum)
      return Status::error(cat("input '", spec.name, "' has batch dimension ", spec.shape[0],
                               " but the first input has ", microBatch * layout.gradAccum));
    FSDP_RETURN_IF_ERROR(microBatchRows(spec, layout, microBatch));
    SampleSource::File file;
    FSDP_RETURN_IF_ERROR(readNpy(path, file.samples));
    const HostTensor &s = file.samples;
    bool sameRows = s.shape.size() == spec.shape.size() &&
                    std::equal(s.shape.begin() + 1, s.shape.end(), spec.shape.begin() + 1);
    if (!sameRows)
      return Status::error(context + ": holds " + typeText(s.dtype, s.shape) +
                           ", but samples of the input are " +
                           shapeString(spec.shape.data() + 1, spec.shape.size() - 1) +
                           " (the plan needs " + typeText(spec.dtype, spec.shape) +
                           "; the file stacks S samples on dimension 0)");
    if (s.shape[0] == 0)
      return Status::error(context + ": holds no samples");
    FSDP_RETURN_IF_ERROR(
        detail::withContext(context, checkLossless(s, spec.dtype, "the input's dtype")));
    file.rowElements = s.numElements() / s.shape[0];
    sampleFiles.push_back(std::move(file));
  }
  out = std::make_unique<SampleSource>(inputs, std::move(sampleFiles), layout,
                                       std::max<int64_t>(microBatch, 0));
  return Status::ok();
}

Status openTokenFile(const std::vector<InputSpec> &inputs, const std::string &path,
                     RankLayout layout, std::unique_ptr<DataSource> &out) {
  FSDP_RETURN_IF_ERROR(checkLayout(layout));
  std::string described;
  for (const InputSpec &spec : inputs)
    described += (described.empty() ? "" : ", ") + spec.name + " " +
                 typeText(spec.dtype, spec.shape);
  std::string needs = "token file '" + path +
                      "': token files feed plans whose inputs are exactly two integer [b, T] "
                      "tensors (tokens, then next-token targets); this plan's inputs are ";
  if (inputs.size() != 2)
    return Status::error(needs + (described.empty() ? "none" : described));
  for (const InputSpec &spec : inputs)
    if (!isInteger(spec.dtype) || spec.shape.size() != 2 || spec.shape != inputs[0].shape)
      return Status::error(needs + described);
  int64_t seqLen = inputs[0].shape[1], microBatch = 0;
  FSDP_RETURN_IF_ERROR(microBatchRows(inputs[0], layout, microBatch));
  HostTensor tokens;
  FSDP_RETURN_IF_ERROR(readTokenFile(path, tokens));
  int64_t n = tokens.shape[0];
  if (n < seqLen + 2)
    return Status::error(cat("token file '", path, "' holds ", n, " tokens; sequences of ",
                             seqLen, " need at least ", seqLen + 2));
  for (const InputSpec &spec : inputs)
    FSDP_RETURN_IF_ERROR(detail::withContext(
        "token file '" + path + "'",
        checkLossless(tokens, spec.dtype, "input '" + spec.name + "'")));
  out = std::make_unique<TokenSource>(inputs, std::move(tokens), layout);
  return Status::ok();
}

} // namespace fsdp::rt
