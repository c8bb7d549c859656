#include "perfgate/load/http_response_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace perfgate {
namespace {

using Responses = std::vector<HttpResponseParser::Response>;

const std::string kLength = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
const std::string kChunked =
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
const std::string kClose = "HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno";

// Feeds `bytes` cut at `cut` (two reads), returning what came out.
Responses feed_split(const std::string& bytes, size_t cut, bool* ok = nullptr) {
  HttpResponseParser parser;
  Responses done;
  bool a = parser.feed(std::string_view(bytes).substr(0, cut), done);
  bool b = parser.feed(std::string_view(bytes).substr(cut), done);
  if (ok) *ok = a && b;
  return done;
}

TEST(HttpResponseParser, ContentLengthResponse) {
  HttpResponseParser parser;
  Responses done;
  ASSERT_TRUE(parser.feed(kLength, done));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, 200);
  EXPECT_TRUE(done[0].keep_alive);
  EXPECT_TRUE(parser.idle());
}

TEST(HttpResponseParser, EveryByteBoundaryGivesOneResponse) {
  for (const std::string* bytes : {&kLength, &kChunked, &kClose}) {
    for (size_t cut = 0; cut <= bytes->size(); ++cut) {
      bool ok = false;
      Responses done = feed_split(*bytes, cut, &ok);
      EXPECT_TRUE(ok) << "cut at " << cut;
      ASSERT_EQ(done.size(), 1u) << "cut at " << cut << " of " << *bytes;
    }
  }
}

TEST(HttpResponseParser, NothingBeforeTheLastByte) {
  HttpResponseParser parser;
  Responses done;
  ASSERT_TRUE(parser.feed(std::string_view(kChunked).substr(0, kChunked.size() - 1), done));
  EXPECT_TRUE(done.empty());
  EXPECT_FALSE(parser.idle());
  ASSERT_TRUE(parser.feed(std::string_view(kChunked).substr(kChunked.size() - 1), done));
  EXPECT_EQ(done.size(), 1u);
}

TEST(HttpResponseParser, ConnectionCloseIsNotKeepAlive) {
  Responses done = feed_split(kClose, 3);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, 503);
  EXPECT_FALSE(done[0].keep_alive);
  HttpResponseParser old;
  Responses http10;
  ASSERT_TRUE(old.feed("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", http10));
  ASSERT_EQ(http10.size(), 1u);
  EXPECT_FALSE(http10[0].keep_alive);
}

TEST(HttpResponseParser, PipelinedResponsesInOneRead) {
  HttpResponseParser parser;
  Responses done;
  ASSERT_TRUE(parser.feed(kLength + kChunked + kLength + kClose, done));
  ASSERT_EQ(done.size(), 4u);
  EXPECT_EQ(done[3].status, 503);
  EXPECT_FALSE(done[3].keep_alive);
}

TEST(HttpResponseParser, BodyUntilCloseEndsAtFinish) {
  HttpResponseParser parser;
  Responses done;
  ASSERT_TRUE(parser.feed("HTTP/1.1 200 OK\r\n\r\nbody that runs to the end", done));
  EXPECT_TRUE(done.empty());
  ASSERT_TRUE(parser.finish(done));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_FALSE(done[0].keep_alive);
}

TEST(HttpResponseParser, ResponseCutShortIsAnError) {
  HttpResponseParser parser;
  Responses done;
  ASSERT_TRUE(parser.feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhal", done));
  EXPECT_FALSE(parser.finish(done));
  EXPECT_TRUE(done.empty());
  HttpResponseParser idle;
  EXPECT_TRUE(idle.finish(done));  // closed between responses: fine
}

TEST(HttpResponseParser, HeadResponsesHaveNoBody) {
  HttpResponseParser parser;
  parser.set_head_request(true);
  Responses done;
  ASSERT_TRUE(parser.feed("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", done));
  ASSERT_EQ(done.size(), 1u);
  parser.set_head_request(false);
  ASSERT_TRUE(parser.feed(kLength, done));
  EXPECT_EQ(done.size(), 2u);
}

TEST(HttpResponseParser, NoBodyStatusesAndInterimResponses) {
  HttpResponseParser parser;
  Responses done;
  ASSERT_TRUE(parser.feed("HTTP/1.1 204 No Content\r\n\r\n", done));
  ASSERT_TRUE(parser.feed("HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n", done));
  ASSERT_TRUE(parser.feed("HTTP/1.1 100 Continue\r\n\r\n" + kLength, done));
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].status, 204);
  EXPECT_EQ(done[1].status, 304);
  EXPECT_EQ(done[2].status, 200);  // the 100 is not a response of its own
}

// A 304 (or 204, or 1xx) announcing a length has no body all the same: the
// bytes after its headers are the next response, not its body.
TEST(HttpResponseParser, AnnouncedLengthOfABodilessStatusIsIgnored) {
  for (std::string status : {"100 Continue", "204 No Content", "304 Not Modified"}) {
    HttpResponseParser parser;
    Responses done;
    std::string head = "HTTP/1.1 " + status + "\r\nContent-Length: 50\r\n\r\n";
    ASSERT_TRUE(parser.feed(head + kLength + kLength, done)) << status;
    size_t interim = status.starts_with("100") ? 1 : 0;
    ASSERT_EQ(done.size(), 3u - interim) << status;
    EXPECT_EQ(done.back().status, 200) << status;
    EXPECT_TRUE(parser.idle()) << status;
  }
}

TEST(HttpResponseParser, GarbageIsAnErrorUntilReset) {
  HttpResponseParser parser;
  Responses done;
  EXPECT_FALSE(parser.feed("SSH-2.0-OpenSSH\r\n", done));
  EXPECT_TRUE(done.empty());
  parser.reset();
  ASSERT_TRUE(parser.feed(kLength, done));
  EXPECT_EQ(done.size(), 1u);
}

TEST(HttpResponseParser, LargeBodiesAreCountedNotKept) {
  HttpResponseParser parser;
  Responses done;
  ASSERT_TRUE(parser.feed("HTTP/1.1 200 OK\r\nContent-Length: 20000000\r\n\r\n", done));
  std::string block(1 << 20, 'x');
  for (int i = 0; i < 19; ++i) ASSERT_TRUE(parser.feed(block, done));
  EXPECT_TRUE(done.empty());
  ASSERT_TRUE(parser.feed(std::string(20000000 - 19 * block.size(), 'y'), done));
  EXPECT_EQ(done.size(), 1u);
}

}  // namespace
}  // namespace perfgate
