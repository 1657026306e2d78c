// RunStore::ListRuns: the summaries of runs, newest first, filtered, a page at a time. Pages are
// keyset pages: a token holds the seq of the last run of its page, and the next page starts below
// it, so that runs added meanwhile neither shift nor repeat a page.
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "store/database.h"
#include "store/run_store.h"

namespace colltest::store {
namespace {

using colltest::v1::ListRunsRequest;
using colltest::v1::ListRunsResponse;
using colltest::v1::RunSummary;

std::string PageToken(int64_t seq) { return absl::StrCat("s", seq); }

// Only a token this function's counterpart issued is accepted, byte for byte, so that a token
// stays opaque: nobody can come to depend on tokens they made up.
absl::StatusOr<int64_t> ParsePageToken(const std::string& token) {
  int64_t seq = 0;
  if (token.size() < 2 || token[0] != 's' || !absl::SimpleAtoi(token.substr(1), &seq) || seq <= 0 ||
      PageToken(seq) != token) {
    return absl::InvalidArgumentError("page_token: not a token from a previous ListRuns page");
  }
  return seq;
}

// Every filter is a parameter with a fixed number (?1 label, ?2 state, ?3 since, ?4 variant, ?5
// below this seq, ?6 machine key, ?7 row limit), bound whether its clause is present or not (SQLite
// accepts a binding for any number up to the highest used). Only the clauses of the filters asked
// for are written, so that SQLite can use the index of each.
std::string ListSql(const ListRunsRequest& request) {
  std::vector<std::string> where = {"r.seq < ?5"};
  if (!request.label().empty()) where.push_back("r.label = ?1");
  if (request.state() != colltest::v1::RUN_STATE_UNSPECIFIED) where.push_back("r.state = ?2");
  if (request.since_unix_ms() != 0) where.push_back("r.created_ms >= ?3");
  if (!request.machine_key().empty()) where.push_back("r.machine_key = ?6");
  if (request.variant() != colltest::v1::VARIANT_UNSPECIFIED) {
    where.push_back("r.seq IN (SELECT run_seq FROM run_variants WHERE variant = ?4)");
  }
  return absl::StrCat(
      "SELECT r.seq, r.run_id, r.state, r.cases, r.ok, r.failed, r.created_ms, r.label, r.owner, "
      "r.backend, r.finished_ms, r.spec, r.machine_key, m.hostname "
      "FROM runs r LEFT JOIN machines m ON m.key = r.machine_ref WHERE ",
      absl::StrJoin(where, " AND "), " ORDER BY r.seq DESC LIMIT ?7");
}

absl::Status ReadSummary(const Database& db, const Statement& row, RunSummary* summary) {
  summary->set_run_id(row.ColumnText(1));
  summary->set_state(static_cast<colltest::v1::RunState>(row.ColumnInt(2)));
  summary->set_cases(static_cast<uint32_t>(row.ColumnInt(3)));
  summary->set_ok(static_cast<uint32_t>(row.ColumnInt(4)));
  summary->set_failed(static_cast<uint32_t>(row.ColumnInt(5)));
  summary->set_created_unix_ms(row.ColumnInt(6));
  summary->set_label(row.ColumnText(7));
  summary->set_owner(row.ColumnText(8));
  summary->set_backend(row.ColumnText(9));
  summary->set_finished_unix_ms(row.ColumnInt(10));
  colltest::v1::SweepSpec spec;
  if (!spec.ParseFromString(row.ColumnBlob(11))) {
    return absl::DataLossError(absl::StrCat("history database ", db.path(),
                                            ": the stored request of run ", summary->run_id(),
                                            " cannot be read: restore a backup"));
  }
  // As asked for, in the request's order (run_variants is a set, for the filter).
  summary->mutable_variants()->CopyFrom(spec.variants());
  *summary->mutable_spec() = std::move(spec);
  summary->set_machine_key(row.ColumnText(12));
  summary->set_hostname(row.ColumnText(13));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ListRunsResponse> RunStore::ListRuns(const ListRunsRequest& request) const {
  if (request.limit() > kMaxListLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit: at most ", kMaxListLimit, ", got ", request.limit()));
  }
  const int64_t limit = request.limit() == 0 ? kDefaultListLimit : request.limit();
  int64_t below = std::numeric_limits<int64_t>::max();
  if (!request.page_token().empty()) {
    COLLTEST_ASSIGN_OR_RETURN(below, ParsePageToken(request.page_token()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  COLLTEST_ASSIGN_OR_RETURN(Statement select, db_->Prepare(ListSql(request), "list runs"));
  // One row more than the page: there is a next page exactly when it comes back.
  select.BindText(1, request.label())
      .BindInt(2, request.state())
      .BindInt(3, request.since_unix_ms())
      .BindInt(4, request.variant())
      .BindInt(5, below)
      .BindText(6, request.machine_key())
      .BindInt(7, limit + 1);
  ListRunsResponse response;
  int64_t last_seq = 0;
  while (true) {
    COLLTEST_ASSIGN_OR_RETURN(const bool row, select.Step());
    if (!row) break;
    if (response.runs_size() == limit) {
      response.set_next_page_token(PageToken(last_seq));
      break;
    }
    last_seq = select.ColumnInt(0);
    COLLTEST_RETURN_IF_ERROR(ReadSummary(*db_, select, response.add_runs()));
  }
  return response;
}

}  // namespace colltest::store
