//! A capture's claims checked against device limits and the memory budget before a
//! replay allocates anything: each refusal names the number and the limit.

use gpuscope_trace::capture::{check_budget, read_capture, Capture, OnExisting, ReplayLimits};

use crate::fuzz_seeds::write_small_capture;

fn limits() -> ReplayLimits {
    // lavapipe's (Mesa 22.3), as DESIGN.md records them.
    ReplayLimits {
        max_buffer_size: 2 << 30,
        max_storage_buffer_binding_size: 128 << 20,
        min_storage_buffer_offset_alignment: 16,
        max_compute_workgroups_per_dimension: 65535,
        timestamps: Some((1, 1)),
        max_memory: 1 << 30,
    }
}

fn capture() -> (tempfile::TempDir, Capture) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cap");
    write_small_capture(&path, OnExisting::Refuse);
    let c = read_capture(&path).unwrap();
    (dir, c)
}

#[test]
fn a_capture_within_the_limits_reports_what_it_will_hold() {
    let (_d, c) = capture();
    let m = check_budget(&c, &limits(), true).unwrap();
    assert_eq!(m.buffers, 128);
    assert_eq!(m.readbacks, 4);
    assert_eq!(m.uploads, 16);
    assert_eq!(m.largest_blob, 144);
    // Comparing step 1 reads back binding 1 (64 bytes) of its one dispatch.
    assert_eq!(m.outputs, 64);
    assert_eq!(check_budget(&c, &limits(), false).unwrap().outputs, 0);
}

#[test]
fn each_claim_over_a_limit_is_refused_with_its_number() {
    let (_d, c) = capture();
    let refuse = |c: &Capture, l: &ReplayLimits, needle: &str, device: bool| {
        let e = check_budget(c, l, true).unwrap_err();
        assert!(e.to_string().contains(needle), "{e}");
        assert!(e.to_string().ends_with("nothing was allocated"), "{e}");
        assert_eq!(e.device_limit, device, "{e}");
    };
    let mut big = c.commands.clone();
    big.buffers[0].size = 3 << 30;
    let cap = |commands| {
        let mut copy = clone_capture(&c);
        copy.commands = commands;
        copy
    };
    refuse(
        &cap(big),
        &limits(),
        "is 3221225472 bytes, more than this device's max_buffer_size",
        true,
    );
    let mut binding = c.commands.clone();
    binding.bind_groups[0].entries[1].size = 256 << 20;
    refuse(
        &cap(binding),
        &limits(),
        "268435456 bytes, more than this device's max_storage_buffer_binding_size",
        true,
    );
    let mut offset = c.commands.clone();
    offset.bind_groups[0].entries[1].offset = 4;
    refuse(&cap(offset), &limits(), "starts at byte 4", true);
    let mut wide = clone_capture(&c);
    wide.stream.graphs[0].passes[0].dispatches[0].workgroups = [1, 70000, 1];
    refuse(&wide, &limits(), "asks for 70000 workgroups", true);
    let mut long = clone_capture(&c);
    let d = long.stream.graphs[0].passes[0].dispatches[0].clone();
    long.stream.graphs[0].passes[0].dispatches = vec![d; 5000];
    refuse(&long, &limits(), "needs 5001 timestamps per step", true);
    let untimed = ReplayLimits {
        timestamps: None,
        ..limits()
    };
    check_budget(&long, &untimed, false).expect("no timestamps, no timestamp limit");
    let small = ReplayLimits {
        max_memory: 200,
        ..limits()
    };
    refuse(&c, &small, "replaying needs about 356 bytes", false);
    refuse(&c, &small, "more than --max-memory 200", false);
}

/// `Capture` holds its source, so it is not `Clone`: read it again.
fn clone_capture(c: &Capture) -> Capture {
    read_capture(c.root()).unwrap()
}
