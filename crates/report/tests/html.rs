//! The HTML report in a real headless browser (Debian's `chromium`): it loads without
//! script errors, every panel is drawn and not empty, and a screenshot is not blank.
//! Without chromium the test says so and passes, unless `CI` is set (then it fails:
//! `.ci/run` installs chromium).

use std::path::{Path, PathBuf};
use std::process::Command;

use gpuscope_report::render::render_html;

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
