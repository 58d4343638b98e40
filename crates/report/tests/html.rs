//! The HTML report in a real headless browser (Debian's `chromium`): it loads without
//! script errors, every panel is drawn and not empty, and a screenshot is not blank.
//! Without chromium the test says so and passes, unless `CI` is set (then it fails:
//! `.ci/run` installs chromium).

use std::path::{Path, PathBuf};
use std::process::Command;

use gpuscope_report::analysis::analyze;
use gpuscope_report::render::render_html;
use gpuscope_trace::{GpuSpan, PassEvent, Profile, TimestampIssue, TokenRecord};

use gpuscope_trace::fixtures as fixture;

pub const PANELS: [&str; 7] = [
    "panel-tokens",
    "panel-dispatches",
    "panel-ops",
    "panel-roofline",
    "panel-layers",
    "panel-counters",
    "panel-findings",
];

/// The browser to drive, or `None` (after saying why) when the test may be skipped.
pub fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = Command::new("which").arg(name).output() {
            if out.status.success() {
                let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
                return Some(PathBuf::from(p));
            }
        }
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI is set but no chromium is installed (.ci/run installs it)"
    );
    let why = "the browser test: no chromium installed (apt-get install chromium)";
    eprintln!("skipped: {why}");
    if let Some(path) = std::env::var_os("GPUSCOPE_SKIP_LOG") {
        use std::io::Write;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        file.and_then(|mut f| writeln!(f, "gpuscope-report html: {why}"))
            .expect("counting a skipped test");
    }
    None
}

fn headless(browser: &Path, profile_dir: &Path) -> Command {
    let mut c = Command::new(browser);
    c.args([
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--hide-scrollbars",
        "--no-first-run",
        "--window-size=1100,2400",
    ])
    .arg(format!("--user-data-dir={}", profile_dir.display()));
    c
}

/// Opens `page` in headless chromium with `action` (`--dump-dom`, `--screenshot=F`);
/// returns stdout.
fn open(browser: &Path, page: &Path, action: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let out = headless(browser, dir.path())
        .arg(action)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    out.stdout
}

/// Loads `page` and returns its DOM after the scripts ran.
pub fn dump_dom(browser: &Path, page: &Path) -> String {
    String::from_utf8(open(browser, page, "--dump-dom")).unwrap()
}

/// Checks what the page drew: no script error, every panel marked with a count.
pub fn assert_rendered(dom: &str) {
    assert!(
        !dom.contains("id=\"js-error\""),
        "script error in the page: {dom}"
    );
    assert!(
        dom.contains("data-rendered=\"ok\""),
        "the script did not finish"
    );
    for panel in PANELS {
        let tag = format!("id=\"{panel}\" data-items=\"");
        let at = dom
            .find(&tag)
            .unwrap_or_else(|| panic!("{panel} not drawn"));
        let n: String = dom[at + tag.len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        assert!(n.parse::<u32>().unwrap() > 0, "{panel} is empty");
    }
}

/// Takes a screenshot of `page` and checks that it is not one colour.
pub fn assert_screenshot_not_blank(browser: &Path, page: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let shot = dir.path().join("shot.png");
    open(browser, page, &format!("--screenshot={}", shot.display()));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(px).collect();
    let distinct: std::collections::HashSet<&[u8]> = pixels.iter().copied().collect();
    assert!(
        distinct.len() > 16,
        "screenshot is blank ({} colours)",
        distinct.len()
    );
    let background = pixels.iter().filter(|p| *p == &pixels[0]).count();
    assert!(
        background < pixels.len() * 98 / 100,
        "screenshot is almost all one colour"
    );
}

#[test]
fn report_is_self_contained() {
    let html = render_html(&fixture::small_with_ceilings());
    for remote in ["http://", "https://", "src=\"", "href=\""] {
        let hits: Vec<_> = html.match_indices(remote).collect();
        // The SVG namespace is a name, not a fetch.
        assert!(
            hits.iter()
                .all(|(i, _)| html[*i..].starts_with("http://www.w3.org/2000/svg")),
            "the page refers to {remote}"
        );
    }
}

#[test]
fn report_loads_in_chromium() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    for (name, p) in [
        ("with_ceilings", fixture::small_with_ceilings()),
        ("timeline", fixture::timeline()),
    ] {
        let page = dir.path().join(format!("{name}.html"));
        std::fs::write(&page, render_html(&p)).unwrap();
        assert_rendered(&dump_dom(&browser, &page));
        if name == "with_ceilings" {
            assert_screenshot_not_blank(&browser, &page);
        }
    }
}

/// Op names of a real fused decode plan: long, and many with similar intensities, so
/// the roofline is crowded (issue: labels printed over each other, names cut off).
const CROWDED_OPS: [&str; 27] = [
    "rms_norm+gemv_q8_0+silu_mul.rows.packed.xshared.wide",
    // Wider than the name column may grow: wrapped.
    "rms_norm+gemv_q8_0+silu_mul.rows.packed.xshared.wide.split_k8.dp4a.subgroup_reduce.f16_accum",
    "gemv_q4_0",
    "gemv_q4_0.rows4",
    "gemv_q4_0.subgroup",
    "gemv_q8_0",
    "gemv_q8_0.dp4a.split_k",
    "gemv_f16",
    "gemv_q4_1.blocks2",
    "rms_norm",
    "rms_norm+gemv_q4_0",
    "rms_norm+gemv_q4_0+silu_mul",
    "rope",
    "rope_neox.f16",
    "attention",
    "attention.flash.split4",
    "softmax",
    "silu_mul",
    "add",
    "residual_add.f16",
    "embedding_q8_0",
    "argmax",
    "copy_kv.f16",
    "kv_cache_write.q8_0.packed",
    "mul_mat_vec_q6_k.subgroup.wide",
    // Two ops at exactly the same point: their labels still may not overlap.
    "mul_mat_vec_q6_k.subgroup.wide.twin",
    "mul_mat_vec_q6_k.subgroup.wide.triplet",
];

/// A realistic crowded profile: `small_with_ceilings()`'s adapter and ceilings, 6
/// tokens of 2 layers running every op of [`CROWDED_OPS`] once each (52 dispatches per
/// token), intensities 0.5-1.5 FLOP/byte and 20-95% of the bandwidth ceiling; one
/// flagged timestamp and one token with two syncs give checklist items a next command
/// with a why.
fn crowded() -> Profile {
    let mut p = fixture::small_with_ceilings();
    let (tokens, layers, n) = (6u32, 2u32, CROWDED_OPS.len() as u32);
    p.workload.layers = layers;
    p.workload.graph_dispatches_per_token = layers * n;
    p.workload.graph_passes_per_token = layers;
    p.dispatches.clear();
    p.passes.clear();
    p.tokens.clear();
    for token in 0..tokens {
        let mut cursor = token as u64 * 10_000_000;
        for layer in 0..layers {
            let start = cursor;
            for (i, op) in CROWDED_OPS.iter().enumerate() {
                let (bytes, flops, ns) = crowded_cost(i.min(24) as u64);
                let index = layer * n + i as u32;
                let mut d = fixture::dispatch(token, index, op, Some((cursor, cursor + ns)));
                if (token, index) == (5, 7) {
                    // A flagged timestamp: its checklist item has evidence and a why.
                    d.gpu = None;
                    d.timestamp_issue = Some(TimestampIssue::Zero);
                }
                d.label = format!("L{layer}.{op}").into();
                d.layer = Some(layer);
                d.pass = layer;
                d.bytes = bytes;
                d.flops = flops;
                p.dispatches.push(d);
                cursor += ns + fixture::GAP_NS;
            }
            p.passes.push(PassEvent {
                token,
                index: layer,
                name: format!("L{layer}").into(),
                layer: Some(layer),
                dispatches: n,
                gpu: Some(GpuSpan {
                    start_ns: start,
                    end_ns: cursor - fixture::GAP_NS,
                }),
                timestamp_issue: None,
            });
        }
        let busy = cursor - token as u64 * 10_000_000;
        p.tokens
            .push(crowded_token(token, busy, layers * n, layers));
    }
    p
}

/// Bytes, FLOPs and GPU ns of the `i`th crowded op.
fn crowded_cost(i: u64) -> (u64, u64, u64) {
    let bytes = 1_000_000 + i * 37_000;
    let flops = bytes * (50 + 4 * i) / 100;
    let ns = 20_000 + (i * 7919 % 23) * 1500;
    (bytes, flops, ns)
}

fn crowded_token(index: u32, busy_ns: u64, dispatches: u32, passes: u32) -> TokenRecord {
    let mut counters = fixture::counters(index == 0);
    counters.dispatches = dispatches as u64;
    counters.passes = passes as u64;
    // A token that syncs twice: another item with evidence, next command and why.
    counters.syncs = if index == 4 { 2 } else { 1 };
    TokenRecord {
        index,
        position: 5 + index,
        token_id: 100 + index,
        wall_ns: busy_ns + 200_000 + index as u64 * 10_000,
        gpu_busy_ns: Some(busy_ns),
        counters,
        cpu: Default::default(),
        name: None,
        other_counters: Default::default(),
        gpu_track: 0,
    }
}

/// Run after the page's script: every pair of SVG text elements whose boxes (as drawn,
/// in CSS pixels) intersect by more than a pixel both ways, written into
/// `<pre id="overlap-check" data-pairs="N">` for the test to read from the dumped DOM.
const OVERLAP_CHECK: &str = r#"<script>
(function () {
  var boxes = Array.prototype.slice.call(document.querySelectorAll("svg text"))
    .map(function (t) { return { t: t, r: t.getBoundingClientRect() }; })
    .filter(function (b) { return b.r.width > 0 && b.r.height > 0; });
  function name(b) {
    var panel = b.t.closest("section");
    return (panel ? panel.id : "?") + " '" + b.t.textContent + "'";
  }
  var pairs = [];
  for (var i = 0; i < boxes.length; i++) {
    for (var j = i + 1; j < boxes.length; j++) {
      var a = boxes[i].r, b = boxes[j].r;
      var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 1 && h > 1) pairs.push(name(boxes[i]) + " overlaps " + name(boxes[j]));
    }
  }
  var out = document.createElement("pre");
  out.id = "overlap-check";
  out.setAttribute("data-pairs", String(pairs.length));
  out.setAttribute("data-texts", String(boxes.length));
  out.textContent = pairs.join("\n");
  document.body.appendChild(out);
})();
</script>"#;

/// Renders `p` with [`OVERLAP_CHECK`] appended, loads it and returns the DOM.
fn dom_with_overlap_check(browser: &Path, p: &Profile) -> String {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let html = render_html(p).replace("</body>", &format!("{OVERLAP_CHECK}\n</body>"));
    std::fs::write(&page, html).unwrap();
    dump_dom(browser, &page)
}

/// The value of `attr` on the element with `id` in a dumped DOM.
fn attribute<'a>(dom: &'a str, id: &str, attr: &str) -> &'a str {
    let at = element(dom, id);
    let tag = &dom[at..at + dom[at..].find('>').unwrap()];
    let key = format!(" {attr}=\"");
    let start = tag
        .find(&key)
        .unwrap_or_else(|| panic!("#{id} has no {attr}"))
        + key.len();
    &tag[start..start + tag[start..].find('"').unwrap()]
}

/// The text inside the element that starts at byte `at` of a dumped DOM, tags removed
/// (it must not hold an element of its own tag name).
fn inner_text(dom: &str, at: usize) -> String {
    let open = &dom[at..at + dom[at..].find('>').unwrap()];
    let tag: String = open[1..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    let start = at + open.len() + 1;
    let inner = &dom[start..start + dom[start..].find(&format!("</{tag}>")).unwrap()];
    let mut text = String::new();
    for (i, part) in inner.split('<').enumerate() {
        text += if i == 0 {
            part
        } else {
            part.split_once('>').map_or("", |x| x.1)
        };
    }
    text
}

/// Where the opening tag of the element with `id` starts.
fn element(dom: &str, id: &str) -> usize {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the page"));
    dom[..at].rfind('<').unwrap()
}

/// The text of the element with `id` in a dumped DOM.
fn text_of(dom: &str, id: &str) -> String {
    inner_text(dom, element(dom, id))
}

/// The texts of the elements whose class list holds `class`, in a dumped DOM.
fn texts_of_class(dom: &str, class: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in dom.match_indices(" class=\"") {
        let classes = &dom[at + 8..at + 8 + dom[at + 8..].find('"').unwrap()];
        if classes.split(' ').any(|c| c == class) {
            out.push(inner_text(dom, dom[..at].rfind('<').unwrap()));
        }
    }
    out
}

#[test]
fn html_has_no_overlapping_labels_in_chromium() {
    let Some(browser) = chromium() else { return };
    let mut overlaps = String::new();
    for (name, p) in [
        ("crowded", crowded()),
        ("with_ceilings", fixture::small_with_ceilings()),
        ("timeline", fixture::timeline()),
    ] {
        let dom = dom_with_overlap_check(&browser, &p);
        assert_rendered(&dom);
        let pairs: usize = attribute(&dom, "overlap-check", "data-pairs")
            .parse()
            .unwrap();
        let texts: usize = attribute(&dom, "overlap-check", "data-texts")
            .parse()
            .unwrap();
        eprintln!("{name}: {pairs} overlapping pairs of {texts} SVG text labels");
        assert!(texts > 10, "{name}: only {texts} SVG text labels drawn");
        if pairs > 0 {
            overlaps += &format!("{name}:\n{}\n", text_of(&dom, "overlap-check"));
        }
    }
    assert!(overlaps.is_empty(), "overlapping labels:\n{overlaps}");
}

#[test]
fn html_shows_checklist_evidence_and_next_commands() {
    let Some(browser) = chromium() else { return };
    let p = crowded();
    let a = analyze(&p);
    let dom = dom_with_overlap_check(&browser, &p);
    let findings = &dom[dom.find("id=\"panel-findings\"").unwrap()..];
    let (mut evidence, mut whys) = (0, 0);
    for item in &a.checklist.items {
        for e in &item.evidence {
            assert!(findings.contains(&escape(e)), "evidence not shown: {e}");
            evidence += 1;
        }
        if let Some(n) = &item.next {
            // The page splits `COMMAND  (why)` into the command and its why.
            let (command, why) = n.split_once("  (").unwrap_or((n, ""));
            assert!(findings.contains(&escape(command)), "next not shown: {n}");
            let why = why.strip_suffix(')').unwrap_or(why);
            let why = why.strip_prefix("why: ").unwrap_or(why);
            assert!(findings.contains(&escape(why)), "why not shown: {n}");
            whys += usize::from(!why.is_empty());
        }
    }
    assert!(
        evidence > 0 && whys > 0,
        "the fixture has no evidence ({evidence}) or next command with a why ({whys})"
    );
}

#[test]
fn html_has_legends_and_readable_axis_ticks() {
    let Some(browser) = chromium() else { return };
    let dom = dom_with_overlap_check(&browser, &crowded());
    // The dispatch timeline's legend names every op it draws.
    let legend = text_of(&dom, "dispatch-legend");
    for op in CROWDED_OPS {
        assert!(
            legend.contains(op),
            "{op} missing from the timeline legend: {legend}"
        );
    }
    // Log axes: ticks at 1, 2 or 5 × a power of ten, written plainly (not "0.000").
    for axis in ["roofline-x-tick", "roofline-y-tick"] {
        let ticks = texts_of_class(&dom, axis);
        assert!(ticks.len() >= 2, "{axis}: {ticks:?}");
        for t in &ticks {
            let v = tick_value(t).unwrap_or_else(|| panic!("{axis}: {t:?} in {ticks:?}"));
            let mantissa = v / 10f64.powf(v.log10().floor());
            assert!(
                [1.0, 2.0, 5.0].iter().any(|m| (mantissa - m).abs() < 1e-6),
                "{axis}: {t:?} in {ticks:?}"
            );
        }
    }
    // Linear axes have labelled ticks too.
    for axis in ["tokens-x-tick", "tokens-y-tick", "dispatch-x-tick"] {
        let ticks = texts_of_class(&dom, axis);
        assert!(ticks.len() >= 3, "{axis}: {ticks:?}");
    }
    // Every op name is shown whole in the per-op bars (its lines joined).
    let bars = texts_of_class(&dom, "op-name").concat();
    for op in CROWDED_OPS {
        assert!(
            bars.contains(op),
            "{op} not shown whole in the op bars: {bars}"
        );
    }
}

/// A log-axis tick's value: `0.5`, `20`, `1k`, `10M`; `None` for anything else (and
/// for zero, which a log axis cannot show).
fn tick_value(t: &str) -> Option<f64> {
    let scale = match t.chars().last()? {
        'k' => 1e3,
        'M' => 1e6,
        'G' => 1e9,
        _ => 1.0,
    };
    let v: f64 = t.trim_end_matches(['k', 'M', 'G']).parse().ok()?;
    (v > 0.0).then_some(v * scale)
}

/// Text as the dumped DOM writes it.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
