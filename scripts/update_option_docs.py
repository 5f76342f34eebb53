#!/usr/bin/env python3
"""Rewrites the option tables of docs/ from the option table (src/options/option_table.cpp).

Each block between "<!-- mogserve options --surface S -->" and "<!-- end mogserve options -->" in
docs/*.md becomes the output of `mogserve options --surface S`. tests/options/option_table_test.cpp
fails when a block differs, naming this script.

usage: scripts/update_option_docs.py [BUILD_DIR]   (default: build)
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build"
BLOCK = re.compile(r"(<!-- mogserve options --surface (\w+) -->\n)(.*?)(<!-- end mogserve options -->)",
                   re.S)


def table(surface):
    return subprocess.run([str(BUILD / "mogserve"), "options", "--surface", surface],
                          check=True, capture_output=True, text=True).stdout


for doc in sorted((ROOT / "docs").glob("*.md")):
    text = doc.read_text()
    updated = BLOCK.sub(lambda m: m.group(1) + table(m.group(2)) + m.group(4), text)
    if updated != text:
        doc.write_text(updated)
        print(f"updated {doc.relative_to(ROOT)}")
