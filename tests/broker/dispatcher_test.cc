#include "broker/dispatcher.h"

#include "broker/fs/file_tools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace airlock::broker {
namespace {

using ::testing::HasSubstr;

class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteFileOrDie(workspace_.Child("a.txt"), "alpha");
    FileToolsOptions options;
    options.roots = {workspace_.path()};
    options.reads_confined_to_roots = true;  // reads outside are allowed by default (SPEC §1)
    auto files = FileTools::Create(options);
    ASSERT_TRUE(files.ok()) << files.status();
    files_ = std::move(*files);
    context_.set_preset(v1::PRESET_READ_ONLY);
    dispatcher_ = std::make_unique<Dispatcher>(*files_, [this] { return context_; });
  }

  testing::TempDir workspace_;
  std::unique_ptr<FileTools> files_;
  v1::Context context_;
  std::unique_ptr<Dispatcher> dispatcher_;
};

TEST_F(DispatcherTest, ReadAnswersWithTheSameId) {
  v1::Request request;
  request.set_id(42);
  request.mutable_read()->set_path("a.txt");
  v1::Response response = dispatcher_->Handle(request);
  EXPECT_EQ(response.id(), 42u);
  ASSERT_TRUE(response.has_read()) << response.DebugString();
  EXPECT_EQ(response.read().content(), "alpha");
}

TEST_F(DispatcherTest, EmptyBodyIsInvalidArgumentNamingThePreset) {
  v1::Request request;
  request.set_id(7);
  v1::Response response = dispatcher_->Handle(request);
  EXPECT_EQ(response.id(), 7u);
  ASSERT_TRUE(response.has_error());
  EXPECT_EQ(response.error().code(), v1::INVALID_ARGUMENT);
  EXPECT_THAT(response.error().message(), HasSubstr("preset read-only"));
}

TEST_F(DispatcherTest, GetContextReturnsTheCurrentContext) {
  context_.set_session_id("abc");
  v1::Request request;
  request.set_id(1);
  request.mutable_get_context();
  v1::Response response = dispatcher_->Handle(request);
  ASSERT_TRUE(response.has_context());
  EXPECT_EQ(response.context().session_id(), "abc");
}

TEST_F(DispatcherTest, ReadOutsideTheWorkspaceIsRefused) {
  v1::Request request;
  request.set_id(3);
  request.mutable_list()->set_path("/");
  v1::Response response = dispatcher_->Handle(request);
  ASSERT_TRUE(response.has_error());
  EXPECT_EQ(response.error().code(), v1::OUTSIDE_SANDBOX);
}

}  // namespace
}  // namespace airlock::broker
