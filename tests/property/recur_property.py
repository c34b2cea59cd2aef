#!/usr/bin/env python3
"""recur_property.py -- the recurrence property test: random rules of the accepted subset in
random zones, expanded by tocsin (tests/tools/recur_expand.c, the production code path) and by
python-dateutil (Debian's python3-dateutil) on naive wall-clock times.

Properties, for every rule:
  1. tocsin accepts it (the generator only makes rules of the subset; a rule whose BYMONTH and
     BYMONTHDAY name no existing date is the one documented refusal, and is expected);
  2. the wall-clock times libical generates are dateutil's, in order;
  3. the UTC instants are those wall-clock times resolved by the stated rule, computed here with
     the standard library's zoneinfo at fold=0 (PEP 495: a time in a gap takes the offset before
     the gap, so it moves forward by the gap; a time in an overlap takes the first instant), with
     UNTIL applied to the instants and two times on one instant counted once;
  4. the instants from a point in the middle are those of 3 from there on, when the expansion
     starts there as a read of a window does (a COUNT rule through its stored UNTIL equivalent,
     every rule moved there by libical instead of walked).
Half of the series start within days of one of the zone's DST transitions, at a time of day near
the transition's, so that gaps and overlaps are hit often; the hand-written cases at each
transition are in tests/unit/test_tz.c and test_series.c.

Usage: recur_property.py PATH_TO_recur_expand [RULES] [SEED]. Exit status 0 when every property
held; the first failures are printed.
"""
import calendar
import functools
import itertools
import multiprocessing
import random
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr

ZONES = ["America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata",
         "Pacific/Apia", "UTC", "Europe/London", "America/Sao_Paulo", "America/St_Johns",
         "Pacific/Chatham", "Asia/Kathmandu", "Africa/Casablanca", "America/Santiago",
         "Australia/Sydney", "Asia/Tehran"]
DAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]
OCCURRENCES = 40
LAST_YEAR = 2200  # libical generates nothing after 2582; compare well before it
FAILURES_SHOWN = 10


def transitions(zone, first_year=2000, last_year=2040):
    """UTC instants where the zone's offset changes, found day by day then to the minute."""
    z = ZoneInfo(zone)
    out = []
    t = datetime(first_year, 1, 1, tzinfo=timezone.utc)
    end = datetime(last_year, 1, 1, tzinfo=timezone.utc)
    prev = t.astimezone(z).utcoffset()
    while t < end:
        nxt = t + timedelta(days=1)
        off = nxt.astimezone(z).utcoffset()
        if off != prev:
            lo, hi = t, nxt
            while hi - lo > timedelta(minutes=1):
                mid = lo + (hi - lo) / 2
                if mid.astimezone(z).utcoffset() == prev:
                    lo = mid
                else:
                    hi = mid
            out.append(hi)
            prev = off
        t = nxt
    return out


def pick(rng, items, k_max):
    return rng.sample(items, rng.randint(1, min(k_max, len(items))))


def random_rule(rng):
    freq = rng.choice(["DAILY", "WEEKLY", "MONTHLY", "YEARLY"])
    parts = ["FREQ=" + freq]
    if rng.random() < 0.4:
        parts.append("INTERVAL=%d" % rng.choice([1, 2, 3, 4, 7, 12]))
    by_month = rng.random() < 0.25
    if rng.random() < 0.6:
        days = pick(rng, DAYS, 4)
        if freq in ("MONTHLY", "YEARLY") and rng.random() < 0.5:
            top = 5 if freq == "MONTHLY" or by_month else 53
            days = ["%d%s" % (rng.choice([1, -1]) * rng.randint(1, min(top, 5)), d)
                    for d in days]
            days = list(dict.fromkeys(days))
        parts.append("BYDAY=" + ",".join(days))
    if freq != "WEEKLY" and rng.random() < 0.3:
        parts.append("BYMONTHDAY=" + ",".join(
            str(d) for d in pick(rng, list(range(1, 32)), 3)))
    if by_month:
        parts.append("BYMONTH=" + ",".join(str(m) for m in pick(rng, list(range(1, 13)), 4)))
    has_by = any(p.startswith(("BYDAY", "BYMONTHDAY", "BYMONTH")) for p in parts)
    if freq in ("MONTHLY", "YEARLY") and has_by and rng.random() < 0.3:
        parts.append("BYSETPOS=" + ",".join(
            str(p) for p in dict.fromkeys(rng.choice([1, 2, 3, -1, -2, 7]) for _ in range(2))))
    if rng.random() < 0.3:
        parts.append("WKST=" + rng.choice(["MO", "SU", "MO", "SU"] + DAYS))
    end = rng.random()
    if end < 0.25:
        parts.append("COUNT=%d" % rng.randint(1, 30))
    rng.shuffle(parts)
    return parts, end


def set_size_max(d):
    """The most times one month (MONTHLY) or year (YEARLY) holds, counted on real dates of a
    28-year span (every kind of month and year occurs in it): tocsin refuses a BYSETPOS past it,
    and a rule whose BY parts select nothing (0)."""
    days = []
    for x in d.get("BYDAY", "").split(",") if "BYDAY" in d else []:
        days.append((int(x[:-2]) if x[:-2] else 0, DAYS.index(x[-2:])))
    mdays = {int(x) for x in d["BYMONTHDAY"].split(",")} if "BYMONTHDAY" in d else None
    months = {int(x) for x in d["BYMONTH"].split(",")} if "BYMONTH" in d else None

    def picked(day, index, length):
        if not days:
            return True
        return any(wd == day.weekday() and (n == 0 or (n > 0 and index // 7 + 1 == n) or
                                            (n < 0 and (length - 1 - index) // 7 + 1 == -n))
                   for n, wd in days)

    best = 0
    for year in range(2000, 2028):
        total = 0
        for month in range(1, 13):
            if months is not None and month not in months:
                continue
            if d["FREQ"] == "YEARLY" and months is None:
                continue
            length = calendar.monthrange(year, month)[1]
            if not days and mdays is None:
                c = 1
            else:
                c = sum(1 for i in range(length)
                        if (mdays is None or i + 1 in mdays) and
                        picked(datetime(year, month, i + 1), i, length))
            total += c
            if d["FREQ"] == "MONTHLY":
                best = max(best, c)
        if d["FREQ"] == "YEARLY":
            if months is None:
                length = 366 if calendar.isleap(year) else 365
                total = sum(1 for i in range(length)
                            if picked(datetime(year, 1, 1) + timedelta(days=i), i, length)) \
                    if days else 1
            best = max(best, total)
    return best


def refused(parts):
    """The refusals a rule of this generator can meet: BYMONTH and BYMONTHDAY naming no date
    that exists; YEARLY with BYMONTHDAY but no BYMONTH (libical 3.0.16 reads it as the first
    occurrence's month only); a week start other than MO and SU (libical 3.0.16 drops the first
    week of an INTERVAL); a MONTHLY or YEARLY rule whose BY parts select no day, or whose
    BYSETPOS is past the most times a period can hold."""
    d = dict(p.split("=", 1) for p in parts)
    if d.get("WKST", "MO") not in ("MO", "SU"):
        return True
    if d["FREQ"] in ("MONTHLY", "YEARLY"):
        most = set_size_max(d)
        if most == 0 or ("BYSETPOS" in d and
                         max(abs(int(x)) for x in d["BYSETPOS"].split(",")) > most):
            return True
    if d["FREQ"] == "YEARLY" and "BYMONTHDAY" in d and "BYMONTH" not in d:
        return True
    if "BYMONTH" not in d or "BYMONTHDAY" not in d:
        return False
    for m in map(int, d["BYMONTH"].split(",")):
        longest = 29 if m == 2 else [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]
        if any(int(x) <= longest for x in d["BYMONTHDAY"].split(",")):
            return False
    return True


def resolve(zone, wall):
    """The stated rule, by the standard library: fold=0 is the offset before a gap and the
    first instant of an overlap."""
    return int(wall.replace(tzinfo=ZoneInfo(zone), fold=0).timestamp()) * 1000


def exists(zone, wall):
    aware = wall.replace(tzinfo=ZoneInfo(zone), fold=0)
    back = aware.astimezone(timezone.utc).astimezone(ZoneInfo(zone)).replace(tzinfo=None)
    return back == wall


ZONE_TRANSITIONS = {z: transitions(z) for z in ZONES}


def make_case(rng):
    zone = rng.choice(ZONES)
    parts, end = random_rule(rng)
    trans = ZONE_TRANSITIONS[zone]
    if trans and rng.random() < 0.5:
        # A wall-clock time in or near the transition's gap or overlap, days before it.
        t = rng.choice(trans)
        if rng.random() < 0.5:
            wall = (t - timedelta(minutes=1)).astimezone(ZoneInfo(zone)) + \
                timedelta(minutes=rng.randint(1, 90))
        else:
            wall = t.astimezone(ZoneInfo(zone)) + timedelta(minutes=rng.randint(0, 90))
        wall = wall.replace(tzinfo=None, minute=wall.minute // 15 * 15, second=0, microsecond=0)
        seed = wall - timedelta(days=rng.randint(0, 20))
        if rng.random() < 0.5:  # a rule sure to land on the transition's day
            weeks = rng.randint(0, 3)
            seed = wall - timedelta(days=7 * weeks)
            parts = [rng.choice(["FREQ=DAILY", "FREQ=WEEKLY"])]
            end = 1.0
    else:
        seed = datetime(rng.randint(2000, 2035), rng.randint(1, 12), rng.randint(1, 28),
                        rng.randint(0, 23), rng.choice([0, 15, 30, 45]))
    rule = ";".join(parts)
    if refused(parts):
        return zone, seed, rule, None, True
    # The first occurrence within ten years (a rule with none would walk dateutil to 9999).
    first = next(iter(rrulestr(rule, dtstart=seed).replace(
        count=None, until=seed.replace(year=seed.year + 10, day=1))), None)
    if first is None or not exists(zone, first):
        return None
    until = None
    if 0.25 <= end < 0.5:
        first_utc = resolve(zone, first)
        until = datetime.fromtimestamp(first_utc / 1000 + rng.randint(1, 400) * 86400,
                                       tz=timezone.utc).replace(microsecond=0)
        parts.append("UNTIL=" + until.strftime("%Y%m%dT%H%M%SZ"))
        rule = ";".join(parts)
    return zone, first, rule, until, False


def case_at(seed, index):
    """Candidate index of the run with this seed: make_case with a generator of its own, and
    dateutil's walls for it (None for a rule to be refused)."""
    c = make_case(random.Random(seed * 1000003 + index))
    if c is None:
        return None
    zone, first, rule, until, refuse = c
    return c + (None if refuse else expected(zone, first, rule, until),)


def expected(zone, first, rule, until):
    """dateutil's walls (UNTIL left out: it is applied to instants), and the instants."""
    plain = ";".join(p for p in rule.split(";") if not p.startswith("UNTIL="))
    walls = []
    for w in rrulestr(plain, dtstart=first).replace(until=datetime(LAST_YEAR, 12, 31)):
        if len(walls) == OCCURRENCES or w.year > LAST_YEAR:
            break
        walls.append(w)
    return walls


def first_difference(got, want):
    """Where two lists first differ, and their items there ("-" past an end)."""
    at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    return (at, got[at] if at < len(got) else "-", want[at] if at < len(want) else "-")


def check(case, answer):
    """The failure of one case (None when its properties held), and how many of its times fall
    in a gap or overlap."""
    zone, first, rule, until, refuse, want_walls = case
    what = "%s %s %s" % (zone, first.isoformat(), rule)
    if refuse:
        return None if answer.startswith("ERR rule") else \
            "%s: should be refused, got %s" % (what, answer[:80]), 0
    if not answer.startswith("OK"):
        return "%s: refused: %s" % (what, answer), 0
    walls_text, instants_text, *middle = answer[3:].split("|")
    got_walls = [datetime.strptime(w, "%Y%m%dT%H%M%S") for w in walls_text.split()]
    got_walls = [w for w in got_walls if w.year <= LAST_YEAR]
    if got_walls != want_walls:
        at, g, w = first_difference(got_walls, want_walls)
        return "%s: wall #%d: tocsin %s, dateutil %s (%d vs %d times)" % (
            what, at, g, w, len(got_walls), len(want_walls)), 0
    if not want_walls:
        return None, 0
    bound = resolve(zone, want_walls[-1])
    want = []
    hits = 0
    for w in want_walls:
        t = resolve(zone, w)
        if not exists(zone, w) or w.replace(tzinfo=ZoneInfo(zone), fold=1).utcoffset() != \
                w.replace(tzinfo=ZoneInfo(zone), fold=0).utcoffset():
            hits += 1
        if until is not None and t > until.timestamp() * 1000:
            break
        if t <= bound and (not want or t != want[-1]):
            want.append(t)
    got = [int(x) for x in instants_text.split() if int(x) <= bound]
    if got != want:
        at, g, w = first_difference(got, want)
        return "%s: instant #%d: tocsin %s, expected %s" % (what, at, g, w), hits
    if not middle:
        return "%s: no expansion from the middle" % what, hits
    start, *rest = middle[0].split()
    got = [int(x) for x in rest if int(x) <= bound]
    want = [t for t in want if t >= int(start)]
    if got != want:
        at, g, w = first_difference(got, want)
        return "%s: from %s, instant #%d: tocsin %s, expected %s" % (what, start, at, g, w), hits
    return None, hits


def main():
    tool = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 20260308
    # Each candidate has its own generator (from the seed and its index), so the cases do not
    # depend on how many processes make and check them: dateutil is most of the run, and ctest
    # runs this alone, with the other cores idle.
    cases = []
    index = 0
    with multiprocessing.Pool() as pool:
        while len(cases) < count:
            batch = range(index, index + count - len(cases) + 32)  # some candidates give none
            index = batch.stop
            cases += [c for c in pool.map(functools.partial(case_at, seed), batch, chunksize=16)
                      if c is not None]
        cases = cases[:count]
        lines = "".join("%s\t%s\t%s\t%d\n" % (z, f.strftime("%Y%m%dT%H%M%S"), r, OCCURRENCES)
                        for z, f, r, _, _, _ in cases)
        out = subprocess.run([tool], input=lines, capture_output=True, text=True, check=True)
        answers = out.stdout.splitlines()
        if len(answers) != len(cases):
            print("recur_expand answered %d lines for %d cases" % (len(answers), len(cases)))
            return 1
        results = pool.starmap(check, zip(cases, answers), chunksize=32)
    failures = [f for f, _ in results if f is not None]
    transitions_hit = sum(h for _, h in results)
    print("recur_property: %d rules, %d occurrences in a gap or overlap, %d failures" % (
        len(cases), transitions_hit, len(failures)))
    for f in failures[:FAILURES_SHOWN]:
        print("  " + f)
    return 1 if failures or transitions_hit == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
