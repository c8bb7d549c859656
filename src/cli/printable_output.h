#pragma once

// Everything perfgate prints reaches a terminal printable: reports, tables
// and log lines carry names, URLs and header values from the user, and an ESC
// or NUL among them would move the cursor, recolour the screen or forge a line.

#include <memory>
#include <ostream>
#include <streambuf>
#include <string>

namespace perfgate {

/// A stream buffer that passes text on with printable_lines(): line feeds and
/// tabs stay, other control bytes become `\xHH`. Buffers up to a line feed (or
/// a flush), so that an escape is judged whole.
class PrintableStreambuf : public std::streambuf {
 public:
  explicit PrintableStreambuf(std::streambuf* out) : out_(out) {}
  ~PrintableStreambuf() override { flush_line(true, true); }
  PrintableStreambuf(const PrintableStreambuf&) = delete;
  PrintableStreambuf& operator=(const PrintableStreambuf&) = delete;
  /// errno of the first write or flush that failed below; 0 when none did. A
  /// full disk fails a write in the middle of a command, and errno is long gone
  /// by its end.
  int write_error() const { return write_error_; }

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  void flush_line(bool all, bool last = false);

  void note_failure();

  std::streambuf* out_;
  std::string pending_;
  int write_error_ = 0;
};

/// For the life of the guard, `stream` writes through a PrintableStreambuf.
class PrintableOutput {
 public:
  explicit PrintableOutput(std::ostream& stream);
  ~PrintableOutput();
  PrintableOutput(const PrintableOutput&) = delete;
  PrintableOutput& operator=(const PrintableOutput&) = delete;
  /// See PrintableStreambuf::write_error().
  int write_error() const { return filter_->write_error(); }

 private:
  std::ostream& stream_;
  std::streambuf* original_;
  std::unique_ptr<PrintableStreambuf> filter_;
};

/// Log lines as `[HH:MM:SS] message`, the message made printable.
void use_printable_log_pattern();

}  // namespace perfgate
