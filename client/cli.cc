#include "client/cli.h"

#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/exit_code.h"

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

void AddOutputFlags(CLI::App* app, Invocation* inv, const std::string& formats) {
  app->add_option("--format", inv->format, formats)->capture_default_str();
  app->add_option("--out", inv->out_path, "Write the output to this file instead of stdout");
}

void AddSweepFlags(CLI::App* app, SweepFlags* f) {
  AddOptional(app, "--world", "N", &f->world, "Ranks (default: one per selected device)");
  AddOptional(app, "--devices", "LIST", &f->devices, "Device indices, e.g. 0,1");
  AddOptional(app, "--m", "LIST", &f->m, "Rows (tokens), e.g. 1,8,64");
  AddOptional(app, "--n", "LIST", &f->n, "Hidden sizes, e.g. 7168");
  AddOptional(app, "--dtype", "DTYPE", &f->dtype, "bf16|fp16|fp32");
  AddOptional(app, "--variants", "LIST", &f->variants,
              "one_stage,two_kernel,lamport,lamport_tb,nccl,auto or all");
  AddOptional(app, "--modes", "LIST", &f->modes, "eager,graph or all");
  AddOptional(app, "--pattern", "PATTERN", &f->pattern,
              "normal|integers|neg_zero|large|denormal|same");
  AddOptional(app, "--tolerance", "PROFILE", &f->tolerance, "strict|aiter|trtllm");
  AddOptional(app, "--warmup", "N", &f->warmup, "Warm-up calls");
  AddOptional(app, "--iters", "N", &f->iters, "Timed calls");
  AddOptional(app, "--stress", "N", &f->stress, "Stress calls, every one checked");
  AddOptional(app, "--seed", "S", &f->seed, "Input seed");
  AddOptional(app, "--timeout", "DURATION", &f->timeout,
              "Per-case timeout, e.g. 5s, 500ms, or milliseconds");
  app->add_flag("--no-residual", f->no_residual, "Plain all-reduce + RMSNorm, no residual add");
  AddOptional(app, "--eps", "X", &f->eps, "RMSNorm epsilon");
  AddOptional(app, "--fault", "KIND[:RANK]", &f->fault,
              "Fault injection KIND[:RANK] (server must allow it)");
  AddOptional(app, "--grid-blocks", "N", &f->grid_blocks, "Force the grid size");
  AddOptional(app, "--threads-per-block", "N", &f->threads_per_block,
              "Threads per block (256, 512)");
  AddOptional(app, "--lamport-min-bytes", "BYTES", &f->lamport_min_bytes,
              "Byte-size gate of auto between one_stage and lamport");
  AddOptional(app, "--arm-repeat", "N", &f->arm_repeat,
              "Repeat count of the consumer's re-arm store");
  AddOptional(app, "--label", "TEXT", &f->label, "Free text kept in the run history");
  app->add_flag("--stop-on-failure", f->stop_on_failure,
                "Stop at the first WRONG, HANG or ERROR case (fail fast)");
}

void AddHealthFlags(CLI::App* app, HealthFlags* f) {
  app->add_flag("--pairs", f->pairs,
                "Also check every pair of devices, to isolate one bad GPU or link");
  AddOptional(app, "--timeout", "DURATION", &f->timeout,
              "Per-case timeout, e.g. 5s (default 5s); the whole check is given "
              "max(120 s, 40 x this)");
  AddOptional(app, "--devices", "LIST", &f->devices, "Device indices, e.g. 0,1 (default: all)");
  AddOptional(app, "--fault", "KIND[:RANK]", &f->fault,
              "Fault injection KIND[:RANK], RANK naming the RANK-th device (server must allow it)");
  AddOptional(app, "--warn-ratio", "X", &f->warn_ratio,
              "WARN when a rank or pair is X times slower than the median (default 1.5)");
}

void AddTuneFlags(CLI::App* app, TuneFlags* f, Invocation* inv) {
  AddOptional(app, "--world", "N", &f->world, "Ranks (required): the W the table is for");
  AddOptional(app, "--n", "N", &f->n, "Hidden size, one (default 7168)");
  AddOptional(app, "--dtype", "DTYPE", &f->dtype, "bf16|fp16|fp32 (default bf16)");
  AddOptional(app, "--m", "LIST", &f->m, "Rows (tokens) (default 1,8,16,32,64,128,256,512,1024)");
  AddOptional(app, "--modes", "MODE", &f->modes, "eager or graph, one (default graph)");
  AddOptional(app, "--variants", "LIST", &f->variants,
              "Variants to rank, not auto (default one_stage,two_kernel,lamport,lamport_tb)");
  AddOptional(app, "--warmup", "N", &f->warmup, "Warm-up calls (default 20)");
  AddOptional(app, "--iters", "N", &f->iters, "Timed calls (default 200)");
  AddOptional(app, "--timeout", "DURATION", &f->timeout, "Per-case timeout (default 5s)");
  app->add_option("--format", inv->format, "table|json")->capture_default_str();
  // Unlike the other commands' --out, the file does not replace stdout: it is the table colltestd
  // loads, so it is JSON whatever --format shows.
  app->add_option("--out", inv->out_path, "Also write the table as JSON to this file");
}

}  // namespace

std::variant<Invocation, int> ParseCommandLine(const std::vector<std::string>& args,
                                               std::ostream& out, std::ostream& err) {
  Invocation inv;
  CLI::App app("Tests fused all-reduce + RMSNorm collective kernels through colltestd.",
               "colltest");
  app.require_subcommand(1);
  // Global flags are also accepted after the command, where scripts tend to append them.
  app.fallthrough();
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("colltest: ") + e.what() + "\nRun with --help for more information.\n";
  });

  ConnectionOptions& conn = inv.connection;
  app.add_option("--server", conn.server, "colltestd address")
      ->envname("COLLTEST_SERVER")
      ->capture_default_str();
  app.add_option("--token-file", conn.token_file, "File holding a bearer token");
  app.add_option("--tls-ca", conn.tls_ca, "Root CA (PEM): connect with TLS");
  app.add_option("--tls-cert", conn.tls_cert, "Client certificate (PEM) for mutual TLS");
  app.add_option("--tls-key", conn.tls_key, "Client private key (PEM) for mutual TLS");
  app.add_option("--tls-server-name", conn.tls_server_name,
                 "Name expected in the server certificate");

  const std::string run_formats = "table|json|csv|junit";
  const std::string list_formats = "table|json";

  CLI::App* devices = app.add_subcommand("devices", "List the server's devices and variants");
  AddOutputFlags(devices, &inv, list_formats);

  CLI::App* run = app.add_subcommand("run", "Run a sweep and print every case when it is done");
  AddSweepFlags(run, &inv.sweep);
  AddOutputFlags(run, &inv, run_formats);

  CLI::App* sweep =
      app.add_subcommand("sweep", "Run a sweep, printing progress on stderr as cases complete");
  AddSweepFlags(sweep, &inv.sweep);
  AddOutputFlags(sweep, &inv, run_formats);

  CLI::App* get = app.add_subcommand("get", "Print a run from the server's history");
  get->add_option("RUN_ID", inv.run_id, "Run id")->required();
  AddOutputFlags(get, &inv, run_formats);

  CLI::App* runs = app.add_subcommand("runs", "List recent runs");
  AddOptional(runs, "--limit", "N", &inv.limit, "Most runs to list (server default 50)");
  AddOutputFlags(runs, &inv, list_formats);

  CLI::App* cancel = app.add_subcommand("cancel", "Cancel a queued or running run");
  cancel->add_option("RUN_ID", inv.run_id, "Run id")->required();

  CLI::App* health = app.add_subcommand(
      "health", "Check that collectives complete, correctly, on every device (and pair)");
  AddHealthFlags(health, &inv.health);
  AddOutputFlags(health, &inv, run_formats);

  CLI::App* tune = app.add_subcommand(
      "tune", "Sweep the variants over m and build the crossover table that auto dispatches from");
  AddTuneFlags(tune, &inv.tune, &inv);

  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitError;
  }
  inv.command = app.get_subcommands().front()->get_name();
  return inv;
}

}  // namespace colltest::client
