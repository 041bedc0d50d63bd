#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Write tapfence's man pages from the sources they describe, so they cannot drift from them:

    tapfenced(8)        tapfenced --help, and docs/operations.md's "Running tapfenced" flags
    tapfence(8)         tapfence --help: the CLI's own command table, every subcommand
    tapfence.conf(5)    docs/operations.md's configuration tables: every key, its default, range
    tapfence-events(7)  docs/events.md: the line format's fields and every reason

    mkman.py BUILD_DIR OUT_DIR VERSION

tests/netns/test_man.sh renders each with man(1) and checks them against the code: every
subcommand, every key the config parser takes, every reason. Standard library only.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATE = "2026-12-02"


def esc(s):
    """Roff-safe text: backslashes, and a leading dot or quote taken as a request."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + s if s[:1] in (".", "'") else s


def inline(md):
    """Markdown inline (code, links, emphasis) to roff."""
    out, pos = [], 0
    for m in re.finditer(r"`([^`]*)`|\[([^\]]+)\]\([^)]*\)|\*\*([^*]+)\*\*", md):
        out.append(esc(md[pos:m.start()]))
        if m.group(1) is not None:
            out.append("\\fB" + esc(m.group(1)) + "\\fR")
        elif m.group(2) is not None:
            out.append(esc(m.group(2)))
        else:
            out.append("\\fB" + esc(m.group(3)) + "\\fR")
        pos = m.end()
    out.append(esc(md[pos:]))
    return "".join(out)


def section(md, title):
    """The lines of the markdown section headed `title` (any level), to the next heading."""
    lines = md.split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"(#+) (.*)", line)
        if m and m.group(2).strip() == title:
            level = len(m.group(1))
            body = []
            for nxt in lines[i + 1:]:
                n = re.match(r"(#+) ", nxt)
                if n and len(n.group(1)) <= level:
                    break
                body.append(nxt)
            return body
    raise SystemExit(f"mkman: no section `{title}'")


def tables(lines):
    """Every markdown table in lines: a list of (header cells, rows of cells)."""
    out, cur = [], None
    for line in lines + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if cur is None:
                cur = (cells, [])
            elif not set(line) <= set("|-: "):
                cur[1].append(cells)
        elif cur is not None:
            out.append(cur)
            cur = None
    return out


def items(rows, key=0, sub=None):
    """A table's rows as .TP items: the key cell as the tag, the others (named by sub) as text."""
    out = []
    for r in rows:
        out.append(".TP\n" + inline(r[key]))
        rest = [(sub[i] + ": " if sub and sub[i] else "") + inline(c)
                for i, c in enumerate(r) if i != key and c]
        out.append("\n.br\n".join(rest))
    return "\n".join(out)


def head(name, sect, desc):
    return (f'.TH {name.upper()} {sect} "{DATE}" "tapfence {VERSION}" "tapfence"\n'
            f".SH NAME\n{name} \\- {esc(desc)}\n")


def usage_block(text):
    return ".nf\n" + "\n".join(esc(l) for l in text.rstrip().split("\n")) + "\n.fi\n"


def tapfenced(build, ops):
    help_text = run([os.path.join(build, "tapfenced"), "--help"])
    usage = "\n".join(l for l in help_text.split("\n") if not l.startswith("  "))
    flags = tables(section(ops, "Running tapfenced"))[0]
    return (head("tapfenced", 8, "the tapfence daemon: eBPF egress enforcement on microVM taps")
            + ".SH SYNOPSIS\n" + usage_block(usage.replace("Usage: ", "").replace("       ", ""))
            + ".SH DESCRIPTION\n"
            + "tapfenced loads tapfence's programs, attaches them to each session's tap, serves "
              "the control socket that \\fBtapfence\\fR(8) drives, and writes the sealed event "
              "log. Stopping it leaves enforcement in place; \\fB\\-\\-cleanup\\fR removes it.\n"
            + ".SH OPTIONS\n" + items(flags[1]) + "\n"
            + ".SH FILES\n.TP\n/run/tapfence/control.sock\nthe control socket\n"
              ".TP\n/var/lib/tapfence\nsaved sessions and the log key\n"
              ".TP\n/sys/fs/bpf/tapfence\nthe pinned maps and links\n"
              ".TP\n/var/log/tapfence/events.jsonl\nthe sealed event log\n"
            + ".SH SEE ALSO\n\\fBtapfence\\fR(8), \\fBtapfence.conf\\fR(5), "
              "\\fBtapfence-events\\fR(7), \\fBsystemd.exec\\fR(5)\n")


def tapfence(build):
    help_text = run([os.path.join(build, "tapfence"), "--help"])
    lines = help_text.split("\n")
    usage = lines[0].replace("Usage: ", "")
    cmds, opts, i = [], [], 0
    while i < len(lines) and lines[i] != "Commands:":
        i += 1
    i += 1
    while i + 1 < len(lines) and lines[i].startswith("  ") and not lines[i].startswith("      "):
        cmds.append((lines[i].strip(), lines[i + 1].strip()))
        i += 2
    for l in lines[i:]:
        m = re.match(r"  (-\S.*?)  +(.*)", l)
        if m:
            opts.append((m.group(1), m.group(2)))
    status = "\n".join(l for l in lines if l.startswith(("Exit status", "2 cannot")))
    out = head("tapfence", 8, "drive tapfenced: sessions, rules, events, the sealed log")
    out += ".SH SYNOPSIS\n" + usage_block(usage)
    out += (".SH DESCRIPTION\nThe command-line client of \\fBtapfenced\\fR(8)'s control socket, "
            "and the offline tools of its sealed log.\n")
    out += ".SH COMMANDS\n" + "\n".join(f".TP\n\\fB{esc(c)}\\fR\n{esc(h)}" for c, h in cmds) + "\n"
    out += ".SH OPTIONS\n" + "\n".join(f".TP\n\\fB{esc(o)}\\fR\n{esc(h)}" for o, h in opts) + "\n"
    out += ".SH EXIT STATUS\n" + esc(status.replace("\n", " ")) + "\n"
    out += ".SH SEE ALSO\n\\fBtapfenced\\fR(8), \\fBtapfence.conf\\fR(5), \\fBtapfence-events\\fR(7)\n"
    return out


def conf(ops):
    sec = section(ops, "Configuration")
    t = tables(sec)
    out = head("tapfence.conf", 5, "tapfenced's configuration file")
    out += (".SH DESCRIPTION\nA JSON object, given to \\fBtapfenced \\-\\-config\\fR; every key is "
            "optional. Unknown keys, duplicate keys and out-of-range values are errors that stop "
            "the daemon, with a message naming the key; \\fBtapfenced \\-\\-check\\-config\\fR "
            "checks a file the same way.\n")
    out += ".SH KEYS\n" + items(t[0][1], sub=t[0][0]) + "\n"
    out += ".SS limits\n" + items(t[1][1], sub=t[1][0]) + "\n"
    out += ".SS timeouts\n" + items(t[2][1], sub=t[2][0]) + "\n"
    out += ".SH SEE ALSO\n\\fBtapfenced\\fR(8)\n"
    return out


def events(ev):
    fields = tables(section(ev, "Line format"))
    reasons = tables(section(ev, "Reasons"))
    out = head("tapfence-events", 7, "the event feed: one JSON line per decision")
    out += (".SH DESCRIPTION\nEvery decision tapfence reports is one JSON object on one line, "
            "in the sealed event log, on \\fBtapfenced \\-\\-foreground\\fR's standard output and "
            "to control-socket subscribers (\\fBtapfence events\\fR).\n")
    out += ".SH FIELDS\n" + "\n".join(items(t[1], sub=t[0]) for t in fields) + "\n"
    out += ".SH REASONS\n" + "\n".join(items(t[1], key=1, sub=t[0]) for t in reasons) + "\n"
    out += ".SH SEE ALSO\n\\fBtapfence\\fR(8), \\fBtapfenced\\fR(8)\n"
    return out


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout


def main():
    global VERSION
    build, out_dir, VERSION = sys.argv[1:4]
    ops = open(os.path.join(ROOT, "docs/operations.md")).read()
    ev = open(os.path.join(ROOT, "docs/events.md")).read()
    os.makedirs(out_dir, exist_ok=True)
    for name, text in (("tapfenced.8", tapfenced(build, ops)), ("tapfence.8", tapfence(build)),
                       ("tapfence.conf.5", conf(ops)), ("tapfence-events.7", events(ev))):
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
