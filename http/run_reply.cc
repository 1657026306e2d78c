#include "http/run_reply.h"

#include <malloc.h>

#include <cstddef>
#include <utility>

#include "absl/strings/str_cat.h"
#include "http/reply.h"
#include "http/run_json.h"

namespace colltest::http {
namespace {

// Below this, what a reply freed is worth keeping for the next one.
constexpr size_t kTrimAfterBytes = 1 << 20;

}  // namespace

int SendRunReply(mg_connection* conn, colltest::v1::RunResult run) {
  StreamedReply reply(conn, kJsonType);
  reply.Start();
  size_t sent_bytes = 0;
  const bool whole = WriteRunJson(std::move(run), [&](absl::string_view piece) {
    sent_bytes += piece.size();
    return reply.Write(piece);
  });
  if (whole && reply.Write("\n")) reply.End();
  TrimHeapAfter(sent_bytes);
  return 200;
}

void TrimHeapAfter(size_t reply_bytes) {
  // The run and its pieces are freed by now; give the pages back (every arena, not only this
  // thread's: the service built its copy of the run on a gRPC thread).
  if (reply_bytes >= kTrimAfterBytes) malloc_trim(0);
}

absl::Status RunReadsBusyError(int limit, absl::Duration waited) {
  return absl::UnavailableError(absl::StrCat(
      "busy: ", limit, " reads of runs (GET /api/v1/runs/ID) are being served, the most at once, ",
      "and none ended within ", absl::FormatDuration(waited), "; retry after ",
      kRunReadsRetryAfterSeconds, " s"));
}

}  // namespace colltest::http
