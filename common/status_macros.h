// The project's one helper for status propagation: return early with the error of an absl::Status
// or absl::StatusOr expression, so that a chain of checks reads as a list.
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Evaluates `expr` (an absl::Status) once; returns it from the calling function if it is an error.
#define COLLTEST_RETURN_IF_ERROR(expr)                                      \
  do {                                                                      \
    if (::absl::Status colltest_status_ = (expr); !colltest_status_.ok()) { \
      return colltest_status_;                                              \
    }                                                                       \
  } while (false)

// Evaluates `expr` (an absl::StatusOr<T>) once; returns its error from the calling function, or
// assigns its value to `lhs` ("auto value", "int value" or an existing variable).
#define COLLTEST_ASSIGN_OR_RETURN(lhs, expr) \
  COLLTEST_ASSIGN_OR_RETURN_IMPL_(COLLTEST_STATUS_CONCAT_(colltest_statusor_, __LINE__), lhs, expr)

#define COLLTEST_STATUS_CONCAT_INNER_(a, b) a##b
#define COLLTEST_STATUS_CONCAT_(a, b) COLLTEST_STATUS_CONCAT_INNER_(a, b)
#define COLLTEST_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                    \
  if (!statusor.ok()) return std::move(statusor).status();   \
  lhs = *std::move(statusor)
