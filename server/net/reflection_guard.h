// Server reflection (v1 and v1alpha alike) answers to the same callers as the API: with
// authentication on, a caller of role viewer or above. gRPC 1.51 runs AuthMetadataProcessors only
// on TLS credentials, and a server interceptor can neither refuse a call nor skip its handler, so
// this interceptor lets the reflection handler run on an emptied request and then replaces every
// response it writes by an error_response, and its final status by the refusal. No service or file
// name leaves the server.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/server_interceptor.h"
#include "server/net/auth.h"

namespace colltest::server {

// True for the methods of both reflection services colltestd serves: v1alpha (grpc++_reflection)
// and v1 (server/net/reflection_v1.h).
bool IsReflectionMethod(absl::string_view method);

// OK when `caller` (Authorizer::Identify's answer) may use reflection, else the refusal:
// UNAUTHENTICATED or PERMISSION_DENIED, naming the role needed.
absl::Status ReflectionAccess(const absl::StatusOr<Caller>& caller);

// A serialized ServerReflectionResponse whose error_response carries `refusal`. The v1 and v1alpha
// messages are the same on the wire, so the one set of bytes answers both versions.
std::string RefusalResponse(const absl::Status& refusal);

// Creators of the guard, for ServerBuilder::experimental().SetInterceptorCreators. `authorizer`
// must outlive the server. With authentication off they create nothing for any method.
// `verified_client_certificates`: mutual TLS is on, so a certificate's CN identifies its caller.
std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
ReflectionGuardCreators(const Authorizer* authorizer, bool verified_client_certificates);

}  // namespace colltest::server
