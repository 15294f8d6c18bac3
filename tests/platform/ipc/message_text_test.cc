#include "platform/ipc/message_text.h"

#include <string>

#include "airlock/v1/wire.pb.h"
#include "gtest/gtest.h"

namespace airlock::ipc {
namespace {

TEST(MessageTextTest, TextThatIsNotUtf8IsEscapedSoTheMessageParses) {
  v1::BrokerMessage message;
  v1::ListResult* list = message.mutable_response()->mutable_list();
  list->set_canonical_path("/ws/d\xff");
  list->add_entries()->set_name("ok.txt");
  list->add_entries()->set_name("bad\xfe.txt");
  v1::BrokerMessage error;
  error.mutable_response()->mutable_error()->set_message("refused /ws/\xc0\xaf");

  EscapeInvalidUtf8Strings(&message);
  EscapeInvalidUtf8Strings(&error);

  std::string wire;
  ASSERT_TRUE(message.SerializeToString(&wire));
  v1::BrokerMessage received;
  ASSERT_TRUE(received.ParseFromString(wire)) << "a receiver refuses strings that are not UTF-8";
  EXPECT_EQ(received.response().list().canonical_path(), "/ws/d\\xff");
  EXPECT_EQ(received.response().list().entries(0).name(), "ok.txt");
  EXPECT_EQ(received.response().list().entries(1).name(), "bad\\xfe.txt");
  EXPECT_EQ(error.response().error().message(), "refused /ws/\\xc0\\xaf");
}

TEST(MessageTextTest, BytesFieldsAndValidTextAreLeftAlone) {
  v1::BrokerMessage message;
  v1::ReadResult* read = message.mutable_response()->mutable_read();
  read->set_canonical_path("/ws/caf\xc3\xa9");
  read->set_content(std::string("\xff\x00\xfe", 3));
  EscapeInvalidUtf8Strings(&message);
  EXPECT_EQ(message.response().read().canonical_path(), "/ws/caf\xc3\xa9");
  EXPECT_EQ(message.response().read().content(), std::string("\xff\x00\xfe", 3));
}

TEST(MessageTextTest, AClientNamesTheFieldThatIsNotText) {
  v1::ClientMessage message;
  message.mutable_request()->mutable_read()->set_path("ok\xff.txt");
  const absl::Status status = CheckUtf8Strings(message);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("request.read.path is not UTF-8 text (\"ok\\xff.txt\")"),
            absl::string_view::npos)
      << status;
  message.mutable_request()->mutable_read()->set_path("caf\xc3\xa9.txt");
  message.mutable_request()->mutable_write()->set_content("\xff");  // bytes: anything goes
  EXPECT_TRUE(CheckUtf8Strings(message).ok());
}

}  // namespace
}  // namespace airlock::ipc
