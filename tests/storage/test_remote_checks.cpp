// What the remote stores check without a server: a response's range and ETag, a listing page,
// the encoding that SigV4 signs.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include <stoke/storage/remote/http_store.hpp>

#include <stoke/storage/remote/detail/ranged_get.hpp>
#include <stoke/storage/remote/detail/s3_listing.hpp>
#include <stoke/storage/remote/detail/uri_encode.hpp>

namespace {

namespace detail = stoke::storage::detail;

detail::CurlResponse answer(long status, std::string content_range, std::string etag) {
  detail::CurlResponse response;
  response.status = status;
  if (!content_range.empty()) response.headers["content-range"] = std::move(content_range);
  if (!etag.empty()) response.headers["etag"] = std::move(etag);
  return response;
}

TEST(RemoteChecks, AResponseMustStartWhereAskedAndComeFromTheSameVersion) {
  detail::RemoteObject object;
  object.etag = "abc";
  EXPECT_EQ(detail::response_mismatch(answer(206, "bytes 100-199/1000", "\"abc\""), object, 100),
            "");
  EXPECT_EQ(detail::response_mismatch(answer(200, "bytes 100-199/1000", ""), object, 100), "");
  EXPECT_EQ(detail::response_mismatch(answer(200, "", "\"abc\""), object, 0), "");
  EXPECT_NE(detail::response_mismatch(answer(206, "bytes 0-99/1000", ""), object, 100)
                .find("answered the range from 100 with 'bytes 0-99/1000'"),
            std::string::npos);
  EXPECT_NE(detail::response_mismatch(answer(200, "", ""), object, 100).find("ignored the Range"),
            std::string::npos);
  EXPECT_NE(detail::response_mismatch(answer(206, "bytes 100-199/1000", "\"def\""), object, 100)
                .find("changed while read (ETag 'def', was 'abc')"),
            std::string::npos);
}

TEST(RemoteChecks, RetriesTransportFailuresAndServerErrorsOnly) {
  detail::CurlResponse response;
  response.code = CURLE_RECV_ERROR;
  EXPECT_TRUE(detail::is_retryable(response));
  response.code = CURLE_WRITE_ERROR;  // more bytes than asked: a wrong answer, not a fault
  EXPECT_FALSE(detail::is_retryable(response));
  response.code = CURLE_OK;
  for (const long status : {500L, 503L, 429L, 408L}) {
    response.status = status;
    EXPECT_TRUE(detail::is_retryable(response)) << status;
  }
  for (const long status : {400L, 403L, 404L}) {
    response.status = status;
    EXPECT_FALSE(detail::is_retryable(response)) << status;
  }
}

TEST(RemoteChecks, ReadsAListingPageWithEntitiesAndItsToken) {
  const std::string xml =
      "<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>true</IsTruncated>"
      "<Contents><Key>a&amp;b.bin</Key><ETag>&#34;e1&#34;</ETag><Size>12</Size></Contents>"
      "<Contents><Key>c&lt;d.bin</Key><ETag>&quot;e2&quot;</ETag><Size>0</Size></Contents>"
      "<NextContinuationToken>tok/en=</NextContinuationToken></ListBucketResult>";
  const auto page = detail::parse_s3_listing(xml, "s3://b/");
  ASSERT_EQ(page.objects.size(), 2u);
  EXPECT_EQ(page.objects[0], (stoke::storage::ObjectInfo{"a&b.bin", 12, "e1"}));
  EXPECT_EQ(page.objects[1], (stoke::storage::ObjectInfo{"c<d.bin", 0, "e2"}));
  EXPECT_EQ(page.next_token, "tok/en=");
  EXPECT_THROW((void)detail::parse_s3_listing("<Error><Code>x</Code></Error>", "s3://b/"),
               stoke::InputError);
  EXPECT_THROW(
      (void)detail::parse_s3_listing(
          "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", "s3://b/"),
      stoke::InputError);
}

TEST(RemoteChecks, EncodesAsSigV4Canonicalises) {
  EXPECT_EQ(detail::uri_encode("odd keys/a+b=c,d~_.-", true), "odd%20keys/a%2Bb%3Dc%2Cd~_.-");
  EXPECT_EQ(detail::uri_encode("a/b", false), "a%2Fb");
  EXPECT_EQ(detail::uri_encode("\xC3\xA9", true), "%C3%A9");
}

TEST(RemoteChecks, AStoreMadeBeforeForkRefusesWorkInTheChildInsteadOfHanging) {
  const stoke::storage::HttpStore store("http://127.0.0.1:9");
  const ::pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 1;
    try {
      (void)store.read_range("x", 0, 1);
    } catch (const stoke::StateError&) {
      code = 42;
    } catch (...) {
    }
    std::_Exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 42);
}

}  // namespace
