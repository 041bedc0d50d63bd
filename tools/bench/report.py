#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Sum up a `make bench' run, show a results file, or compare two.

  report.py run RUNDIR RESULTS_DIR PLOT_DIR   merge RUNDIR/{dp,tput,pps,conn,ctl,tls,names}.json (those present) with
                                              the machine's description into one results file,
                                              RESULTS_DIR/<UTC time>-<commit>.json; print the table;
                                              plot the scaling curves into PLOT_DIR/*.png
  report.py show FILE                         print the table of a results file
  report.py markdown FILE                     the same as Markdown, with the targets summed up
                                              (docs/performance-results.md)
  report.py compare OLD NEW                   both runs' values side by side, with the change
  report.py plot FILE PLOT_DIR                the PNGs again, from a results file

A metric is {"id", "group", "desc", "unit", "value"} with optional "min"/"max"/"samples",
"baseline"/"ratio"/"net_ns" (to a baseline measured in the same run: the value over it, the value
less it) and "target": {"on": "ratio"|"net_ns"|"value", "max"|"min": X}. Targets are printed as met / not met, never asserted: the exit status only says
whether the files could be read and written. Standard library only.
"""
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys

SCHEMA = 1
PARTS = ("dp", "tput", "pps", "conn", "ctl", "tls", "names")


def sh(*cmd):
    """First line of a command's output, or None."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
        return out.splitlines()[0] if out else None
    except (OSError, subprocess.SubprocessError):
        return None


def proc_field(path, key):
    try:
        for line in open(path):
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine():
    """What the numbers were measured on."""
    mem = proc_field("/proc/meminfo", "MemTotal")
    osr = {}
    try:
        for line in open("/etc/os-release"):
            k, _, v = line.strip().partition("=")
            osr[k] = v.strip('"')
    except OSError:
        pass
    return {
        "cpu": proc_field("/proc/cpuinfo", "model name"),
        "cpus": os.cpu_count(),
        "mem_mib": int(mem.split()[0]) // 1024 if mem else None,
        "kernel": platform.release(),
        "kernel_build": platform.version(),
        "arch": platform.machine(),
        "os": osr.get("PRETTY_NAME"),
        "virt": sh("systemd-detect-virt") or None,
        "clang": sh("clang", "--version"),
        "gcc": sh("gcc", "--version"),
        "libbpf": sh("dpkg-query", "-W", "-f=${Version}", "libbpf-dev"),
        "iperf3": sh("iperf3", "--version"),
        "nft": sh("nft", "--version"),
        "wrk": sh("dpkg-query", "-W", "-f=${Version}", "wrk"),
        "nginx": sh("dpkg-query", "-W", "-f=${Version}", "nginx-light"),
        # Other work on the machine moves the numbers: what the load was when the report was made.
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }


def git():
    commit = sh("git", "rev-parse", "HEAD")
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip() != ""
    return {"commit": commit, "subject": sh("git", "log", "-1", "--format=%s"), "dirty": dirty}


# --- throughput: raw runs -> metrics -------------------------------------------------------------

TPUT_DESC = {
    "none": "no enforcement",
    "tc": "tapfence, TC mode (tcx)",
    "xdp": "tapfence, XDP mode",
    "nft": "nftables, same policy (sets, forward chain, conntrack)",
}


def tput_metrics(raw):
    runs = raw["runs"]
    by = {}
    for r in runs:
        by.setdefault(r["config"], {})[r["rep"]] = r["bits_per_second"] / 1e9
    base = by.get("none", {})
    out = []
    for cfg, reps in by.items():
        vals = list(reps.values())
        m = {"id": f"tput.{cfg}", "group": "throughput",
             "desc": f"{TPUT_DESC.get(cfg, cfg)}; iperf3, 1 stream, {raw['seconds']} s x {len(vals)}",
             "unit": "Gbit/s", "value": statistics.median(vals), "min": min(vals),
             "max": max(vals), "samples": vals}
        if cfg != "none" and base:
            # Per repetition (configurations alternate within one), then the median.
            m["baseline"] = "tput.none"
            m["ratio"] = statistics.median(reps[k] / base[k] for k in reps if k in base)
            if cfg == "tc":
                m["target"] = {"on": "ratio", "min": 0.95}
        out.append(m)
    for p in raw.get("profile", []):
        out.append({"id": f"tput.cost.{p['config']}.{p['prog']}", "group": "throughput_cost",
                    "desc": f"{p['prog']} in {p['config']} mode under iperf3 load, average over "
                            f"{p['runs']} runs (BPF run-time statistics)",
                    "unit": "ns", "value": p["ns_per_run"], "runs": p["runs"]})
    if "tc" in by and "nft" in by:
        ks = [k for k in by["tc"] if k in by["nft"]]
        out.append({"id": "tput.tc_vs_nft", "group": "throughput",
                    "desc": "tapfence TC mode / nftables, per repetition, median",
                    "unit": "x", "value": statistics.median(by["tc"][k] / by["nft"][k] for k in ks),
                    "target": {"on": "value", "min": 1.0}})
    return out


# --- 64-byte packet rate through a tap: raw runs -> metrics --------------------------------------

def pps_metrics(raw):
    by = {}  # (config, flows) -> {rep: run}
    for r in raw["runs"]:
        by.setdefault((r["config"], r["flows"]), {})[r["rep"]] = r
    out = []
    for (cfg, flows), reps in sorted(by.items(), key=lambda kv: (kv[0][1], list(TPUT_DESC).index(kv[0][0]))):
        vals = [r["pps"] / 1e6 for r in reps.values()]
        cpu = [r["cpu_ns_per_pkt"] for r in reps.values()]
        m = {"id": f"pps.{cfg}.{flows}", "group": "pps",
             "desc": f"{TPUT_DESC.get(cfg, cfg)}; 64 B frames written to the tap, {flows} flows, "
                     f"{raw['seconds']} s x {len(vals)}",
             "unit": "Mpps", "value": statistics.median(vals), "min": min(vals), "max": max(vals),
             "samples": vals}
        c = {"id": f"pps.cpu.{cfg}.{flows}", "group": "pps_cpu",
             "desc": f"the writer's CPU time per frame delivered ({cfg}, {flows} flows)",
             "unit": "ns", "value": statistics.median(cpu), "min": min(cpu), "max": max(cpu)}
        base = by.get(("none", flows), {})
        if cfg != "none" and base:
            # Per repetition (configurations alternate within one), then the median.
            m["baseline"] = f"pps.none.{flows}"
            m["ratio"] = statistics.median(reps[k]["pps"] / base[k]["pps"] for k in reps if k in base)
            c["baseline"] = f"pps.cpu.none.{flows}"
            c["ratio"] = statistics.median(reps[k]["cpu_ns_per_pkt"] / base[k]["cpu_ns_per_pkt"]
                                           for k in reps if k in base)
            c["net_ns"] = statistics.median(reps[k]["cpu_ns_per_pkt"] - base[k]["cpu_ns_per_pkt"]
                                            for k in reps if k in base)
            if cfg == "tc":
                m["target"] = {"on": "ratio", "min": 0.9}
        out += [m, c]
        nft = by.get(("nft", flows), {})
        if cfg == "tc" and nft:
            out.append({"id": f"pps.tc_vs_nft.{flows}", "group": "pps",
                        "desc": f"tapfence TC mode / nftables, {flows} flows, per repetition, median",
                        "unit": "x", "value": statistics.median(reps[k]["pps"] / nft[k]["pps"]
                                                                for k in reps if k in nft),
                        "target": {"on": "value", "min": 1.0}})
    return out


# --- connection rate: raw runs -> metrics --------------------------------------------------------

def conn_metrics(raw):
    """Per configuration the rate of new connections and the requests' p50/p99 (the median of the
    repetitions'), each with its ratio to no enforcement taken per repetition; then TC over nftables."""
    by = {}
    for r in raw["runs"]:
        by.setdefault(r["config"], {})[r["rep"]] = r
    base = by.get("none", {})
    load = f"wrk -t {raw['threads']} -c {raw['connections']}, {raw['seconds']} s x"
    out = []
    for cfg, reps in by.items():
        for stat, key, unit, what in (("rate", "conn_per_s", "conn/s", "new connections a second"),
                                      ("p50", "p50_us", "us", "request latency p50"),
                                      ("p99", "p99_us", "us", "request latency p99")):
            vals = [r[key] for r in reps.values()]
            m = {"id": f"conn.{cfg}.{stat}", "group": "conn",
                 "desc": f"{TPUT_DESC.get(cfg, cfg)}; {what}, {load} {len(vals)}",
                 "unit": unit, "value": statistics.median(vals), "min": min(vals), "max": max(vals),
                 "samples": vals}
            if cfg != "none" and base:
                m["baseline"] = f"conn.none.{stat}"
                m["ratio"] = statistics.median(reps[k][key] / base[k][key] for k in reps if k in base)
                if cfg == "tc" and stat == "rate":
                    m["target"] = {"on": "ratio", "min": 0.9}
            out.append(m)
    if "tc" in by and "nft" in by:
        ks = [k for k in by["tc"] if k in by["nft"]]
        out.append({"id": "conn.tc_vs_nft", "group": "conn",
                    "desc": "new connections a second, tapfence TC mode / nftables, per repetition, median",
                    "unit": "x", "value": statistics.median(by["tc"][k]["conn_per_s"] / by["nft"][k]["conn_per_s"]
                                                            for k in ks),
                    "target": {"on": "value", "min": 1.0}})
    return out


# --- TLS SNI check: raw connections -> metrics ---------------------------------------------------

TLS_DESC = {
    "none": "no enforcement",
    "plain": "tapfence TC, CIDR rule without \"tls\" (no SNI check)",
    "plain-2seg": "as plain, the hello in two writes {gap} ms apart",
    "sni-1seg": "SNI check, the hello in one segment",
    "sni-2seg": "SNI check, the hello in two segments {gap} ms apart",
    "plain-2seg-b2b": "as plain, the hello in two writes back to back",
    "sni-2seg-b2b": "SNI check, the hello in two segments back to back",
}
# Each configuration's baseline: tapfence's own cost against none, the SNI check's against plain.
TLS_BASE = {"plain": "none", "plain-2seg": "plain", "sni-1seg": "plain", "sni-2seg": "plain",
            "plain-2seg-b2b": "plain", "sni-2seg-b2b": "plain"}
TLS_STATS = ("p50", "p90", "p99", "mean")
# What the split costs by itself (two writes, no check), and what the loss recovery adds to it.
TLS_DIFFS = (("split", "plain-2seg", "plain", "two writes {gap} ms apart, without any check"),
             ("recovery", "sni-2seg", "plain-2seg", "the client's loss recovery, writes {gap} ms apart"),
             ("split_b2b", "plain-2seg-b2b", "plain", "two writes back to back, without any check"),
             ("recovery_b2b", "sni-2seg-b2b", "plain-2seg-b2b",
              "the client's loss recovery, writes back to back"))


def nearest_rank(vals, p):
    """The p-th percentile by nearest rank (as bench_ctl's)."""
    v = sorted(vals)
    k = int(p / 100 * len(v) + 0.999999)
    return v[max(k, 1) - 1]


def tls_stat(vals, stat):
    return statistics.fmean(vals) if stat == "mean" else nearest_rank(vals, int(stat[1:]))


def tls_metrics(raw):
    """Per configuration p50/p90/p99/mean over all its connections (the spread: the rounds'
    values) and the ratio to its baseline; then retransmissions, and what a split hello costs."""
    lat, rounds, retrans, mib = {}, {}, {}, {}
    for r in raw["runs"]:
        cfg = r["config"]
        lat.setdefault(cfg, []).extend(r["lat_us"])
        rounds.setdefault(cfg, []).append(r["lat_us"])
        retrans.setdefault(cfg, []).extend(r["retrans"])
        for k, v in r["mib"].items():
            mib.setdefault(cfg, {}).setdefault(k, 0)
            mib[cfg][k] += v
    gap = f"{raw['gap_ms']:g}"
    hello = f"{raw['hello']} ({raw['hello_bytes']} B)"
    out = []
    for cfg in lat:
        base = TLS_BASE.get(cfg)
        for st in TLS_STATS:
            per_round = [tls_stat(v, st) for v in rounds[cfg]]
            m = {"id": f"tls.{cfg}.{st}", "group": "tls",
                 "desc": f"{TLS_DESC.get(cfg, cfg).format(gap=gap)}; connect to answer, {hello}, {st} "
                         f"of {len(lat[cfg])} connections (spread: {len(rounds[cfg])} rounds)",
                 "unit": "us", "value": tls_stat(lat[cfg], st), "min": min(per_round),
                 "max": max(per_round), "samples": per_round, "n": len(lat[cfg])}
            if base in lat:
                m["baseline"] = f"tls.{base}.{st}"
                m["ratio"] = m["value"] / tls_stat(lat[base], st)
            out.append(m)
    for cfg in lat:
        n = len(retrans[cfg])
        out.append({"id": f"tls.{cfg}.retrans", "group": "tls_recovery",
                    "desc": f"{cfg}: segments the client retransmitted per connection (TCP_INFO), "
                            f"over {n}", "unit": "segs", "value": sum(retrans[cfg]) / n})
    for cfg in lat:
        if not sum(retrans[cfg]):
            continue
        n = len(retrans[cfg])
        for k, what in (("TCPSackRecovery", "SACK (RACK) recoveries"), ("TCPLossProbes", "tail loss probes"),
                        ("TCPTimeouts", "retransmission timeouts")):
            out.append({"id": f"tls.{cfg}.{k}", "group": "tls_recovery",
                        "desc": f"{cfg}: {what} per connection (the guest namespace's {k})",
                        "unit": "/conn", "value": mib[cfg].get(k, 0) / n})
    for cfg in ("plain-2seg-b2b", "sni-2seg-b2b"):
        if cfg in lat:
            out.append({"id": f"tls.{cfg}.over_2ms", "group": "tls_recovery",
                        "desc": f"{cfg}: share of connections over 2 ms (for sni-2seg-b2b: those whose "
                                "stack waited for RACK's reordering timer)", "unit": "%",
                        "value": 100 * sum(x > 2000 for x in lat[cfg]) / len(lat[cfg])})
    for name, cfg, base, what in TLS_DIFFS:
        if cfg not in lat or base not in lat:
            continue
        for st in ("p50", "mean"):
            a, b = tls_stat(lat[cfg], st), tls_stat(lat[base], st)
            out.append({"id": f"tls.{name}.{st}", "group": "tls_recovery",
                        "desc": f"{cfg} {st} - {base} {st}: {what.format(gap=gap)}",
                        "unit": "us", "value": a - b, "baseline": f"tls.{base}.{st}", "ratio": a / b})
    return out


# --- name path: raw trials -> metrics ------------------------------------------------------------

NAMES_DESC = {
    "none": "no enforcement",
    "tapfence": "tapfence TC, a host rule",
    "nftset": "nftables, @allow4 fed by dnsmasq --nftset",
}


def names_metrics(raw):
    """Per configuration: the query-to-first-byte time (p50, p99) and the query's (p50) over its
    trials that completed (the spread: the rounds' values; the ratio: to none's), the trials whose
    first SYN was dropped, and the enforcer's own denials; then tapfence's p50 over nftset's."""
    trials = {}
    for t in raw["trials"]:
        trials.setdefault(t["config"], []).append(t)
    stats = (("first_byte", 50, "query sent to the server's first byte"),
             ("first_byte", 99, "query sent to the server's first byte"),
             ("dns", 50, "query sent to answer read"))
    ok = {cfg: [t for t in ts if not t["error"]] for cfg, ts in trials.items()}
    # A configuration none of whose trials completed has no times, only its failures.
    value = {(cfg, key, p): nearest_rank([t[f"{key}_us"] for t in ok[cfg]], p)
             for cfg in trials if ok[cfg] for key, p, _ in stats}
    out = []
    for cfg in sorted(trials, key=lambda c: list(NAMES_DESC).index(c)):
        ts = trials[cfg]
        what = f"{NAMES_DESC[cfg]}; a fresh name each trial"
        for key, p, span in stats if ok[cfg] else ():
            rounds = {}
            for t in ok[cfg]:
                rounds.setdefault(t["round"], []).append(t[f"{key}_us"])
            per_round = [nearest_rank(v, p) for v in rounds.values()]
            m = {"id": f"names.{cfg}.{key}.p{p}", "group": "names",
                 "desc": f"{what}: {span}, p{p} of {len(ok[cfg])} trials (spread: {len(rounds)} rounds)",
                 "unit": "us", "value": value[cfg, key, p], "min": min(per_round), "max": max(per_round),
                 "samples": per_round, "n": len(ok[cfg])}
            if cfg != "none" and ("none", key, p) in value:
                m["baseline"] = f"names.none.{key}.p{p}"
                m["ratio"] = m["value"] / value["none", key, p]
            out.append(m)
        m = {"id": f"names.{cfg}.syn_dropped", "group": "names",
             "desc": f"{what}: trials whose first SYN after the answer was dropped (retransmitted, "
                     f"connect over 200 ms, or never connected), of {len(ts)}",
             "unit": "trials", "value": sum(bool(t["syn_dropped"]) for t in ts), "n": len(ts)}
        if cfg == "tapfence":
            m["target"] = {"on": "value", "max": 0}
        out.append(m)
        if len(ok[cfg]) < len(ts):
            out.append({"id": f"names.{cfg}.failed", "group": "names",
                        "desc": f"{what}: trials with no answer, no address or no connection, of {len(ts)}",
                        "unit": "trials", "value": len(ts) - len(ok[cfg])})
    enf = raw["enforcers"]
    out.append({"id": "names.tapfence.denials", "group": "names",
                "desc": "the tapfence session's deny counters, summed (cross-check of syn_dropped)",
                "unit": "pkts", "value": sum(enf["tapfence"]["denied"].values())})
    out.append({"id": "names.nftset.denials", "group": "names",
                "desc": "the nftables drop rule's counter (cross-check of syn_dropped)",
                "unit": "pkts", "value": enf["nftset"]["dropped"] or 0})
    if ("tapfence", "first_byte", 50) in value and ("nftset", "first_byte", 50) in value:
        out.append({"id": "names.tapfence_vs_nftset", "group": "names",
                    "desc": "tapfence's p50 query-to-first-byte time / nftset's (dnsmasq --nftset)",
                    "unit": "x", "value": value["tapfence", "first_byte", 50] / value["nftset", "first_byte", 50]})
    return out


# --- targets and the table -----------------------------------------------------------------------

def judge(m):
    """Set m["met"] from its target; returns it (None without a target)."""
    t = m.get("target")
    if not t:
        return None
    # "ratio": to the baseline; "net_ns": the value less the baseline's; "value" itself.
    v = m.get(t.get("on") if t.get("on") in ("ratio", "net_ns") else "value")
    if v is None:
        m["met"] = None
    elif "max" in t:
        m["met"] = v <= t["max"]
    else:
        m["met"] = v >= t["min"]
    return m["met"]


def target_text(m):
    t = m.get("target")
    if not t:
        return ""
    what = {"ratio": "ratio", "net_ns": "ns net"}.get(t.get("on"), m["unit"])
    if "max" in t:
        return f"<= {t['max']:g} {what}"
    return f">= {t['min']:g} {what}"


def fmt(v, unit):
    if v is None:
        return "-"
    if unit in ("ns", "KiB", "events/s"):
        return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}"
    return f"{v:.2f}" if abs(v) < 100 else f"{v:.0f}"


GROUPS = [
    ("packet", "Per-packet cost, daemon defaults: events rate limited, so a repeated packet's are "
               "mostly suppressed (BPF_PROG_TEST_RUN; ratio to the no-op of the same hook)"),
    ("packet_events", "Per-packet cost, every packet writing its event (events_per_s = 0)"),
    ("modes", "Deny rules, audit mode, rejections (TC, guest -> host; ratio to the no-op; vs_enforce: "
              "to the plain session's same packet, this run)"),
    ("scale", "Scaling (TC, guest -> host; ratio to the no-op)"),
    ("scale_growth", "Scaling: cost at the largest point / at the smallest"),
    ("scale_random", "Fast path on a flow picked at random among the table's, against the same flow each "
                     "time (single runs; net: over the no-op's single run)"),
    ("events", "Event feed: the daemon's drain loop alone (ring buffer -> JSON log file)"),
    ("throughput", "Throughput (ratio to no enforcement, per repetition)"),
    ("pps", "64-byte packet rate through a session's tap, written as a VMM without vhost-net writes "
            "(ratio to no enforcement, per repetition)"),
    ("pps_cpu", "64-byte packets: the writer's CPU time per frame delivered (net: over no enforcement)"),
    ("throughput_cost", "Per-run cost of the daemon's programs under that load (one more run each, stats on)"),
    ("conn", "Connection rate: a handshake, a GET and the close per request (wrk, Connection: close, nginx); "
             "latency from the request's first byte to its whole answer (ratio to no enforcement, per repetition)"),
    ("control", "Control plane"),
    ("memory", "Memory"),
    ("tls", "TLS SNI check: connect to the server's answer to a real ClientHello (ratio: plain to none, "
            "the others to plain; spread: the rounds' values)"),
    ("tls_recovery", "TLS SNI check: retransmissions per connection, and what a split hello costs (each row's "
                     "difference and ratio to the baseline it names)"),
    ("names", "Name path: a fresh name's query to the server's first byte, and the first SYN after the answer "
              "(ratio to no enforcement; spread: the rounds' values)"),
]


def table(res, out=sys.stdout):
    m = res["machine"]
    g = res["git"]
    print(f"tapfence bench, {res['time']}{' (QUICK)' if res.get('quick') else ''}", file=out)
    print(f"  commit {g['commit'][:12] if g.get('commit') else '?'}{' (tree dirty)' if g.get('dirty') else ''}"
          f"; {m['cpus']} x {m['cpu']}, {m['mem_mib']} MiB; kernel {m['kernel']}; {m['clang']}; "
          f"load {' '.join(m.get('loadavg', []))}", file=out)
    met = missed = 0
    for gid, title in GROUPS:
        rows = [x for x in res["metrics"] if x["group"] == gid]
        if not rows:
            continue
        print(f"\n{title}", file=out)
        print(f"  {'metric':<34} {'value':>9} {'unit':<7} {'spread':>15} {'ratio':>7}  {'target':<14} result",
              file=out)
        for x in rows:
            spread = f"[{fmt(x['min'], x['unit'])}..{fmt(x['max'], x['unit'])}]" if "min" in x else ""
            ratio = f"{x['ratio']:.2f}x" if x.get("ratio") is not None else ""
            ok = judge(x)
            result = "" if ok is None and not x.get("target") else ("met" if ok else "NOT MET")
            met += ok is True
            missed += ok is False
            print(f"  {x['id']:<34} {fmt(x['value'], x['unit']):>9} {x['unit']:<7} {spread:>15} {ratio:>7}  "
                  f"{target_text(x):<14} {result}", file=out)
    for p in res.get("failed", []):
        print(f"\nPART FAILED: {p} (see the output above)", file=out)
    print(f"\ntargets: {met} met, {missed} not met", file=out)


def markdown(res, path, out=sys.stdout):
    """The run as Markdown (docs/performance-results.md): machine, every group's table, targets."""
    m, g = res["machine"], res["git"]
    w = lambda s="": print(s, file=out)
    w("# Benchmark results")
    w()
    w(f"Generated by `tools/bench/report.py markdown {os.path.basename(path)}` from one `make bench`"
      f"{' QUICK=1' if res.get('quick') else ''} run; do not edit by hand: run the benchmark and "
      "generate it again. What each metric measures, and why: [performance.md](performance.md).")
    w()
    w("| | |")
    w("|---|---|")
    w(f"| run | {res['time']} |")
    w(f"| commit | {g['commit'][:12] if g.get('commit') else '?'}{' (tree dirty)' if g.get('dirty') else ''} |")
    w(f"| CPU | {m['cpus']} x {m['cpu']} |")
    w(f"| memory | {m['mem_mib']} MiB |")
    w(f"| kernel | {m['kernel']} |")
    for k in ("clang", "gcc", "libbpf", "iperf3", "nft", "wrk", "nginx"):
        if m.get(k):
            w(f"| {k} | {m[k]} |")
    w(f"| load average at the end | {' '.join(m.get('loadavg', []))} |")
    if res.get("failed"):
        w(f"| parts that failed | {', '.join(map(str, res['failed']))} |")
    targets = []
    for gid, title in GROUPS:
        rows = [x for x in res["metrics"] if x["group"] == gid]
        if not rows:
            continue
        w()
        w(f"## {title}")
        w()
        w("| metric | value | unit | spread | ratio | target | result |")
        w("|---|---:|---|---|---:|---|---|")
        for x in rows:
            spread = f"{fmt(x['min'], x['unit'])}..{fmt(x['max'], x['unit'])}" if "min" in x else ""
            ratio = f"{x['ratio']:.2f}x" if x.get("ratio") is not None else ""
            ok = judge(x)
            result = "" if ok is None and not x.get("target") else ("met" if ok else "**not met**")
            if x.get("target"):
                targets.append((x, result))
            tt = target_text(x).replace("<=", "≤").replace(">=", "≥")
            w(f"| `{x['id']}` | {fmt(x['value'], x['unit'])} | {x['unit']} | {spread} | {ratio} | {tt} | {result} |")
    dims = sorted({x["dim"] for x in res["metrics"] if x["group"] == "scale"})
    if dims:
        w()
        w("## Scaling plots")
        w()
        w("`report.py plot FILE docs/img` draws them from the same file, as `scale_<dimension>.png` "
      "(beside `.dat` files, which are not kept).")
        for dim in dims:
            w()
            w(f"![ns per packet against the {DIM_TITLE.get(dim, dim)}](img/scale_{dim}.png)")
    w()
    w("## Targets")
    w()
    w(f"{sum(1 for _, r in targets if r == 'met')} met, {sum(1 for _, r in targets if r != 'met')} not met.")
    w()
    w("| metric | what | value | target | result |")
    w("|---|---|---:|---|---|")
    for x, r in targets:
        on = x["target"].get("on")
        v = f"{x['ratio']:.2f}x" if on == "ratio" else fmt(x.get(on if on == "net_ns" else "value"), x["unit"])
        tt = target_text(x).replace("<=", "≤").replace(">=", "≥")
        w(f"| `{x['id']}` | {x.get('desc', '')} | {v} | {tt} | {r} |")


# --- plots ---------------------------------------------------------------------------------------

DIM_TITLE = {"rules": "CIDR rules in the session", "sessions": "sessions",
             "flows": "flows in the session's table",
             "neighbour_flows": "flows in another session's table"}
SERIES = ("noop", "fast_path", "new_flow", "no_rule")


def plot(res, outdir):
    """One PNG per scaling dimension: ns per packet against the dimension, log x."""
    if not shutil.which("gnuplot"):
        print("report: gnuplot not found, no plots", file=sys.stderr)
        return []
    os.makedirs(outdir, exist_ok=True)
    pts = {}
    for x in res["metrics"]:
        if x["group"] == "scale":
            pts.setdefault(x["dim"], {}).setdefault(x["x"], {})[x["series"]] = x["value"]
    made = []
    for dim, byx in pts.items():
        dat = os.path.join(outdir, f"scale_{dim}.dat")
        png = os.path.join(outdir, f"scale_{dim}.png")
        with open(dat, "w") as f:
            f.write("# x " + " ".join(SERIES) + "\n")
            for xv in sorted(byx):
                f.write(f"{xv} " + " ".join(str(byx[xv].get(s, "NaN")) for s in SERIES) + "\n")
        script = f"""
set terminal pngcairo size 720,480 noenhanced font ",10"
set output "{png}"
set title "tapfence: ns per packet vs {DIM_TITLE.get(dim, dim)} (TC, BPF_PROG_TEST_RUN)"
set logscale x
set xlabel "{DIM_TITLE.get(dim, dim)}"
set ylabel "ns per packet (median of rounds)"
set yrange [0:*]
set key outside below
set grid
plot "{dat}" using 1:3 with linespoints lw 2 title "fast path (established flow)", \\
     "{dat}" using 1:4 with linespoints lw 2 title "new flow allowed by a rule (lookups, flow insert)", \\
     "{dat}" using 1:5 with linespoints lw 2 title "new flow denied, no rule (lookups)", \\
     "{dat}" using 1:2 with linespoints lw 1 dt 2 title "no-op program"
"""
        r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
        if r.returncode:
            print(f"report: gnuplot failed for {dim}: {r.stderr.strip()}", file=sys.stderr)
            continue
        made.append(png)
    return made


# --- commands ------------------------------------------------------------------------------------

def cmd_run(rundir, resdir, plotdir):
    metrics, failed, parts = [], [], {}
    for p in PARTS:
        f = os.path.join(rundir, f"{p}.json")
        if not os.path.exists(f):
            failed.append(p)
            continue
        raw = json.load(open(f))
        parts[p] = {k: v for k, v in raw.items() if k not in ("metrics", "runs")}
        # A part that ran its sub-parts apart (bench_dp) names those that failed; the rest count.
        failed += [f"{p}: {x['part']} ({x['error']})" for x in raw.get("failed", [])]
        if p == "tput":
            metrics += tput_metrics(raw)
        elif p == "pps":
            metrics += pps_metrics(raw)
        elif p == "tls":
            metrics += tls_metrics(raw)
        elif p == "names":
            metrics += names_metrics(raw)
        elif p == "conn":
            metrics += conn_metrics(raw)
        else:
            metrics += raw["metrics"]
    skipped = [p for p in os.environ.get("BENCH_SKIPPED", "").split() if p]
    failed = [p for p in failed if p not in skipped]
    now = datetime.datetime.now(datetime.timezone.utc)
    res = {"schema": SCHEMA, "time": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
           "quick": os.environ.get("QUICK", "") not in ("", "0"), "git": git(), "machine": machine(),
           "parts": parts, "skipped": skipped, "failed": failed, "metrics": metrics}
    for x in metrics:
        judge(x)
    os.makedirs(resdir, exist_ok=True)
    commit = (res["git"]["commit"] or "nogit")[:12]
    path = os.path.join(resdir, f"{now.strftime('%Y%m%dT%H%M%SZ')}-{commit}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(res, f, indent=1)
    os.rename(path + ".tmp", path)
    table(res)
    for png in plot(res, plotdir):
        print(f"plot: {png}")
    print(f"results: {path}")
    return 0


def cmd_compare(old_path, new_path):
    a, b = json.load(open(old_path)), json.load(open(new_path))
    for k in ("commit",):
        print(f"{k}: {a['git'].get(k)} -> {b['git'].get(k)}")
    for k in ("kernel", "cpu", "cpus", "clang"):
        if a["machine"].get(k) != b["machine"].get(k):
            print(f"machine {k} differs: {a['machine'].get(k)} -> {b['machine'].get(k)}")
    am = {x["id"]: x for x in a["metrics"]}
    bm = {x["id"]: x for x in b["metrics"]}
    print(f"\n  {'metric':<34} {'old':>9} {'new':>9} {'unit':<7} {'change':>8} {'old ratio':>9} {'new ratio':>9}")
    for mid in list(am) + [k for k in bm if k not in am]:
        x, y = am.get(mid), bm.get(mid)
        u = (x or y)["unit"]
        ch = ""
        if x and y and x["value"]:
            ch = f"{(y['value'] - x['value']) / abs(x['value']) * 100:+.1f}%"
        r = lambda m: f"{m['ratio']:.2f}x" if m and m.get("ratio") is not None else ""
        print(f"  {mid:<34} {fmt(x['value'], u) if x else '-':>9} {fmt(y['value'], u) if y else '-':>9} "
              f"{u:<7} {ch:>8} {r(x):>9} {r(y):>9}")
    return 0


def main(argv):
    if len(argv) == 5 and argv[1] == "run":
        return cmd_run(*argv[2:])
    if len(argv) == 3 and argv[1] == "show":
        table(json.load(open(argv[2])))
        return 0
    if len(argv) == 3 and argv[1] == "markdown":
        markdown(json.load(open(argv[2])), argv[2])
        return 0
    if len(argv) == 4 and argv[1] == "compare":
        return cmd_compare(argv[2], argv[3])
    if len(argv) == 4 and argv[1] == "plot":
        for png in plot(json.load(open(argv[2])), argv[3]):
            print(f"plot: {png}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
