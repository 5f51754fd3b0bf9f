#!/usr/bin/env python3
"""Trims kafka-protocol's generated messages to the APIs cauda speaks.

Usage: python3 vendor/trim-kafka-protocol.py UPSTREAM_SRC vendor/kafka-protocol/src

UPSTREAM_SRC is the `src` folder of the crate as published (e.g.
~/.cargo/registry/src/*/kafka-protocol-0.18.0/src). Writes DEST/messages.rs
and copies into DEST/messages/ only the request and response of each API in
KEEP plus the two headers; everything else of the crate is left as it is.
See vendor/README.md for why and how to undo it.
"""

import re
import shutil
import sys
from pathlib import Path

# The APIs cauda sends (src/probe/broker/wire.rs, `calls!`).
KEEP = [
    "Produce",
    "Fetch",
    "ListOffsets",
    "Metadata",
    "ApiVersions",
    "CreateTopics",
    "DeleteTopics",
    "DescribeConfigs",
]
HEADERS = ["request_header", "response_header"]


def snake(name):
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def modules():
    return HEADERS + [snake(a) + side for a in KEEP for side in ("_request", "_response")]


def trim(text):
    keep_mods = set(modules())
    keep_types = {a + side for a in KEEP for side in ("Request", "Response")}
    lines = text.split("\n")
    out = []
    i = 0
    arm = re.compile(r"^(\s+)(?:x if x == )?ApiKey::(\w+)\b")
    skip_indent = None
    while i < len(lines):
        line = lines[i]
        # The wrapping enums (feature messages_enums) over every API: dropped
        # with the feature, up to the first newtype.
        if line.startswith("/// Wrapping enum for all requests"):
            while not lines[i].startswith("/// The replica id of the current leader"):
                i += 1
            continue
        if line == '#[cfg(feature = "messages_enums")]' and lines[i + 1].startswith(
            "#[cfg(any("
        ) and lines[i + 2].startswith("use "):
            i += 3
            continue
        m = re.match(r"^pub mod (\w+);$", line)
        if m:
            if m.group(1) not in keep_mods:
                i += 3  # pub mod, pub use, blank line
                continue
        m = re.match(r"^impl Request for (\w+) \{$", line)
        if m and m.group(1) not in keep_types:
            out.pop()  # its #[cfg(...)]
            while lines[i] != "}":
                i += 1
            i += 2  # the closing brace and the blank line
            continue
        # ApiKey's variants: a doc line then `Name = key,`.
        m = re.match(r"^    /// API key for request (\w+)Request$", line)
        if m and m.group(1) not in KEEP:
            i += 2
            continue
        # ApiKey's match arms, one line or a block.
        if skip_indent is not None:
            ind = len(line) - len(line.lstrip())
            if ind > skip_indent or (ind == skip_indent and line.strip() == "}"):
                i += 1
                continue
            skip_indent = None
        m = arm.match(line)
        if m and m.group(2) not in KEEP and "=>" in line or (
            m and m.group(2) not in KEEP and lines[i + 1].strip().startswith("=>")
        ):
            skip_indent = len(m.group(1))
            i += 1
            continue
        out.append(line)
        i += 1
    note = (
        "// cauda: trimmed to the APIs cauda sends by vendor/trim-kafka-protocol.py;\n"
        "// ApiKey names only those, and `ApiKey::try_from` of any other key is Err(())\n"
        "// (vendor/README.md).\n"
    )
    text = "\n".join(out)
    mark = "should not be edited directly.\n"
    return text.replace(mark, mark + note, 1)


def main():
    src, dest = Path(sys.argv[1]), Path(sys.argv[2])
    (dest / "messages.rs").write_text(trim((src / "messages.rs").read_text()))
    shutil.rmtree(dest / "messages")
    (dest / "messages").mkdir()
    for m in modules():
        shutil.copy(src / "messages" / f"{m}.rs", dest / "messages" / f"{m}.rs")


if __name__ == "__main__":
    main()
