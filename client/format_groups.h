// The worker groups' states (GroupHealth), shown by `devices` and `health` so that an operator sees
// a group that is recovering or degraded next to the results that put it there.
#ifndef COLLTEST_CLIENT_FORMAT_GROUPS_H_
#define COLLTEST_CLIENT_FORMAT_GROUPS_H_

#include <string>

#include "colltest/v1/colltest.pb.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "nlohmann/json.hpp"

namespace colltest::client {

using Groups = google::protobuf::RepeatedPtrField<v1::GroupHealth>;

// A text table: devices ("0,1"), state, recoveries, last recovery time, message.
std::string GroupsTable(const Groups& groups);

// An array of objects with every GroupHealth field, the state by its upper-case name.
nlohmann::ordered_json GroupsJson(const Groups& groups);

}  // namespace colltest::client

#endif  // COLLTEST_CLIENT_FORMAT_GROUPS_H_
