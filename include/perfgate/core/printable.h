#pragma once

#include <string>
#include <string_view>

namespace perfgate {

/// `text` made safe for a terminal and one log line: every control byte (ESC,
/// NUL, CR, LF, DEL, ...) becomes a visible escape like `\x1b`; printable
/// ASCII and UTF-8 sequences stay as they are. A name or URL from the user can
/// then neither move the cursor, recolour the screen nor forge a second line.
std::string printable(std::string_view text);

/// The same for text of several lines (a report, a table): line feeds and
/// tabs stay, every other control byte becomes its escape.
std::string printable_lines(std::string_view text);

}  // namespace perfgate
