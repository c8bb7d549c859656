#include "printable_output.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <cerrno>

#include "perfgate/core/printable.h"

namespace perfgate {

PrintableStreambuf::int_type PrintableStreambuf::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  pending_.push_back(traits_type::to_char_type(c));
  if (c == '\n') flush_line(false);
  return c;
}

std::streamsize PrintableStreambuf::xsputn(const char* s, std::streamsize n) {
  pending_.append(s, static_cast<size_t>(n));
  if (pending_.find('\n') != std::string::npos) flush_line(false);
  return n;
}

// Fails once any write below failed, not only this flush: a full device
// fails a write the stdio buffer made on its own, and a later flush of the
// emptied buffer succeeds. errno names the first failure.
int PrintableStreambuf::sync() {
  flush_line(true);
  errno = 0;
  int rc = out_->pubsync();
  if (rc != 0) note_failure();
  if (write_error_ == 0) return 0;
  errno = write_error_;
  return -1;
}

void PrintableStreambuf::note_failure() {
  if (write_error_ == 0) write_error_ = errno != 0 ? errno : EIO;
}

// Up to the last line feed, or all that is pending. A trailing 0xc2 waits
// for its next byte (with it, it may be a C1 control) unless this is the end.
void PrintableStreambuf::flush_line(bool all, bool last) {
  size_t end = all ? pending_.size() : pending_.rfind('\n') + 1;
  if (end == 0 || end > pending_.size()) return;
  if (!last && static_cast<unsigned char>(pending_[end - 1]) == 0xc2) --end;
  std::string text = printable_lines(std::string_view(pending_).substr(0, end));
  errno = 0;
  auto size = static_cast<std::streamsize>(text.size());
  if (out_->sputn(text.data(), size) != size) note_failure();
  pending_.erase(0, end);
}

PrintableOutput::PrintableOutput(std::ostream& stream)
    : stream_(stream),
      original_(stream.rdbuf()),
      filter_(std::make_unique<PrintableStreambuf>(original_)) {
  stream_.rdbuf(filter_.get());
}

PrintableOutput::~PrintableOutput() {
  stream_.flush();
  stream_.rdbuf(original_);
}

namespace {

class PrintablePayload : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string text = printable(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<PrintablePayload>();
  }
};

}  // namespace

void use_printable_log_pattern() {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<PrintablePayload>('*').set_pattern("%^[%H:%M:%S] %*%$");
  spdlog::default_logger()->set_formatter(std::move(formatter));
}

}  // namespace perfgate
