#!/usr/bin/python3
"""Validates JSON files (// and /* */ comments allowed) against a JSON Schema 2020-12.

Usage: validate_json_schema.py SCHEMA FILE...

Exits 0 when every file is valid, 1 when any is not (each error printed on
stderr as FILE: PATH: MESSAGE), 2 when the schema or a file cannot be read.
Needs python3-jsonschema >= 4 (Draft202012Validator), as on Debian 12.
"""

import json
import sys

try:
    from jsonschema import Draft202012Validator
except ImportError as error:  # pragma: no cover - depends on the host
    sys.exit(f"validate_json_schema: needs python3-jsonschema >= 4 ({error})")


def strip_comments(text):
    """Removes // and /* */ comments outside strings, keeping newlines so that
    the JSON parser's line numbers still match the file."""
    out = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ValueError("unterminated /* comment")
            out.append("\n" * text.count("\n", i, end))
            i = end + 2
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.loads(strip_comments(f.read()))


def where(error):
    return "/".join(str(part) for part in error.absolute_path) or "(root)"


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        schema = load(argv[1])
        Draft202012Validator.check_schema(schema)
    except Exception as error:  # any failure here means no verdict at all
        print(f"{argv[1]}: not a usable JSON Schema: {error}", file=sys.stderr)
        return 2
    validator = Draft202012Validator(schema)
    status = 0
    for path in argv[2:]:
        try:
            document = load(path)
        except (OSError, ValueError) as error:
            print(f"{path}: cannot read as JSON: {error}", file=sys.stderr)
            return 2
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        for error in errors:
            print(f"{path}: {where(error)}: {error.message}", file=sys.stderr)
        if errors:
            status = 1
        else:
            print(f"{path}: valid")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
