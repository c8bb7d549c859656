// PrintableStreambuf: what perfgate writes to stdout reaches it printable,
// line feeds and tabs kept, even when an escape is cut across two writes.
#include "cli/printable_output.h"

#include <gtest/gtest.h>

#include <sstream>

namespace perfgate {
namespace {

TEST(PrintableOutputTest, Row10_ControlBytesBecomeEscapesAndLinesStay) {
  std::ostringstream sink;
  {
    std::ostream out(sink.rdbuf());
    PrintableOutput guard(out);
    out << "name \x1b[2J\x07"
        << "\n\tnext\r\n";
    out << "C1 \xc2" << std::flush;  // a CSI cut in two writes
    out << "\x9b"
        << "31m, and \xc3\xa9 stays\n";
  }
  EXPECT_EQ(sink.str(), "name \\x1b[2J\\x07\n\tnext\\x0d\nC1 \\xc2\\x9b31m, and \xc3\xa9 stays\n");
}

TEST(PrintableOutputTest, WhatIsLeftIsWrittenAtTheEnd) {
  std::ostringstream sink;
  {
    std::ostream out(sink.rdbuf());
    PrintableOutput guard(out);
    out << "no line feed \x1b";
  }
  EXPECT_EQ(sink.str(), "no line feed \\x1b");
}

}  // namespace
}  // namespace perfgate
