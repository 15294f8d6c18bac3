#include "worker/tool_output.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace airlock::worker {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(ToolOutputTest, ReadContentIsTextWhenValidUtf8) {
  v1::Response response;
  response.mutable_read()->set_content("line \"one\"\n\xc3\xa9");
  ToolOutput output = RenderResponse(response);
  EXPECT_EQ(output.exit_code, kExitOk);
  EXPECT_THAT(output.json, StartsWith("{\"ok\":true,"));
  EXPECT_THAT(output.json, HasSubstr("\"content\":\"line \\\"one\\\"\\n\xc3\xa9\""));
  EXPECT_THAT(output.json, Not(HasSubstr("\"content\":\"\"")));
}

TEST(ToolOutputTest, InvalidUtf8IsBase64) {
  v1::Response response;
  response.mutable_read()->set_content(std::string("\xff\xfe\x00", 3));
  ToolOutput output = RenderResponse(response);
  EXPECT_THAT(output.json, HasSubstr("\"content_base64\":\"//4A\""));
  EXPECT_THAT(output.json, Not(HasSubstr("\"content\":")));
}

TEST(ToolOutputTest, OverlongAndSurrogateEncodingsAreNotText) {
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"}) {
    v1::Response response;
    response.mutable_read()->set_content(bad);
    EXPECT_THAT(RenderResponse(response).json, HasSubstr("content_base64")) << bad;
  }
}

TEST(ToolOutputTest, BashZeroExitCodeIsPrinted) {
  v1::Response response;
  response.mutable_bash()->set_exit_code(0);
  ToolOutput output = RenderResponse(response);
  EXPECT_THAT(output.json, HasSubstr("\"exit_code\":0"));
  EXPECT_THAT(output.json, HasSubstr("\"stdout\":\"\""));
}

TEST(ToolOutputTest, ErrorsChooseTheExitStatusOfSpec3) {
  const struct {
    v1::ErrorCode code;
    int exit_code;
  } kCases[] = {
      {v1::DENIED, 3},           {v1::OUTSIDE_SANDBOX, 3}, {v1::PROTECTED_PATH, 3},
      {v1::NOT_APPROVED, 3},     {v1::APPROVAL_STALE, 3},  {v1::SANDBOX_UNAVAILABLE, 4},
      {v1::INVALID_ARGUMENT, 2}, {v1::NOT_FOUND, 2},       {v1::INTERNAL, 2},
      {v1::TOO_LARGE, 2},        {v1::TIMEOUT, 2},         {v1::BUSY, 2},
  };
  for (const auto& c : kCases) {
    v1::Response response;
    response.mutable_error()->set_code(c.code);
    response.mutable_error()->set_message("why");
    ToolOutput output = RenderResponse(response);
    EXPECT_EQ(output.exit_code, c.exit_code) << v1::ErrorCode_Name(c.code);
    EXPECT_THAT(output.json, HasSubstr("\"code\":\"" + v1::ErrorCode_Name(c.code) + "\""));
    EXPECT_THAT(output.json, StartsWith("{\"ok\":false,"));
  }
}

TEST(ToolOutputTest, EmptyResponseIsAnError) {
  ToolOutput output = RenderResponse(v1::Response());
  EXPECT_EQ(output.exit_code, kExitError);
  EXPECT_THAT(output.json, HasSubstr("INTERNAL"));
}

}  // namespace
}  // namespace airlock::worker
