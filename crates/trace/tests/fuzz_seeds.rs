//! Seeds of the `capture_pipeline` and `profile_pipeline` fuzz targets, made by the project's
//! own writers: a small capture (written by [`CaptureWriter`], packed as the target reads
//! it) and small profiles (written by `save_profile`). Each test checks the committed
//! seed is what the writers make today and that it reads back; `GPUSCOPE_BLESS=1`
//! rewrites the seeds instead.

use std::path::{Path, PathBuf};

use gpuscope_trace::capture::*;
use gpuscope_trace::{AdapterDesc, TimingInfo, TimingMode, WorkloadDesc};

use gpuscope_trace::fixtures as fixture;

fn corpus(target: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/seeds")
        .join(target)
        .join(name)
}

/// Compares (or with `GPUSCOPE_BLESS`, writes) one seed file.
fn check_seed(path: &Path, bytes: &[u8]) {
    if fixture::bless() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    let committed = std::fs::read(path).unwrap_or_default();
    assert!(
        committed == bytes,
        "{} is not what the writers make now: regenerate it with GPUSCOPE_BLESS=1 cargo test -p gpuscope-trace --test tests fuzz_seeds",
        path.display()
    );
}

const WGSL: &str = "@group(0) @binding(0) var<storage, read> x: array<f32>;\n\
@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n\
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) i: vec3<u32>) { y[i.x] = x[i.x]; }\n";

/// A one-dispatch capture of two steps, with data, using the packed names (the output
/// tests write it too).
pub fn write_small_capture(dir: &Path, on_existing: OnExisting) {
    let buffer = |id: u64, label: &str| BufferDesc {
        id,
        label: label.into(),
        size: 64,
        usage: vec!["STORAGE".into()],
    };
    let binding = |binding: u32, buffer: u64, label: &str| BindingDesc {
        binding,
        buffer,
        offset: 0,
        size: 64,
        label: label.into(),
    };
    let c = Commands {
        shaders: vec![ShaderDesc {
            name: "copy".into(),
            source: packed::SHADER.into(),
            entry_points: vec!["main".into()],
        }],
        constant_sets: vec![ConstantSet { values: vec![] }],
        layouts: vec![LayoutDesc {
            entries: vec![
                LayoutEntry {
                    binding: 0,
                    access: Access::Read,
                },
                LayoutEntry {
                    binding: 1,
                    access: Access::ReadWrite,
                },
            ],
        }],
        pipelines: vec![PipelineDesc {
            name: "copy:main".into(),
            shader: 0,
            entry: "main".into(),
            constants: 0,
            layout: 0,
        }],
        buffers: vec![buffer(1, "x"), buffer(2, "y")],
        bind_groups: vec![BindGroupDesc {
            pipeline: 0,
            entries: vec![binding(0, 1, "x"), binding(1, 2, "y")],
        }],
    };
    let slice = |start: u64, len: u64| BlobSlice {
        blob: packed::BLOB.into(),
        start,
        len,
    };
    let stream = Stream {
        graphs: vec![GraphDesc {
            passes: vec![PassDesc {
                name: "all".into(),
                layer: None,
                dispatches: vec![DispatchDesc {
                    pipeline: 0,
                    bind_group: 0,
                    workgroups: [1, 1, 1],
                    op: "copy".into(),
                    label: "copy".into(),
                    layer: None,
                    reads: vec![1],
                    writes: vec![2],
                }],
            }],
        }],
        readbacks: vec![BufferRange {
            buffer: 2,
            offset: 0,
            size: 4,
        }],
        steps: (0..2)
            .map(|i| StepDesc {
                index: i,
                position: i,
                token_id: 0,
                graph: 0,
                uploads: vec![Upload {
                    buffer: 1,
                    offset: 0,
                    data: slice(128 + 8 * i as u64, 8),
                }],
                measured: None,
            })
            .collect(),
    };
    let data = CapturedData {
        initial: vec![
            BufferContents {
                buffer: 1,
                data: slice(0, 64),
            },
            BufferContents {
                buffer: 2,
                data: slice(64, 64),
            },
        ],
        outputs: vec![StepOutputs {
            step: 1,
            dispatches: vec![DispatchOutputs {
                outputs: vec![BindingOutput {
                    binding: 1,
                    data: slice(0, 64),
                }],
            }],
        }],
    };
    let blob: Vec<u8> = (0..144u8).collect();
    let mut w = CaptureWriter::create(dir, on_existing).unwrap();
    w.write_file(packed::SHADER, "shader", WGSL.as_bytes())
        .unwrap();
    w.write_file(packed::BLOB, "blob", &blob).unwrap();
    let manifest = Manifest {
        format: CAPTURE_FORMAT,
        tool: "gpuscope fuzz seed".into(),
        name: "seed".into(),
        adapter: AdapterDesc::default(),
        limits: Default::default(),
        timing: TimingInfo {
            mode: TimingMode::Off,
            reason: "seed".into(),
            timestamp_period_ns: 1.0,
            sampling: None,
        },
        workload: WorkloadDesc::default(),
        files: vec![],
        incomplete: None,
    };
    w.finish(manifest, &c, &stream, Some(&data)).unwrap();
}

#[test]
fn the_capture_fuzz_seed_is_current_and_reads_back_unpacked() {
    let dir = tempfile::tempdir().unwrap();
    let cap_dir = dir.path().join("seed");
    write_small_capture(&cap_dir, OnExisting::Refuse);
    read_capture(&cap_dir).expect("the seed capture reads from its directory");
    let file = |name: &str| std::fs::read(cap_dir.join(name)).unwrap();
    let bytes = packed::pack(
        &file(files::MANIFEST),
        &[
            &file(files::COMMANDS),
            &file(files::STREAM),
            &file(files::DATA),
            &file(packed::SHADER),
            &file(packed::BLOB),
        ],
    );
    check_seed(&corpus("capture_pipeline", "small-capture"), &bytes);
    let capture = read_capture_from(Box::new(packed::unpack(&bytes)), Path::new("<seed>"))
        .expect("the packed seed reads back");
    assert_eq!(capture.stream.steps.len(), 2);
    assert_eq!(capture.data.as_ref().unwrap().outputs.len(), 1);
    capture.verify_blobs().unwrap();
}

#[test]
fn the_profile_fuzz_seeds_are_current_and_read_back() {
    for (name, profile) in [
        ("small.json", fixture::small()),
        ("untimed.json", fixture::untimed()),
    ] {
        let json = serde_json::to_string(&profile).unwrap();
        check_seed(&corpus("profile_pipeline", name), json.as_bytes());
        let back = gpuscope_trace::io::profile_from_json(&json).unwrap();
        assert_eq!(back.tokens.len(), profile.tokens.len());
        assert_eq!(back, profile);
    }
    // The pipeline target reads the compact encoding too.
    let bytes = gpuscope_trace::compact::encode(&fixture::small()).unwrap();
    check_seed(&corpus("profile_pipeline", "small.bin"), &bytes);
    let back = gpuscope_trace::io::profile_from_bytes(bytes, Path::new("<seed>")).unwrap();
    assert_eq!(back, fixture::small());
}

/// The recording seed is a real one: `gpuscope attach` on `examples/vk_counted.rs`
/// (2 steps, named), refreshed by hand; it must still read into a consistent profile.
#[test]
fn the_recording_fuzz_seed_reads_into_a_profile() {
    let bytes = std::fs::read(corpus("recording_pipeline", "vk_counted.jsonl")).unwrap();
    let r = gpuscope_trace::recording::read_records(&bytes[..], Path::new("<seed>")).unwrap();
    let p = r.to_profile();
    gpuscope_trace::consistency::check(&p).unwrap();
    assert_eq!(p.tokens.len(), 2);
    assert_eq!(
        p.dispatches
            .iter()
            .filter(|d| d.op == "counted_add")
            .count(),
        6
    );
}
