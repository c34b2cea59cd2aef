#!/usr/bin/env python3
"""smtp_server.py -- a real SMTP server for the email tests (Debian's python3-aiosmtpd), on
127.0.0.1 only. Each accepted message is parsed by parsers that are not tocsin's (Python's email
package for MIME, python3-icalendar for the .ics) and written as one JSON line to --out: the
envelope, the raw bytes (base64), the decoded headers, the parts, the calendar's events and every
defect either parser reported. With --refuse CODE every RCPT is answered CODE instead (451: try
again later, 550: refused for good). Stops on SIGTERM.

Usage: smtp_server.py --port N --out FILE [--refuse 451|550]
"""
import argparse
import asyncio
import base64
import email
import email.policy
import json
import signal
import sys
import time

import icalendar
from aiosmtpd.controller import Controller

REFUSALS = {
    "451": "451 4.3.0 Try again later",
    "550": "550 5.7.1 Refused",
}


def calendar_of(text):
    cal = icalendar.Calendar.from_ical(text)
    events = []
    for ev in cal.walk("VEVENT"):
        events.append(
            {
                "uid": str(ev.get("UID")),
                "summary": str(ev.get("SUMMARY")),
                "description": str(ev.get("DESCRIPTION")) if ev.get("DESCRIPTION") else None,
                "location": str(ev.get("LOCATION")) if ev.get("LOCATION") else None,
                "dtstart": ev.decoded("DTSTART").isoformat(),
                "dtend": ev.decoded("DTEND").isoformat() if ev.get("DTEND") else None,
            }
        )
    return {"method": str(cal.get("METHOD")), "version": str(cal.get("VERSION")), "events": events}


def parse(raw):
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    out = {
        "headers": [[k, str(v)] for k, v in msg.items()],
        "content_type": msg.get_content_type(),
        "defects": [repr(d) for d in msg.defects],
        "parts": [],
        "calendar": None,
    }
    parts = list(msg.iter_parts()) if msg.is_multipart() else [msg]
    for part in parts:
        out["defects"] += [repr(d) for d in part.defects]
        content = part.get_content()
        entry = {
            "content_type": part.get_content_type(),
            "filename": part.get_filename(),
            "charset": part.get_content_charset(),
            "method": part.get_param("method"),
            "text": content if isinstance(content, str) else None,
        }
        out["parts"].append(entry)
        if entry["content_type"] == "text/calendar" and entry["text"] is not None:
            try:
                out["calendar"] = calendar_of(entry["text"])
            except ValueError as e:
                out["defects"].append("calendar: " + str(e))
    return out


class Recorder:
    def __init__(self, out, refuse):
        self.out = out
        self.refuse = REFUSALS.get(refuse) if refuse else None

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if self.refuse:
            return self.refuse
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        raw = envelope.original_content or envelope.content
        record = {
            # When the message was accepted (ms since the epoch): bench/soak.sh measures lateness.
            "received_at_ms": int(time.time() * 1000),
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "raw": base64.b64encode(raw).decode(),
        }
        try:
            record.update(parse(raw))
        except Exception as e:  # a message the parsers choke on is a finding, not a crash
            record["defects"] = ["unparsable: " + repr(e)]
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()
        return "250 Message accepted"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--refuse", choices=sorted(REFUSALS))
    args = ap.parse_args()
    with open(args.out, "a", encoding="utf-8") as out:
        controller = Controller(
            Recorder(out, args.refuse), hostname="127.0.0.1", port=args.port, decode_data=False
        )
        controller.start()
        print("listening", flush=True)
        loop = asyncio.new_event_loop()
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)
        loop.run_until_complete(stop.wait())
        controller.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
