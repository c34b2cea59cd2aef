#!/usr/bin/env python3
"""mail_check.py -- the reminder email checked by parsers that are not tocsin's: messages made
by src/delivery/mail.c (through tests/tools/mail_tool, the production path) are parsed with Python's email
package (MIME, RFC 2047) and python3-icalendar (the .ics); local start times are computed with
Python's zoneinfo. Cases: the local time in the subject on both sides of DST changes (New York,
Berlin, Lord Howe's half hour), hostile titles, descriptions, locations and names (CR, LF, a
forged "Bcc:", control bytes, bidi overrides and other format characters, non-ASCII, the longest values the API takes, boundary-like and
SMTP end-of-data text), CRLF line breaks in the text part, header lines with encoded-words of at
most 76 characters, a stable Message-ID, one calendar UID per occurrence of a series,
addresses that cannot go into a header, and the one-click unsubscribe headers (RFC 2369, RFC
8058): a short link on one line, the longest one folded within 998-octet lines and read back
whole once the whitespace inside its brackets is dropped, links that cannot go into a header
refused.
Exits non-zero on the first failed check.

Usage: mail_check.py path/to/mail_tool
"""
import base64
import email
import email.policy
import json
import subprocess
import sys
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import icalendar

FROM = "reminders@tocsin.example"
HEADERS = ["From", "To", "Date", "Message-ID", "Subject", "MIME-Version", "Auto-Submitted",
           "Content-Type"]
failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print("FAIL:", what)


def ms(text):
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def case(**kw):
    base = {"title": "Weekly sync", "starts_at_ms": ms("2027-01-11T09:00:00+00:00"),
            "reminder_id": 41, "participant_id": "u1", "address": "ada@example.com",
            "from": FROM, "now_ms": ms("2027-01-11T08:50:00+00:00")}
    base["fire_at_ms"] = base["starts_at_ms"] - 600000
    base.update(kw)
    if "starts_at_ms" in kw and "fire_at_ms" not in kw:
        base["fire_at_ms"] = kw["starts_at_ms"] - 600000
    return base


def run(tool, cases):
    lines = "".join(json.dumps(c) + "\n" for c in cases)
    out = subprocess.run([tool], input=lines.encode(), capture_output=True, check=True).stdout
    return out.decode().splitlines()


def well_formed(raw, c, what):
    """The structure every message must have, whatever the input; returns the parsed message."""
    check(b"\n" not in raw.replace(b"\r\n", b"") and b"\r" not in raw.replace(b"\r\n", b""),
          f"{what}: a bare CR or LF")
    check(all(len(line) <= 998 for line in raw.split(b"\r\n")), f"{what}: a line over 998 octets")
    check(all(b < 0x80 for b in raw), f"{what}: 8-bit bytes in a 7-bit message")
    head = raw.split(b"\r\n\r\n", 1)[0]
    names = [line.split(b":", 1)[0].decode() for line in head.split(b"\r\n")
             if line and line[:1] not in (b" ", b"\t")]
    want = HEADERS
    if c.get("unsubscribe_url") is not None:
        want = HEADERS[:5] + ["List-Unsubscribe", "List-Unsubscribe-Post"] + HEADERS[5:]
    check(names == want, f"{what}: header fields {names}")
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    check(not msg.defects, f"{what}: defects {msg.defects}")
    check(msg.get_content_type() == "multipart/mixed", f"{what}: {msg.get_content_type()}")
    parts = list(msg.iter_parts())
    types = [p.get_content_type() for p in parts]
    check(types == ["text/plain", "text/calendar"], f"{what}: parts {types}")
    for p in parts:
        check(not p.defects, f"{what}: part defects {p.defects}")
    check(parts[1].get_filename() == "meeting.ics" and parts[1].get_param("method") == "PUBLISH",
          f"{what}: the calendar part's name or method")
    cal = icalendar.Calendar.from_ical(parts[1].get_content())
    events = cal.walk("VEVENT")
    check(str(cal.get("METHOD")) == "PUBLISH" and len(events) == 1,
          f"{what}: METHOD {cal.get('METHOD')}, {len(events)} events")
    ev = events[0]
    check(str(ev.get("SUMMARY")) == ics_text(c["title"]),
          f"{what}: SUMMARY {str(ev.get('SUMMARY'))[:80]!r}")
    check(int(ev.decoded("DTSTART").timestamp() * 1000) == c["starts_at_ms"], f"{what}: DTSTART")
    for field, key in (("DESCRIPTION", "description"), ("LOCATION", "location")):
        if c.get(key) is not None:
            check(str(ev.get(field)) == ics_text(c[key]),
                  f"{what}: {field} {str(ev.get(field))[:80]!r}")
    text = parts[0].get_payload(decode=True)
    check(b"\n" not in text.replace(b"\r\n", b"") and b"\r" not in text.replace(b"\r\n", b""),
          f"{what}: a bare CR or LF in the text part")
    long = [line for line in head.split(b"\r\n") if b"=?" in line and len(line) > 76]
    check(not long, f"{what}: a header line with an encoded-word over 76 characters: {long[:1]}")
    body = parts[0].get_content()
    check(c["title"].replace("\r", "") in body.replace("\r", "") or "\n" in c["title"] or
          "\r" in c["title"], f"{what}: the title is not in the text part")
    return msg


def ics_text(s):
    """What an iCalendar TEXT value can hold of s: line breaks (CRLF, LF, a lone CR) as newlines,
    no other control characters but tab."""
    s = s.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(ch for ch in s if ch in "\n\t" or (ord(ch) >= 0x20 and ord(ch) != 0x7f))


# Control and format characters a decoded header must not carry (mail.c's spoofing[]): C0, DEL,
# C1, the Arabic letter mark, the Mongolian vowel separator, zero-width characters, LRM/RLM, the
# line and paragraph separators, bidi embeddings, overrides and isolates, invisible operators,
# the BOM, interlinear annotations.
SPOOFING = [(0x00, 0x1f), (0x7f, 0x9f), (0x61c, 0x61c), (0x180e, 0x180e), (0x200b, 0x200f),
            (0x2028, 0x202e), (0x2060, 0x206f), (0xfeff, 0xfeff), (0xfff9, 0xfffb)]


def header_text(s):
    """What a decoded header can hold of s: control and format characters as spaces."""
    return "".join(" " if any(lo <= ord(ch) <= hi for lo, hi in SPOOFING) else ch for ch in s)


def local_hhmm(c):
    zone = ZoneInfo(c["time_zone"]) if c.get("time_zone") else timezone.utc
    return datetime.fromtimestamp(c["starts_at_ms"] / 1000, zone).strftime("%H:%M")


def dst_cases():
    instants = [
        ("America/New_York", "2026-10-30T13:00:00+00:00"),  # 09:00 EDT, before the fall back
        ("America/New_York", "2026-11-02T14:00:00+00:00"),  # 09:00 EST, after
        ("America/New_York", "2027-03-12T14:00:00+00:00"),  # 09:00 EST, before the spring forward
        ("America/New_York", "2027-03-15T13:00:00+00:00"),  # 09:00 EDT, after
        ("Europe/Berlin", "2026-10-24T07:00:00+00:00"),     # 09:00 CEST
        ("Europe/Berlin", "2026-10-26T08:00:00+00:00"),     # 09:00 CET
        ("Europe/Berlin", "2026-10-25T00:30:00+00:00"),     # 02:30 CEST, the first of two
        ("Europe/Berlin", "2026-10-25T01:30:00+00:00"),     # 02:30 CET, the second
        ("Australia/Lord_Howe", "2027-04-03T14:30:00+00:00"),  # half-hour DST shift nearby
        ("Australia/Lord_Howe", "2027-04-04T15:00:00+00:00"),
        ("Asia/Kolkata", "2027-01-11T03:30:00+00:00"),
        (None, "2027-01-11T09:00:00+00:00"),
    ]
    return [case(time_zone=z, starts_at_ms=ms(t)) for z, t in instants]


def hostile_cases():
    nasty = [
        "Sync\r\nBcc: victim@example.com",
        "Sync\nX-Injected: 1",
        "Sync\rContent-Type: text/html",
        "Line one\r\n.\r\nMAIL FROM:<x@y>",
        "--tocsin-boundary--\r\n--XX",
        "Bell\x07 tab\t esc\x1b[31m del\x7f",
        "Café ☕ 会議 مرحبا \U0001F600",
        "Eve\u2028Bcc: evil@evil.example\u2029 \u202egnp.exe\u202c \u2066x\u2069",
        "nel\u0085 lrm\u200e rlm\u200f zw\u200b bom\ufeff alm\u061c",
        "=?utf-8?q?not=20really?= encoded",
        "x" * 200,
        "é" * 200,
    ]
    out = []
    for i, t in enumerate(nasty):
        out.append(case(title=t[:200], description=(t * 30)[:5000], location=(t * 3)[:500],
                        name=t[:200], participant_id=f"p{i}"))
    out.append(case(title="Long description", description="\r\n".join(["y" * 997] * 5)))
    out.append(case(title="No extras"))
    return out


def unsubscribe_cases():
    base = "https://tocsin.example.com/v1/unsubscribe?t="
    longest = base + "A" * (2048 - len(base))
    return [case(unsubscribe_url=base + "AQAAAAAAAAAqAAAAAGkwzwBhZGE"),
            case(unsubscribe_url=base + "B" * (998 - len("List-Unsubscribe: <>") - len(base))),
            case(unsubscribe_url=base + "C" * (999 - len("List-Unsubscribe: <>") - len(base))),
            case(unsubscribe_url=longest), case(unsubscribe_url=longest + "A"),
            case(unsubscribe_url=base + "x y"), case(unsubscribe_url=base + "x>\r\nBcc: e@x"),
            case(unsubscribe_url=base + "<x")]


def main():
    tool = sys.argv[1]
    dst = dst_cases()
    for c, line in zip(dst, run(tool, dst)):
        what = f"DST {c.get('time_zone')} {c['starts_at_ms']}"
        check(line.startswith("OK "), f"{what}: {line[:80]}")
        if not line.startswith("OK "):
            continue
        msg = well_formed(base64.b64decode(line[3:]), c, what)
        subject = str(msg["Subject"])
        want = f" at {local_hhmm(c)} "
        check(want in subject, f"{what}: subject {subject!r}, wanted {want!r}")

    hostile = hostile_cases()
    for c, line in zip(hostile, run(tool, hostile)):
        what = f"hostile {c['title'][:30]!r}"
        check(line.startswith("OK "), f"{what}: {line[:80]}")
        if not line.startswith("OK "):
            continue
        msg = well_formed(base64.b64decode(line[3:]), c, what)
        check(msg["Bcc"] is None and msg["X-Injected"] is None, f"{what}: an injected header")
        # A display name is a phrase: readers may fold its runs of white space (and Python
        # leaves a space between adjacent encoded-words there), so compare what is not space.
        to = msg["To"].addresses[0]
        check(to.addr_spec == "ada@example.com" and
              "".join(to.display_name.split()) == "".join(header_text(c.get("name", "")).split()),
              f"{what}: To {str(msg['To'])[:80]!r}")
        subject = str(msg["Subject"])
        check(subject.startswith("Reminder: " + header_text(c["title"]) + " at "),
              f"{what}: subject {subject[:60]!r}")

    same = [case(), case(), case(participant_id="u2"), case(reminder_id=42)]
    ids = [email.message_from_bytes(base64.b64decode(line[3:]), policy=email.policy.default)
           ["Message-ID"] for line in run(tool, same)]
    check(ids[0] == ids[1], "the Message-ID changed between two makings of one message")
    check(len({ids[0], ids[2], ids[3]}) == 3, f"Message-IDs not distinct: {ids}")

    # A calendar keeps one event per UID: each occurrence of a series is its own event, and the
    # reminders of one occurrence (or of a single meeting) name the same event.
    sid = "5b0c3f0e-7d1a-4c55-9a55-1f4f0b8e2a10"
    week = 7 * 86400000
    first = ms("2027-01-11T09:00:00+00:00")
    series = [case(id=sid), case(id=sid, reminder_id=42),
              case(id=sid, original_start_ms=first), case(id=sid, original_start_ms=first,
                                                          reminder_id=42),
              case(id=sid, original_start_ms=first + week, starts_at_ms=first + week,
                   now_ms=first + week - 600000)]
    uids = []
    for c, line in zip(series, run(tool, series)):
        msg = well_formed(base64.b64decode(line[3:]), c, f"series {c.get('original_start_ms')}")
        cal = icalendar.Calendar.from_ical(list(msg.iter_parts())[1].get_content())
        uids.append(str(cal.walk("VEVENT")[0].get("UID")))
    check(uids[0] == uids[1] == f"{sid}@tocsin", f"a single meeting's UID: {uids[:2]}")
    check(uids[2] == uids[3] and len({uids[0], uids[2], uids[4]}) == 3,
          f"occurrences' UIDs: {uids}")

    refused = [case(address="ada@example.com\r\nBcc: x@y"), case(address="ada@example.com>, x@y"),
               case(address="no-at-sign"), case(address="a b@example.com"),
               case(time_zone="Mars/Olympus_Mons")]
    for c, line in zip(refused, run(tool, refused)):
        check(line.startswith("ERR "), f"accepted {c['address']!r} / {c.get('time_zone')}: "
              f"{line[:60]}")

    links = unsubscribe_cases()
    for c, line in zip(links, run(tool, links)):
        url = c["unsubscribe_url"]
        what = f"unsubscribe link of {len(url)} characters"
        ok = line.startswith("OK ")
        if any(ch in url for ch in " <>\r\n") or len(url) > 2048:
            check(not ok, f"{what}: accepted {url[:60]!r}")
            continue
        check(ok, f"{what}: {line[:80]}")
        if not ok:
            continue
        raw = base64.b64decode(line[3:])
        msg = well_formed(raw, c, what)
        value = str(msg["List-Unsubscribe"]).strip()
        check(value.startswith("<") and value.endswith(">") and
              "".join(value[1:-1].split()) == url, f"{what}: List-Unsubscribe {value[:80]!r}")
        folded = len(url) + len("List-Unsubscribe: <>") > 998
        check((b"\r\n " in raw.split(b"List-Unsubscribe: ", 1)[1].split(b"\r\nList-", 1)[0])
              == folded, f"{what}: folded {not folded}")
        check(str(msg["List-Unsubscribe-Post"]) == "List-Unsubscribe=One-Click",
              f"{what}: List-Unsubscribe-Post {msg['List-Unsubscribe-Post']!r}")
        text = list(msg.iter_parts())[0].get_content()
        check(url in text, f"{what}: the link is not in the text part")

    n = len(dst) + len(hostile) + len(same) + len(series) + len(refused) + len(links)
    print(f"mail_check: {n} messages, {failures} failed checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
