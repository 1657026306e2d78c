#include "client/cli.h"

#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/commands/exit_code.h"
#include "client/flags/suggest.h"
#include "common/version.h"

namespace colltest::client {
namespace {

// Kept as text: the value's syntax is checked later, so that a bad value is reported with the
// flag's name and exit code 3 like every other usage error.
void AddOptional(CLI::App* app, const std::string& name, const std::string& type,
                 std::optional<std::string>* target, const std::string& help) {
  app->add_option_function<std::string>(
         name, [target](const std::string& value) { *target = value; }, help)
      ->type_name(type);
}

// --keep-normed, --fp8-format, --fp8-scale and --nvfp4-global-scale, as the commands that take an
// epilogue (run and sweep, tune) name them: `Flags` has members of those names.
template <class Flags>
void AddQuantOutputFlags(CLI::App* app, Flags* f, const std::string& keep_normed_does) {
  app->add_flag(
      "--keep-normed", f->keep_normed,
      "With a quantising epilogue, " + keep_normed_does + " (default: the quantised output alone)");
  AddOptional(app, "--fp8-format", "FORMAT", &f->fp8_format,
              "e4m3fn|e4m3fnuz (default the device's, e4m3fnuz on gfx942 and e4m3fn elsewhere)");
  AddOptional(app, "--fp8-scale", "X", &f->fp8_scale,
              "Static scale of fp8_tensor, above 0 and at most 2^64 (default 1/32)");
  AddOptional(app, "--nvfp4-global-scale", "X", &f->nvfp4_global_scale,
              "Global scale of nvfp4, above 0 and at most 2^64 (default 256)");
}

// nccl-tests' names of the dtypes are accepted too (client/flags/flags.h).
const char* const kDTypeHelp =
    "bf16|fp16|fp32 (default bf16); nccl-tests' names bfloat16, half and float too (nccl-tests "
    "-d)";

void AddOutputFlags(CLI::App* app, Invocation* inv, const std::string& formats) {
  app->add_option("--format", inv->format, formats + " (default table)")->capture_default_str();
  app->add_option("--out", inv->out_path,
                  "Write the output to this file instead of stdout (default stdout)");
}

// Commands that print a run's or a comparison's table.
void AddWideFlag(CLI::App* app, Invocation* inv) {
  app->add_flag("--wide", inv->wide, "Table: every column in full (default: fit 120 columns)");
}

void AddSweepFlags(CLI::App* app, SweepFlags* f) {
  AddOptional(app, "--world", "N", &f->world,
              "Ranks (default: one per selected device, every device of the server without "
              "--devices)");
  AddOptional(app, "--devices", "LIST", &f->devices,
              "Device indices, e.g. 0,1 (default: the server's first --world devices)");
  AddOptional(app, "--m", "LIST", &f->m,
              "Rows (tokens), e.g. 1,8,64 or a range 1:1024:x4 (default 1:1024:x4, i.e. "
              "1,4,16,64,256,1024)");
  AddOptional(app, "--bytes", "RANGE", &f->bytes,
              "Per-rank sizes instead of --m, as nccl-tests: BEGIN:END:xFACTOR, e.g. 8K:128M:x2 "
              "(default: unset, rows from --m)");
  AddOptional(app, "-b,--minbytes", "BYTES", &f->bytes_begin,
              "Smallest per-rank size (nccl-tests -b; default: unset, rows from --m)");
  AddOptional(app, "-e,--maxbytes", "BYTES", &f->bytes_end,
              "Largest per-rank size (nccl-tests -e; default: unset, rows from --m)");
  AddOptional(app, "-f,--stepfactor", "X", &f->bytes_factor,
              "Multiply the size by X from -b to -e (nccl-tests -f, default 2)");
  AddOptional(app, "--hidden,--n", "LIST", &f->n,
              "Hidden sizes, e.g. 4096,7168 (default 7168); --n is the same flag");
  // Each enum's help starts with its values, a|b|c: the completion test reads them from there.
  AddOptional(app, "-d,--dtype", "DTYPE", &f->dtype, kDTypeHelp);
  AddOptional(app, "--variants", "LIST", &f->variants,
              "one_stage|two_kernel|lamport|lamport_tb|nccl|auto|all, comma-separated (default "
              "all, the variants the server's backend offers)");
  AddOptional(app, "--modes", "LIST", &f->modes,
              "eager|graph|all, comma-separated (default eager,graph)");
  AddOptional(app, "--pattern", "PATTERN", &f->pattern,
              "normal|integers|neg_zero|large|denormal|same|amax_last_rank|quant_ties|"
              "quant_saturate|zero_rows (default normal)");
  AddOptional(app, "--tolerance", "PROFILE", &f->tolerance, "strict|aiter|trtllm (default strict)");
  AddOptional(app, "--epilogue", "LIST", &f->epilogue,
              "none|fp8_token|fp8_tensor|nvfp4|all, comma-separated, the output the fused kernel "
              "quantises to, each one a dimension of the sweep (default none)");
  AddQuantOutputFlags(app, f, "also write and check the normed output");
  AddOptional(app, "--quant-tolerance", "PROFILE", &f->quant_tolerance,
              "strict|ulp (default strict; ulp accepts a code one step off where the value is a "
              "rounding tie once in the dtype)");
  AddOptional(app, "-w,--warmup", "N", &f->warmup, "Warm-up calls (nccl-tests -w, default 5)");
  AddOptional(app, "-n,--iters", "N", &f->iters, "Timed calls (nccl-tests -n, default 20)");
  AddOptional(app, "-c,--check", "0|1", &f->check,
              "nccl-tests -c: 1 (default), every case's output is checked; 0 is refused, as "
              "colltest has no unchecked case");
  AddOptional(app, "--stress", "N", &f->stress,
              "Stress calls, every one checked (default 0, none)");
  AddOptional(app, "--seed", "S", &f->seed, "Input seed (default 0)");
  AddOptional(app, "--timeout", "DURATION", &f->timeout,
              "Per-case timeout, e.g. 5s, 500ms, or milliseconds (default 5s)");
  app->add_flag("--no-residual", f->no_residual,
                "Plain all-reduce + RMSNorm, no residual add (default: with the residual add)");
  AddOptional(app, "--eps", "X", &f->eps, "RMSNorm epsilon (default 1e-6)");
  AddOptional(app, "--fault", "KIND[:RANK]", &f->fault,
              "Fault injection KIND[:RANK] (server must allow it; default none)");
  AddOptional(app, "--grid-blocks", "N", &f->grid_blocks,
              "Force the grid size (default 0, the variant's own)");
  AddOptional(app, "--threads-per-block", "N", &f->threads_per_block,
              "Threads per block, 256 or 512 (default 0, the variant's own)");
  AddOptional(
      app, "--lamport-min-bytes", "BYTES", &f->lamport_min_bytes,
      "Byte-size gate of auto between one_stage and lamport (default 0, the variant's own)");
  AddOptional(app, "--arm-repeat", "N", &f->arm_repeat,
              "Repeat count of the consumer's re-arm store (default 0, one store)");
  AddOptional(app, "--label", "TEXT", &f->label,
              "Free text kept in the run history (default none)");
  app->add_flag("--stop-on-failure", f->stop_on_failure,
                "Stop at the first WRONG, HANG or ERROR case (default: run every case)");
  app->add_flag("--force", f->force,
                "Run even when other processes use the devices (default: refused BUSY, exit 5)");
}

// A value that may be left out ("--baseline" alone means the default baseline), kept as "" then.
void AddOptionalValue(CLI::App* app, const std::string& name, const std::string& type,
                      std::optional<std::string>* target, const std::string& help) {
  AddOptional(app, name, type, target, help);
  app->get_option(name)->expected(0, 1);
}

void AddRunComparisonFlags(CLI::App* app, CompareFlags* f) {
  AddOptionalValue(app, "--compare-baseline", "[NAME]", &f->baseline,
                   "When the run completes, compare it with this baseline of its machine (no "
                   "NAME: default; without the flag, no comparison); exit 4 on a regression");
  AddOptional(app, "--compare-threshold", "X", &f->threshold,
              "Slowdown of the median tolerated beyond the spread, e.g. 0.05 or 5% (default 5%)");
}

void AddHistoryFlags(CLI::App* app, HistoryFlags* f) {
  AddOptional(app, "--label", "TEXT", &f->label,
              "Only runs with exactly this label (default: any label)");
  AddOptional(app, "--state", "STATE", &f->state,
              "Only runs in this state: done|cancelled|failed|interrupted|queued|running (default "
              "any)");
  AddOptional(app, "--since", "WHEN", &f->since,
              "Only runs created since a date (2026-11-01, UTC), an RFC 3339 time, or a duration "
              "ago (24h, 7d) (default: since the first)");
  AddOptional(app, "--variant", "VARIANT", &f->variant,
              "Only runs that asked for this variant: one_stage|two_kernel|lamport|lamport_tb|nccl|"
              "auto (default any)");
  AddOptional(app, "--limit", "N", &f->limit, "Runs per page (server default 50, at most 1000)");
  AddOptional(app, "--page-token", "TOKEN", &f->page_token,
              "Continue where a previous page ended (default: the newest run)");
  app->add_flag("--all", f->all,
                "Follow the pages to the end of the history, at most 100 pages (default: one "
                "page)");
}

void AddCompareFlags(CLI::App* app, CompareFlags* f) {
  app->add_option("RUN", f->runs,
                  "RUN_A RUN_B: the reference, then the candidate; or the candidate alone with "
                  "--baseline")
      ->expected(1, 2)
      ->required();
  AddOptionalValue(app, "--baseline", "[NAME]", &f->baseline,
                   "Compare RUN with this baseline of its machine (no NAME: default; without the "
                   "flag, name two runs)");
  AddOptional(app, "--threshold", "X", &f->threshold,
              "Slowdown of the median tolerated beyond the spread, e.g. 0.05 or 5% (default 5%)");
}

void AddBaselineCommands(CLI::App* app, Invocation* inv) {
  CLI::App* baseline =
      app->add_subcommand("baseline", "Set or list the baselines that runs are compared with");
  baseline->require_subcommand(1);
  CLI::App* set = baseline->add_subcommand(
      "set", "Make a finished run the baseline of its machine (replaces one of the same name)");
  set->add_option("RUN_ID", inv->run_id, "Run id (a DONE run)")->required();
  set->add_option("--name", inv->baseline_name, "Baseline name (default: default)");
  AddOutputFlags(set, inv, "table|json");
  CLI::App* list = baseline->add_subcommand("list", "List the baselines");
  list->add_option("--machine-key", inv->machine_key, "Only this machine's (default: all)");
  AddOutputFlags(list, inv, "table|json");
}

void AddHealthFlags(CLI::App* app, HealthFlags* f) {
  app->add_flag("--pairs", f->pairs,
                "Also check every pair of devices, to isolate one bad GPU or link (default: the "
                "whole group only; standard and long check pairs anyway)");
  AddOptional(app, "--timeout", "DURATION", &f->timeout,
              "Per-case timeout, e.g. 5s (default 5s); the whole check is given "
              "max(120 s, 40 x this) (standard: max(10 min, 120 x), long: max(30 min, 400 x))");
  AddOptional(app, "--devices", "LIST", &f->devices, "Device indices, e.g. 0,1 (default: all)");
  AddOptional(app, "--fault", "KIND[:RANK]", &f->fault,
              "Fault injection KIND[:RANK], RANK naming the RANK-th device (server must allow it; "
              "default none)");
  AddOptional(app, "--warn-ratio", "X", &f->warn_ratio,
              "WARN when a rank or pair is X times slower than the median (default 1.5)");
  AddOptional(app, "--level", "LEVEL", &f->level,
              "Depth: quick|standard|long (default quick, seconds); standard adds every pair, both "
              "modes, a short stress and the hang self test, long a long stress and bandwidth per "
              "pair against expected");
  AddOptional(app, "--variants", "plugin:NAME,...", &f->variants,
              "Kernel plugins to check beside the level's own variants (docs/plugins.md)");
  app->add_flag("--force", f->force,
                "Check even when other processes use the devices (default: answer BUSY, exit 5)");
  AddOptional(app, "--max-verdict-age", "DURATION", &f->max_verdict_age,
              "Answer with the server's last verdict when it is at most this old, e.g. 60s "
              "(default 0, always check anew)");
  AddOptional(app, "--npd", "CONDITION", &f->npd,
              "node-problem-detector plugin mode: CollectiveHang|CollectiveWrong, one line, exit "
              "0 (false), 1 (true) or 2 (unknown) (default: the report)");
  AddOptional(app, "--targets", "LIST", &f->targets,
              "Fleet check: ask these nodes (host:port,...; a DNS name:port asks every address "
              "it resolves to) instead of --server (default: --server alone)");
  AddOptional(app, "--targets-file", "FILE", &f->targets_file,
              "Fleet check: nodes from a file, one host:port per line (# comments; default "
              "none)");
  AddOptional(app, "--parallel", "N", &f->parallel,
              "Fleet check: nodes asked at once (default 32)");
  AddOptional(app, "--node-timeout", "DURATION", &f->node_timeout,
              "Fleet check: deadline per node and attempt (default: the check's own deadline)");
  AddOptional(app, "--retries", "N", &f->retries,
              "Fleet check: extra attempts for an unreachable node (default 2)");
}

void AddTuneFlags(CLI::App* app, TuneFlags* f, Invocation* inv) {
  AddOptional(app, "--world", "N", &f->world, "Ranks (required): the W the table is for");
  AddOptional(app, "--hidden,--n", "N", &f->n,
              "Hidden size, one (default 7168); --n is the same flag");
  AddOptional(app, "-d,--dtype", "DTYPE", &f->dtype, kDTypeHelp);
  AddOptional(app, "--m", "LIST", &f->m, "Rows (tokens) (default 1,8,16,32,64,128,256,512,1024)");
  AddOptional(app, "--modes", "MODE", &f->modes, "eager or graph, one (default graph)");
  AddOptional(app, "--variants", "LIST", &f->variants,
              "Variants to rank, not auto; plugin:NAME with --tune-plugins (default "
              "one_stage,two_kernel,lamport,lamport_tb)");
  app->add_flag("--tune-plugins", f->tune_plugins,
                "Rank the kernel plugins --variants names (plugin:NAME) too, so that auto may pick "
                "them (default: plugins are refused)");
  AddOptional(app, "-w,--warmup", "N", &f->warmup, "Warm-up calls (nccl-tests -w, default 20)");
  AddOptional(app, "-n,--iters", "N", &f->iters, "Timed calls (nccl-tests -n, default 200)");
  AddOptional(app, "--timeout", "DURATION", &f->timeout, "Per-case timeout (default 5s)");
  AddOptional(app, "--epilogue", "EPILOGUE", &f->epilogue,
              "none|fp8_token|fp8_tensor|nvfp4, one, the epilogue the table is measured with and "
              "that auto uses it for (default none)");
  AddQuantOutputFlags(app, f, "also write the normed output");
  app->add_option("--format", inv->format, "table|json (default table)")->capture_default_str();
  // Unlike the other commands' --out, the file does not replace stdout: it is the table colltestd
  // loads, so it is JSON whatever --format shows. A folder gets the table under its default name,
  // one per key, so that tables of several epilogues can be written side by side.
  app->add_option(
      "--out", inv->out_path,
      "Also write the table as JSON to this file; given a folder, to the file "
      "tune_BACKEND_DEVICE_wW_DTYPE_MODE_nN[_EPILOGUE[_keep_normed]].json in it (default: no "
      "file)");
}

// The flags of every command, given before or after it: the connection, progress and colour.
void AddGlobalFlags(CLI::App* app, Invocation* inv) {
  ConnectionOptions& conn = inv->connection;
  app->add_option("--server", conn.server,
                  "colltestd address, HOST:PORT (default 127.0.0.1:50051, or the COLLTEST_SERVER "
                  "environment variable)")
      ->envname("COLLTEST_SERVER")
      ->capture_default_str();
  app->add_option("--token-file", conn.token_file,
                  "File holding a bearer token (default: no token)");
  app->add_option("--tls-ca", conn.tls_ca,
                  "Root CA (PEM): connect with TLS (default: plaintext, unless a client "
                  "certificate is given)");
  app->add_option("--tls-cert", conn.tls_cert,
                  "Client certificate (PEM) for mutual TLS (default none)");
  app->add_option("--tls-key", conn.tls_key,
                  "Client private key (PEM) for mutual TLS (default none)");
  app->add_option("--tls-server-name", conn.tls_server_name,
                  "Name expected in the server certificate (default: the --server host)");
  app->add_flag("-q,--quiet", inv->quiet,
                "No progress on stderr (default: progress when stderr is a terminal)");
  app->add_flag(
      "--progress", inv->progress,
      "Progress on stderr even when it is not a terminal, for CI logs (default: only on a "
      "terminal)");

  app->add_option("--color", inv->color,
                  "always|auto|never (default auto, verdicts coloured on a terminal whose TERM is "
                  "not dumb unless NO_COLOR is set; JSON, CSV and JUnit never)");
}

// The footer of `colltest --help`.
constexpr const char* kExitCodes =
    "Exit codes:\n"
    "  0  every case OK or UNSUPPORTED; for compare, no regression\n"
    "  1  some case WRONG\n"
    "  2  some case HANG\n"
    "  3  RPC or flag error, an ERROR case, or a run that did not complete\n"
    "  4  compare or --compare-baseline found a regression (the run's own 1 to 3 outrank it)\n"
    "  5  BUSY: the devices were in use and nothing was checked (--force runs anyway)\n"
    "  6  health --targets: some node unreachable, and no reached node worse than OK";

// The deepest command the parse reached ("baseline list", else "baseline", else the top level):
// a mistyped word was meant as one of its flags or commands.
const CLI::App* DeepestCommand(const CLI::App* app) {
  while (!app->get_subcommands().empty()) app = app->get_subcommands().front();
  return app;
}

// "--vriants" or "--vriants=x": the long flag of `command` (or of a command above it, whose
// flags fall through) that it was meant to be, as "--variants".
std::optional<std::string> MeantFlag(absl::string_view word, const CLI::App* command) {
  if (!absl::StartsWith(word, "--")) return std::nullopt;
  word.remove_prefix(2);
  word = word.substr(0, word.find('='));
  std::vector<std::string> names;
  for (const CLI::App* app = command; app != nullptr; app = app->get_parent()) {
    for (const CLI::Option* option : app->get_options()) {
      names.insert(names.end(), option->get_lnames().begin(), option->get_lnames().end());
    }
  }
  std::optional<std::string> name = ClosestName(word, names);
  if (!name.has_value()) return std::nullopt;
  return "--" + *name;
}

// A word where `command` expects one of its commands, as "health" for "helth".
std::optional<std::string> MeantCommand(absl::string_view word, const CLI::App* command) {
  std::vector<std::string> names;
  for (const CLI::App* sub : command->get_subcommands({})) {
    names.push_back(sub->get_name());
    names.insert(names.end(), sub->get_aliases().begin(), sub->get_aliases().end());
  }
  return ClosestName(word, names);
}

// "did you mean --variants?" lines for the words CLI11 could not place.
std::string DidYouMean(const CLI::App* app) {
  const CLI::App* command = DeepestCommand(app);
  const bool wants_command = !command->get_subcommands({}).empty();
  std::string hints;
  for (const std::string& word : app->remaining(true)) {
    std::optional<std::string> meant = MeantFlag(word, command);
    if (!meant.has_value() && wants_command && !absl::StartsWith(word, "-")) {
      meant = MeantCommand(word, command);
    }
    if (meant.has_value()) absl::StrAppend(&hints, "colltest: did you mean ", *meant, "?\n");
  }
  return hints;
}

std::string FailureMessage(const CLI::App* app, const CLI::Error& e) {
  return absl::StrCat("colltest: ", e.what(), "\n", DidYouMean(app),
                      "Run with --help for more information.\n");
}

}  // namespace

std::variant<Invocation, int> ParseCommandLine(const std::vector<std::string>& args,
                                               std::ostream& out, std::ostream& err) {
  Invocation inv;
  CLI::App app("Tests fused all-reduce + RMSNorm collective kernels through colltestd.",
               "colltest");
  app.require_subcommand(1);
  app.set_version_flag("--version", common::VersionLine("colltest"));

  // Global flags are also accepted after the command, where scripts tend to append them.
  app.fallthrough();
  app.failure_message(FailureMessage);

  AddGlobalFlags(&app, &inv);

  const std::string run_formats = "table|json|csv|junit";
  const std::string list_formats = "table|json";

  CLI::App* devices = app.add_subcommand("devices", "List the server's devices and variants");
  AddOutputFlags(devices, &inv, list_formats);

  CLI::App* run = app.add_subcommand("run", "Run a sweep and print every case when it is done");
  AddSweepFlags(run, &inv.sweep);
  AddRunComparisonFlags(run, &inv.compare);
  AddOutputFlags(run, &inv, run_formats);
  AddWideFlag(run, &inv);

  CLI::App* sweep =
      app.add_subcommand("sweep", "Run a sweep, printing progress on stderr as cases complete");
  AddSweepFlags(sweep, &inv.sweep);
  AddRunComparisonFlags(sweep, &inv.compare);
  AddOutputFlags(sweep, &inv, run_formats);
  AddWideFlag(sweep, &inv);

  CLI::App* get = app.add_subcommand("get", "Print a run from the server's history");
  get->add_option("RUN_ID", inv.run_id, "Run id")->required();
  AddOutputFlags(get, &inv, run_formats);
  AddWideFlag(get, &inv);

  CLI::App* history = app.add_subcommand(
      "history", "List runs of the server's history, newest first, with filters");
  history->alias("runs");
  AddHistoryFlags(history, &inv.history);
  AddOutputFlags(history, &inv, "table|json|csv");

  AddBaselineCommands(&app, &inv);

  CLI::App* compare = app.add_subcommand(
      "compare",
      "Compare two runs case by case (or a run with its machine's baseline); exit 4 "
      "on a regression");
  AddCompareFlags(compare, &inv.compare);
  AddOutputFlags(compare, &inv, run_formats);
  AddWideFlag(compare, &inv);

  CLI::App* cancel = app.add_subcommand("cancel", "Cancel a queued or running run");
  cancel->add_option("RUN_ID", inv.run_id, "Run id")->required();

  CLI::App* health = app.add_subcommand(
      "health", "Check that collectives complete, correctly, on every device (and pair)");
  AddHealthFlags(health, &inv.health);
  AddOutputFlags(health, &inv, run_formats);

  CLI::App* tune = app.add_subcommand(
      "tune", "Sweep the variants over m and build the crossover table that auto dispatches from");
  AddTuneFlags(tune, &inv.tune, &inv);

  // Set after the commands are added, which would otherwise repeat it under their own --help.
  app.footer(kExitCodes);

  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitError;
  }
  const CLI::App* command = app.get_subcommands().front();
  inv.command = command->get_name();
  if (inv.command == "baseline") {
    inv.command += " " + command->get_subcommands().front()->get_name();
  }
  return inv;
}

}  // namespace colltest::client
