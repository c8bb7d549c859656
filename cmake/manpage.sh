#!/bin/sh
# Writes perfgate.1 from the built binary's own help: `perfgate --help` and
# `perfgate CMD --help` for every subcommand (and theirs), verbatim, so the
# page lists exactly the flags the binary accepts.
# Usage: manpage.sh PERFGATE_BINARY VERSION OUTPUT
set -eu
bin=$1 version=$2 out=$3

# Verbatim roff: the binary's path in "Usage:" as the command's name,
# backslashes escaped, a leading . or ' made literal.
verbatim() {
  printf '.nf\n'
  sed -e 's|^Usage: [^ ]*/perfgate|Usage: perfgate|' -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
  printf '.fi\n'
}

# The names under "Subcommands:" in one help text.
subcommands() {
  awk '/^Subcommands:/ { on = 1; next } on && /^[^ ]/ { on = 0 } on && NF { print $1 }'
}

# One .SS per command, then its subcommands'.
section() {
  help=$("$bin" "$@" --help)
  printf '.SS "perfgate %s"\n' "$*"
  printf '%s\n' "$help" | verbatim
  for sub in $(printf '%s\n' "$help" | subcommands); do section "$@" "$sub"; done
}

main_help=$("$bin" --help)
{
  printf '.TH PERFGATE 1 "" "perfgate %s" "User Commands"\n' "$version"
  printf '.SH NAME\nperfgate \\- a performance gate for CI pipelines\n'
  printf '.SH SYNOPSIS\n.B perfgate\n[\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]\n'
  printf '.SH DESCRIPTION\n'
  printf 'perfgate runs a pinned HTTP benchmark profile against a service, records the results\n'
  printf 'in a SQLite baseline store, compares them with earlier builds and answers with an\n'
  printf 'exit code and JUnit, JSON and Markdown reports.\n'
  printf '.SH OPTIONS\n'
  printf '%s\n' "$main_help" | verbatim
  printf '.SH COMMANDS\n'
  for cmd in $(printf '%s\n' "$main_help" | subcommands); do section "$cmd"; done
  # Kept out of the main help (a helper the demo profile starts), documented here.
  for cmd in demo-server; do
    if "$bin" "$cmd" --help >/dev/null 2>&1; then section "$cmd"; fi
  done
  printf '.SH "EXIT STATUS"\n'
  printf '.TP\n0\npass: every gated metric within its limits\n'
  printf '.TP\n1\nfail: a regression past a fail threshold, or an absolute limit broken\n'
  printf '.TP\n2\nwarn: a change inside the warn band, or an inconclusive (saturated) run\n'
  printf '.TP\n3\nerror: no verdict (bad profile or flags, target unreachable, store unusable)\n'
  printf '.SH FILES\n'
  printf '.TP\n/usr/share/doc/perfgate/examples/\nexample profiles; hello.json gates the embedded demo server\n'
  printf '.TP\n/usr/share/perfgate/schemas/\nJSON Schemas of the profile and of the JSON result\n'
  printf '.SH "SEE ALSO"\n'
  printf '/usr/share/doc/perfgate/README.md, /usr/share/doc/perfgate/profile.md\n'
} >"$out"
