// The pieces under the log: HMAC and the ratchet, the JSON subset, display escaping, records.
#include <string>

#include "absl/strings/escaping.h"
#include "broker/audit/audit_crypto.h"
#include "broker/audit/audit_format.h"
#include "broker/audit/audit_json.h"
#include "broker/audit/audit_record.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace airlock::broker::audit {
namespace {

using ::airlock::testing::IsOk;
using ::airlock::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(AuditCryptoTest, HmacMatchesRfc4231TestCase2) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(Mac mac, HmacSha256("Jefe", "what do ya want for nothing?"));
  EXPECT_EQ(MacHex(mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(AuditCryptoTest, RatchetIsHmacOfTheWordRatchet) {
  SecretBytes key(std::string(32, '\x07'));
  AIRLOCK_ASSERT_OK_AND_ASSIGN(SecretBytes next, RatchetKey(key));
  AIRLOCK_ASSERT_OK_AND_ASSIGN(Mac expected, HmacSha256(key.view(), "ratchet"));
  EXPECT_EQ(next.view(),
            absl::string_view(reinterpret_cast<const char*>(expected.data()), expected.size()));
  EXPECT_NE(next.view(), key.view());
}

TEST(AuditCryptoTest, LogKeysDifferPerSession) {
  SecretBytes master(std::string(32, 'm'));
  AIRLOCK_ASSERT_OK_AND_ASSIGN(SecretBytes a, DeriveLogKey(master, "session-a"));
  AIRLOCK_ASSERT_OK_AND_ASSIGN(SecretBytes b, DeriveLogKey(master, "session-b"));
  EXPECT_NE(a.view(), b.view());
  EXPECT_EQ(a.size(), 32u);
}

TEST(AuditCryptoTest, SecretBytesWipeAndMove) {
  SecretBytes key("0123456789abcdef");
  SecretBytes moved(std::move(key));
  EXPECT_TRUE(key.empty());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(moved.view(), "0123456789abcdef");
  moved.Wipe();
  EXPECT_TRUE(moved.empty());
}

TEST(AuditCryptoTest, MacComparisonNeedsExactLowercaseHex) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(Mac mac, HmacSha256("key-key-key-key!", "data"));
  const std::string hex = MacHex(mac);
  EXPECT_TRUE(MacMatchesHex(mac, hex));
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper != hex) {
    EXPECT_FALSE(MacMatchesHex(mac, upper));
  }
  std::string changed = hex;
  changed[10] = changed[10] == '0' ? '1' : '0';
  EXPECT_FALSE(MacMatchesHex(mac, changed));
  EXPECT_FALSE(MacMatchesHex(mac, hex.substr(1)));
}

TEST(AuditJsonTest, StringsRoundTripByteForByteAndNeverCarryRawControls) {
  const std::string inputs[] = {
      "plain",
      "quote \" backslash \\ slash /",
      std::string("nul \0 byte", 10),
      "\x1b[2J\x1b]0;title\x07 ansi and osc",
      "new\nline\rcarriage\ttab",
      "bidi \xe2\x80\xae override \xe2\x81\xa6 isolate",
      "c1 \xc2\x9b control",
      "invalid \xff\xfe utf-8 \xc3",
      "caf\xc3\xa9 \xf0\x9f\x94\x92",
  };
  for (const std::string& input : inputs) {
    std::string json = "{\"k\":";
    AppendJsonString(&json, input);
    json += "}";
    for (char c : json) {
      const unsigned char byte = static_cast<unsigned char>(c);
      EXPECT_FALSE(byte < 0x20 || byte == 0x7f) << absl::CEscape(json);
    }
    EXPECT_THAT(json, Not(HasSubstr("\xe2\x80\xae")));
    EXPECT_THAT(json, Not(HasSubstr("\xc2\x9b")));
    AIRLOCK_ASSERT_OK_AND_ASSIGN(FlatJsonObject parsed, ParseFlatJsonObject(json));
    const JsonValue* value = parsed.Find("k");
    ASSERT_NE(value, nullptr);
    EXPECT_TRUE(value->is_string);
    EXPECT_EQ(value->string_value, input) << absl::CEscape(json);
  }
}

TEST(AuditJsonTest, ParsesIntegersAndStrings) {
  AIRLOCK_ASSERT_OK_AND_ASSIGN(
      FlatJsonObject parsed,
      ParseFlatJsonObject(R"({"a":0,"b":-12,"c":"x\u00e9\ud83d\udd12","d":9223372036854775807})"));
  EXPECT_EQ(parsed.Find("a")->int_value, 0);
  EXPECT_EQ(parsed.Find("b")->int_value, -12);
  EXPECT_EQ(parsed.Find("c")->string_value, "x\xc3\xa9\xf0\x9f\x94\x92");
  EXPECT_EQ(parsed.Find("d")->int_value, INT64_MAX);
  EXPECT_EQ(parsed.Find("e"), nullptr);
}

TEST(AuditJsonTest, RejectsEverythingOutsideTheSubset) {
  const char* bad[] = {
      "",
      "{",
      "}",
      "[]",
      "{ }",
      "{\"a\": 1}",
      "{\"a\":1 }",
      "{\"a\":1,}",
      "{\"a\":1}x",
      "{\"a\":1}\n",
      "{\"a\":1,\"a\":2}",
      "{\"a\":1.5}",
      "{\"a\":01}",
      "{\"a\":-0}",
      "{\"a\":-}",
      "{\"a\":true}",
      "{\"a\":null}",
      "{\"a\":{\"b\":1}}",
      "{\"a\":[1]}",
      "{\"a\":9223372036854775808}",
      "{\"a\":99999999999999999999999}",
      "{\"a\":\"unterminated}",
      "{\"a\":\"raw\ttab\"}",
      "{\"a\":\"bad \\q escape\"}",
      "{\"a\":\"\\u12\"}",
      "{\"a\":\"\\ud800\"}",
      "{\"a\":\"\\ud800\\u0041\"}",
      "{\"a\":\"\\udc00\"}",
      "{a:1}",
  };
  for (const char* text : bad) {
    EXPECT_THAT(ParseFlatJsonObject(text), StatusIs(absl::StatusCode::kInvalidArgument))
        << absl::CEscape(text);
  }
}

TEST(AuditJsonTest, DisplayEscapingNeutralizesTerminalControls) {
  EXPECT_EQ(EscapeForDisplay("a\x1b[31mb"), "a\\x1b[31mb");
  EXPECT_EQ(EscapeForDisplay("x\ny"), "x\\ny");
  EXPECT_EQ(EscapeForDisplay("back\\slash"), "back\\\\slash");
  EXPECT_EQ(EscapeForDisplay("rtl\xe2\x80\xae" "evil"), "rtl\\u{202e}evil");
  EXPECT_EQ(EscapeForDisplay("bad\xff"), "bad\\xff");
  EXPECT_EQ(EscapeForDisplay("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(EscapeForDisplay("c1\xc2\x9b"), "c1\\x9b");
}

TEST(AuditFormatTest, SplitsTheMacByPosition) {
  const std::string mac(64, 'a');
  const std::string line = "{\"v\":1,\"detail\":\",\\\"mac\\\":\\\"\"" + std::string(",\"mac\":\"") +
                           mac + "\"}";
  absl::string_view prefix, hex;
  ASSERT_TRUE(SplitSignedLine(line, &prefix, &hex));
  EXPECT_EQ(hex, mac);
  EXPECT_EQ(prefix, line.substr(0, line.size() - kMacSuffixSize));
  EXPECT_FALSE(SplitSignedLine(line + " ", &prefix, &hex));
  std::string upper = line;
  upper[upper.size() - 3] = 'A';
  EXPECT_FALSE(SplitSignedLine(upper, &prefix, &hex));
}

TEST(AuditFormatTest, TimesHaveOneFixedShape) {
  const std::string time = FormatAuditTime(absl::FromUnixMicros(1764468732123456));
  EXPECT_EQ(time, "2025-11-30T02:12:12.123456Z");
  EXPECT_TRUE(IsAuditTime(time));
  EXPECT_FALSE(IsAuditTime("2025-11-30T02:12:12Z"));
  EXPECT_FALSE(IsAuditTime("2025-11-30 02:12:12.123456Z"));
}

TEST(AuditRecordTest, DigestFieldsAcceptOnlyDigests) {
  AuditRecord record;
  record.event = AuditEvent::kResult;
  record.content_sha256 = "the file's content itself";
  EXPECT_THAT(SerializeRecordFields(record), StatusIs(absl::StatusCode::kInvalidArgument));
  record.content_sha256 = std::string(64, 'f');
  record.previous_sha256 = "absent";
  EXPECT_THAT(SerializeRecordFields(record), IsOk());
  record.command_sha256 = "rm -rf /";
  EXPECT_THAT(SerializeRecordFields(record), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(AuditRecordTest, ControlEventsAreTheLogsOwn) {
  for (AuditEvent event : {AuditEvent::kEpochClose, AuditEvent::kRecovery, AuditEvent::kSeal}) {
    AuditRecord record;
    record.event = event;
    EXPECT_THAT(SerializeRecordFields(record), StatusIs(absl::StatusCode::kInvalidArgument));
  }
}

TEST(AuditRecordTest, LongFieldsAreCutAndSaySo) {
  AuditRecord record;
  record.target = "/" + std::string(10000, 'p');
  AIRLOCK_ASSERT_OK_AND_ASSIGN(std::string fields, SerializeRecordFields(record));
  EXPECT_LT(fields.size(), 4300u);
  EXPECT_THAT(fields, HasSubstr("[cut 5905 bytes]"));
}

TEST(AuditRecordTest, EventNamesRoundTrip) {
  for (AuditEvent event :
       {AuditEvent::kRunStart, AuditEvent::kRunEnd, AuditEvent::kRequest, AuditEvent::kDecision,
        AuditEvent::kApprovalAsked, AuditEvent::kApprovalAnswered, AuditEvent::kResult,
        AuditEvent::kPresetChanged, AuditEvent::kProtocolError, AuditEvent::kEpochClose,
        AuditEvent::kRecovery, AuditEvent::kSeal}) {
    EXPECT_EQ(AuditEventFromName(AuditEventName(event)), event);
  }
  EXPECT_EQ(AuditEventFromName("nope"), std::nullopt);
}

}  // namespace
}  // namespace airlock::broker::audit
