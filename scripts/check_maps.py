#!/usr/bin/env python3
"""scripts/check_maps.py -- keeps the repository's maps true; run by scripts/lint.sh (so by CI).

Three checks, each failure one line naming the file and the item:

  sources   every .c and .h under src/ (recursively) is named in HACKING.md by its file name; a
            header counts as named when the .c of its pair (same folder, same stem) is, since
            HACKING.md walks modules. The other way round, every foo.c or foo.h HACKING.md names
            must exist somewhere in the repository.
  settings  every environment variable the binary reads is documented in docs/configuration.md,
            and every TOCSIN_* setting documented there is read. "Read" means a getenv() or
            secure_getenv() call with a string literal in src/, or a row of the int_settings[]
            table of the file whose loop passes the row's name to getenv(); a getenv() of anything
            else fails the check, since its variable cannot be known. A TOCSIN_* setting is
            documented by a table row whose first cell names it; for a row of int_settings[] the
            row's default and bounds must be the table's. Variables outside TOCSIN_* need only be
            named in the document. Comments are ignored, so a getenv() in one counts for nothing.
  links     every relative link of README.md, HACKING.md and docs/**/*.md (inline links, images
            and reference definitions, outside code) leads to an existing file or folder, and a
            #fragment to a heading of the Markdown file it names, by GitHub's slug rules (ATX
            headings only: the documents use no underlined ones).

Standard library only. Usage: python3 scripts/check_maps.py [--self-test | repository root]
(--self-test runs the checks over small trees made to fail each way, so a check that can no longer
fail is noticed.)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))  # run() sets it
CONFIG_DOC = "docs/configuration.md"
HACKING = "HACKING.md"

problems = []


def problem(where, what):
    problems.append(f"{where}: {what}")


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def repo_files():
    """The files of the work tree: git's tracked and new ones (what a clone with the work in
    progress has, without build trees or .local); outside git, every file under ROOT."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, check=True).stdout
        listed = [f for f in out.decode().split("\0") if f]
        return [f for f in listed if os.path.isfile(os.path.join(ROOT, f))]
    except (OSError, subprocess.CalledProcessError):
        return [os.path.relpath(os.path.join(d, n), ROOT)
                for d, _, names in os.walk(ROOT) for n in names]


# ---- sources ---------------------------------------------------------------------------------

def c_sources(files):
    return sorted(f for f in files if f.startswith("src" + os.sep) and f.endswith((".c", ".h")))


def named_in(text, name):
    return re.search(r"(?<![\w.*-])" + re.escape(name) + r"(?![\w])", text) is not None


def check_sources(files):
    hacking = read(HACKING)
    sources = c_sources(files)
    for src in sources:
        name = os.path.basename(src)
        if named_in(hacking, name):
            continue
        if name.endswith(".h"):
            pair = src[:-2] + ".c"
            if pair in sources and named_in(hacking, os.path.basename(pair)):
                continue
        problem(HACKING, f"does not name {src} (the source walk must name every file of src/)")
    basenames = {os.path.basename(f) for f in files}
    for m in re.finditer(r"(?<![\w*<>.-])([A-Za-z0-9_]+\.[ch])(?![\w*])", hacking):
        if m.group(1) not in basenames:
            line = hacking.count("\n", 0, m.start()) + 1
            problem(f"{HACKING}:{line}", f"names {m.group(1)}, which no file of the repository is")
    return len(sources)


# ---- settings --------------------------------------------------------------------------------

def strip_c_comments(text):
    """Comments become blanks of the same lines (string literals are kept as they are)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


INT_ROW = re.compile(r'\{\s*"(TOCSIN_[A-Z0-9_]+)"\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*,')


def int_settings(rel, code):
    """The rows of an int_settings[] table: name -> (default, min, max); None without a table."""
    m = re.search(r"int_settings\[\]\s*=\s*\{(.*?)\n\};", code, re.S)
    if m is None:
        return None
    rows = {r.group(1): tuple(int(x) for x in r.group(2, 3, 4))
            for r in INT_ROW.finditer(m.group(1))}
    for name in re.findall(r'\{\s*"(TOCSIN_[A-Z0-9_]+)"', m.group(1)):
        if name not in rows:
            problem(rel, f"int_settings[] row {name}: its default, min and max must be plain "
                    "integers for this check to read them")
            rows[name] = None
    return rows


def code_settings(files):
    """Variables the binary reads: name -> (where, (default, min, max) or None)."""
    read_vars = {}
    for rel in c_sources(files):
        code = strip_c_comments(read(rel))
        table = int_settings(rel, code)
        for m in re.finditer(r"\b(?:secure_)?getenv\s*\(\s*([^)]*?)\s*\)", code):
            line = code.count("\n", 0, m.start()) + 1
            arg = m.group(1)
            lit = re.fullmatch(r'"([^"\\]+)"', arg)
            if lit:
                read_vars.setdefault(lit.group(1), (f"{rel}:{line}", None))
            elif table:
                for name, bounds in table.items():
                    read_vars.setdefault(name, (f"{rel} int_settings[]", bounds))
            else:
                problem(f"{rel}:{line}", f"getenv({arg}) reads a variable this check cannot "
                        "name: use a string literal or a row of int_settings[]")
    return read_vars


def table_rows(doc):
    """Table rows whose first cell names TOCSIN_* settings: name -> (line, [cells])."""
    rows = {}
    in_code = False
    for no, line in enumerate(doc.splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        for name in re.findall(r"`(TOCSIN_[A-Z0-9_]+)`", cells[0]):
            if name in rows:
                problem(f"{CONFIG_DOC}:{no}",
                        f"{name} is documented twice (also line {rows[name][0]})")
            rows[name] = (no, cells)
    return rows


def documented_bounds(cells):
    """(default, min, max) as a row of the table writes them, or None where it does not."""
    default = re.match(r"(-?\d+)\b", cells[1]) if len(cells) > 1 else None
    rng = re.match(r"(-?\d+)\.\.(-?\d+)", cells[2]) if len(cells) > 2 else None
    if rng is None and len(cells) > 2 and re.match(r"0 or 1\b", cells[2]):
        lo, hi = 0, 1
    elif rng is not None:
        lo, hi = int(rng.group(1)), int(rng.group(2))
    else:
        return None
    return (int(default.group(1)) if default else None, lo, hi)


def check_settings(files):
    doc = read(CONFIG_DOC)
    code = code_settings(files)
    rows = table_rows(doc)
    for name, (where, bounds) in sorted(code.items()):
        if not name.startswith("TOCSIN_"):
            if not re.search(r"`" + re.escape(name) + r"`", doc):
                problem(CONFIG_DOC, f"does not mention {name}, which the binary reads ({where})")
            continue
        if name not in rows:
            problem(CONFIG_DOC, f"has no row for {name}, which the binary reads ({where})")
            continue
        if bounds is None:
            continue
        line, cells = rows[name]
        got = documented_bounds(cells)
        if got is None:
            problem(f"{CONFIG_DOC}:{line}", f"{name}: write its bounds as MIN..MAX (or 0 or 1) to "
                    f"start the third cell; {where} has {bounds[1]}..{bounds[2]}")
        elif got != bounds:
            problem(f"{CONFIG_DOC}:{line}", f"{name}: documented default {got[0]}, bounds "
                    f"{got[1]}..{got[2]}; {where} has default {bounds[0]}, bounds "
                    f"{bounds[1]}..{bounds[2]}")
    for name, (line, _) in sorted(rows.items()):
        if name not in code:
            problem(f"{CONFIG_DOC}:{line}", f"documents {name}, which the binary does not read")
    return len(code)


# ---- links -----------------------------------------------------------------------------------

def github_slug(heading):
    """The anchor GitHub gives a heading's text (before duplicates get -1, -2...)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = text.replace("`", "").lower()
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in " -" or cat[0] in "LM" or cat in ("Nd", "Nl", "Pc"):  # Ruby's \p{Word}
            out.append("-" if ch == " " else ch)
    return "".join(out)


def markdown_lines(text):
    """(line number, line) outside fenced code blocks."""
    fence = None
    for no, line in enumerate(text.splitlines(), 1):
        m = re.match(r"\s{0,3}(`{3,}|~{3,})", line)
        if m:
            if fence is None:
                fence = m.group(1)[0] * len(m.group(1))
                continue
            if line.strip().startswith(fence):
                fence = None
                continue
        if fence is None:
            yield no, line


def anchors(text):
    seen, out = {}, set()
    for _, line in markdown_lines(text):
        m = re.match(r"\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = github_slug(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")


def link_targets(text):
    """(line number, target) of every link outside code; a link's text may span lines."""
    lines = dict(markdown_lines(text))
    prose = "\n".join(lines.get(no, "") for no in range(1, text.count("\n") + 2))
    # Code spans (within a paragraph) hold no links: blanked, newlines kept for the line numbers.
    prose = re.sub(r"(`+)((?:(?!\n[ \t]*\n).)+?)\1",
                   lambda m: re.sub(r"[^\n]", " ", m.group(0)), prose, flags=re.S)
    out = [(prose.count("\n", 0, m.start()) + 1, m.group(1)) for m in LINK.finditer(prose)]
    for no, line in enumerate(prose.split("\n"), 1):
        ref = REF_DEF.match(line)
        if ref:
            out.append((no, ref.group(1)))
    return out


def check_links(files):
    docs = sorted(f for f in files if f.endswith(".md") and (
        f in ("README.md", HACKING) or f.startswith("docs" + os.sep)))
    cache, count = {}, 0
    for rel in docs:
        for no, target in link_targets(read(rel)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # http:, https:, mailto: ...: not this check's business
            count += 1
            path, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(rel), path)) if path else rel
            where = f"{rel}:{no}"
            if dest.startswith(".."):
                problem(where, f"link {target} leaves the repository")
                continue
            if not os.path.exists(os.path.join(ROOT, dest)):
                problem(where, f"link {target}: {dest} does not exist")
                continue
            if not frag:
                continue
            if not dest.endswith(".md"):
                problem(where, f"link {target}: an anchor into {dest}, which is not Markdown")
                continue
            if dest not in cache:
                cache[dest] = anchors(read(dest))
            if frag not in cache[dest]:
                problem(where, f"link {target}: {dest} has no heading #{frag}")
    return len(docs), count


def run(root):
    """All three checks over the tree at root: (problems, summary)."""
    global ROOT, problems
    ROOT, problems = os.path.abspath(root), []
    files = sorted(repo_files())
    n_src = check_sources(files)
    n_env = check_settings(files)
    n_docs, n_links = check_links(files)
    return problems, f"{n_src} sources, {n_env} variables, {n_links} links in {n_docs} files"


# ---- self-test -------------------------------------------------------------------------------

SELF_TREE = {
    "src/config.c": (
        "static const struct int_setting int_settings[] = {\n"
        '    {"TOCSIN_A_MS", 5, 1, 10, 1, 0, 0},\n'
        '    {"TOCSIN_FLAG", 0, 0, 1, 1, 0, 1},\n'
        "};\n"
        'static void load(void) { getenv(s->name); getenv("TOCSIN_URL"); }\n'),
    "src/config.h": "/* config.h */\n",
    "src/tz.c": '/* getenv("TOCSIN_IN_COMMENT") */ static void f(void) { getenv("TZDIR"); }\n',
    "src/only.h": "/* a header without a .c */\n",
    "HACKING.md": "# Hacking\n\n- `config.c`, `tz.c`, `only.h`; `tests/x.h`.\n",
    "tests/x.h": "\n",
    "README.md": (
        "# tocsin\n\nSee [settings](docs/configuration.md#the-settings-table) and [the same]"
        "(docs/configuration.md#the-settings-table-1), [x](https://example.com).\n"),
    "docs/configuration.md": (
        "# Configuration\n\n## The settings: table\n\n"
        "| variable | default | bounds |\n|---|---|---|\n"
        "| `TOCSIN_A_MS` | 5 | 1..10: a bound |\n"
        "| `TOCSIN_FLAG` | 0 | 0 or 1 |\n"
        "| `TOCSIN_URL` | `x` | a URL |\n\n"
        "## The settings table\n\n"
        "`TZDIR` too; back to [the\ntop](#configuration) and [the README](../README.md).\n"
        "```sh\n# not a heading\n[no link](nowhere.md)\n```\n"),
}

# (file, text replaced, replacement, what the failure must say)
CONF = "docs/configuration.md"
SELF_DEFECTS = [
    ("HACKING.md", "`only.h`; ", "", "does not name src/only.h"),
    ("HACKING.md", "`tests/x.h`", "`tests/y.h`", "names y.h, which no file"),
    ("src/config.c", "5, 1, 10", "A_DEFAULT, 1, 10", "TOCSIN_A_MS: its default, min and max"),
    ("src/tz.c", 'getenv("TZDIR")', "getenv(name)", "getenv(name) reads a variable this check"),
    (CONF, "| `TOCSIN_URL` | `x` | a URL |\n", "", "has no row for TOCSIN_URL"),
    (CONF, "| 5 | 1..10", "| 5 | 1..11", "TOCSIN_A_MS: documented default 5, bounds 1..11"),
    (CONF, "| 0 | 0 or 1", "| 1 | 0 or 1", "TOCSIN_FLAG: documented default 1"),
    (CONF, "| 0 | 0 or 1 |", "| 0 | 0 or 1 |\n| `TOCSIN_FLAG` | 0 | 0 or 1 |",
     "TOCSIN_FLAG is documented twice"),
    (CONF, "| a URL |", "| a URL |\n| `TOCSIN_GONE` | 1 | 1..2 |",
     "documents TOCSIN_GONE, which the binary does not read"),
    (CONF, "`TZDIR` too", "TZ too", "does not mention TZDIR"),
    (CONF, "(#configuration)", "(#not-here)", "has no heading #not-here"),
    (CONF, "(../README.md)", "(../../README.md)", "leaves the repository"),
    ("README.md", "#the-settings-table-1", "#the-settings-table-2",
     "has no heading #the-settings-table-2"),
    ("README.md", "configuration.md#the-settings-table)", "config.md)",
     "docs/config.md does not exist"),
]


def self_test():
    def make(tree):
        root = tempfile.mkdtemp(prefix="check_maps.")
        for rel, text in tree.items():
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        return root

    failures = []
    root = make(SELF_TREE)
    got, _ = run(root)
    shutil.rmtree(root)
    if got:
        failures.append("the clean tree fails: " + "; ".join(got))
    for rel, old, new, want in SELF_DEFECTS:
        tree = dict(SELF_TREE)
        if old not in tree[rel]:
            failures.append(f"defect {want!r}: {old!r} is not in {rel}")
            continue
        tree[rel] = tree[rel].replace(old, new, 1)
        root = make(tree)
        got, _ = run(root)
        shutil.rmtree(root)
        if not any(want in p for p in got):
            failures.append(f"defect {want!r} not caught; got: {got}")
    for f in failures:
        print(f"check_maps self-test: {f}", file=sys.stderr)
    print(f"check_maps self-test: {'FAILED' if failures else 'ok'} "
          f"(a clean tree and {len(SELF_DEFECTS)} defects)", file=sys.stderr)
    return 1 if failures else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    found, summary = run(sys.argv[1] if len(sys.argv) > 1 else ROOT)
    for p in found:
        print(f"check_maps: {p}", file=sys.stderr)
    if found:
        print(f"check_maps: {len(found)} problem(s)", file=sys.stderr)
        return 1
    print(f"check_maps: ok ({summary})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
