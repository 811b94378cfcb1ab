#!/usr/bin/env python3
"""Every suite that runs in the unit tier carries a time limit.

A suite runs in the unit tier unless its @Suite declaration enables it only for a higher tier
(`.enabled(if: …)`). Such a suite must say `.timeLimit(.minutes(TestTier.unitTestMinutes))`, so a
hung unit test fails in a minute instead of holding the run until CI's own limit. Prints each
suite without one (file and line) and exits 1; silent and 0 when all have one.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def suites(text):
    """Yields (line, arguments) of each @Suite(…) in `text`."""
    for match in re.finditer(r'^[ \t]*@Suite\(', text, re.M):
        depth, index, in_string = 1, match.end(), False
        while depth:
            char = text[index]
            if in_string:
                if char == '\\':
                    index += 1
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == '(':
                depth += 1
            elif char == ')':
                depth -= 1
            index += 1
        yield text.count('\n', 0, match.start()) + 1, text[match.end():index - 1]


def main():
    missing = []
    for path in sorted((ROOT / 'Tests').rglob('*.swift')):
        for line, arguments in suites(path.read_text()):
            if 'enabled(if' not in arguments and '.timeLimit(' not in arguments:
                missing.append(f'{path.relative_to(ROOT)}:{line}')
    for place in missing:
        print(f'{place}: a unit-tier suite without .timeLimit(.minutes(TestTier.unitTestMinutes))', file=sys.stderr)
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
