//===- Driver.cpp - fsdp-run's driver: executes a compiled plan -----------===//
//
// fsdp-run's whole program as a library (runDriver), so that a compiled
// step binary (fsdp-opt --emit=binary, linked with libfsdp_runtime.a) is
// fsdp-run with its plan built in: the same flags, checks and messages,
// with the binary's own name in front of them and no plan argument.
//
// The deployable half of fsdp-opt: loads and verifies a plan, allocates
// exactly its memory on the device --device names (unless told, a GPU
// when the build has CUDA and the machine a GPU, else the CPU;
// runtime/device/DeviceRegistry.h) once it has checked that the plan
// fits, and loads the weights written beside it. A forward plan binds its
// inputs from .npy files, runs, and writes every graph output to
// DIR/<name>.npy; a training plan runs K optimizer steps on data from the
// data contract (Train.cpp). It links only the
// runtime (no MLIR, no ONNX). Flags of docs/design.md's command line whose
// features have not landed are parsed and refused with "not implemented
// yet". Every error is one line on stderr and exit code 1.
//
// A plan compiled for N ranks runs as N in-process ranks (threads, each
// with its own device, executor and data; BLAS threads shared out between
// them), or as one process per rank under mpirun (or srun --mpi=pmix: the
// MPI communicator) or torchrun (torchrun's environment: the TCP
// communicator, runtime/channels/TcpCommunicator.h); mpirun's environment
// wins where both are set. Every rank first agrees
// with the others on the plan (content hash and world size), so ranks
// started on different plans stop with the same error. A rank that fails
// aborts the group, so the others stop too instead of waiting for it; the
// in-process driver then reports the rank that failed first. Only rank 0
// prints and writes files. A collective that does not finish within
// --collective-timeout seconds stops the run on every rank (the collective
// watchdog, Watchdog.h), which prints the late collective and each rank's
// last 64 collectives.
//
//===----------------------------------------------------------------------===//

#include "runtime/channels/InProcessCommunicator.h"
#include "runtime/channels/MpiCommunicator.h"
#include "runtime/channels/TcpCommunicator.h"
#include "runtime/checkpoint/ModelState.h"
#include "runtime/device/DeviceRegistry.h"
#include "runtime/embed/EmbeddedStepLoader.h"
#include "runtime/exec/CollectiveWatchdog.h"
#include "runtime/exec/Executor.h"
#include "runtime/io/FaultInjection.h"
#include "runtime/io/Npy.h"
#include "runtime/plan/PlanDump.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/plan/PlanCheck.h"
#include "runtime/train/TrainLog.h"
#include "tools/fsdp-run/Driver.h"
#include "tools/fsdp-run/ProfileReport.h"
#include "tools/fsdp-run/StepSession.h"
#include "tools/fsdp-run/StopSignals.h"
#include "tools/fsdp-run/Train.h"
#include "tools/fsdp-run/Watchdog.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

// OpenBLAS's thread count (cblas.h of OpenBLAS; the CPU backend links it).
extern "C" void openblas_set_num_threads(int numThreads);

namespace fsdp::run {

using namespace fsdp::rt;

namespace {
std::string &programNameStorage() {
  static std::string name = "fsdp-run";
  return name;
}
} // namespace

const std::string &programName() { return programNameStorage(); }

namespace {
// Where fail() puts its message instead of stderr on this thread, while a
// StepSession parses its options (the C API returns errors, not prints).
thread_local std::string *failureSink = nullptr;
} // namespace

int fail(const std::string &message) {
  if (failureSink) {
    *failureSink = message;
    return 1;
  }
  // One write per line: ranks started by mpirun share stderr, and separate
  // writes of prefix and message would interleave between processes.
  std::cerr << (programName() + ": error: " + message + "\n");
  return 1;
}

Status writeOutputs(const std::string &dir, const Executor &executor) {
  mkdir(dir.c_str(), 0755);
  for (const std::string &name : executor.outputNames()) {
    // The names come from the plan, which is not trusted: one with a '/'
    // ("../x", "/etc/x") would put its file outside DIR.
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
      return Status::error("--outputs=" + dir + ": output name '" + name +
                           "' is not a plain file name; refusing to write outside the directory");
    HostTensor value;
    if (Status s = executor.getOutput(name, value); !s)
      return s;
    if (Status s = writeNpy(dir + "/" + name + ".npy", value.ref()); !s)
      return s;
  }
  return Status::ok();
}

namespace {

const char *kUsage =
    "usage: fsdp-run PLAN [--input=NAME=FILE.npy ...] [--data=FILE] [--steps=K]\n"
    "                [--max-steps=M] [--lr=X] [--lr-schedule=S] [--metrics=FILE.jsonl]\n"
    "                [--log-every=N]\n"
    "                [--plot=FILE.html]\n"
    "                [--save-weights=FILE.safetensors] [--outputs=DIR] [--weights=FILE]\n"
    "                [--save=DIR [--save-every=K] [--keep=N] [--save-format=sharded|full]]\n"
    "                [--resume=DIR]\n"
    "                [--eval-data=FILE | --eval-input=NAME=FILE.npy ...]\n"
    "                [--eval-every=K] [--eval-batches=M]\n"
    "                [--world-size=N] [--collective-timeout=SECONDS]\n"
    "                [--device=NAME] [--tf32] [--cuda-graphs=on|off]\n"
    "                [--time] [--profile] [--dump]\n"
    "  --input=NAME=FILE.npy  value of graph input NAME. Forward plans: the exact tensor\n"
    "                         (dtype and shape must match). Training plans: S samples\n"
    "                         stacked on dimension 0; step s takes rows (s*B + j) mod S\n"
    "  --data=FILE            training plans with two integer [b, T] inputs: a token\n"
    "                         file (.npy of integer ids or raw uint16 .bin); sample j\n"
    "                         of step s starts at token ((s*B + j)*T) mod (n - T - 1),\n"
    "                         the second input is the first shifted by one token\n"
    "  --steps=K              training: the step to reach (default 1; a --resume run\n"
    "                         continues from its checkpoint's step); forward: run the\n"
    "                         plan K times (for timing)\n"
    "  --max-steps=M          training: the length of the whole run, which the\n"
    "                         learning-rate schedule spans (default: --steps; M >= K).\n"
    "                         A chain of jobs, each --resume'd from the last one's\n"
    "                         --save, gives every job the same M and its own --steps,\n"
    "                         and gets the rates of one uninterrupted run\n"
    "  --lr=X                 base learning rate (default: the plan's compiled --lr)\n"
    "  --lr-schedule=S        over M steps, step t = 1..M, warmup base*t/W for t <= W:\n"
    "                         constant[:W] (default constant), cosine:W[:MIN_LR],\n"
    "                         linear:W[:MIN_LR] (linear decay to MIN_LR on step M),\n"
    "                         wsd:W:DECAY[:MIN_LR] (warmup, constant, then linear\n"
    "                         decay to MIN_LR over the last DECAY steps); MIN_LR\n"
    "                         defaults to 0 and must not exceed the base rate\n"
    "  --metrics=FILE.jsonl   one JSON line per step: step, loss, lr, samples_per_s,\n"
    "                         tokens_per_s (--data), step_time_s, peak_bytes (the\n"
    "                         plan's), device_context_bytes (cuda: GPU memory in use\n"
    "                         beyond the plan's), checkpoint_s, checkpoint_bytes\n"
    "                         after a save, and val_loss, eval_time_s after an\n"
    "                         evaluation (--eval-data)\n"
    "  --plot=FILE.html       rank 0 draws the run's metrics (loss and val_loss, learning\n"
    "                         rate, grad norm, tokens/s, memory, loss scale: those the\n"
    "                         run logs) over steps as a self-contained page (inline\n"
    "                         SVG, no script), rewritten on each printed step, each\n"
    "                         evaluation and after the last step; fsdp-plot draws\n"
    "                         --metrics files the same way\n"
    "  --log-every=N          without a terminal, print every N-th step (default:\n"
    "                         every step up to 50 steps, else about 50 lines)\n"
    "  --save-weights=FILE    after the last step, write the parameters as safetensors\n"
    "  --save=DIR             write a sharded checkpoint (every rank's state) to\n"
    "                         DIR/step-N after the last step, and every K steps with\n"
    "                         --save-every=K; --keep=N keeps the newest N;\n"
    "                         --save-format=full writes one consolidated file instead\n"
    "                         (parameters and optimizer state under the model's names)\n"
    "  --resume=DIR           continue from the newest committed checkpoint in DIR (or\n"
    "                         from DIR itself, one step-N directory): --steps is still\n"
    "                         the step to reach; either format loads into any plan of\n"
    "                         the model (with --steps at its step and --save:\n"
    "                         resharding); the plan's initial weights are not read\n"
    "  --eval-data=FILE       validation: a token file (as --data) evaluated with the\n"
    "                         training plan's forward pass (the same parameter shards)\n"
    "                         after every --eval-every=K steps and after the last one\n"
    "                         (default: the last one only); val_loss, the mean loss\n"
    "                         over --eval-batches=M batches (default: every whole batch\n"
    "                         the file holds), goes to the console and --metrics.\n"
    "                         Evaluation batch e reads samples e*B + j, j < B, the same\n"
    "                         M batches each time; ids must lie in the vocabulary\n"
    "  --eval-input=NAME=FILE.npy  validation samples of input NAME (as --input), one\n"
    "                         per input, instead of --eval-data\n"
    "  --outputs=DIR          write each graph output to DIR/<name>.npy (after the\n"
    "                         last step)\n"
    "  --weights=FILE         parameters from this safetensors file instead of the\n"
    "                         plan's own\n"
    "  --world-size=N         must equal the plan's world size (a plan compiled for N\n"
    "                         ranks runs them in-process, or one per process under\n"
    "                         mpirun -np N or torchrun --nproc-per-node=N)\n"
    "  --collective-timeout=SECONDS  runs of several ranks: a collective that has not\n"
    "                         finished SECONDS after it started (default 600) stops\n"
    "                         the run on every rank with exit code 1, printing\n"
    "                         'step N: KIND of unit U (BYTES, group G) did not complete\n"
    "                         in S s on rank R' and each rank's last 64 collectives\n"
    "                         (issued, started, finished); so does a start-up\n"
    "                         agreement that hangs. A one-rank plan has no\n"
    "                         collectives to watch. (Tests only: with in-process ranks,\n"
    "                         FSDP_TEST_STALL_COLLECTIVE=R:N makes rank R block in\n"
    "                         its N-th collective call until the group is aborted.)\n"
    "  --device=NAME          the device each rank runs on: cpu, cuda (a GPU) or\n"
    "                         cuda-simt (the CUDA kernels emulated on the CPU, for\n"
    "                         tests; slow); default: cuda when this build has it and\n"
    "                         a GPU is present, else cpu. A rank's device is its\n"
    "                         index among the ranks on its machine: in-process ranks\n"
    "                         take GPUs 0..N-1. The CUDA device has not run on a GPU\n"
    "                         yet\n"
    "  --tf32                 cuda: TF32 tensor-core math for f32 GEMMs (inputs\n"
    "                         rounded to a 10-bit mantissa; off by default)\n"
    "  --cuda-graphs=on|off   cuda: replay each step as one CUDA graph, captured on the\n"
    "                         second step (default on; --profile steps and plans with\n"
    "                         a host optimizer stream, --offload=cpu, run eagerly)\n"
    "  --time                 print the mean time per run\n"
    "  --profile              print the time spent in each kernel, then the overlap of\n"
    "                         the streams: busy and waiting time, the step, exposed\n"
    "                         communication (the compute stream held up by the others),\n"
    "                         beside the cost model's prediction the plan carries\n"
    "  --dump                 print the plan as text and exit\n"
    "Preemption: SIGTERM or SIGINT during training finishes the current step, every\n"
    "rank stops after the same step, --save writes a checkpoint of it, and the run\n"
    "exits 0 with 'stopped by SIGTERM after step N of K; checkpoint DIR/step-N ...'\n"
    "(--save-weights and --outputs are not written); a second signal exits at once\n"
    "with 130, leaving only committed checkpoints. Slurm: #SBATCH --signal=TERM@60\n"
    "signals the ranks 60 s before the time limit. Under mpirun signal the ranks:\n"
    "mpirun's own SIGTERM ends the job.\n"
    "Several processes: mpirun -np N fsdp-run PLAN ... (srun --mpi=pmix likewise), or\n"
    "torchrun --no-python --nproc-per-node=N fsdp-run PLAN ...: torchrun's ranks meet\n"
    "over TCP at MASTER_ADDR, port MASTER_PORT + 1 under torchrun's agent (which holds\n"
    "MASTER_PORT; the first free of + 1 .. + 8), else MASTER_PORT, or\n"
    "FSDP_RENDEZVOUS_PORT; they wait for each other FSDP_RENDEZVOUS_TIMEOUT seconds\n"
    "(default 120). LOCAL_RANK selects the GPU.\n";

/// The usage text: fsdp-run's, or for a compiled step binary the same
/// with the binary's name for "fsdp-run PLAN" and, after it, what the step
/// was compiled from.
std::string usage(const FsdpEmbeddedStep *step) {
  std::string text = kUsage;
  if (!step)
    return text;
  const std::string from = "fsdp-run PLAN";
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at))
    text.replace(at, from.size(), programName());
  return text + "\n" + describeEmbeddedStep(*step);
}

bool parseInt(const std::string &text, int64_t &value) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0)
    return false;
  value = v;
  return true;
}

bool parseDouble(const std::string &text, double &value) {
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(v))
    return false;
  value = v;
  return true;
}

} // namespace

int parseRunArgs(int argc, char **argv, RunOptions &opts, bool &exitNow) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    size_t eq = arg.find('=');
    std::string flag = arg.substr(0, eq), value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (arg == "-h" || arg == "--help") {
      std::cout << usage(opts.embedded);
      exitNow = true;
      return 0;
    }
    // Flags whose value is a path: required and non-empty.
    std::string *path = flag == "--outputs"        ? &opts.outputsDir
                        : flag == "--weights"      ? &opts.weightsPath
                        : flag == "--data"         ? &opts.dataPath
                        : flag == "--metrics"      ? &opts.metricsPath
                        : flag == "--plot"         ? &opts.plotPath
                        : flag == "--save-weights" ? &opts.saveWeightsPath
                        : flag == "--save"         ? &opts.saveDir
                        : flag == "--resume"       ? &opts.resumePath
                        : flag == "--eval-data"    ? &opts.evalDataPath
                                                   : nullptr;
    if (path) {
      if (value.empty())
        return fail(flag + " needs a file name (" + flag + "=FILE)");
      *path = value;
    } else if (flag == "--input" || flag == "--eval-input") {
      size_t split = value.find('=');
      if (split == std::string::npos || split == 0 || split + 1 == value.size())
        return fail(flag + " needs NAME=FILE.npy, got '" + value + "'");
      auto &inputs = flag == "--input" ? opts.inputs : opts.evalInputs;
      if (!inputs.emplace(value.substr(0, split), value.substr(split + 1)).second)
        return fail(flag + " " + value.substr(0, split) + " given twice");
    } else if (flag == "--steps" || flag == "--max-steps" || flag == "--world-size" || flag == "--log-every" ||
               flag == "--save-every" || flag == "--keep" || flag == "--eval-every" ||
               flag == "--eval-batches") {
      int64_t n;
      if (!parseInt(value, n) || n < 1)
        return fail(flag + ": invalid value '" + value + "'; must be an integer >= 1");
      if (flag == "--steps")
        opts.steps = n;
      else if (flag == "--max-steps")
        opts.maxSteps = n;
      else if (flag == "--world-size")
        opts.worldSize = n;
      else if (flag == "--save-every")
        opts.saveEvery = n;
      else if (flag == "--keep")
        opts.keep = n;
      else if (flag == "--eval-every")
        opts.evalEvery = n;
      else if (flag == "--eval-batches")
        opts.evalBatches = n;
      else
        opts.logEvery = n;
    } else if (flag == "--collective-timeout") {
      double seconds;
      if (!parseDouble(value, seconds) || seconds <= 0)
        return fail("--collective-timeout: invalid value '" + value +
                    "'; must be a number of seconds > 0");
      opts.collectiveTimeout = seconds;
    } else if (flag == "--device") {
      if (Status s = checkDeviceName(value); !s)
        return fail("--device=" + value + ": " + s.message());
      opts.device = value;
    } else if (flag == "--cuda-graphs") {
      if (value != "on" && value != "off")
        return fail("--cuda-graphs: invalid value '" + value + "'; valid: on, off");
      opts.cudaGraphs = value == "on";
    } else if (arg == "--tf32") {
      opts.tf32 = true;
    } else if (flag == "--save-format") {
      if (value != "sharded" && value != "full")
        return fail("--save-format: invalid value '" + value + "'; valid: sharded, full");
      opts.saveFormat = value == "full" ? CheckpointFormat::Full : CheckpointFormat::Sharded;
    } else if (flag == "--lr") {
      double lr;
      if (!parseDouble(value, lr) || lr < 0)
        return fail("--lr: invalid value '" + value + "'; must be a finite number >= 0");
      opts.lr = lr;
    } else if (flag == "--lr-schedule") {
      if (Status s = LrSchedule::parse(value, opts.lrSchedule); !s)
        return fail(s.message());
      opts.lrScheduleText = value;
    } else if (arg == "--dump") {
      opts.dump = true;
    } else if (arg == "--time") {
      opts.timing = true;
    } else if (arg == "--profile") {
      opts.profile = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return fail("unknown option '" + arg + "' (see --help)");
    } else if (opts.embedded) {
      return fail("'" + arg + "': this binary runs the plan compiled into it and takes no "
                  "plan argument (see --help)");
    } else if (opts.planPath.empty()) {
      opts.planPath = arg;
    } else {
      return fail("more than one plan given ('" + opts.planPath + "' and '" + arg + "')");
    }
  }
  if (opts.planPath.empty() && !opts.embedded)
    return fail("no plan given (usage: fsdp-run PLAN ...; see --help)");
  // The default device needs a look for a GPU (cheap: no context).
  const bool deviceGiven = !opts.device.empty();
  if (!deviceGiven)
    opts.device = defaultDeviceName();
  // Flags of the CUDA device are refused elsewhere rather than ignored.
  const std::string onDevice =
      "the device is '" + opts.device + "'" +
      (deviceGiven ? "" : ", as no GPU was found; --device=cuda asks for one");
  if (opts.tf32 && opts.device != "cuda")
    return fail("--tf32: only the cuda device has TF32 math (" + onDevice + ")");
  if (opts.cudaGraphs && opts.device != "cuda")
    return fail("--cuda-graphs: only the cuda device replays steps as CUDA graphs (" + onDevice +
                ")");
  if ((opts.saveEvery || opts.keep || opts.saveFormat) && opts.saveDir.empty())
    return fail(std::string(opts.saveEvery ? "--save-every" : opts.keep ? "--keep" : "--save-format") +
                " needs --save=DIR (where checkpoints go)");
  if ((opts.evalEvery || opts.evalBatches) && opts.evalDataPath.empty() && opts.evalInputs.empty())
    return fail(std::string(opts.evalEvery ? "--eval-every" : "--eval-batches") +
                " needs evaluation data (--eval-data=FILE or --eval-input=NAME=FILE.npy)");
  if (!opts.evalDataPath.empty() && !opts.evalInputs.empty())
    return fail("--eval-input=" + opts.evalInputs.begin()->first + ": the evaluation inputs "
                "come from --eval-data=" + opts.evalDataPath + " (give one of the two)");
  if (!opts.weightsPath.empty() && !opts.resumePath.empty())
    return fail("--weights and --resume both give the parameters (a checkpoint holds them); "
                "give one");
  if (opts.maxSteps && opts.steps > *opts.maxSteps)
    return fail(cat("--steps=", opts.steps, " is past --max-steps=", *opts.maxSteps,
                    " (--steps is the step this run stops at, --max-steps the whole run's "
                    "length, which the schedule spans)"));
  return 0;
}

namespace {

/// The first training-only flag given, or "".
std::string trainingFlagGiven(const RunOptions &opts) {
  if (!opts.dataPath.empty())
    return "--data";
  if (!opts.metricsPath.empty())
    return "--metrics";
  if (!opts.plotPath.empty())
    return "--plot";
  if (!opts.saveWeightsPath.empty())
    return "--save-weights";
  if (!opts.saveDir.empty())
    return "--save";
  if (!opts.resumePath.empty())
    return "--resume";
  if (opts.lrScheduleText)
    return "--lr-schedule";
  if (opts.maxSteps)
    return "--max-steps";
  if (opts.lr)
    return "--lr";
  if (opts.logEvery)
    return "--log-every";
  if (!opts.evalDataPath.empty())
    return "--eval-data";
  if (!opts.evalInputs.empty())
    return "--eval-input";
  return "";
}

/// A forward plan: inputs are the exact tensors (the same on every rank);
/// --steps repeats the run.
Status runForward(const RunOptions &opts, Executor &executor) {
  for (const std::string &name : executor.inputNames())
    if (!opts.inputs.count(name))
      return Status::error("missing --input=" + name +
                           "=FILE.npy (the plan's inputs are bound by name)");
  for (const auto &[name, path] : opts.inputs) {
    HostTensor value;
    if (Status s = readNpy(path, value); !s)
      return s;
    if (Status s = executor.setInput(name, value.ref()); !s)
      return Status::error(path + ": " + s.message());
  }
  StepProfile profile;
  auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < opts.steps; ++step)
    if (Status s = executor.run(opts.profile ? &profile : nullptr); !s)
      return s;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // --profile: collective (every rank), rank 0 prints.
  if (opts.profile)
    if (Status s = reportProfile(executor, profile, opts.device); !s)
      return s;
  if (executor.rank() != 0)
    return Status::ok();
  if (opts.timing)
    std::cout << "time per run: " << seconds / opts.steps * 1e3 << " ms (" << opts.steps
              << " runs, " << executor.allocatedBytes() << " bytes planned)\n";
  if (!opts.outputsDir.empty())
    return writeOutputs(opts.outputsDir, executor);
  return Status::ok();
}

/// The start-up agreement of a multi-rank run: every rank holds the same
/// plan, compiled for as many ranks as there are.
Status checkRanksAgree(const RunOptions &opts, const LoadedPlan &plan, Communicator &comm) {
  if (Status s = comm.checkSameOnAllRanks(plan.hash(), "the plan (content hash)"); !s)
    return Status::error(s.message() + "; every rank must run the same plan file");
  // The hash covers the whole plan, world size included: ranks that agree
  // on it agree on the world size, which must then be the number started.
  uint32_t planWorld = plan.plan().world_size();
  if (comm.size() != static_cast<int>(planWorld))
    return Status::error(cat(opts.planPath, ": compiled for world size ", planWorld, ", but ",
                             comm.size(), " ranks were started (mpirun -np ", planWorld,
                             " or torchrun --nproc-per-node=", planWorld,
                             ", or recompile with fsdp-opt --world-size=", comm.size(), ")"));
  return Status::ok();
}

/// How a failing rank of a multi-rank run reports, before it aborts the
/// group (an MPI abort ends the process): in-process ranks record the
/// first failure for the driver to print once; MPI ranks print their own.
struct FailureReport {
  std::mutex mutex;
  bool print = false; // MPI: print at once
  int rank = -1;      // in-process: the first rank that failed
  std::string message;
  // The collective watchdog: each rank's flight recorder (in-process: one
  // per rank; MPI: this rank's), and whether a collective timed out.
  std::vector<std::unique_ptr<FlightRecorder>> recorders;
  bool timedOut = false;

  void report(int failedRank, const std::string &what) {
    if (print) {
      fail(cat("rank ", failedRank, ": ", what));
      return;
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (rank < 0) {
      rank = failedRank;
      message = cat("rank ", failedRank, ": ", what);
    }
  }

  FlightRecorder &recorderOf(int r) { return *recorders[print ? 0 : r]; }

  /// A timeout on rank `r` (its watchdog's thread, before the abort): MPI
  /// prints the message and the recorder now, since the abort ends the
  /// process; in-process the driver prints them once every rank is back.
  void timeout(int r, const std::string &what) {
    if (print) {
      std::cerr << (programName() + ": error: " + what + "\n" + recorderOf(r).format(r));
      std::cerr.flush();
      recorderPrinted();
      return;
    }
    std::lock_guard<std::mutex> lock(mutex);
    timedOut = true;
    if (rank < 0) {
      rank = r;
      message = what; // names its rank already
    }
  }
};

/// Refuses a plan that cannot fit before any of it is allocated: its device
/// bytes against what the device has free (devices whose memory is the
/// host's report none and are not checked).
Status checkDeviceMemory(const RunOptions &opts, const LoadedPlan &plan, Device &device,
                         int ordinal) {
  DeviceMemoryInfo memory;
  if (!device.memoryInfo(memory))
    return Status::ok();
  const plan::Plan &p = plan.plan();
  const uint64_t constants = p.constant_data() ? p.constant_data()->size() : 0;
  const uint64_t needed = p.persistent_bytes() + p.arena_bytes() + constants;
  if (needed <= memory.freeBytes)
    return Status::ok();
  return Status::error(cat(opts.device, " device ", ordinal, ": ", opts.planPath, " needs ",
                           formatBytes(needed), " (", needed, " bytes: persistent ",
                           p.persistent_bytes(), " + arena ", p.arena_bytes(), " + constants ",
                           constants, ") of device memory, but only ",
                           formatBytes(memory.freeBytes), " (", memory.freeBytes, " bytes) of its ",
                           formatBytes(memory.totalBytes), " are available"));
}

/// One rank's set-up, which startRank makes: the watchdog outlives the
/// executor, which withdraws from it when done (members are destroyed in
/// reverse order); until the executor watches, a timeout aborts the world.
struct RankRun {
  std::unique_ptr<CollectiveWatchdog> watchdog;
  std::unique_ptr<Device> device;
  std::unique_ptr<Executor> executor;
  /// A failed start-up agreement, which every rank reports alike and which
  /// leaves nobody waiting: no abort.
  bool agreementFailed = false;

  /// Destroys the executor, then its device, then the watchdog.
  void release() {
    executor.reset();
    device.reset();
    watchdog.reset();
  }
};

/// Sets up one rank on its own device (--device, the `ordinal`-th of its
/// kind) and executor, with the plan's weights (or nothing, to resume).
/// `comm` is null for a world-size-1 plan.
Status startRank(const RunOptions &opts, const LoadedPlan &plan, Communicator *comm,
                 int ordinal, FailureReport *failures, RankRun &run) {
  bool multiRank = comm && comm->size() > 1;
  std::unique_ptr<CollectiveWatchdog> &watchdog = run.watchdog;
  if (multiRank) {
    const int rank = comm->rank();
    watchdog = std::make_unique<CollectiveWatchdog>(
        opts.collectiveTimeout, rank, failures->recorderOf(rank),
        [failures, rank](const std::string &message) { failures->timeout(rank, message); },
        [comm](const std::string &message) { comm->abort(message); });
    auto call = watchdog->hostCall("plan agreement (allGather of the plan hash)", "world", 8);
    if (Status s = checkRanksAgree(opts, plan, *comm); !s) {
      failures->report(comm->rank(), s.message());
      run.agreementFailed = true;
      return s;
    }
  }
  std::unique_ptr<Device> &device = run.device;
  DeviceOptions deviceOptions;
  deviceOptions.ordinal = ordinal;
  deviceOptions.tf32 = opts.tf32;
  std::unique_ptr<Executor> &executor = run.executor;
  Status s = createDevice(opts.device, deviceOptions, device);
  if (s)
    s = checkDeviceMemory(opts, plan, *device, ordinal);
  if (s) {
    // Hybrid plans split the world here: collective, so watched.
    std::optional<CollectiveWatchdog::HostCall> call;
    if (watchdog)
      call.emplace(watchdog->hostCall("group set-up (Executor::create)", "world",
                                      CollectiveRecord::kUnknownBytes));
    s = Executor::create(plan, *device, comm, executor);
  }
  if (s && watchdog)
    s = executor->watch(*watchdog);
  if (s && opts.device == "cuda") {
    bool graphs = opts.cudaGraphs.value_or(true);
    // --offload=cpu's optimizer runs on a host thread, outside any graph.
    if (graphs && executor->hasHostStream()) {
      if (executor->rank() == 0)
        std::cerr << programName() << ": note: " << opts.planPath
                  << " runs its optimizer on the host stream (--offload=cpu), which a CUDA "
                     "graph cannot capture: steps run eagerly\n";
      graphs = false;
    }
    s = executor->useGraphs(graphs);
  }
  // A resumed run takes every parameter from its checkpoint; a compiled
  // step's own weights are embedded or beside the binary.
  if (s && opts.resumePath.empty())
    s = opts.embedded && opts.weightsPath.empty()
            ? loadEmbeddedWeights(*opts.embedded, *executor)
            : ModelState(*executor).loadWeights(opts.weightsPath);
  return s;
}

/// With several ranks, a rank's failure is reported and then aborts the
/// group (except a failed start-up agreement); returns `s`.
Status rankFailed(const Status &s, Communicator *comm, FailureReport *failures, RankRun &run) {
  if (s || !comm || comm->size() <= 1 || run.agreementFailed)
    return s;
  failures->report(comm->rank(), s.message());
  if (run.executor)
    run.executor->abort(s.message());
  else
    comm->abort(s.message());
  return s;
}

/// One rank's whole run (startRank, then the plan's run).
Status runRank(const RunOptions &opts, const LoadedPlan &plan, Communicator *comm,
               int ordinal, FailureReport *failures) {
  RankRun run;
  Status s = startRank(opts, plan, comm, ordinal, failures, run);
  if (s)
    s = plan.isTraining() ? runTraining(opts, *run.executor, run.watchdog.get())
                          : runForward(opts, *run.executor);
  return rankFailed(s, comm, failures, run);
}

/// OpenBLAS threads for `ranks` ranks on this machine: the cores shared
/// out, unless the user chose. In-process ranks share one pool; mpirun's
/// ranks on a node share its cores the same way, so a rank computes with
/// the same thread count (and OpenBLAS's blocking, the same bits) either way.
void shareBlasThreads(int ranks) {
  if (std::getenv("OPENBLAS_NUM_THREADS") || std::getenv("OMP_NUM_THREADS"))
    return;
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  openblas_set_num_threads(std::max(1, cores / ranks));
}

/// N ranks as threads of this process, one in-process group.
/// The in-process group of `ranks` ranks (one GPU per rank: without any
/// GPU, each rank's device says why), its BLAS threads shared out.
Status createInProcessRanks(const RunOptions &opts, int ranks,
                            std::vector<std::unique_ptr<Communicator>> &comms,
                            FailureReport &failures) {
  if (opts.device == "cuda")
    if (int gpus = cudaDeviceCount(); gpus > 0 && ranks > gpus)
      return Status::error(cat(opts.planPath, " runs ", ranks,
                               " ranks in this process, one GPU each (GPUs 0..", ranks - 1,
                               "), but this machine has ", gpus, " GPU", gpus == 1 ? "" : "s",
                               "; run them as processes on several machines (mpirun), or "
                               "compile for ",
                               gpus, " ranks (fsdp-opt --world-size=", gpus, ")"));
  FSDP_RUN_RETURN_IF_FAILED(comm::createInProcessGroup(ranks, comms));
  FSDP_RUN_RETURN_IF_FAILED(applyStallTestHook(comms));
  shareBlasThreads(ranks);
  for (int r = 0; r < ranks; ++r)
    failures.recorders.push_back(std::make_unique<FlightRecorder>());
  return Status::ok();
}

int runInProcess(const RunOptions &opts, const LoadedPlan &plan, int ranks) {
  std::vector<std::unique_ptr<Communicator>> comms;
  FailureReport failures;
  if (Status s = createInProcessRanks(opts, ranks, comms, failures); !s)
    return fail(s.message());
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] { (void)runRank(opts, plan, comms[r].get(), r, &failures); });
  for (std::thread &t : threads)
    t.join();
  if (failures.rank < 0)
    return 0;
  fail(failures.message);
  // After a timeout, every rank's last collectives, one block per rank.
  if (failures.timedOut)
    for (int r = 0; r < ranks; ++r)
      std::cerr << failures.recorderOf(r).format(r);
  return 1;
}

/// This process as `world`'s rank of a multi-process job, on the
/// `ordinal`-th device of its machine; every rank prints its own failure.
int runWorldRank(const RunOptions &opts, const LoadedPlan &plan, Communicator &world,
                 int ordinal) {
  FailureReport failures;
  failures.print = true;
  failures.recorders.push_back(std::make_unique<FlightRecorder>());
  reportTerminationOf(world.rank(), failures.recorders[0].get());
  // Unregistered before `failures` is destroyed: a SIGTERM may come while
  // MPI finalizes (mpirun ending the job after another rank failed).
  struct Unregister {
    int rank;
    ~Unregister() { reportTerminationOf(rank, nullptr); }
  } unregister{world.rank()};
  if (Status s = runRank(opts, plan, &world, ordinal, &failures); !s) {
    if (world.size() == 1)
      return fail(s.message());
    return 1; // reported by runRank
  }
  return 0;
}

/// MPI's world and this rank's device ordinal (its index on its node).
Status createMpiRank(std::unique_ptr<Communicator> &world, int &ordinal) {
  // Open MPI names the ranks started on this node.
  if (const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"); local && std::atoi(local) > 0)
    shareBlasThreads(std::atoi(local));
  FSDP_RUN_RETURN_IF_FAILED(comm::createMpiWorld(world));
  const char *localRank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  ordinal = localRank ? std::max(0, std::atoi(localRank)) : 0;
  return Status::ok();
}

/// torchrun's world (over TCP) and this rank's device ordinal.
Status createTcpRank(std::unique_ptr<Communicator> &world, int &ordinal) {
  comm::TcpWorldOptions tcp;
  if (Status s = comm::tcpWorldOptionsFromEnv(tcp); !s)
    return Status::error("torchrun's environment: " + s.message());
  if (tcp.localSize > 0)
    shareBlasThreads(tcp.localSize);
  if (Status s = comm::createTcpWorld(tcp, world); !s)
    return Status::error(cat("rank ", tcp.rank, ": ", s.message()));
  ordinal = tcp.localRank;
  return Status::ok();
}

/// This process as one rank of a launcher's job: mpirun's (MPI) or
/// torchrun's (TCP, or any launcher that sets torchrun's environment);
/// `createWorld` forms the world and gives this rank's device ordinal.
using CreateWorld = Status (*)(std::unique_ptr<Communicator> &world, int &ordinal);
int runLaunchedRank(const RunOptions &opts, const LoadedPlan &plan, CreateWorld createWorld) {
  // Before MPI's threads exist: mpirun's SIGTERM prints this rank's
  // recorder (Watchdog.h); any other stops training after the step.
  takeSignals({opts.stopOnSignals, /*launched=*/true});
  std::unique_ptr<Communicator> world;
  int ordinal = 0;
  if (Status s = createWorld(world, ordinal); !s)
    return fail(s.message());
  return runWorldRank(opts, plan, *world, ordinal);
}

/// The plan the options name (a file, or the compiled step's), with a
/// step's generated kernels handed to the backends.
Status loadRunPlan(const RunOptions &opts, LoadedPlan &plan) {
  Status loaded = opts.embedded ? loadEmbeddedPlan(*opts.embedded, opts.planPath, plan)
                                : loadPlan(opts.planPath, plan);
  if (loaded && opts.embedded)
    loaded = registerEmbeddedKernels(*opts.embedded);
  return loaded;
}

/// The checks of the options against the plan, before any rank starts.
Status checkOptionsAgainstPlan(const RunOptions &opts, const LoadedPlan &plan) {
  uint32_t planWorld = plan.plan().world_size();
  if (opts.worldSize && *opts.worldSize != planWorld)
    return Status::error(cat("--world-size=", *opts.worldSize, ": ", opts.planPath,
                             " was compiled for world size ", planWorld,
                             " (recompile with fsdp-opt --world-size=", *opts.worldSize, ")"));
  if (!plan.isTraining()) {
    if (std::string flag = trainingFlagGiven(opts); !flag.empty())
      return Status::error(flag + ": only training plans take it, and " + opts.planPath +
                           " is a forward plan (compile without --mode=forward)");
    return Status::ok();
  }
  return opts.lrSchedule.check(opts.lrScheduleText.value_or("constant"),
                               opts.lr.value_or(plan.plan().base_lr()), opts.scheduleSteps());
}

int run(RunOptions &opts) {
  LoadedPlan plan;
  if (Status s = loadRunPlan(opts, plan); !s)
    return fail(s.message());
  if (opts.dump) {
    std::cout << dumpPlan(plan);
    return 0;
  }
  uint32_t planWorld = plan.plan().world_size();
  if (Status s = checkOptionsAgainstPlan(opts, plan); !s)
    return fail(s.message());
  // Preemption (StopSignals.h): fsdp-run's training runs stop after the
  // step on SIGTERM or SIGINT; a program embedding a step keeps its own
  // signals.
  opts.stopOnSignals = plan.isTraining();
  const bool launched = comm::launchedUnderMpi() || comm::launchedUnderTorchrun();
  if (opts.stopOnSignals && !launched)
    takeSignals({/*stops=*/true, /*launched=*/false});
  if (comm::launchedUnderMpi())
    return runLaunchedRank(opts, plan, createMpiRank);
  if (comm::launchedUnderTorchrun())
    return runLaunchedRank(opts, plan, createTcpRank);
  if (planWorld == 1) {
    if (Status s = runRank(opts, plan, nullptr, 0, nullptr); !s)
      return fail(s.message());
    return 0;
  }
  return runInProcess(opts, plan, static_cast<int>(planWorld));
}

} // namespace

int runDriver(int argc, char **argv, const FsdpEmbeddedStep *step) {
  RunOptions opts;
  prepareOptions(argc, argv, step, opts);
  if (Status s = checkFaultInjectionEnv(); !s) // a mistyped rule must not test nothing
    return fail(s.message());
  bool exitNow = false;
  if (int code = parseRunArgs(argc, argv, opts, exitNow); code != 0 || exitNow)
    return code;
  return run(opts);
}

void prepareOptions(int argc, char **argv, const FsdpEmbeddedStep *step, RunOptions &opts) {
  if (!step)
    return;
  // A compiled step speaks under its own name, and is its own plan: the
  // executable's path names the plan in messages, and its directory is
  // where a weights file beside it is looked for.
  std::string invoked = argc > 0 && argv[0] ? argv[0] : "step";
  size_t slash = invoked.find_last_of('/');
  programNameStorage() = slash == std::string::npos ? invoked : invoked.substr(slash + 1);
  opts.embedded = step;
  opts.planPath = executablePath(invoked);
  setEmbeddedStep(step);
}

// --- StepSession (StepSession.h) ----------------------------------------------

namespace {

/// One thread per in-process rank for a session's life, running the jobs it
/// is given in turn, so a rank's device is always used from its thread.
class RankThreads {
public:
  explicit RankThreads(int ranks) {
    for (int r = 0; r < ranks; ++r)
      threads_.emplace_back([this, r] { loop(r); });
  }
  ~RankThreads() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : threads_)
      t.join();
  }
  /// Runs job(r) on every rank's thread; returns when all are done.
  void onEveryRank(const std::function<void(int)> &job) {
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = &job;
    pending_ = threads_.size();
    ++generation_;
    wake_.notify_all();
    done_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
  }

private:
  void loop(int r) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_)
        return;
      seen = generation_;
      const std::function<void(int)> *job = job_;
      lock.unlock();
      (*job)(r);
      lock.lock();
      if (--pending_ == 0)
        done_.notify_all();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)> *job_ = nullptr;
  size_t pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

} // namespace

// Declared in destruction order: the threads stop first, then each rank's
// training run before its executor, the communicators and recorders last.
struct StepSession::State {
  RunOptions opts;
  LoadedPlan plan;
  std::vector<std::unique_ptr<Communicator>> comms; // empty for one rank alone
  std::vector<int> ordinals;
  FailureReport failures;
  std::vector<RankRun> ranks;
  std::vector<std::unique_ptr<TrainingRun>> training;
  std::unique_ptr<RankThreads> threads; // in-process ranks of a multi-rank plan
  std::string failed;                   // why the session stopped, once it has

  Communicator *comm(int r) { return comms.empty() ? nullptr : comms[r].get(); }

  /// Runs `job` as every rank of this process; a failure aborts the group
  /// (rankFailed) and ends the session.
  Status onEveryRank(const std::function<Status(int)> &job) {
    if (!failed.empty())
      return Status::error("the run failed earlier (" + failed + "); finalize it");
    if (!threads) {
      Status s = rankFailed(job(0), comm(0), &failures, ranks[0]);
      if (!s)
        failed = s.message();
      return s;
    }
    threads->onEveryRank(
        [&](int r) { (void)rankFailed(job(r), comm(r), &failures, ranks[r]); });
    if (failures.rank < 0)
      return Status::ok();
    failed = failures.message;
    if (failures.timedOut)
      for (size_t r = 0; r < ranks.size(); ++r)
        std::cerr << failures.recorderOf(static_cast<int>(r)).format(static_cast<int>(r));
    return Status::error(failures.message);
  }
};

StepSession::StepSession(std::unique_ptr<State> state) : state_(std::move(state)) {}

StepSession::~StepSession() {
  // Each rank's executor goes on the thread that used its device.
  if (state_->threads)
    state_->threads->onEveryRank([&](int r) {
      state_->training[r].reset();
      state_->ranks[r].release();
    });
}

Status StepSession::create(const FsdpEmbeddedStep &step, int argc, char **argv,
                           std::unique_ptr<StepSession> &out) {
  auto st = std::make_unique<State>();
  RunOptions &opts = st->opts;
  prepareOptions(argc, argv, &step, opts);
  opts.steps = 0; // must be given: the step the run ends at
  std::string parseError;
  bool exitNow = false;
  failureSink = &parseError;
  int code = parseRunArgs(argc, argv, opts, exitNow);
  failureSink = nullptr;
  if (code != 0)
    return Status::error(parseError);
  if (exitNow)
    return Status::error("--help: the command line is fsdp_step_main's (fsdp_step_init takes "
                         "options to run)");
  if (opts.dump)
    return Status::error("--dump: run it through fsdp_step_main");
  if (opts.steps == 0)
    return Status::error("fsdp_step_init needs --steps=K: the step the run ends at (where "
                         "--save writes its last checkpoint, and the learning-rate schedule's "
                         "end unless --max-steps says otherwise)");
  FSDP_RUN_RETURN_IF_FAILED(loadRunPlan(opts, st->plan));
  FSDP_RUN_RETURN_IF_FAILED(checkOptionsAgainstPlan(opts, st->plan));
  if (!st->plan.isTraining())
    return Status::error(opts.planPath + " is a forward plan: fsdp_step_init trains (run a "
                         "forward plan with fsdp_step_main)");
  const int planWorld = static_cast<int>(st->plan.plan().world_size());
  int ranks = 1;
  if (comm::launchedUnderMpi() || comm::launchedUnderTorchrun()) {
    st->comms.emplace_back();
    st->ordinals.push_back(0);
    FSDP_RUN_RETURN_IF_FAILED(comm::launchedUnderMpi()
                             ? createMpiRank(st->comms[0], st->ordinals[0])
                             : createTcpRank(st->comms[0], st->ordinals[0]));
    st->failures.print = true;
    st->failures.recorders.push_back(std::make_unique<FlightRecorder>());
  } else if (planWorld > 1) {
    ranks = planWorld;
    FSDP_RUN_RETURN_IF_FAILED(createInProcessRanks(opts, ranks, st->comms, st->failures));
    for (int r = 0; r < ranks; ++r)
      st->ordinals.push_back(r);
    st->threads = std::make_unique<RankThreads>(ranks);
  } else {
    st->ordinals.push_back(0);
  }
  st->ranks.resize(ranks);
  st->training.resize(ranks);
  State &state = *st;
  out.reset(new StepSession(std::move(st)));
  Status s = state.onEveryRank([&](int r) -> Status {
    RankRun &rank = state.ranks[r];
    FSDP_RUN_RETURN_IF_FAILED(startRank(state.opts, state.plan, state.comm(r), state.ordinals[r],
                                   &state.failures, rank));
    state.training[r] =
        std::make_unique<TrainingRun>(state.opts, *rank.executor, rank.watchdog.get());
    return state.training[r]->begin();
  });
  if (!s)
    out.reset();
  return s;
}

Status StepSession::run(int64_t steps, double &lastLoss) {
  if (steps < 1)
    return Status::error(cat("steps: invalid value ", steps, "; must be >= 1"));
  const int64_t last = step() + steps;
  // Refused before any rank starts, so the session goes on.
  if (last > state_->opts.steps)
    return Status::error(cat("step ", last, " is past --steps=", state_->opts.steps,
                             " (the step the run ends at)"));
  FSDP_RUN_RETURN_IF_FAILED(
      state_->onEveryRank([&](int r) { return state_->training[r]->runSteps(last); }));
  lastLoss = state_->training[0]->lastLoss();
  return Status::ok();
}

Status StepSession::save(const std::string &dir) {
  if (dir.empty())
    return Status::error("save: no directory given");
  return state_->onEveryRank([&](int r) { return state_->training[r]->save(dir); });
}

Status StepSession::finish() {
  return state_->onEveryRank([&](int r) { return state_->training[r]->finish(); });
}

int64_t StepSession::step() const { return state_->training[0]->nextStep() - 1; }

} // namespace fsdp::run
