#include "http/gateway.h"

#include <civetweb.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "colltest/v1/colltest.grpc.pb.h"
#include "common/status_macros.h"
#include "http/call_registry.h"
#include "http/dispatch.h"
#include "http/handler_context.h"
#include "http/listener_waker.h"
#include "http/openssl_compat.h"
#include "http/tls.h"

namespace colltest::http {
namespace {

struct ContextStopper {
  // Closes the listening socket and joins CivetWeb's threads (each finishing its request).
  void operator()(mg_context* context) const { mg_stop(context); }
};
using ContextPtr = std::unique_ptr<mg_context, ContextStopper>;

// CivetWeb's process-wide state, set up once: mg_init_library is not thread-safe, a function-local
// static is. OpenSSL is loaded later, by the first TLS port. Never torn down, as another context
// may still be running.
void InitCivetWebOnce() {
  static const unsigned features = mg_init_library(0);  // 0: no optional feature asked for
  (void)features;
}

// Body readers must leave threads to the rest (request_admission.h).
absl::Status CheckBodyReaderLimits(const GatewayOptions& options) {
  if (options.max_body_readers < 1 || options.max_body_readers >= options.threads) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--http-max-body-readers ", options.max_body_readers, ": must be 1 to --http-threads - 1 (",
        options.threads - 1, "), so that threads stay for /healthz, /metrics and GETs"));
  }
  if (options.max_body_readers_per_peer < 1 ||
      options.max_body_readers_per_peer > options.max_body_readers) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-max-body-readers-per-peer ", options.max_body_readers_per_peer,
                     ": must be 1 to --http-max-body-readers (", options.max_body_readers, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckOptions(const GatewayOptions& options) {
  const size_t colon = options.address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == options.address.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("http: cannot serve on \"", options.address, "\": expected HOST:PORT"));
  }
  // Debian's CivetWeb 1.15 is built without IPv6; said here rather than as "invalid port spec".
  if (options.address.front() == '[' && mg_check_feature(MG_FEATURES_IPV6) == 0) {
    return absl::InvalidArgumentError(absl::StrCat("http: cannot serve on ", options.address,
                                                   ": this CivetWeb has no IPv6 support"));
  }
  if (options.channel == nullptr) {
    return absl::InvalidArgumentError("http: no channel to the CollectiveTest service");
  }
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("http: TLS needs both a certificate and a key");
  }
  if (!options.tls_client_ca.empty() && options.tls_cert.empty()) {
    return absl::InvalidArgumentError("http: a TLS client CA needs a certificate and a key");
  }
  if (options.threads < 1 || options.request_timeout_ms < 1 || options.api_deadline_ms < 1 ||
      options.body_timeout_ms < 1) {
    return absl::InvalidArgumentError(
        "http: threads, request timeout, body timeout and API deadline must be positive");
  }
  COLLTEST_RETURN_IF_ERROR(CheckBodyReaderLimits(options));
  return absl::OkStatus();
}

// CivetWeb's configuration, as name and value.
std::vector<std::pair<std::string, std::string>> CivetOptions(const GatewayOptions& options) {
  const bool tls = !options.tls_cert.empty();
  std::vector<std::pair<std::string, std::string>> config = {
      // "s": the port speaks TLS only.
      {"listening_ports", absl::StrCat(options.address, tls ? "s" : "")},
      // Connections served at once; a streaming sweep holds one for as long as it runs.
      {"num_threads", absl::StrCat(options.threads)},
      {"request_timeout_ms", absl::StrCat(options.request_timeout_ms)},
      // The dashboard polls; one connection serves its requests.
      {"enable_keep_alive", "yes"},
  };
  // 4: TLS 1.2 and later (tls.cc sets the same minimum on the SSL_CTX).
  if (tls) config.emplace_back("ssl_protocol_version", "4");
  return config;
}

}  // namespace

struct Gateway::Impl {
  explicit Impl(GatewayOptions gateway_options)
      : options(std::move(gateway_options)),
        run_reads(options.max_run_reads),
        admission(AdmissionLimits{options.max_body_readers, options.max_body_readers_per_peer}) {
    stub = colltest::v1::CollectiveTest::NewStub(options.channel);
    handlers = HandlerContext{&options, stub.get(), &calls, &run_reads};
    browser.check_host = options.check_host;
    browser.listen_host = options.address.substr(0, options.address.rfind(':'));
    browser.tls = !options.tls_cert.empty();
    browser.allowed_hosts = options.allowed_hosts;
    handlers.admission = &admission;
    handlers.deadlines = &deadlines;
    handlers.browser = &browser;
  }

  absl::Status Listen();

  // CivetWeb's callbacks; user data is the Impl.
  static int OnRequest(mg_connection* conn);
  static int OnInitSsl(void* ssl_ctx, void* user_data);
  static int OnLogMessage(const mg_connection* conn, const char* message);

  GatewayOptions options;
  std::unique_ptr<colltest::v1::CollectiveTest::Stub> stub;
  CallRegistry calls;
  ConcurrencyLimit run_reads;
  BodyAdmission admission;
  ReadDeadlines deadlines;  // its thread starts here; the context, stopped first, outlives no read
  BrowserPolicy browser;
  HandlerContext handlers;
  std::string bound_address;

  std::string host;  // of options.address, to wake the listener when stopping
  int port = 0;      // bound

  // What went wrong while starting: OnInitSsl's status and what CivetWeb logged (its mg_start2
  // error is generic, "Failed to setup server ports"; the log names the reason).
  absl::Status tls_status;
  absl::Mutex log_mu;
  std::string start_log ABSL_GUARDED_BY(log_mu);

  ContextPtr context;  // last: stopped before the members its threads use are destroyed
};

int Gateway::Impl::OnRequest(mg_connection* conn) {
  auto* impl = static_cast<Impl*>(mg_get_request_info(conn)->user_data);
  try {
    return HandleRequest(conn, impl->handlers);
  } catch (...) {
    // An exception must not unwind through CivetWeb's C frames. What was sent is unknown, so the
    // connection is closed rather than reused.
    mg_disable_connection_keep_alive(conn);
    return 500;
  }
}

int Gateway::Impl::OnInitSsl(void* ssl_ctx, void* user_data) {
  auto* impl = static_cast<Impl*>(user_data);
  impl->tls_status = ConfigureServerTls(
      ssl_ctx,
      TlsFiles{impl->options.tls_cert, impl->options.tls_key, impl->options.tls_client_ca});
  // 1: the callback set up the certificate itself; -1: fail the start.
  return impl->tls_status.ok() ? 1 : -1;
}

int Gateway::Impl::OnLogMessage(const mg_connection* conn, const char* message) {
  if (conn == nullptr) return 1;
  auto* impl = static_cast<Impl*>(mg_get_user_data(mg_get_context(conn)));
  if (impl != nullptr) {
    absl::MutexLock lock(&impl->log_mu);
    // Bounded: only the first messages, those of a failed start, are of use.
    if (impl->start_log.size() < 1024) {
      absl::StrAppend(&impl->start_log, impl->start_log.empty() ? "" : "; ", message);
    }
  }
  return 1;  // handled: CivetWeb writes no log file of its own
}

absl::Status Gateway::Impl::Listen() {
  const std::vector<std::pair<std::string, std::string>> config = CivetOptions(options);
  std::vector<const char*> argv;  // name, value, ..., nullptr
  for (const auto& [name, value] : config) {
    argv.push_back(name.c_str());
    argv.push_back(value.c_str());
  }
  argv.push_back(nullptr);
  mg_callbacks callbacks{};
  callbacks.begin_request = &Impl::OnRequest;
  callbacks.init_ssl = &Impl::OnInitSsl;
  callbacks.log_message = &Impl::OnLogMessage;
  mg_init_data init{&callbacks, this, argv.data()};
  unsigned error_code = 0;
  char error_text[256] = {};
  mg_error_data error{&error_code, error_text, sizeof(error_text)};
  InitCivetWebOnce();
  context.reset(mg_start2(&init, &error));
  if (context == nullptr) {
    absl::MutexLock lock(&log_mu);
    const std::string reason = !tls_status.ok()     ? std::string(tls_status.message())
                               : !start_log.empty() ? start_log
                                                    : std::string(error_text);
    return absl::UnavailableError(
        absl::StrCat("http: cannot serve on ", options.address, ": ", reason));
  }
  mg_server_port bound{};
  if (mg_get_server_ports(context.get(), 1, &bound) < 1) {
    return absl::UnavailableError(
        absl::StrCat("http: cannot serve on ", options.address, ": no listening port"));
  }
  host = options.address.substr(0, options.address.rfind(':'));
  port = bound.port;
  bound_address = absl::StrCat(host, ":", port);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Gateway>> Gateway::Start(GatewayOptions options) {
  COLLTEST_RETURN_IF_ERROR(CheckOptions(options));
  if (!options.tls_cert.empty()) {
    if (absl::Status ready = PrepareCivetWebOpenSsl(); !ready.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("http: cannot serve on ", options.address, ": ", ready.message()));
    }
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  COLLTEST_RETURN_IF_ERROR(impl->Listen());
  return std::unique_ptr<Gateway>(new Gateway(std::move(impl)));
}

Gateway::Gateway(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Gateway::~Gateway() {
  // Cancel first: mg_stop joins the worker threads, and one streaming a sweep (or waiting on a
  // Health check) returns only when its call ends.
  impl_->calls.CancelAll();
  const ListenerWaker waker(impl_->host, impl_->port);
  impl_->context.reset();
}

std::string Gateway::bound_address() const { return impl_->bound_address; }

}  // namespace colltest::http
