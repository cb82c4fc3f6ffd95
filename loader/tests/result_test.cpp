// Status and Result<T>: ok() and error() never disagree; messages read like Python's.
#include <gtest/gtest.h>

#include <string>

#include "fatpte/fatpte.hpp"

namespace fatpte {
namespace {

Status check_positive(int v) {
  FATPTE_CHECK(v > 0, Error::INVALID_ARGUMENT, 4, "arg", "value %d is not positive", v);
  return Status();
}

Status chain(int v) {
  FATPTE_RETURN_IF_ERROR(check_positive(v));
  return fail(Error::IO_ERROR, kNoOffset, "", "reached the end with %d", v);
}

TEST(Result, ValueMeansOk) {
  Result<int> r(5);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.error().ok());
  EXPECT_EQ(r.value(), 5);
}

TEST(Result, FailedStatusMeansNotOk) {
  Result<int> r(fail(Error::BAD_MAGIC, 0, "header.magic", "bad"));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Error::BAD_MAGIC);
}

TEST(Result, OkStatusWithoutValueIsAnErrorNotALie) {
  Result<int> r{Status()};
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.error().ok());
  EXPECT_EQ(r.error().code(), Error::INVALID_ARGUMENT);
}

TEST(Status, MacrosReturnTheFirstFailure) {
  Status s = chain(-3);
  EXPECT_EQ(s.code(), Error::INVALID_ARGUMENT);
  EXPECT_EQ(s.offset(), 4u);
  EXPECT_EQ(s.message(), "value -3 is not positive");
  EXPECT_EQ(chain(2).code(), Error::IO_ERROR);
}

TEST(Status, DescribeReadsLikePython) {
  Status s = fail(Error::PAYLOAD_OUT_OF_BOUNDS, 0x48, "entries[2].size", "payload ends at 0x1200");
  EXPECT_EQ(s.describe(), "E0203 at 0x48 (entries[2].size): payload ends at 0x1200");
  EXPECT_EQ(Status().describe(), "OK");
  EXPECT_EQ(fail(Error::IO_ERROR, kNoOffset, "", "x").describe(), "E0801: x");
}

TEST(ErrorTable, EveryEnumeratorHasARowWithItsTag) {
  for (const ErrorInfo& info : kErrorInfo) {
    char tag[8];
    std::snprintf(tag, sizeof tag, "E%04d", info.code);
    EXPECT_STREQ(info.tag, tag);
    EXPECT_EQ(error_info(static_cast<Error>(info.code)), &info);
  }
  EXPECT_EQ(error_info(static_cast<Error>(12345)), nullptr);
  EXPECT_STREQ(error_tag(Error::BAD_MAGIC), "E0101");
}

}  // namespace
}  // namespace fatpte
