#!/usr/bin/env python3
"""scripts/check_layout.py -- keeps src/'s folders honest (scripts/lint.sh runs it, so CI does).

Every C file under src/ sits in one of the folders below, and an #include may only reach a folder
at the same level or lower in LAYERS: so no include runs upward and no circle joins two folders.
Folders on one level (engine, delivery, stream) do not include each other: main.c wires them
together through hooks. main.c is the top: it may include anything and nothing includes it.
Each library stays behind its modules (LIBRARIES). Prints one line per finding and exits 1 if any.
Usage: python3 scripts/check_layout.py   (from anywhere inside the repository)
"""
import os
import re
import sys

# Lowest first. "src" is src/'s own files besides main.c: config and metrics, which every layer
# above the database may read (config.c checks a database URL, metrics.c names retention kinds).
LAYERS = [
    ["core"],
    ["domain"],
    ["codec"],
    ["db"],
    ["src"],
    ["mirror"],
    ["engine", "delivery", "stream"],
    ["http"],
    ["handlers"],
]
RANK = {folder: i for i, level in enumerate(LAYERS) for folder in level}

# Library headers and the files allowed to include them (folder names or folder/file).
LIBRARIES = {
    "libpq-fe.h": ["db"],
    # hiredis is the protocol (reply reader, command formatter) only: it never owns a socket, since
    # Debian 12's 0.14 has no TLS. core/transport.c owns the wire; mirror/redis_conn.c joins them.
    "hiredis/": ["mirror", "engine/expiry.c"],
    "microhttpd.h": ["http", "handlers"],
    "openssl/": ["core/crypto.c", "core/crypto_ec.c", "core/transport.c"],
    "libical/": ["domain/recur.c"],
    "curl/": ["delivery/outbound.c", "delivery/webhook.c", "core/redis_url.c"],
}

INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)


def folder_of(rel):
    """'core/log.c' -> 'core'; 'config.c' -> 'src'."""
    return rel.split("/", 1)[0] if "/" in rel else "src"


def allowed(rel, places):
    return any(rel == p or rel.startswith(p + "/") for p in places)


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    src = os.path.join(root, "src")
    files = {}
    for dirpath, _, names in os.walk(src):
        for name in names:
            if name.endswith((".c", ".h", ".def")):
                rel = os.path.relpath(os.path.join(dirpath, name), src)
                files[rel] = open(os.path.join(dirpath, name), encoding="utf-8").read()
    by_name = {}
    problems = []
    for rel in files:
        by_name.setdefault(os.path.basename(rel), []).append(rel)
        if folder_of(rel) not in RANK:
            problems.append(f"src/{rel}: not in a known folder (scripts/check_layout.py LAYERS)")
    for name, rels in by_name.items():
        if len(rels) > 1:
            problems.append(f"{name}: two files share the name: " + ", ".join("src/" + r for r in rels))
    for rel, text in sorted(files.items()):
        here = folder_of(rel)
        for kind, inc in INCLUDE.findall(text):
            if kind == "<":
                for lib, places in LIBRARIES.items():
                    if inc.startswith(lib) and not allowed(rel, places):
                        problems.append(f"src/{rel}: includes <{inc}>, kept to " + ", ".join(places))
                continue
            target = by_name.get(os.path.basename(inc))
            if not target:
                continue  # a generated file (version.c's header lives beside it) or a test's
            there = folder_of(target[0])
            if target[0] == "main.c":
                problems.append(f"src/{rel}: includes main.c's code")
            if rel == "main.c" or there == here or here not in RANK or there not in RANK:
                continue
            if RANK[there] > RANK[here]:
                problems.append(f"src/{rel} ({here}) includes {inc} ({there}): an include upward")
            elif RANK[there] == RANK[here]:
                problems.append(f"src/{rel} ({here}) includes {inc} ({there}): folders of one "
                                "level meet only in main.c")
    for p in problems:
        print(p)
    if problems:
        print(f"check_layout: {len(problems)} finding(s)")
        return 1
    print(f"check_layout: {len(files)} files in {len({folder_of(r) for r in files})} folders, "
          "includes point down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
