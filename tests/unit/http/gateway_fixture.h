// The gateway on 127.0.0.1:0 in front of the in-process fake service, and JSON helpers.
#pragma once

#include <memory>
#include <string>

#include "fake_service.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "http/gateway.h"
#include "http_client.h"

namespace colltest::http::testing {

inline constexpr char kTestSecret[] = "0123456789abcdef0123456789abcdef";

class GatewayTest : public ::testing::Test {
 protected:
  // Options for 127.0.0.1:0 and the fake's channel; tests adjust them before StartGateway.
  GatewayOptions Options() {
    GatewayOptions options;
    options.forwarding_secret = kTestSecret;
    options.address = "127.0.0.1:0";
    options.channel = fake_.channel;
    options.threads = 4;
    options.max_body_readers = 2;  // below the threads
    options.max_body_readers_per_peer = 2;
    return options;
  }
  void StartGateway(GatewayOptions options) {
    absl::StatusOr<std::unique_ptr<Gateway>> gateway = Gateway::Start(std::move(options));
    ASSERT_TRUE(gateway.ok()) << gateway.status();
    gateway_ = *std::move(gateway);
  }
  std::string address() const { return gateway_->bound_address(); }

  InProcessService fake_;             // first: outlives the gateway that calls it
  std::unique_ptr<Gateway> gateway_;  // stopped first
};

// `json` as a google.protobuf.Struct (any JSON object); a failure when it is none.
inline google::protobuf::Struct JsonObject(const std::string& json) {
  google::protobuf::Struct object;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &object);
  EXPECT_TRUE(status.ok()) << status.ToString() << " in: " << json;
  return object;
}

// The string member `key` of a JSON object; "" when it has none.
inline std::string StringField(const google::protobuf::Struct& object, const std::string& key) {
  auto it = object.fields().find(key);
  return it == object.fields().end() ? "" : it->second.string_value();
}

// The "code" and "message" of an error body.
inline std::string ErrorCode(const HttpResponse& response) {
  return StringField(JsonObject(response.body), "code");
}
inline std::string ErrorMessage(const HttpResponse& response) {
  return StringField(JsonObject(response.body), "message");
}

}  // namespace colltest::http::testing
