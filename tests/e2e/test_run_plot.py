#!/usr/bin/env python3
"""Run plots: fsdp-run --plot and fsdp-plot.

No browser is needed (CI installs none): each page is parsed as XML with
xml.etree and its structure checked, one row each:

  - fsdp-run --plot on the shipped GPT, two in-process ranks: the page is
    well-formed, has no script, no external reference (href, src, url()),
    a title naming the model and the world size, and one chart each for
    loss, learning rate, throughput and memory; every chart has both axes,
    an x axis label "step", a y axis label, tick labels and a legend; every
    polyline point lies inside its plot area, and each series has one
    point per step that logs it; the page is byte for byte what fsdp-plot
    writes from the same run's --metrics file (one reader, one renderer);
  - a resumed run's two metrics files plot as one run over all its steps,
    the resumed file's lines replacing the first's where both have a step;
  - keys other features log (val_loss on some steps, grad_norm, loss_scale,
    skipped, a null loss) get their charts: val_loss has points on its
    steps only, the null loss breaks the line, absent keys get no chart
    and a note naming the flag that logs them;
  - bad input exits 1 with a message: a missing file, a malformed line
    (file and line number), an empty file, no -o, an unwritable output;
    fsdp-run --plot to an unwritable path fails before the first step, and
    a forward plan refuses --plot;
  - optional: where chromium or firefox is installed, a headless screenshot
    of the page is taken and must be a non-blank PNG (skipped, saying so,
    elsewhere).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rows as rows_report  # noqa: E402
import test_resume as tr  # noqa: E402  (Session: plans and runs of the shipped GPT)

SVG = "{http://www.w3.org/2000/svg}"
Failure = tr.Failure


def parse_page(path):
    """The page as an XML tree (the doctype dropped), or Failure."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if not text.startswith("<!DOCTYPE html>\n"):
        raise Failure(f"{path}: no HTML doctype")
    try:
        return text, ET.fromstring(text[len("<!DOCTYPE html>\n"):])
    except ET.ParseError as e:
        raise Failure(f"{path}: not well-formed: {e}")


def floats(text):
    return [float(v) for v in re.findall(r"-?[0-9.]+", text)]


def check_page(path, expect_charts, expect_points):
    """Problems with the page at `path`: self-contained, and each chart in
    `expect_charts` (titles) present with axes, labels, ticks, a legend,
    and its series' points (label -> count, from `expect_points`) inside
    its plot area. Returns (problems, charts by title)."""
    text, root = parse_page(path)
    problems = []
    for element in root.iter():
        tag = element.tag.split("}")[-1]
        if tag in ("script", "iframe", "object", "embed", "link", "img", "foreignObject"):
            problems.append(f"a <{tag}> element")
        for name, value in element.attrib.items():
            if name.split("}")[-1] in ("href", "src") or name.startswith("on"):
                problems.append(f"<{tag} {name}=...>: not self-contained")
            if "url(" in value:
                problems.append(f"<{tag} {name}> references url()")
    charts = {}
    for svg in root.iter(SVG + "svg"):
        title = svg.find(SVG + "title")
        charts[title.text if title is not None else "?"] = svg
    if sorted(charts) != sorted(expect_charts):
        problems.append(f"charts {sorted(charts)} != {sorted(expect_charts)}")
    for name, svg in charts.items():
        area = svg.find(f"{SVG}rect[@class='plot-area']")
        if area is None:
            problems.append(f"{name}: no plot area")
            continue
        x0, y0 = float(area.get("x")), float(area.get("y"))
        x1, y1 = x0 + float(area.get("width")), y0 + float(area.get("height"))
        classes = [e.get("class", "") for e in svg.iter()]
        for needed in ("axis x", "axis y", "axis-label x", "axis-label y", "tick x", "tick y",
                       "legend"):
            if needed not in classes:
                problems.append(f"{name}: no element of class '{needed}'")
        labels = {e.get("class"): (e.text or "") for e in svg.iter(SVG + "text")
                  if e.get("class", "").startswith("axis-label")}
        if labels.get("axis-label x") != "step" or not labels.get("axis-label y"):
            problems.append(f"{name}: axis labels {labels}")
        for series in svg.iter(SVG + "g"):
            if series.get("class") != "series":
                continue
            label, count = series.get("data-label"), 0
            for line in series.iter(SVG + "polyline"):
                values = floats(line.get("points"))
                for x, y in zip(values[0::2], values[1::2]):
                    count += 1
                    if not (x0 - 1e-6 <= x <= x1 + 1e-6 and y0 - 1e-6 <= y <= y1 + 1e-6):
                        problems.append(f"{name}/{label}: point {x},{y} outside the plot area")
            for dot in series.iter(SVG + "circle"):
                x, y = float(dot.get("cx")), float(dot.get("cy"))
                if not (x0 - 1e-6 <= x <= x1 + 1e-6 and y0 - 1e-6 <= y <= y1 + 1e-6):
                    problems.append(f"{name}/{label}: dot {x},{y} outside the plot area")
                count += dot.get("class") == "dot"
            if label in expect_points and count != expect_points[label]:
                problems.append(f"{name}/{label}: {count} points, expected {expect_points[label]}")
    return problems, charts, root


def counts(records, keys):
    """Steps with a number for each key."""
    return {label: sum(1 for r in records if isinstance(r.get(key), (int, float))
                       and not isinstance(r.get(key), bool)) for label, key in keys.items()}


TRAIN_KEYS = {"train loss": "loss", "lr": "lr", "tokens/s": "tokens_per_s",
              "peak_bytes (plan)": "peak_bytes"}
TRAIN_CHARTS = ["loss", "learning rate", "throughput", "memory per rank"]


def run_plot_row(s, args):
    plan = s.plan(["--world-size=2", "--shard=full"])
    work = s.fresh("plot")
    page = os.path.join(work, "run.html")
    _, _, out = s.train(plan, 6, f"--plot={page}", "--lr-schedule=cosine:2")
    metrics_path = re.search(r"--metrics=(\S+)", " ".join(out.args)).group(1)
    with open(metrics_path) as f:
        records = [json.loads(line) for line in f]
    problems, _, root = check_page(page, TRAIN_CHARTS, counts(records, TRAIN_KEYS))
    h2 = "".join(root.find("body").find("h2").itertext())
    for needed in ("gpt-tiny.onnx", "world size 2", "--shard=full"):
        if needed not in h2:
            problems.append(f"title '{h2}' does not name {needed}")
    again = os.path.join(work, "again.html")
    tr.run([args.fsdp_plot, metrics_path, "-o", again,
            "--title=" + h2[len("training run: "):]])
    with open(page, "rb") as a, open(again, "rb") as b:
        if a.read() != b.read():
            problems.append("fsdp-plot's page of the run's --metrics differs from --plot's")
    return problems


def resumed_row(s, args):
    plan = s.plan([])
    ckpt = os.path.join(s.fresh("ckpt"), "ckpt")
    first = s.train(plan, 4, f"--save={ckpt}", "--save-every=2")[2]
    second = s.train(plan, 6, f"--resume={ckpt}/step-00000002")[2]
    files = [re.search(r"--metrics=(\S+)", " ".join(o.args)).group(1) for o in (first, second)]
    page = os.path.join(s.fresh("plot"), "run.html")
    out = tr.run([args.fsdp_plot, *files, "-o", page])
    problems = []
    if "steps 1-6, 6 logged, from 2 files" not in out.stdout:
        problems.append(f"fsdp-plot said: {out.stdout.strip()}")
    records = {}
    for path in files:  # the later file's steps replace the earlier's
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                records[r["step"]] = r
    p, charts, _ = check_page(page, TRAIN_CHARTS, counts(list(records.values()), TRAIN_KEYS))
    problems += p
    ticks = [t.text for t in charts["loss"].iter(SVG + "text") if t.get("class") == "tick x"]
    if ticks[:1] != ["1"] or ticks[-1:] != ["6"]:
        problems.append(f"the loss chart's steps run {ticks}, not 1..6")
    return problems


def other_keys_row(s, args):
    lines = []
    for step in range(1, 11):
        r = {"step": step, "loss": 5.0 - 0.3 * step, "lr": 1e-3, "samples_per_s": 100.0,
             "step_time_s": 0.1, "peak_bytes": 3 << 20, "grad_norm": 2.0 / step,
             "loss_scale": 65536.0 if step < 4 else 32768.0, "skipped": step == 4}
        if step == 4:
            r["loss"] = None
        if step % 3 == 0:
            r["val_loss"] = 5.1 - 0.2 * step
        lines.append(json.dumps(r))
    work = s.fresh("keys")
    metrics, page = os.path.join(work, "m.jsonl"), os.path.join(work, "run.html")
    with open(metrics, "w") as f:
        f.write("\n".join(lines) + "\n")
    tr.run([args.fsdp_plot, metrics, "-o", page, "--title=synthetic"])
    problems, charts, root = check_page(
        page, ["loss", "learning rate", "gradient norm", "throughput", "memory per rank",
               "loss scale"],
        {"train loss": 9, "val_loss": 3, "grad_norm": 10, "loss_scale": 10, "samples/s": 10})
    loss = [g for g in charts["loss"].iter(SVG + "g") if g.get("data-label") == "train loss"][0]
    if len(loss.findall(SVG + "polyline")) != 2:
        problems.append("the null loss at step 4 does not break the train loss line in two")
    text = "".join(root.itertext())
    if "Not in these metrics" in text:
        problems.append("a note on absent keys though all are present")
    if "1 step skipped" not in text or "best val_loss 3.3 (step 9)" not in text:
        problems.append("the summary lacks the skipped step or the best val_loss")
    # Only TrainLog's keys: no gradient norm or loss scale chart, and a note.
    with open(metrics, "w") as f:
        f.write('{"step": 1, "loss": 2.5, "lr": 0.01, "samples_per_s": 3, "peak_bytes": 10}\n')
    tr.run([args.fsdp_plot, metrics, "-o", page])
    p, _, root = check_page(page, ["loss", "learning rate", "throughput", "memory per rank"],
                            {"train loss": 1})
    problems += p
    if "grad_norm (fsdp-opt --clip-grad-norm=MAX or --log-grad-norm)" not in "".join(root.itertext()):
        problems.append("no note naming the flag that logs grad_norm")
    return problems


def bad_input_row(s, args):
    work = s.fresh("bad")
    problems = []

    def refused(command, *needles):
        out = tr.run(command, expect_ok=False)
        if out.returncode != 1:
            problems.append(f"{' '.join(command)}: exit {out.returncode}, not 1")
        for needle in needles:
            if needle not in out.stderr:
                problems.append(f"{' '.join(command)}: '{needle}' not in: {out.stderr.strip()}")

    good, bad, empty = (os.path.join(work, n) for n in ("good.jsonl", "bad.jsonl", "empty.jsonl"))
    with open(good, "w") as f:
        f.write('{"step": 1, "loss": 2}\n')
    with open(bad, "w") as f:
        f.write('{"step": 1, "loss": 2}\n{"step": 2, "loss": 1.5}\n{"step": 3, "loss": }\n')
    open(empty, "w").close()
    page = os.path.join(work, "run.html")
    refused([args.fsdp_plot, os.path.join(work, "absent.jsonl"), "-o", page],
            "absent.jsonl': cannot open")
    refused([args.fsdp_plot, good, bad, "-o", page], f"'{bad}' line 3: 'loss': malformed JSON")
    refused([args.fsdp_plot, empty, "-o", page], f"'{empty}' holds no step")
    refused([args.fsdp_plot, good], "no output given")
    refused([args.fsdp_plot, "-o", page], "no metrics file given")
    refused([args.fsdp_plot, good, "-o", os.path.join(work, "no", "dir", "run.html")],
            "plot file", "no/dir/run.html")
    refused([args.fsdp_plot, good, "-o", page, "--bogus"], "unknown option '--bogus'")
    if os.path.exists(page):
        problems.append("a refused fsdp-plot wrote its page")
    # fsdp-run: an unwritable --plot fails before training; forward plans refuse it.
    plan = s.plan([])
    out = tr.run([args.fsdp_run, plan, f"--data={s.tokens}", "--steps=2",
                  f"--plot={os.path.join(work, 'no', 'run.html')}"], expect_ok=False)
    if out.returncode != 1 or "--plot: plot file" not in out.stderr or "step 1" in out.stdout:
        problems.append(f"fsdp-run --plot to a missing directory: exit {out.returncode}, "
                        f"{out.stderr.strip()} / {out.stdout.strip()[:200]}")
    forward = os.path.join(s.fresh("fwd"), "fwd.plan")
    tr.run([args.fsdp_opt, os.path.join(tr.ROOT, "examples", "gpt-tiny-logits.onnx"),
            "--mode=forward", "-o", forward])
    out = tr.run([args.fsdp_run, forward, f"--plot={page}"], expect_ok=False)
    if out.returncode != 1 or "--plot: only training plans take it" not in out.stderr:
        problems.append(f"a forward plan with --plot: exit {out.returncode}, {out.stderr.strip()}")
    return problems


def screenshot_row(s, args):
    """A headless browser's screenshot of a page: non-blank (only where a
    browser is installed)."""
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome",
                                              "firefox") if shutil.which(b)), None)
    if not browser:
        return None
    work = s.fresh("shot")
    metrics, page, png = (os.path.join(work, n) for n in ("m.jsonl", "run.html", "run.png"))
    with open(metrics, "w") as f:
        for step in range(1, 21):
            f.write(json.dumps({"step": step, "loss": 5 / step, "lr": 1e-3, "samples_per_s": 9,
                                "peak_bytes": 1 << 20}) + "\n")
    tr.run([args.fsdp_plot, metrics, "-o", page])
    if "firefox" in browser:
        command = [browser, "--headless", "--screenshot", png, "file://" + page]
    else:
        command = [browser, "--headless", "--no-sandbox", "--disable-gpu",
                   f"--screenshot={png}", "--window-size=1200,900", "file://" + page]
    tr.run(command)
    with open(png, "rb") as f:
        data = f.read()
    if not data.startswith(b"\x89PNG") or len(data) < 5000:
        return [f"{browser}: screenshot {png} is not a non-blank PNG ({len(data)} bytes)"]
    return []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fsdp-opt", required=True)
    ap.add_argument("--fsdp-run", required=True)
    ap.add_argument("--fsdp-plot", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="run-plot-") as tmp:
        s = tr.Session(args, tmp)
        rows = [
            ("fsdp-run --plot (N=2 --shard=full): structure, and fsdp-plot writes the same page",
             lambda: run_plot_row(s, args)),
            ("a resumed run's two metrics files plot as one run", lambda: resumed_row(s, args)),
            ("val_loss, grad_norm, loss_scale, skipped, a null loss; absent keys noted",
             lambda: other_keys_row(s, args)),
            ("bad input: exit 1 with the file, line and reason", lambda: bad_input_row(s, args)),
        ]
        results = rows_report.collect(rows, failure=Failure)
        shot = rows_report.collect([("headless browser screenshot", lambda: screenshot_row(s, args))],
                                   failure=Failure)
        if shot[0][1] is None:
            print("SKIP  headless browser screenshot (no chromium or firefox on this machine)")
        else:
            results += shot
        return rows_report.report(results)


if __name__ == "__main__":
    sys.exit(main())
