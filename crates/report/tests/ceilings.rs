//! Ceilings: validation, the cache (atomic, never trusting a corrupt or foreign file)
//! and which ceilings a report uses.

use gpuscope_report::analysis::{analyze, choose_ceilings, CeilingsSource, CeilingsUsed};
use gpuscope_report::cache::{self, CacheKey, Lookup};
use gpuscope_report::render::render_text;
use gpuscope_trace::ceilings::CeilingsError;

use gpuscope_trace::fixtures as fixture;

fn key() -> CacheKey {
    CacheKey::new(&fixture::small().adapter, "gpuscope 0.1.0")
}

#[test]
fn store_then_load_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let c = fixture::ceilings();
    let path = cache::store(dir.path(), &c).unwrap();
    assert!(path.starts_with(dir.path().join("ceilings")));
    assert!(path
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("Test-GPU-Vulkan-gpuscope-0-1-0-"));
    assert_eq!(
        cache::load(dir.path(), &key()),
        Lookup::Found {
            ceilings: c,
            path: path.clone()
        }
    );
    // Nothing but the entry is left in the directory (the temporary file was renamed).
    let files: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
    assert_eq!(files.len(), 1);
}

#[test]
fn missing_corrupt_and_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        cache::load(dir.path(), &key()),
        Lookup::Missing { .. }
    ));
    let path = key().path(dir.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "{\"format\": {\"major\": 1, \"minor\": 0}, \"ident").unwrap();
    match cache::load(dir.path(), &key()) {
        Lookup::Untrusted { reason, .. } => assert!(reason.starts_with("corrupt:"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // A sane file of another device under this device's name.
    let mut other = fixture::ceilings();
    other.identity.adapter = "Other GPU".into();
    std::fs::write(&path, serde_json::to_string(&other).unwrap()).unwrap();
    match cache::load(dir.path(), &key()) {
        Lookup::Untrusted { reason, .. } => assert!(reason.contains("Other GPU"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // A figure that is no measurement.
    let mut bad = fixture::ceilings();
    bad.copy_gbps.as_mut().unwrap().p10 = 1e9;
    std::fs::write(&path, serde_json::to_string(&bad).unwrap()).unwrap();
    match cache::load(dir.path(), &key()) {
        Lookup::Untrusted { reason, .. } => assert!(reason.contains("copy_gbps"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn validation_names_the_field() {
    let mut c = fixture::ceilings();
    c.dispatch_ns.as_mut().unwrap().median = f64::NAN;
    assert_eq!(
        c.validate(),
        Err(CeilingsError::BadFigure {
            field: "dispatch_ns"
        })
    );
    // Regression: a denormal figure passed and the report printed `inf`.
    for value in [1e-310, 1e300, 0.0] {
        let mut c = fixture::ceilings();
        let copy = c.copy_gbps.as_mut().unwrap();
        (copy.p10, copy.median, copy.p90) = (value, value, value);
        assert_eq!(
            c.validate(),
            Err(CeilingsError::BadFigure { field: "copy_gbps" }),
            "{value}"
        );
    }
    let mut c = fixture::ceilings();
    c.identity.measured_at.clear();
    assert_eq!(
        c.validate(),
        Err(CeilingsError::MissingIdentity {
            field: "measured_at"
        })
    );
    let mut c = fixture::ceilings();
    c.format.major = 2;
    assert!(matches!(c.validate(), Err(CeilingsError::Version { .. })));
    let mut c = fixture::ceilings();
    for f in [
        &mut c.copy_gbps,
        &mut c.read_gbps,
        &mut c.write_gbps,
        &mut c.f32_gflops,
        &mut c.dispatch_ns,
        &mut c.cpu_dispatch_ns,
    ] {
        *f = None;
    }
    assert_eq!(c.validate(), Err(CeilingsError::Empty));
}

#[test]
fn embedded_then_local_then_none() {
    let p = fixture::small_with_ceilings();
    let used = choose_ceilings(&p, None);
    assert!(matches!(
        &used,
        CeilingsUsed::Used {
            source: CeilingsSource::Embedded,
            ..
        }
    ));
    let r = render_text(&p);
    assert!(r.contains("Ceilings: measured by gpuscope 0.1.0 on Test GPU (Vulkan, llvmpipe Mesa 22.3.6) at 2026-11-23T12:00:00Z, embedded in the profile"), "{r}");
    assert!(
        r.contains("  copy 100.0 GB/s (p10-p90 90.0-110.0, n=10), read 120.0 GB/s"),
        "{r}"
    );

    // Without embedded ceilings the reading machine's cache is used for the same device.
    let p = fixture::small();
    let c = fixture::ceilings();
    let used = choose_ceilings(&p, Some((&c, "/cache/x.json")));
    assert_eq!(
        used,
        CeilingsUsed::Used {
            ceilings: Box::new(c.clone()),
            source: CeilingsSource::LocalCache {
                path: "/cache/x.json".into()
            }
        }
    );
    // ...and never for another device.
    let mut foreign = c.clone();
    foreign.identity.driver_info = "Mesa 24.0".into();
    match choose_ceilings(&p, Some((&foreign, "/cache/y.json"))) {
        CeilingsUsed::Absent { reason } => {
            assert!(
                reason.contains("Mesa 24.0") && reason.contains("gpuscope peak"),
                "{reason}"
            )
        }
        used => panic!("{used:?}"),
    }
    // Embedded ceilings of another device than the profile's are not used either.
    let mut p = fixture::small();
    p.ceilings = Some(foreign);
    assert!(matches!(
        choose_ceilings(&p, None),
        CeilingsUsed::Absent { .. }
    ));
    assert!(analyze(&p).roofline.ceilings.is_none());
}
