//! The capture format without a GPU: round trip, views, inspect, and every kind of
//! damage a capture can come back with (each error names the file and what is wrong).

use std::path::Path;

use gpuscope_trace::capture::*;
use gpuscope_trace::{AdapterDesc, TimingInfo, TimingMode, WorkloadDesc};

const WGSL: &str = "override N: u32 = 1u;\n@group(0) @binding(0) var<storage, read> x: array<f32>;\n\
@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n\
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) i: vec3<u32>) { if i.x < N { y[i.x] = x[i.x]; } }\n";

/// A capture of one shader built with `variants` constant sets, one dispatch each, run
/// for `steps` steps with a 16-byte upload each.
fn write_fixture(dir: &Path, variants: usize, steps: u32) {
    let mut c = Commands {
        shaders: vec![ShaderDesc {
            name: "copy".into(),
            source: "shaders/copy.wgsl".into(),
            entry_points: vec!["main".into()],
        }],
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
        buffers: vec![
            BufferDesc {
                id: 1,
                label: "x".into(),
                size: 256,
                usage: vec!["STORAGE".into()],
            },
            BufferDesc {
                id: 2,
                label: "y".into(),
                size: 256,
                usage: vec!["STORAGE".into()],
            },
        ],
        ..Commands::default()
    };
    let mut dispatches = Vec::new();
    for v in 0..variants {
        c.constant_sets.push(ConstantSet {
            values: vec![("N".into(), (v + 1) as f64)],
        });
        c.pipelines.push(PipelineDesc {
            name: format!("copy:main{{N={}}}", v + 1),
            shader: 0,
            entry: "main".into(),
            constants: v,
            layout: 0,
        });
        c.bind_groups.push(BindGroupDesc {
            pipeline: v,
            entries: vec![
                BindingDesc {
                    binding: 0,
                    buffer: 1,
                    offset: 0,
                    size: 256,
                    label: "x".into(),
                },
                BindingDesc {
                    binding: 1,
                    buffer: 2,
                    offset: 0,
                    size: 256,
                    label: "y".into(),
                },
            ],
        });
        dispatches.push(DispatchDesc {
            pipeline: v,
            bind_group: v,
            workgroups: [1, 1, 1],
            op: "copy".into(),
            label: format!("copy{v}"),
            layer: None,
            reads: vec![1],
            writes: vec![2],
        });
    }
    let n = dispatches.len();
    let stream = Stream {
        graphs: vec![GraphDesc {
            passes: vec![PassDesc {
                name: "all".into(),
                layer: None,
                dispatches,
            }],
        }],
        readbacks: vec![BufferRange {
            buffer: 2,
            offset: 0,
            size: 4,
        }],
        steps: (0..steps)
            .map(|i| StepDesc {
                index: i,
                position: i,
                token_id: 0,
                graph: 0,
                uploads: vec![Upload {
                    buffer: 1,
                    offset: 0,
                    data: BlobSlice {
                        blob: "blobs/uploads.bin".into(),
                        start: 16 * i as u64,
                        len: 16,
                    },
                }],
                measured: Some(StepMeasurement {
                    wall_ns: 1000,
                    gpu_busy_ns: Some(500),
                    counters: Default::default(),
                    dispatches: (0..n)
                        .map(|d| DispatchMeasurement {
                            gpu: Some(gpuscope_trace::GpuSpan {
                                start_ns: 0,
                                end_ns: 100 * (d as u64 + 1),
                            }),
                            issue: None,
                            cpu_encode_ns: 10,
                            bytes: 512,
                            flops: 0,
                        })
                        .collect(),
                }),
            })
            .collect(),
    };
    let mut w = CaptureWriter::create(dir, OnExisting::Refuse).unwrap();
    w.write_file("shaders/copy.wgsl", "shader", WGSL.as_bytes())
        .unwrap();
    w.write_file("blobs/uploads.bin", "blob", &vec![7u8; 16 * steps as usize])
        .unwrap();
    w.write_file("blobs/buffer-1.bin", "blob", &[1u8; 256])
        .unwrap();
    let data = CapturedData {
        initial: vec![BufferContents {
            buffer: 1,
            data: BlobSlice {
                blob: "blobs/buffer-1.bin".into(),
                start: 0,
                len: 256,
            },
        }],
        outputs: vec![],
    };
    let manifest = Manifest {
        format: CAPTURE_FORMAT,
        tool: "test".into(),
        name: "fixture".into(),
        adapter: AdapterDesc::default(),
        limits: Default::default(),
        timing: TimingInfo {
            mode: TimingMode::Dispatch,
            reason: "test".into(),
            timestamp_period_ns: 1.0,
            sampling: None,
        },
        workload: WorkloadDesc::default(),
        files: vec![],
        incomplete: None,
    };
    w.finish(manifest, &c, &stream, Some(&data)).unwrap();
}

fn fixture(variants: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path(), variants, 3);
    dir
}

fn err(dir: &Path) -> String {
    read_capture(dir)
        .expect_err("the damaged capture is refused")
        .to_string()
}

#[test]
fn a_capture_round_trips_with_its_views_and_blobs() {
    let dir = fixture(2);
    let cap = read_capture(dir.path()).unwrap();
    assert_eq!(cap.stream.steps.len(), 3);
    assert_eq!(cap.stream.dispatch_count(), 6);
    assert_eq!(cap.shader_sources[0], WGSL);
    let counts = cap.command_counts();
    assert_eq!(counts.len(), 2);
    assert!(counts.iter().all(|(_, n, _)| *n == 3));
    assert_eq!(
        cap.blob(&cap.stream.steps[1].uploads[0].data).unwrap(),
        vec![7u8; 16]
    );
    cap.verify_blobs().unwrap();
    for view in ["measurements", "shaders", "used_consts", "used_pipelines"] {
        assert!(
            dir.path().join(format!("fixture_{view}.json")).is_file(),
            "{view}"
        );
    }
    let m: Vec<views::MeasurementView> = serde_json::from_slice(
        &std::fs::read(dir.path().join("fixture_measurements.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(m[1].label, "copy1");
    assert_eq!(m[1].duration.as_ref().unwrap().mean_ns, 200.0);
    assert_eq!(m[1].output_bytes, 256);
    let used: Vec<views::UsedPipeline> = serde_json::from_slice(
        &std::fs::read(dir.path().join("fixture_used_pipelines.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(used.iter().map(|u| u.count).sum::<u64>(), 6);
}

#[test]
fn inspect_flags_a_shader_built_with_many_constant_sets() {
    let few = read_capture(fixture(MANY_CONSTANT_SETS).path()).unwrap();
    let i = inspect(&few, 10);
    assert!(!i.shaders[0].many_constant_sets);
    let many = read_capture(fixture(MANY_CONSTANT_SETS + 1).path()).unwrap();
    let i = inspect(&many, 3);
    assert!(i.shaders[0].many_constant_sets);
    assert_eq!(i.unique_commands, MANY_CONSTANT_SETS + 1);
    assert_eq!(i.top_commands.len(), 3);
    // Slowest first: the fixture's dispatch d takes 100·(d+1) ns.
    assert_eq!(i.top_commands[0].label, format!("copy{MANY_CONSTANT_SETS}"));
    let text = render::render_inspection(&i);
    assert!(
        text.contains("many constant sets") && text.contains("uniform"),
        "{text}"
    );
}

#[test]
fn truncated_manifest_is_reported_as_truncated() {
    let dir = fixture(1);
    let path = dir.path().join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    let e = err(dir.path());
    assert!(
        e.contains("manifest.json") && e.contains("truncated"),
        "{e}"
    );
}

#[test]
fn a_truncated_file_is_named_with_its_expected_length() {
    let dir = fixture(1);
    let path = dir.path().join("stream.json");
    let text = std::fs::read(&path).unwrap();
    std::fs::write(&path, &text[..text.len() - 10]).unwrap();
    let e = err(dir.path());
    assert!(
        e.contains("stream.json") && e.contains("truncated or replaced"),
        "{e}"
    );
}

#[test]
fn a_missing_blob_is_named() {
    let dir = fixture(1);
    std::fs::remove_file(dir.path().join("blobs/buffer-1.bin")).unwrap();
    let e = err(dir.path());
    assert!(e.contains("buffer-1.bin") && e.contains("missing"), "{e}");
}

#[test]
fn an_altered_blob_fails_its_hash_when_read() {
    let dir = fixture(1);
    std::fs::write(dir.path().join("blobs/buffer-1.bin"), [2u8; 256]).unwrap();
    let cap = read_capture(dir.path()).unwrap();
    let e = cap.verify_blobs().unwrap_err().to_string();
    assert!(e.contains("buffer-1.bin") && e.contains("hash"), "{e}");
}

#[test]
fn another_major_version_names_both_versions() {
    let dir = fixture(1);
    let path = dir.path().join("manifest.json");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"major\": 1", "\"major\": 9");
    std::fs::write(&path, text).unwrap();
    let e = err(dir.path());
    assert!(
        e.contains("capture format 9.") && e.contains("reads format 1.x"),
        "{e}"
    );
    // A newer minor of the same major loads.
    let dir = fixture(1);
    let path = dir.path().join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        &format!(
            "\"minor\": {}",
            gpuscope_trace::capture::CAPTURE_FORMAT.minor
        ),
        "\"minor\": 77",
    );
    assert!(text.contains("\"minor\": 77"));
    std::fs::write(&path, text).unwrap();
    read_capture(dir.path()).unwrap();
}

#[test]
fn a_directory_without_a_manifest_is_not_a_capture() {
    let dir = tempfile::tempdir().unwrap();
    let e = err(dir.path());
    assert!(e.contains("not a gpuscope capture"), "{e}");
}

#[test]
fn bad_references_name_the_file_and_the_reference() {
    // Rewrite commands.json through the writer so lengths and hashes are right and
    // only the reference is wrong.
    let dir = fixture(2);
    let cap = read_capture(dir.path()).unwrap();
    let mut commands = cap.commands.clone();
    commands.bind_groups[1].entries[1].buffer = 99;
    let mut w = CaptureWriter::create(dir.path(), OnExisting::Replace).unwrap();
    w.write_file("shaders/copy.wgsl", "shader", WGSL.as_bytes())
        .unwrap();
    w.write_file("blobs/uploads.bin", "blob", &[7u8; 48])
        .unwrap();
    w.finish(cap.manifest.clone(), &commands, &cap.stream, None)
        .unwrap();
    let e = err(dir.path());
    assert!(
        e.contains("commands.json") && e.contains("buffer 99"),
        "{e}"
    );
}

#[test]
fn in_memory_sources_read_like_directories() {
    let dir = fixture(1);
    let mut files = MemSource::default();
    for entry in walk(dir.path()) {
        let rel = entry
            .strip_prefix(dir.path())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        files.0.insert(rel, std::fs::read(&entry).unwrap());
    }
    let cap = read_capture_from(Box::new(files.clone()), Path::new("<memory>")).unwrap();
    assert_eq!(cap.stream.steps.len(), 3);
    files.0.remove("blobs/uploads.bin");
    let e = read_capture_from(Box::new(files), Path::new("<memory>"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("<memory>/blobs/uploads.bin"), "{e}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
