"""Checks the DOM of `voltc inspect --html` as a browser built it.

usage: check-plan-html.py DOM.html INSPECT.json

DOM.html is what `chromium --headless --dump-dom` printed for the page;
INSPECT.json is `voltc inspect --json` of the same plan. Checks, per GPU:
the memory bar's segments add up to the device (or the plan's total, if
larger) and their widths to 100 %; the weights by role add up to the pack;
the KV cache and each recurrent state group are the plan's; every arena
buffer is drawn once, inside the arena, at its op range; and buffers live at
the same time never overlap in the arena. The page must load nothing: no
script, no src or href, no url(). Prints one line per GPU.
"""
import json
import re
import sys
from html.parser import HTMLParser


class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.sections = []  # (attrs, bar attrs, [seg attrs], [rect attrs])
        self.tags = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        cls = a.get("class", "").split()
        if tag == "section" and "gpu" in cls:
            self.sections.append({"attrs": a, "bar": None, "segs": [], "rects": [], "svg": None})
        elif not self.sections:
            return
        elif tag == "div" and "bar" in cls:
            self.sections[-1]["bar"] = a
        elif tag == "div" and "seg" in cls:
            self.sections[-1]["segs"].append(a)
        elif tag == "svg":
            self.sections[-1]["svg"] = a
        elif tag == "rect" and "buffer" in cls:
            self.sections[-1]["rects"].append(a)


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    dom_text = open(sys.argv[1], encoding="utf-8").read()
    report = json.load(open(sys.argv[2]))
    for needle in ("<script", " src=", " href=", "url(", "@import"):
        if needle in dom_text:
            fail("the page refers to something outside it: " + needle)
    dom = Dom()
    dom.feed(dom_text)
    if len(dom.sections) != len(report["ranks"]):
        fail("%d GPU sections for %d ranks" % (len(dom.sections), len(report["ranks"])))
    device = report["device_bytes"]
    for section, rank in zip(dom.sections, report["ranks"]):
        a = section["attrs"]
        if int(a["data-rank"]) != rank["rank"] or int(a["data-total-bytes"]) != rank["total_bytes"]:
            fail("section %s does not match rank %d" % (a, rank["rank"]))
        segs = section["segs"]
        parts = {s["data-part"]: int(s["data-bytes"]) for s in segs}
        bar = sum(int(s["data-bytes"]) for s in segs)
        if bar != int(section["bar"]["data-bar-bytes"]) or bar != max(device, rank["total_bytes"], rank["budget_bytes"]):
            fail("rank %d: the bar holds %d bytes, the GPU %d" % (rank["rank"], bar, device))
        widths = sum(float(re.search(r"width:([0-9.]+)%", s["style"]).group(1)) for s in segs)
        if abs(widths - 100.0) > 0.01:
            fail("rank %d: segment widths add up to %.4f %%" % (rank["rank"], widths))
        weights = sum(v for k, v in parts.items() if k.startswith("weights: "))
        if weights != rank["weights_bytes"]:
            fail("rank %d: weights by role %d, pack %d" % (rank["rank"], weights, rank["weights_bytes"]))
        if parts.get("KV cache") != rank["kv_cache"]["bytes"]:
            fail("rank %d: KV cache %s, plan %d" % (rank["rank"], parts.get("KV cache"), rank["kv_cache"]["bytes"]))
        if parts.get("activation arena") != rank["arena_bytes"]:
            fail("rank %d: arena" % rank["rank"])
        for st in rank["state"]:
            if parts.get("recurrent state: " + st["name"]) != st["bytes"]:
                fail("rank %d: state %s" % (rank["rank"], st["name"]))
        rects = section["rects"]
        arena = int(section["svg"]["data-arena-bytes"])
        ops = int(section["svg"]["data-ops"])
        if len(rects) != len(rank["arena_buffers"]):
            fail("rank %d: %d buffers drawn of %d" % (rank["rank"], len(rects), len(rank["arena_buffers"])))
        spans = []
        for r, b in zip(rects, rank["arena_buffers"]):
            off, size = int(r["data-offset"]), int(r["data-bytes"])
            first, last = int(r["data-first-op"]), int(r["data-last-op"])
            if r["data-name"] != b["name"] or off != b["offset"] or size != b["bytes"]:
                fail("rank %d: buffer %s drawn as %s" % (rank["rank"], b["name"], r))
            if off + size > arena or last >= ops or first > last:
                fail("rank %d: buffer %s outside the arena or the step" % (rank["rank"], b["name"]))
            if abs(float(r["x"]) - 1000.0 * first / ops) > 0.01 or \
               abs(float(r["width"]) - 1000.0 * (last - first + 1) / ops) > 0.01:
                fail("rank %d: buffer %s drawn at the wrong ops" % (rank["rank"], b["name"]))
            spans.append((first, last, off, off + size, b["name"]))
        for i, (f1, l1, a1, e1, n1) in enumerate(spans):
            for f2, l2, a2, e2, n2 in spans[i + 1:]:
                if f1 <= l2 and f2 <= l1 and a1 < e2 and a2 < e1:
                    fail("rank %d: %s and %s are live together and overlap" % (rank["rank"], n1, n2))
        print("rank %d: %d parts, %d buffers over %d ops, %d of %d bytes" % (
            rank["rank"], len(segs), len(rects), ops, rank["total_bytes"], device))


main()
