//! Runs that stop part-way keep what they measured: a real `gpuscope profile` signalled
//! while it decodes, a device destroyed and an allocation over the memory budget
//! mid-run (`--fault`), and a replayed kernel that runs past `replay --timeout`.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::smollm2;
use crate::common::{gpuscope, have_gpu, text};

/// Starts the binary with piped output and an empty ceilings cache.
fn spawn(args: &[&str], cache: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_gpuscope"))
        .args(args)
        .env("GPUSCOPE_CACHE_DIR", cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the gpuscope binary starts")
}

/// Which output of the child says it is ready for the signal.
#[derive(Clone, Copy, PartialEq)]
enum Watch {
    Stdout,
    Stderr,
}

/// Drains one output of a child to a string, on its own thread; when `ready` (given the
/// text so far) first holds, sends `signal` to `pid`. Returns whether it was sent.
/// A predicate over the text read so far.
type Ready = Box<dyn Fn(&str) -> bool + Send>;

fn drain(
    mut from: impl Read + Send + 'static,
    pid: u32,
    signal: Option<(libc::c_int, Ready)>,
) -> std::thread::JoinHandle<(String, bool)> {
    std::thread::spawn(move || {
        let (mut text, mut buf, mut sent) = (String::new(), [0u8; 4096], false);
        loop {
            let n = from.read(&mut buf).unwrap();
            if n == 0 {
                return (text, sent);
            }
            text.push_str(&String::from_utf8_lossy(&buf[..n]));
            if let Some((sig, ready)) = &signal {
                if !sent && ready(&text) {
                    // SAFETY: kill(2) on our own child's pid.
                    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, *sig) }, 0);
                    sent = true;
                }
            }
        }
    })
}

/// Reads the child's outputs to the end, sending `signal` once the `watch`ed one's text
/// satisfies `ready`; returns the exit code, stdout and stderr.
fn signal_when(
    mut child: Child,
    watch: Watch,
    ready: impl Fn(&str) -> bool + Send + 'static,
    signal: libc::c_int,
) -> (Option<i32>, String, String) {
    let pid = child.id();
    let mut ready: Option<Ready> = Some(Box::new(ready));
    let mut trigger = |w: Watch| (w == watch).then(|| (signal, ready.take().unwrap()));
    let out = drain(child.stdout.take().unwrap(), pid, trigger(Watch::Stdout));
    let err = drain(child.stderr.take().unwrap(), pid, trigger(Watch::Stderr));
    let status = child.wait().unwrap();
    let ((stdout, a), (stderr, b)) = (out.join().unwrap(), err.join().unwrap());
    assert!(a || b, "the run never got ready:\n{stdout}\n{stderr}");
    (status.code(), stdout, stderr)
}

/// Ready `secs` seconds after `marker` first shows (so some work has been measured).
fn seen_then_wait(marker: &'static str, secs: u64) -> impl Fn(&str) -> bool + Send + 'static {
    move |t| {
        let ready = t.contains(marker);
        if ready {
            std::thread::sleep(Duration::from_secs(secs));
        }
        ready
    }
}

/// "N of M tokens measured" (printed once N > 0).
fn measured_some(stderr: &str) -> bool {
    stderr.contains("tokens measured")
}

#[test]
fn sigterm_keeps_the_profile_and_capture_of_the_tokens_measured() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (json, cap) = (dir.path().join("p.json"), dir.path().join("cap"));
    let child = spawn(
        &[
            "profile",
            "--preset",
            "tiny",
            "--tokens",
            "10000",
            "--warmup",
            "1",
            "--json",
            json.to_str().unwrap(),
            "--capture",
            cap.to_str().unwrap(),
        ],
        dir.path(),
    );
    let (code, stdout, stderr) = signal_when(child, Watch::Stderr, measured_some, libc::SIGTERM);
    assert_eq!(code, Some(143), "{stderr}");
    let error: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(error.len(), 1, "{stderr}");
    assert!(error[0].contains("interrupted by SIGTERM"), "{stderr}");
    // The report of what was measured is printed, and says it is incomplete.
    assert!(stdout.contains("INCOMPLETE: interrupted after"), "{stdout}");
    assert!(stdout.contains("Tokens:"), "{stdout}");

    let p = gpuscope_trace::io::load_profile(&json).expect("the profile is written whole");
    let n = p.tokens.len();
    assert!((1..10000).contains(&n), "{n} tokens");
    let why = p.incomplete.as_deref().expect("marked incomplete");
    assert!(why.contains(&format!("after {n} of 10000 tokens")), "{why}");

    let out = gpuscope(&["inspect", cap.to_str().unwrap()]);
    let inspection = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        inspection.contains("INCOMPLETE: interrupted after"),
        "{inspection}"
    );
    assert!(
        inspection.contains(&format!("Stream:   {n} steps")),
        "the capture holds the steps measured ({n}):\n{inspection}"
    );
    let report = gpuscope(&["report", json.to_str().unwrap()]);
    assert!(text(&report.stdout).contains("INCOMPLETE"));
}

#[test]
fn sigint_stops_a_generation_run_after_the_tokens_printed() {
    let Some(model) = smollm2() else { return };
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let child = spawn(
        &[
            "run",
            &model,
            "--prompt",
            "Once upon a time",
            "--tokens",
            "100000",
            "--ignore-eos",
        ],
        dir.path(),
    );
    // Once generated text shows, the prompt is done and generation runs.
    let (code, stdout, stderr) =
        signal_when(child, Watch::Stdout, |t| !t.trim().is_empty(), libc::SIGINT);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        stderr.contains("gpuscope: generation "),
        "the speeds of what ran are printed:\n{stderr}"
    );
    assert!(stderr.contains("interrupted by SIGINT"), "{stderr}");
    assert!(
        !stdout.trim().is_empty(),
        "tokens were printed before the stop"
    );
}

#[test]
fn sigint_ends_bench_with_the_repetitions_measured() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let child = spawn(
        &[
            "bench", "--preset", "tiny", "-p", "0", "-n", "16", "-r", "100000",
        ],
        dir.path(),
    );
    // A few seconds after the start, so repetitions have run (one takes ~0.1 s here).
    let (code, stdout, stderr) = signal_when(
        child,
        Watch::Stderr,
        seen_then_wait("gpuscope: bench ", 3),
        libc::SIGINT,
    );
    assert_eq!(code, Some(130), "{stderr}");
    if stderr.contains("interrupted by SIGINT: stopped after 1 of 1 tests") {
        assert!(
            stdout.contains("tg16"),
            "the test measured is printed:\n{stdout}"
        );
    } else {
        // Stopped before the first repetition ended: nothing measured, no row.
        assert!(
            stderr.contains("stopped after 0 of 1 tests") && !stdout.contains("tg16"),
            "{stderr}\n{stdout}"
        );
    }
}

#[test]
fn sigint_ends_a_sweep_with_the_configurations_measured() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The tile experiment: 27 configurations, each about a second on lavapipe with 3
    // cold runs (a run follows a 64 MiB write there; the signal ends the sweep after the
    // configuration in progress, so 50 runs made the test wait ~10 s for it).
    let child = spawn(
        &[
            "bench",
            "--preset",
            "tiny",
            "--experiment",
            "tile",
            "-r",
            "3",
            "-o",
            "csv",
        ],
        dir.path(),
    );
    let (code, stdout, stderr) = signal_when(
        child,
        Watch::Stderr,
        seen_then_wait("gpuscope: sweeping ", 2),
        libc::SIGINT,
    );
    if code == Some(0) {
        // A fast GPU finished all 27 before the signal came.
        assert_eq!(stdout.lines().count(), 28, "{stdout}");
        return;
    }
    assert_eq!(code, Some(130), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("interrupted by SIGINT: stopped after"))
        .unwrap_or_else(|| panic!("no interrupt line: {stderr}"));
    let measured: usize = line
        .split("stopped after ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(measured < 27, "{line}");
    // The header and one CSV row per configuration measured.
    assert_eq!(stdout.lines().count(), measured + 1, "{stdout}");
}

/// A profile of 200 tiny tokens with `--fault FAULT`: exit 4, one error line holding
/// `error`, the partial profile written and marked incomplete.
fn fault_keeps_the_partial_profile(fault: &str, error: &str) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    let out = gpuscope(&[
        "profile",
        "--preset",
        "tiny",
        "--tokens",
        "200",
        "--warmup",
        "1",
        "--json",
        json.to_str().unwrap(),
        "--fault",
        fault,
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains(error), "{stderr}");
    let p = gpuscope_trace::io::load_profile(&json).expect("the partial profile is written");
    assert!(
        p.tokens.len() >= 5 && p.tokens.len() < 200,
        "{}",
        p.tokens.len()
    );
    assert!(p.incomplete.as_deref().unwrap().contains(error));
    assert!(text(&out.stdout).contains("INCOMPLETE"));
}

#[test]
fn a_lost_device_keeps_the_partial_profile_and_exits_4() {
    if have_gpu() {
        fault_keeps_the_partial_profile("device-lost-after=5", "GPU device lost");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn out_of_memory_mid_run_keeps_the_partial_profile_and_exits_4() {
    if have_gpu() {
        fault_keeps_the_partial_profile("oom-after=5", "out of GPU memory while running a step");
    }
}

/// `argmax` with a loop first that outlasts any test timeout. Lavapipe ends every loop
/// after 65535 iterations in all, so each iteration is made long (256 dependent `sin`s);
/// on a GPU without such a limit it never ends at all.
fn endless_argmax(original: &str) -> String {
    let entry = original
        .find("fn main(")
        .expect("argmax has `fn main`: update the test");
    let body = entry + original[entry..].find('{').unwrap() + 1;
    let sins = "        x = sin(x) + 1.0;\n".repeat(256);
    format!(
        "{}\n    var x = abs(logits[0]);\n    loop {{\n{sins}        out[0] = bitcast<u32>(x);\n        if x < 0.0 {{ break; }}\n    }}\n{}",
        &original[..body],
        &original[body..]
    )
}

#[test]
fn replay_stops_a_kernel_that_runs_past_the_timeout_naming_its_dispatch() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let out = gpuscope(&[
        "profile",
        "--preset",
        "tiny",
        "--tokens",
        "1",
        "--warmup",
        "0",
        "--capture",
        cap.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let original = std::fs::read_to_string(cap.join("shaders/argmax.wgsl")).unwrap();
    let endless = dir.path().join("endless.wgsl");
    std::fs::write(&endless, endless_argmax(&original)).unwrap();
    let sub = format!("argmax={}", endless.display());
    let start = Instant::now();
    let out = gpuscope(&[
        "replay",
        cap.to_str().unwrap(),
        "--substitute",
        &sub,
        "--timeout",
        "1",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("replaying step 0 of 1: dispatch ")
            && stderr.contains("(substituted kernel `argmax`)")
            && stderr.contains("did not finish within 1 s (--timeout)"),
        "{stderr}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "stopped by the watchdog, not by the kernel ending"
    );
}
