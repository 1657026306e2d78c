#include "http/request_admission.h"

#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "http/status_map.h"

namespace colltest::http {
namespace {

TEST(BodyAdmission, PerPeerThen429NamingTheFlag) {
  BodyAdmission admission(AdmissionLimits{4, 2});
  std::vector<BodyAdmission::Ticket> held;
  held.push_back(*admission.Admit("127.0.0.2"));
  held.push_back(*admission.Admit("127.0.0.2"));
  const absl::StatusOr<BodyAdmission::Ticket> third = admission.Admit("127.0.0.2");
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(HttpStatusOf(third.status()), 429);
  EXPECT_NE(third.status().message().find("--http-max-body-readers-per-peer"), std::string::npos)
      << third.status();
  EXPECT_TRUE(admission.Admit("127.0.0.3").ok());  // another peer still has room
}

TEST(BodyAdmission, InAllThen503AndTicketsGiveBack) {
  BodyAdmission admission(AdmissionLimits{2, 2});
  std::optional<BodyAdmission::Ticket> first(*admission.Admit("127.0.0.2"));
  const BodyAdmission::Ticket second = *admission.Admit("127.0.0.3");
  const absl::StatusOr<BodyAdmission::Ticket> third = admission.Admit("127.0.0.4");
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(HttpStatusOf(third.status()), 503);
  EXPECT_NE(third.status().message().find("--http-max-body-readers"), std::string::npos);
  EXPECT_EQ(admission.readers(), 2);
  first.reset();
  EXPECT_EQ(admission.readers(), 1);
  EXPECT_TRUE(admission.Admit("127.0.0.4").ok());
  EXPECT_EQ(admission.readers(), 1);  // the temporary ticket went back at once
}

}  // namespace
}  // namespace colltest::http
