//! The recording being written: `recording.jsonl` appended one record at a time and
//! flushed at every step, SPIR-V modules beside it (see `gpuscope_trace::recording`).
//!
//! Writing never stops the program: on the first I/O error the layer says so once on
//! stderr, records nothing more, and every call goes on to the driver as before;
//! `attach` then reports a recording that stops early.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use gpuscope_trace::recording::{Header, Record, RECORDING_FORMAT, RECORDS_FILE, SHADERS_DIR};

pub struct Writer {
    dir: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    pub ids: Ids,
}

/// The next id of each kind of recorded object.
#[derive(Default)]
pub struct Ids {
    pub devices: u32,
    pub queues: u32,
    pub shaders: u32,
    pub pipelines: u32,
}

static WRITER: Mutex<State> = Mutex::new(State::NotStarted);

enum State {
    NotStarted,
    Writing(Writer),
    /// Not recording: no output asked for, or writing failed (said once).
    Off,
}

/// The CPU clock every recorded time is on: nanoseconds since the layer was loaded.
pub fn now_ns() -> u64 {
    static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Runs `f` on the writer, starting the recording (header first) on first use.
/// `None` when not recording.
pub fn with<R>(f: impl FnOnce(&mut Writer) -> R) -> Option<R> {
    let mut state = WRITER.lock().unwrap_or_else(|e| e.into_inner());
    if let State::NotStarted = *state {
        *state = match start() {
            Ok(Some(w)) => State::Writing(w),
            Ok(None) => State::Off,
            Err(e) => {
                let why = format!("cannot start the recording: {e}");
                eprintln!("gpuscope-layer: {why}; the program runs on without it");
                // For `attach` to report (best effort: the same disk may be full).
                if let Some(dir) = &crate::config().out {
                    let _ = std::fs::write(
                        dir.join(gpuscope_trace::recording::ERROR_FILE),
                        format!("{why}\n"),
                    );
                }
                State::Off
            }
        };
    }
    match &mut *state {
        State::Writing(w) => Some(f(w)),
        _ => None,
    }
}

/// Queues one record for the writer thread, which writes records in the order they
/// were queued: serializing and writing (a step of a hundred dispatches is kilobytes of
/// JSON) stay off the program's thread, which only moves the record into a channel.
/// On a write failure the thread turns recording off (said once).
pub fn record(r: Record) {
    record_with(move || r);
}

/// [`record`] of what `build` returns, built on the writer thread: a step's records
/// (names, dispatches) are put together there, not on the thread that waited for it.
pub fn record_with(build: impl FnOnce() -> Record + Send + 'static) {
    enqueue(move || build);
}

/// A step's record, built on the writer thread from its number: steps are numbered in
/// the order they are queued (the order they closed), which is the order they are
/// written.
pub fn record_step(build: impl FnOnce(u32) -> Record + Send + 'static) {
    enqueue(move || {
        let index = NEXT_STEP.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        move || build(index)
    });
}

/// The number the next step to close will have (the step being recorded now).
pub fn next_step() -> u32 {
    NEXT_STEP.load(std::sync::atomic::Ordering::Relaxed)
}

static NEXT_STEP: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Queues the job `make` makes, made under the queue's lock (what it numbers is
/// numbered in queue order).
fn enqueue<J: FnOnce() -> Record + Send + 'static>(make: impl FnOnce() -> J) {
    let mut sender = SENDER.lock().unwrap_or_else(|e| e.into_inner());
    if sender.is_none() {
        if !matches!(with(|_| ()), Some(())) {
            return; // not recording
        }
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("gpuscope-layer-writer".into())
            .spawn(move || {
                for job in rx {
                    write_now(job);
                }
            });
        match thread {
            Ok(t) => {
                *THREAD.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
                *sender = Some(tx);
            }
            // No thread: write on the caller's thread.
            Err(_) => return write_now(Box::new(make())),
        }
    }
    if let Some(tx) = sender.as_ref() {
        if let Err(std::sync::mpsc::SendError(job)) = tx.send(Box::new(make())) {
            write_now(job);
        }
    }
}

/// Writes queued records out and stops the writer thread (at exit: nothing may be
/// left in the channel when the process ends).
pub fn drain() {
    drop(SENDER.lock().unwrap_or_else(|e| e.into_inner()).take());
    let thread = THREAD.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(t) = thread {
        let _ = t.join();
    }
}

/// A record to write, built when its turn comes.
type Job = Box<dyn FnOnce() -> Record + Send>;

static SENDER: Mutex<Option<std::sync::mpsc::Sender<Job>>> = Mutex::new(None);
static THREAD: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);

fn write_now(job: Job) {
    // A panic here must not end the writer thread's host process's recording silently
    // nor unwind anywhere else: it turns recording off like an I/O error.
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let r = job();
        with(|w| w.write(&r).err()).flatten().map(|e| e.to_string())
    }))
    .unwrap_or_else(|_| Some("a panic while writing".into()));
    if let Some(e) = failed {
        stop(&format!("cannot write the recording: {e}"));
    }
}

/// Stops recording for good, saying why on stderr.
pub fn stop(why: &str) {
    let mut state = WRITER.lock().unwrap_or_else(|e| e.into_inner());
    if let State::Writing(w) = &*state {
        eprintln!(
            "gpuscope-layer: {why} ({}); the program runs on without it",
            w.dir.display()
        );
        let _ = std::fs::write(
            w.dir.join(gpuscope_trace::recording::ERROR_FILE),
            format!("{why}\n"),
        );
    }
    *state = State::Off;
}

fn start() -> std::io::Result<Option<Writer>> {
    let config = crate::config();
    let Some(dir) = config.out.clone() else {
        return Ok(None);
    };
    if config.fault_write {
        return Err(std::io::Error::other(
            "injected by GPUSCOPE_LAYER_FAULT=fail-write",
        ));
    }
    std::fs::create_dir_all(dir.join(SHADERS_DIR))?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(RECORDS_FILE))?;
    let mut w = Writer {
        dir,
        file: std::io::BufWriter::new(file),
        ids: Ids::default(),
    };
    let (timing, stride, timing_reason) = crate::config::timing_hint();
    w.write(&Record::Header(Header {
        format: RECORDING_FORMAT,
        tool: concat!("gpuscope-layer ", env!("CARGO_PKG_VERSION")).into(),
        program: std::env::args().collect(),
        pid: std::process::id(),
        timing,
        stride,
        timing_reason,
        step: if config.step_per_submit {
            "submit"
        } else {
            "sync"
        }
        .into(),
    }))?;
    Ok(Some(w))
}

impl Writer {
    pub fn write(&mut self, r: &Record) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.file, r)?;
        self.file.write_all(b"\n")?;
        self.file.flush()
    }

    /// Saves a SPIR-V module as `shaders/<hash>.spv` (once per hash).
    pub fn save_shader(&mut self, hash: &str, bytes: &[u8]) -> std::io::Result<()> {
        let path = self.dir.join(SHADERS_DIR).join(format!("{hash}.spv"));
        if !path.exists() {
            std::fs::write(path, bytes)?;
        }
        Ok(())
    }
}

/// Writes the last record when the process exits normally (an exit without destroying
/// the device is still a finished run). Registered once, at the first device.
pub fn end_at_exit() {
    extern "C" fn at_exit() {
        let _ = std::panic::catch_unwind(|| {
            record(Record::End {
                reason: "the program exited".into(),
            });
            drain();
        });
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| unsafe {
        libc::atexit(at_exit);
    });
}
