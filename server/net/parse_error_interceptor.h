// gRPC 1.51 answers a request it cannot deserialize (invalid UTF-8 in a proto3 string field,
// bytes that are not the message) with INTERNAL and an empty message: a client cannot tell that
// from a server bug. This interceptor rewrites exactly that status into INVALID_ARGUMENT naming
// the method's request type, so the answer says whose fault it is and what to fix.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "grpcpp/support/server_interceptor.h"

namespace colltest::server {

// "colltest.v1.RunRequest" for "/colltest.v1.CollectiveTest/Run", from the generated descriptors;
// "the method's request message" for a method they do not know.
std::string RequestTypeOf(absl::string_view method);

// The message that replaces gRPC's empty one for `method`.
std::string ParseErrorMessage(absl::string_view method);

// What ServerBuilder::experimental().SetInterceptorCreators takes.
std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
ParseErrorInterceptorCreators();

}  // namespace colltest::server
