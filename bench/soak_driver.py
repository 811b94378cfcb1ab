"""The load of bench/soak.sh: a bank and its customers' phones for an hour.

Every second a blast of --blast recipients (the next ones of a pool of --pool, priority 0) and 20
one-time codes (one phone each, PIN_CODE, priority 10, 60 s timeout); two seconds after each blast
a third of its recipients acknowledge delivery and then opening through the device API. Every
--period minutes a Markdown row; at the end the acceptance lines. Standard library only.
"""
import argparse
import http.client
import json
import math
import queue
import subprocess
import sys
import threading
import time

SOAP = ('<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
        'xmlns:inb="http://inbound.sbi.pigeon.idamobile.com/"><soapenv:Body><inb:sendNotification><notification>'
        '{body}</notification></inb:sendNotification></soapenv:Body></soapenv:Envelope>')
PATH = "/pigeon/services/SBIInboundWebService"


def parse():
    parser = argparse.ArgumentParser()
    for name in ("port", "minutes", "blast", "pool", "period", "gateway-pid"):
        parser.add_argument("--" + name, type=int, required=True)
    for name in ("gateway-log", "answerer", "ca", "psql"):
        parser.add_argument("--" + name, required=True)
    return parser.parse_args()


class Stats:
    """What the senders saw, under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.codes = []          # (token, started µs, answered µs, ok)
        self.refused = 0         # sends not answered QUEUED/OK
        self.blasts = 0
        self.acks = 0
        self.ack_errors = 0
        self.acks_skipped = 0

    def add(self, **kwargs):
        with self.lock:
            for key, value in kwargs.items():
                setattr(self, key, getattr(self, key) + value)


def post(connection, path, body, headers):
    connection.request("POST", path, body, headers)
    response = connection.getresponse()
    return response.status, response.read().decode(errors="replace")


def blaster(args, stats, stop, acks):
    connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)
    start = time.time()
    second = 0
    while not stop.is_set():
        first = (second * args.blast) % args.pool + 1
        users = [first + i for i in range(args.blast)]
        users = [((u - 1) % args.pool) + 1 for u in users]
        ident = f"soak-blast-{second}"
        body = SOAP.format(body=f"<id>{ident}</id><pushContent><text>Offer {second}</text><type>UNIVERSAL</type></pushContent>"
                                + "".join(f"<recipients>blast-{u}</recipients>" for u in users)
                                + "<timeout>3600</timeout><priority>0</priority>")
        try:
            status, reply = post(connection, PATH, body.encode(), {"Content-Type": "text/xml; charset=utf-8"})
            if status == 200 and "<status>OK</status>" in reply:
                stats.add(blasts=1)
                acks.put((time.time() + 2, ident, users[::3]))
            else:
                stats.add(refused=1)
        except Exception:
            stats.add(refused=1)
            connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)
        second += 1
        time.sleep(max(0, start + second - time.time()))


def coder(args, stats, stop):
    connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)
    start = time.time()
    n = 0
    while not stop.is_set():
        n += 1
        body = SOAP.format(body=f"<id>soak-code-{n}</id><pushContent><text>Code {100000 + n % 900000}</text><type>PIN_CODE</type></pushContent>"
                                f"<recipients>payer-{n}</recipients><timeout>60</timeout><priority>10</priority>")
        started = time.time()
        try:
            status, reply = post(connection, PATH, body.encode(), {"Content-Type": "text/xml; charset=utf-8"})
            ok = status == 200 and "<value>QUEUED</value>" in reply
        except Exception:
            ok = False
            connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)
        answered = time.time()
        with stats.lock:
            stats.codes.append((f"c0de{n:060x}", int(started * 1e6), int(answered * 1e6), ok))
            if not ok:
                stats.refused += 1
        time.sleep(max(0, start + n * 0.05 - time.time()))


def acker(args, stats, stop, acks):
    connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)
    while not (stop.is_set() and acks.empty()):
        try:
            due, ident, users = acks.get(timeout=0.5)
        except queue.Empty:
            continue
        time.sleep(max(0, due - time.time()))
        if time.time() - due > 30 or stop.is_set():
            # The phones fell behind (or the soak ended): these acknowledgements are skipped, counted.
            stats.add(acks_skipped=2 * len(users))
            continue
        for user in users:
            for step in ("delivered", "opened"):
                try:
                    status, _ = post(connection, f"/api/v1/notifications/{ident}/{step}", b"", {"Authorization": f"Bearer soak-{user}"})
                    if status == 200:
                        stats.add(acks=1)
                    else:
                        stats.add(ack_errors=1)
                except Exception:
                    stats.add(ack_errors=1)
                    connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)


def answerer(args, path):
    # The answerer speaks HTTP/2 only: ask curl.
    return subprocess.run(["curl", "-sS", "--http2", "--cacert", args.ca, args.answerer + path],
                          capture_output=True, text=True, check=True).stdout


def psql(args, statement):
    return subprocess.run(args.psql.split() + ["-c", statement], capture_output=True, text=True).stdout.strip()


def pick(values, q):
    values = sorted(values)
    return values[max(0, math.ceil(q * len(values)) - 1)] if values else float("nan")


def rss_mib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def log_counts(path):
    warnings = errors = 0
    for line in open(path, errors="replace"):
        if " ERROR " in line or " CRITICAL " in line:
            errors += 1
        elif " WARNING " in line:
            warnings += 1
    return warnings, errors


def main():
    args = parse()
    stats, stop, acks = Stats(), threading.Event(), queue.Queue()
    threads = [threading.Thread(target=blaster, args=(args, stats, stop, acks)),
               threading.Thread(target=coder, args=(args, stats, stop))]
    threads += [threading.Thread(target=acker, args=(args, stats, stop, acks)) for _ in range(4)]
    for thread in threads:
        thread.start()
    print("| minutes | pushes/s | codes accepted p50 / p99 ms | codes at the push service p50 / p99 ms | RSS MiB | "
          "tables / indexes MB | dead tuples | outbox | refused | acks (errors) | warnings / errors logged |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    started = time.time()
    last_pushes = json.loads(answerer(args, "/count"))["apns"]
    last_time = started
    code_index = 0
    for period in range(1, math.ceil(args.minutes / args.period) + 1):
        end = started + min(args.minutes, period * args.period) * 60
        time.sleep(max(0, end - time.time()))
        now = time.time()
        pushes = json.loads(answerer(args, "/count"))["apns"]
        # Codes sent in this period, given 5 s to arrive.
        with stats.lock:
            codes = stats.codes[code_index:]
            code_index = len(stats.codes)
        time.sleep(5)
        arrivals = {}
        for line in answerer(args, "/codes").splitlines():
            token, micros = line.split()
            arrivals.setdefault(token, int(micros))
        accepted = [(answered - began) / 1000 for _, began, answered, _ in codes]
        pushed = [(arrivals[token] - began) / 1000 for token, began, _, ok in codes if token in arrivals]
        sizes = psql(args, "SELECT round(sum(pg_table_size(relid)) / 1e6), round(sum(pg_indexes_size(relid)) / 1e6), sum(n_dead_tup) "
                           "FROM pg_stat_user_tables").split("|")
        outbox = psql(args, "SELECT count(*) FROM outbox")
        warnings, errors = log_counts(args.gateway_log)
        row = dict(minutes=round((now - started) / 60), rate=(pushes - last_pushes) / (now - last_time),
                   accepted=(pick(accepted, 0.5), pick(accepted, 0.99)), pushed=(pick(pushed, 0.5), pick(pushed, 0.99)),
                   rss=rss_mib(args.gateway_pid), sizes=sizes, outbox=outbox, refused=stats.refused,
                   acks=stats.acks, ack_errors=stats.ack_errors, logged=(warnings, errors), codes=len(codes), arrived=len(pushed))
        rows.append(row)
        print(f"| {row['minutes']} | {row['rate']:,.0f} | {row['accepted'][0]:.1f} / {row['accepted'][1]:.1f} | "
              f"{row['pushed'][0]:.1f} / {row['pushed'][1]:.1f} | {row['rss']:.0f} | {sizes[0]} / {sizes[1]} | {sizes[2]} | "
              f"{outbox} | {row['refused']} | {row['acks']:,} ({row['ack_errors']}) | {warnings} / {errors} |", flush=True)
        last_pushes, last_time = pushes, now
    stop.set()
    for thread in threads:
        thread.join()
    # Everything sent is pushed and recorded: nothing left QUEUED once the engine caught up.
    left = None
    for _ in range(240):
        left = int(psql(args, "SELECT count(*) FROM deliveries WHERE state = 'QUEUED'") or 0)
        if left == 0:
            break
        time.sleep(0.5)
    arrivals = {line.split()[0] for line in answerer(args, "/codes").splitlines()}
    with stats.lock:
        lost = sum(1 for token, _, _, ok in stats.codes if ok and token not in arrivals)
        codes_sent = len(stats.codes)
    first, last = rows[0], rows[-1]
    print()
    print(f"Codes sent {codes_sent:,}, answered QUEUED and never pushed {lost}; sends refused {stats.refused}; "
          f"deliveries left QUEUED {left}; blasts {stats.blasts:,}; acknowledgements {stats.acks:,} ({stats.ack_errors} failed, "
          f"{stats.acks_skipped:,} skipped because the phones fell behind).")
    print(f"Last period against the first: RSS {last['rss']:.0f} / {first['rss']:.0f} MiB = {last['rss'] / first['rss']:.2f} (≤ 1.10), "
          f"code accepted p99 {last['accepted'][1]:.1f} / {first['accepted'][1]:.1f} ms, "
          f"at the push service p99 {last['pushed'][1]:.1f} / {first['pushed'][1]:.1f} ms = {last['pushed'][1] / first['pushed'][1]:.2f} (≤ 1.5).")


if __name__ == "__main__":
    sys.exit(main())
